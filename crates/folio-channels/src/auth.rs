//! A channel's auth chain: `local-dev-strict`, `bearer` (token from an env var), `hmac` (GitHub,
//! Slack v0, generic header + scheme, Standard Webhooks) and `allow-all`, first match wins.
//! Every signature is compared in constant time (`Mac::verify_slice`).

use std::net::SocketAddr;

use axum::http::HeaderMap;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use folio_auth::Auth;
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

/// Runs `chain` over the request: `Ok` when one rule admits it, else every rule's reason.
pub(crate) fn admit(chain: &[AuthRule], request: &Presented, env: &Env) -> Result<(), String> {
    let mut reasons = Vec::new();
    for rule in chain {
        match check(rule, request, env) {
            Ok(()) => return Ok(()),
            Err(reason) => reasons.push(reason),
        }
    }
    Err(format!(
        "no auth rule of this channel admitted the request: {}",
        reasons.join("; ")
    ))
}

fn check(rule: &AuthRule, request: &Presented, env: &Env) -> Result<(), String> {
    match rule {
        AuthRule::AllowAll => Ok(()),
        AuthRule::LocalDevStrict => Auth::LocalDevStrict
            .authenticate(request.headers, request.peer)
            .map(drop)
            .map_err(|err| format!("local-dev-strict: {err}")),
        AuthRule::Bearer(bearer) => {
            let token = secret(env, &bearer.token_env, "bearer")?;
            Auth::Tokens(vec![("channel".into(), token)])
                .authenticate(request.headers, request.peer)
                .map(drop)
                .map_err(|err| format!("bearer: {err}"))
        }
        AuthRule::Hmac(hmac) => {
            let key = secret(env, &hmac.secret_env, "hmac")?;
            check_hmac(hmac, &key, request).map_err(|reason| format!("hmac: {reason}"))
        }
    }
}

/// The secret in `name`; an unset variable fails the rule (fail closed) with a reason saying so.
fn secret(env: &Env, name: &str, rule: &str) -> Result<String, String> {
    env(name).filter(|v| !v.is_empty()).ok_or_else(|| {
        format!("{rule}: {name} is not set on the server (set it to the shared secret)")
    })
}

fn header<'a>(request: &'a Presented, name: &str) -> Result<&'a str, String> {
    request
        .headers
        .get(name)
        .ok_or_else(|| format!("{name} header missing"))?
        .to_str()
        .map_err(|_| format!("{name} header is not ASCII"))
}

fn check_hmac(hmac: &HmacAuth, secret: &str, request: &Presented) -> Result<(), String> {
    match hmac.provider {
        HmacProvider::Github => {
            let signature = header(request, "x-hub-signature-256")?;
            let hex = signature
                .strip_prefix("sha256=")
                .ok_or("X-Hub-Signature-256 does not start with sha256=")?;
            verify(secret.as_bytes(), &[request.body], &decode_hex(hex)?)
                .map_err(|()| "X-Hub-Signature-256 does not match the body".to_string())
        }
        HmacProvider::Generic => {
            let name = hmac.header.as_deref().unwrap_or("x-signature-256");
            let signature = header(request, name)?;
            let scheme = hmac.scheme.as_deref().unwrap_or("");
            let hex = signature
                .strip_prefix(scheme)
                .ok_or_else(|| format!("{name} does not start with {scheme}"))?;
            verify(secret.as_bytes(), &[request.body], &decode_hex(hex)?)
                .map_err(|()| format!("{name} does not match the body"))
        }
        HmacProvider::Slack => {
            let timestamp = header(request, "x-slack-request-timestamp")?;
            fresh(timestamp, request.now, "X-Slack-Request-Timestamp")?;
            let signature = header(request, "x-slack-signature")?;
            let hex = signature
                .strip_prefix("v0=")
                .ok_or("X-Slack-Signature does not start with v0=")?;
            let prefix = format!("v0:{timestamp}:");
            verify(
                secret.as_bytes(),
                &[prefix.as_bytes(), request.body],
                &decode_hex(hex)?,
            )
            .map_err(|()| "X-Slack-Signature does not match the body".to_string())
        }
        HmacProvider::StandardWebhooks => {
            let id = header(request, "webhook-id")?;
            let timestamp = header(request, "webhook-timestamp")?;
            fresh(timestamp, request.now, "webhook-timestamp")?;
            let signatures = header(request, "webhook-signature")?;
            let key = STANDARD
                .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
                .map_err(|_| "the secret is not whsec_<base64>".to_string())?;
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
                Err("no webhook-signature matches the body".into())
            }
        }
    }
}

/// Refuses a timestamp more than five minutes from now (replays).
fn fresh(timestamp: &str, now: i64, name: &str) -> Result<(), String> {
    let at: i64 = timestamp
        .parse()
        .map_err(|_| format!("{name} is not Unix seconds"))?;
    if (now - at).abs() > TIMESTAMP_TOLERANCE_SECS {
        return Err(format!(
            "{name} is more than 5 minutes from the server's clock (stale or replayed)"
        ));
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

fn decode_hex(hex: &str) -> Result<Vec<u8>, String> {
    let invalid = || "the signature is not hex".to_string();
    if !hex.len().is_multiple_of(2) {
        return Err(invalid());
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(invalid)
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
        assert_eq!(
            admit(&chain, &request(&headers, b"Hello, World?", "10.0.0.1"), &env()),
            Err("no auth rule of this channel admitted the request: hmac: X-Hub-Signature-256 does not match the body".into())
        );
        let unset = [rule(HmacProvider::Github, "UNSET")];
        assert_eq!(
            admit(&unset, &request(&headers, b"Hello, World!", "10.0.0.1"), &env()),
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
        assert!(admit(&chain, &late, &env()).unwrap_err().contains("stale"));

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
