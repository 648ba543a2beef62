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
    ) -> Result<String, String> {
        let installation = self.app.installation_id.or(installation).ok_or(
            "[app]: the delivery names no installation; set installation_id in the manifest",
        )?;
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
            .map_err(|err| format!("POST {url} failed: {err}"))?;
        let status = answer.status();
        if !status.is_success() {
            return Err(format!(
                "POST {url} answered {status} (check the App id, its private key and the installation)"
            ));
        }
        let bought: AccessToken = answer
            .json()
            .await
            .map_err(|err| format!("POST {url}: not an installation token: {err}"))?;
        cache.insert(installation, (bought.token.clone(), bought.expires_at));
        Ok(bought.token)
    }

    /// The App's JWT at `now` (seconds): issued a minute back (clock drift), valid 10 minutes.
    fn jwt(&self, now: i64) -> Result<String, String> {
        let key_env = self
            .app
            .private_key_env
            .as_deref()
            .unwrap_or(DEFAULT_KEY_ENV);
        let pem = (self.env)(key_env).ok_or_else(|| {
            format!("{key_env} is not set on the server (the GitHub App's private key, PEM)")
        })?;
        let key = parse_key(&pem).map_err(|err| format!("{key_env}: {err}"))?;
        sign_jwt(&key, self.app.id, now)
    }
}

/// The RS256 JWT GitHub expects of App `app_id` at `now`.
fn sign_jwt(key: &RsaKeyPair, app_id: u64, now: i64) -> Result<String, String> {
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
    .map_err(|_| "the private key cannot sign".to_string())?;
    Ok(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

/// An RSA private key from PEM: `RSA PRIVATE KEY` (PKCS#1, what GitHub hands out) or
/// `PRIVATE KEY` (PKCS#8).
fn parse_key(pem: &str) -> Result<RsaKeyPair, String> {
    let pem = pem.replace("\\n", "\n");
    let block = |label: &str| {
        let begin = format!("-----BEGIN {label}-----");
        let end = format!("-----END {label}-----");
        let start = pem.find(&begin)? + begin.len();
        let stop = pem[start..].find(&end)? + start;
        let text: String = pem[start..stop].split_whitespace().collect();
        Some(
            STANDARD
                .decode(text)
                .map_err(|err| format!("bad base64 in the PEM: {err}")),
        )
    };
    if let Some(der) = block("RSA PRIVATE KEY") {
        return RsaKeyPair::from_der(&der?)
            .map_err(|err| format!("not an RSA private key ({err})"));
    }
    if let Some(der) = block("PRIVATE KEY") {
        return RsaKeyPair::from_pkcs8(&der?)
            .map_err(|err| format!("not an RSA private key ({err})"));
    }
    Err("not a PEM private key (-----BEGIN RSA PRIVATE KEY----- …)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_that_is_not_pem_says_what_it_expected() {
        let err = parse_key("ghp_not_a_key").err().unwrap();
        assert_eq!(
            err,
            "not a PEM private key (-----BEGIN RSA PRIVATE KEY----- …)"
        );
        let err = parse_key("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----")
            .err()
            .unwrap();
        assert!(err.starts_with("not an RSA private key"), "{err}");
    }
}
