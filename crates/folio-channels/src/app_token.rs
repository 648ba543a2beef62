//! GitHub App authentication: a JWT (RS256, signed with the App's private key, issuer the App
//! id, valid ten minutes) buys an installation token (`POST /app/installations/<id>/access_tokens`),
//! cached per installation until a minute before it expires.

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chrono::{DateTime, Utc};
use folio_project::GithubApp;
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use serde::Deserialize;
use serde_json::json;

use crate::Env;

/// Where the private key is read when `private_key_env` is not set.
const DEFAULT_KEY_ENV: &str = "GITHUB_APP_PRIVATE_KEY";
/// How long before its expiry a cached installation token is replaced.
const REFRESH_MARGIN: chrono::TimeDelta = chrono::TimeDelta::seconds(60);

/// The `access_tokens` answer (the fields Folio reads).
#[derive(Deserialize)]
struct AccessToken {
    token: String,
    expires_at: DateTime<Utc>,
}

/// Why no installation token was had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AppTokenError {
    /// Neither the manifest nor the delivery names the installation.
    #[error("[app]: the delivery names no installation; set installation_id in the manifest")]
    NoInstallation,
    /// The private key variable is not set.
    #[error("{key_env} is not set on the server (the GitHub App's private key, PEM)")]
    KeyUnset {
        /// The variable (`private_key_env`, default `GITHUB_APP_PRIVATE_KEY`).
        key_env: String,
    },
    /// The private key variable does not hold a usable key.
    #[error("{key_env}: {source}")]
    BadKey {
        /// The variable.
        key_env: String,
        /// What is wrong with its value.
        #[source]
        source: KeyError,
    },
    /// The key did not sign the JWT.
    #[error("the private key cannot sign")]
    CannotSign,
    /// `POST …/access_tokens` failed (connection, timeout).
    #[error("POST {url} failed: {source}")]
    Unreachable {
        /// The URL called.
        url: String,
        /// What failed.
        #[source]
        source: reqwest::Error,
    },
    /// GitHub refused to issue the token.
    #[error(
        "POST {url} answered {status} (check the App id, its private key and the installation)"
    )]
    Refused {
        /// The URL called.
        url: String,
        /// The answer's status.
        status: reqwest::StatusCode,
    },
    /// The answer is not an installation token.
    #[error("POST {url}: not an installation token: {source}")]
    NotAToken {
        /// The URL called.
        url: String,
        /// Why it does not decode.
        #[source]
        source: reqwest::Error,
    },
}

/// Why a PEM does not hold an RSA private key.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeyError {
    /// The PEM block is not base64.
    #[error("bad base64 in the PEM: {0}")]
    Base64(#[source] base64::DecodeError),
    /// The block does not decode to an RSA private key.
    #[error("not an RSA private key ({0})")]
    NotRsa(ring::error::KeyRejected),
    /// No `RSA PRIVATE KEY` or `PRIVATE KEY` block.
    #[error("not a PEM private key (-----BEGIN RSA PRIVATE KEY----- …)")]
    NotPem,
}

/// Installation tokens of one GitHub App.
pub(crate) struct AppTokens {
    app: GithubApp,
    env: Env,
    cache: tokio::sync::Mutex<HashMap<u64, (String, DateTime<Utc>)>>,
}

impl AppTokens {
    /// The tokens of `app`, its key read from `env` when first needed.
    pub(crate) fn new(app: GithubApp, env: Env) -> AppTokens {
        AppTokens {
            app,
            env,
            cache: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// An installation token for `installation` (the manifest's `installation_id` wins),
    /// from the cache or bought from `base` (the API root).
    pub(crate) async fn token(
        &self,
        client: &reqwest::Client,
        base: &str,
        installation: Option<u64>,
    ) -> Result<String, AppTokenError> {
        let installation = self
            .app
            .installation_id
            .or(installation)
            .ok_or(AppTokenError::NoInstallation)?;
        let mut cache = self.cache.lock().await;
        let now = Utc::now();
        if let Some((token, expires)) = cache.get(&installation)
            && *expires - REFRESH_MARGIN > now
        {
            return Ok(token.clone());
        }
        let jwt = self.jwt(now.timestamp())?;
        let url = format!("{base}/app/installations/{installation}/access_tokens");
        let answer = client
            .post(&url)
            .timeout(Duration::from_secs(15))
            .bearer_auth(jwt)
            .header("accept", "application/vnd.github+json")
            .header("user-agent", "folio")
            .header("x-github-api-version", "2022-11-28")
            .json(&json!({}))
            .send()
            .await
            .map_err(|source| AppTokenError::Unreachable {
                url: url.clone(),
                source,
            })?;
        let status = answer.status();
        if !status.is_success() {
            return Err(AppTokenError::Refused { url, status });
        }
        let bought: AccessToken = answer
            .json()
            .await
            .map_err(|source| AppTokenError::NotAToken { url, source })?;
        cache.insert(installation, (bought.token.clone(), bought.expires_at));
        Ok(bought.token)
    }

    /// The App's JWT at `now` (seconds): issued a minute back (clock drift), valid 10 minutes.
    fn jwt(&self, now: i64) -> Result<String, AppTokenError> {
        let key_env = self
            .app
            .private_key_env
            .as_deref()
            .unwrap_or(DEFAULT_KEY_ENV);
        let pem = (self.env)(key_env).ok_or_else(|| AppTokenError::KeyUnset {
            key_env: key_env.to_string(),
        })?;
        let key = parse_key(&pem).map_err(|source| AppTokenError::BadKey {
            key_env: key_env.to_string(),
            source,
        })?;
        sign_jwt(&key, self.app.id, now)
    }
}

/// The RS256 JWT GitHub expects of App `app_id` at `now`.
fn sign_jwt(key: &RsaKeyPair, app_id: u64, now: i64) -> Result<String, AppTokenError> {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
    let claims = json!({ "iat": now - 60, "exp": now + 540, "iss": app_id.to_string() });
    let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signed = format!("{header}.{claims}");
    let mut signature = vec![0; key.public().modulus_len()];
    key.sign(
        &RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        signed.as_bytes(),
        &mut signature,
    )
    .map_err(|_| AppTokenError::CannotSign)?;
    Ok(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

/// An RSA private key from PEM: `RSA PRIVATE KEY` (PKCS#1, what GitHub hands out) or
/// `PRIVATE KEY` (PKCS#8).
fn parse_key(pem: &str) -> Result<RsaKeyPair, KeyError> {
    let pem = pem.replace("\\n", "\n");
    let block = |label: &str| {
        let begin = format!("-----BEGIN {label}-----");
        let end = format!("-----END {label}-----");
        let start = pem.find(&begin)? + begin.len();
        let stop = pem[start..].find(&end)? + start;
        let text: String = pem[start..stop].split_whitespace().collect();
        Some(STANDARD.decode(text).map_err(KeyError::Base64))
    };
    if let Some(der) = block("RSA PRIVATE KEY") {
        return RsaKeyPair::from_der(&der?).map_err(KeyError::NotRsa);
    }
    if let Some(der) = block("PRIVATE KEY") {
        return RsaKeyPair::from_pkcs8(&der?).map_err(KeyError::NotRsa);
    }
    Err(KeyError::NotPem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_that_is_not_pem_says_what_it_expected() {
        let err = parse_key("ghp_not_a_key").err().unwrap();
        assert!(matches!(err, KeyError::NotPem), "{err}");
        assert_eq!(
            err.to_string(),
            "not a PEM private key (-----BEGIN RSA PRIVATE KEY----- …)"
        );
        let err = parse_key("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----")
            .err()
            .unwrap();
        assert!(matches!(err, KeyError::NotRsa(_)), "{err}");
        assert!(
            err.to_string().starts_with("not an RSA private key"),
            "{err}"
        );
    }
}
