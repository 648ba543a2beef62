//! A channel's auth chain: `local-dev-strict`, `bearer` (token from an env var), `hmac` (GitHub,
//! Slack v0, generic header + scheme, Standard Webhooks) and `allow-all`, first match wins.
//! Every signature is compared in constant time (`Mac::verify_slice`).

use std::net::SocketAddr;

use axum::http::HeaderMap;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use folio_auth::{Auth, AuthError};
use folio_project::{AuthRule, HmacAuth, HmacProvider};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::Env;

/// How far a signed timestamp (Slack, Standard Webhooks) may be from now.
const TIMESTAMP_TOLERANCE_SECS: i64 = 5 * 60;

/// What the request carries that the chain reads.
pub(crate) struct Presented<'a> {
    /// The request headers.
    pub(crate) headers: &'a HeaderMap,
    /// The raw body, exactly as received.
    pub(crate) body: &'a [u8],
    /// The caller's address.
    pub(crate) peer: SocketAddr,
    /// Unix seconds now.
    pub(crate) now: i64,
}

/// No rule of a channel's auth chain admitted a request: why each refused it, in order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no auth rule of this channel admitted the request: {}",
    join(refusals)
)]
pub(crate) struct NotAdmitted {
    /// Each rule's refusal, in chain order.
    pub(crate) refusals: Vec<Refusal>,
}

fn join(refusals: &[Refusal]) -> String {
    refusals
        .iter()
        .map(Refusal::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Why one rule of the chain refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    /// `local-dev-strict`: not a loopback caller (or a forwarded one).
    #[error("local-dev-strict: {0}")]
    LocalDevStrict(#[source] AuthError),
    /// `bearer`: no or a wrong token.
    #[error("bearer: {0}")]
    Bearer(#[source] AuthError),
    /// The rule's secret is not set on the server (the rule fails closed).
    #[error("{rule}: {name} is not set on the server (set it to the shared secret)")]
    SecretUnset {
        /// The rule (`bearer`, `hmac`).
        rule: &'static str,
        /// The variable.
        name: String,
    },
    /// `hmac`: the signature does not check out.
    #[error("hmac: {0}")]
    Hmac(#[source] SignatureError),
}

/// Why a request's HMAC signature does not check out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SignatureError {
    /// A header the provider signs with is missing.
    #[error("{0} header missing")]
    HeaderMissing(String),
    /// A header is not ASCII.
    #[error("{0} header is not ASCII")]
    HeaderNotAscii(String),
    /// The signature header lacks its scheme prefix (`sha256=`, `v0=`).
    #[error("{header} does not start with {scheme}")]
    Scheme {
        /// The header.
        header: String,
        /// The prefix expected.
        scheme: String,
    },
    /// The signature is not hex.
    #[error("the signature is not hex")]
    NotHex,
    /// The signature does not match the body (a wrong secret, or an altered body).
    #[error("{0} does not match the body")]
    Mismatch(String),
    /// None of the Standard Webhooks signatures matches the body.
    #[error("no webhook-signature matches the body")]
    NoSignatureMatches,
    /// A signed timestamp is not Unix seconds.
    #[error("{0} is not Unix seconds")]
    TimestampNotSeconds(String),
    /// A signed timestamp is more than five minutes from now.
    #[error("{0} is more than 5 minutes from the server's clock (stale or replayed)")]
    Stale(String),
    /// A Standard Webhooks secret that is not `whsec_<base64>`.
    #[error("the secret is not whsec_<base64>")]
    BadSecret,
}

/// Runs `chain` over the request: `Ok` when one rule admits it, else every rule's reason.
pub(crate) fn admit(chain: &[AuthRule], request: &Presented, env: &Env) -> Result<(), NotAdmitted> {
    let mut refusals = Vec::new();
    for rule in chain {
        match check(rule, request, env) {
            Ok(()) => return Ok(()),
            Err(refusal) => refusals.push(refusal),
        }
    }
    Err(NotAdmitted { refusals })
}

fn check(rule: &AuthRule, request: &Presented, env: &Env) -> Result<(), Refusal> {
    match rule {
        AuthRule::AllowAll => Ok(()),
        AuthRule::LocalDevStrict => Auth::LocalDevStrict
            .authenticate(request.headers, request.peer)
            .map(drop)
            .map_err(Refusal::LocalDevStrict),
        AuthRule::Bearer(bearer) => {
            let token = secret(env, &bearer.token_env, "bearer")?;
            Auth::Tokens(vec![("channel".into(), token)])
                .authenticate(request.headers, request.peer)
                .map(drop)
                .map_err(Refusal::Bearer)
        }
        AuthRule::Hmac(hmac) => {
            let key = secret(env, &hmac.secret_env, "hmac")?;
            check_hmac(hmac, &key, request).map_err(Refusal::Hmac)
        }
    }
}

/// The secret in `name`; an unset variable fails the rule (fail closed) with a reason saying so.
fn secret(env: &Env, name: &str, rule: &'static str) -> Result<String, Refusal> {
    env(name)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| Refusal::SecretUnset {
            rule,
            name: name.to_string(),
        })
}

fn header<'a>(request: &'a Presented, name: &str) -> Result<&'a str, SignatureError> {
    request
        .headers
        .get(name)
        .ok_or_else(|| SignatureError::HeaderMissing(name.to_string()))?
        .to_str()
        .map_err(|_| SignatureError::HeaderNotAscii(name.to_string()))
}

fn check_hmac(hmac: &HmacAuth, secret: &str, request: &Presented) -> Result<(), SignatureError> {
    match hmac.provider {
        HmacProvider::Github => {
            let signature = header(request, "x-hub-signature-256")?;
            let hex = signature
                .strip_prefix("sha256=")
                .ok_or_else(|| scheme("X-Hub-Signature-256", "sha256="))?;
            verify(secret.as_bytes(), &[request.body], &decode_hex(hex)?)
                .map_err(|()| SignatureError::Mismatch("X-Hub-Signature-256".into()))
        }
        HmacProvider::Generic => {
            let name = hmac.header.as_deref().unwrap_or("x-signature-256");
            let signature = header(request, name)?;
            let scheme = hmac.scheme.as_deref().unwrap_or("");
            let hex = signature
                .strip_prefix(scheme)
                .ok_or_else(|| self::scheme(name, scheme))?;
            verify(secret.as_bytes(), &[request.body], &decode_hex(hex)?)
                .map_err(|()| SignatureError::Mismatch(name.to_string()))
        }
        HmacProvider::Slack => {
            let timestamp = header(request, "x-slack-request-timestamp")?;
            fresh(timestamp, request.now, "X-Slack-Request-Timestamp")?;
            let signature = header(request, "x-slack-signature")?;
            let hex = signature
                .strip_prefix("v0=")
                .ok_or_else(|| scheme("X-Slack-Signature", "v0="))?;
            let prefix = format!("v0:{timestamp}:");
            verify(
                secret.as_bytes(),
                &[prefix.as_bytes(), request.body],
                &decode_hex(hex)?,
            )
            .map_err(|()| SignatureError::Mismatch("X-Slack-Signature".into()))
        }
        HmacProvider::StandardWebhooks => {
            let id = header(request, "webhook-id")?;
            let timestamp = header(request, "webhook-timestamp")?;
            fresh(timestamp, request.now, "webhook-timestamp")?;
            let signatures = header(request, "webhook-signature")?;
            let key = STANDARD
                .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
                .map_err(|_| SignatureError::BadSecret)?;
            let prefix = format!("{id}.{timestamp}.");
            // Several space-separated `v1,<base64>` signatures (secret rotation): any may match.
            let matched = signatures.split(' ').any(|entry| {
                entry
                    .strip_prefix("v1,")
                    .and_then(|sig| STANDARD.decode(sig).ok())
                    .is_some_and(|sig| {
                        verify(&key, &[prefix.as_bytes(), request.body], &sig).is_ok()
                    })
            });
            if matched {
                Ok(())
            } else {
                Err(SignatureError::NoSignatureMatches)
            }
        }
    }
}

fn scheme(header: &str, scheme: &str) -> SignatureError {
    SignatureError::Scheme {
        header: header.to_string(),
        scheme: scheme.to_string(),
    }
}

/// Refuses a timestamp more than five minutes from now (replays).
fn fresh(timestamp: &str, now: i64, name: &str) -> Result<(), SignatureError> {
    let at: i64 = timestamp
        .parse()
        .map_err(|_| SignatureError::TimestampNotSeconds(name.to_string()))?;
    // `abs_diff`: a timestamp near `i64::MIN` overflowed `now - at` (a panic; wrapped in a
    // release build, where `i64::MIN.abs()` passed the check).
    if now.abs_diff(at) > TIMESTAMP_TOLERANCE_SECS.unsigned_abs() {
        return Err(SignatureError::Stale(name.to_string()));
    }
    Ok(())
}

/// Checks an HMAC-SHA256 of `parts` (concatenated) under `key` against `expected`, in constant time.
fn verify(key: &[u8], parts: &[&[u8]], expected: &[u8]) -> Result<(), ()> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).map_err(drop)?;
    for part in parts {
        mac.update(part);
    }
    mac.verify_slice(expected).map_err(drop)
}

/// HMAC-SHA256 of `parts` under `key`, hex (what providers send; used to sign test requests).
pub fn sign_hex(key: &[u8], parts: &[&[u8]]) -> String {
    let mut mac = match <Hmac<Sha256> as KeyInit>::new_from_slice(key) {
        Ok(mac) => mac,
        // HMAC accepts keys of any length.
        Err(_) => return String::new(),
    };
    for part in parts {
        mac.update(part);
    }
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn decode_hex(hex: &str) -> Result<Vec<u8>, SignatureError> {
    if !hex.len().is_multiple_of(2) {
        return Err(SignatureError::NotHex);
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or(SignatureError::NotHex)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use folio_project::BearerAuth;

    fn env() -> Env {
        Arc::new(|name: &str| match name {
            "SECRET" => Some("It's a Secret to Everybody".to_string()),
            "WHSEC" => Some("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_string()),
            "TOKEN" => Some("t0k3n".to_string()),
            _ => None,
        })
    }

    fn rule(provider: HmacProvider, secret_env: &str) -> AuthRule {
        AuthRule::Hmac(HmacAuth {
            secret_env: secret_env.into(),
            provider,
            header: Some("X-Signature".into()),
            scheme: Some("sha256=".into()),
        })
    }

    fn request<'a>(headers: &'a HeaderMap, body: &'a [u8], peer: &str) -> Presented<'a> {
        Presented {
            headers,
            body,
            peer: format!("{peer}:9").parse().unwrap(),
            now: 1_700_000_000,
        }
    }

    #[test]
    fn github_matches_its_published_test_vector() {
        // https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-hub-signature-256",
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
                .parse()
                .unwrap(),
        );
        let chain = [rule(HmacProvider::Github, "SECRET")];
        assert_eq!(
            admit(
                &chain,
                &request(&headers, b"Hello, World!", "10.0.0.1"),
                &env()
            ),
            Ok(())
        );
        let refused = admit(
            &chain,
            &request(&headers, b"Hello, World?", "10.0.0.1"),
            &env(),
        );
        assert_eq!(
            refused,
            Err(NotAdmitted {
                refusals: vec![Refusal::Hmac(SignatureError::Mismatch(
                    "X-Hub-Signature-256".into()
                ))]
            })
        );
        assert_eq!(
            refused.unwrap_err().to_string(),
            "no auth rule of this channel admitted the request: hmac: X-Hub-Signature-256 does not match the body"
        );
        let unset = [rule(HmacProvider::Github, "UNSET")];
        assert_eq!(
            admit(&unset, &request(&headers, b"Hello, World!", "10.0.0.1"), &env())
                .map_err(|refused| refused.to_string()),
            Err("no auth rule of this channel admitted the request: hmac: UNSET is not set on the server (set it to the shared secret)".into())
        );
    }

    #[test]
    fn slack_and_standard_webhooks_refuse_stale_timestamps() {
        let body = b"{\"type\":\"event_callback\"}";
        let mut headers = HeaderMap::new();
        let ts = "1700000000";
        let sig = sign_hex(b"It's a Secret to Everybody", &[b"v0:1700000000:", body]);
        headers.insert("x-slack-request-timestamp", ts.parse().unwrap());
        headers.insert("x-slack-signature", format!("v0={sig}").parse().unwrap());
        let chain = [rule(HmacProvider::Slack, "SECRET")];
        assert_eq!(
            admit(&chain, &request(&headers, body, "10.0.0.1"), &env()),
            Ok(())
        );
        let mut late = request(&headers, body, "10.0.0.1");
        late.now += 301;
        assert!(
            admit(&chain, &late, &env())
                .unwrap_err()
                .to_string()
                .contains("stale")
        );

        let key = STANDARD.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&key).unwrap();
        mac.update(b"msg_1.1700000000.");
        mac.update(body);
        let good = STANDARD.encode(mac.finalize().into_bytes());
        let mut headers = HeaderMap::new();
        headers.insert("webhook-id", "msg_1".parse().unwrap());
        headers.insert("webhook-timestamp", ts.parse().unwrap());
        headers.insert(
            "webhook-signature",
            format!("v1,AAAA v1,{good}").parse().unwrap(),
        );
        let chain = [rule(HmacProvider::StandardWebhooks, "WHSEC")];
        assert_eq!(
            admit(&chain, &request(&headers, body, "10.0.0.1"), &env()),
            Ok(())
        );
        headers.insert("webhook-id", "msg_2".parse().unwrap());
        assert!(admit(&chain, &request(&headers, body, "10.0.0.1"), &env()).is_err());
    }

    #[test]
    fn timestamps_at_the_ends_of_i64_are_stale_not_a_panic() {
        // Found writing the `webhook` fuzz target (fuzz/regressions/webhook/).
        for at in [i64::MIN, i64::MIN + 1_700_000_000, i64::MAX] {
            assert_eq!(
                fresh(&at.to_string(), 1_700_000_000, "X-Slack-Request-Timestamp"),
                Err(SignatureError::Stale("X-Slack-Request-Timestamp".into()))
            );
        }
        assert_eq!(fresh("1700000300", 1_700_000_000, "t"), Ok(()));
    }

    #[test]
    fn the_first_matching_rule_wins() {
        let chain = [
            AuthRule::LocalDevStrict,
            AuthRule::Bearer(BearerAuth {
                token_env: "TOKEN".into(),
            }),
        ];
        let mut headers = HeaderMap::new();
        assert_eq!(
            admit(&chain, &request(&headers, b"", "127.0.0.1"), &env()),
            Ok(())
        );
        assert!(admit(&chain, &request(&headers, b"", "10.0.0.1"), &env()).is_err());
        headers.insert("authorization", "Bearer t0k3n".parse().unwrap());
        assert_eq!(
            admit(&chain, &request(&headers, b"", "10.0.0.1"), &env()),
            Ok(())
        );
        let generic = [rule(HmacProvider::Generic, "SECRET")];
        let sig = sign_hex(b"It's a Secret to Everybody", &[b"{}"]);
        headers.insert("x-signature", format!("sha256={sig}").parse().unwrap());
        assert_eq!(
            admit(&generic, &request(&headers, b"{}", "10.0.0.1"), &env()),
            Ok(())
        );
        assert_eq!(
            admit(
                &[AuthRule::AllowAll],
                &request(&HeaderMap::new(), b"", "10.0.0.1"),
                &env()
            ),
            Ok(())
        );
    }
}
