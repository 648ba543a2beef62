//! Who is calling: `local-dev-strict` (loopback only, no proxy headers), bearer tokens (one
//! principal each), or anonymous. Tokens are compared in constant time.

use std::net::SocketAddr;
use std::path::Path;

use http::HeaderMap;
use subtle::ConstantTimeEq;

/// Headers a proxy adds; `local-dev-strict` refuses requests carrying any of them.
const FORWARDED_HEADERS: [&str; 3] = ["forwarded", "x-forwarded-for", "x-real-ip"];

/// How requests are authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    /// Direct loopback callers only, as principal `local`.
    LocalDevStrict,
    /// `Authorization: Bearer <token>`; each token authenticates as its principal.
    Tokens(Vec<(String, String)>),
    /// No auth: principal `anonymous`.
    Anonymous,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// Missing or wrong credentials (`401 unauthorized`).
    #[error("{0}")]
    Unauthorized(String),
    /// Not allowed from here (`403 forbidden`).
    #[error("{0}")]
    Forbidden(String),
}

/// Why `folio serve`'s auth flags do not make an [`Auth`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthConfigError {
    /// `--bearer-token ""`.
    #[error("--bearer-token must not be empty")]
    EmptyBearerToken,
    /// The tokens file cannot be read or is not `principal = "token"` lines.
    #[error("tokens file {}: {message}", path.display())]
    TokensFile {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// `--allow-anonymous` with a token flag.
    #[error("--allow-anonymous cannot be combined with --bearer-token or --tokens-file")]
    AnonymousWithTokens,
}

/// One principal of a tokens file: `alice = "token"`, or
/// `alice = { token = "token", limits = { messages_per_minute = 10 } }` with its own quotas.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenEntry {
    /// The principal.
    pub principal: String,
    /// Its bearer token.
    pub token: String,
    /// Its own quotas (`limits = { … }`), as written; the server reads their keys.
    pub limits: Option<toml::Table>,
}

/// Reads a tokens file (`principal = "token"` or `principal = { token, limits }` entries).
pub fn read_tokens_file(path: &Path) -> Result<Vec<TokenEntry>, AuthConfigError> {
    let invalid = |message: String| AuthConfigError::TokensFile {
        path: path.to_path_buf(),
        message,
    };
    let text =
        std::fs::read_to_string(path).map_err(|err| invalid(format!("cannot be read: {err}")))?;
    let table: toml::Table = toml::from_str(&text).map_err(|err| invalid(err.to_string()))?;
    let mut entries = Vec::new();
    for (principal, value) in table {
        let (token, limits) = match value {
            toml::Value::Table(mut entry) => {
                let limits = match entry.remove("limits") {
                    None => None,
                    Some(toml::Value::Table(limits)) => Some(limits),
                    Some(_) => {
                        return Err(invalid(format!(
                            "{principal}.limits must be a table, e.g. {{ messages_per_minute = 10 }}"
                        )));
                    }
                };
                let token = entry.remove("token");
                if let Some(key) = entry.keys().next() {
                    return Err(invalid(format!(
                        "{principal}.{key} is not a key: an entry has token and limits"
                    )));
                }
                (token, limits)
            }
            other => (Some(other), None),
        };
        let Some(token) = token
            .as_ref()
            .and_then(toml::Value::as_str)
            .filter(|t| !t.is_empty())
        else {
            return Err(invalid(format!(
                "{principal} must be a non-empty string token"
            )));
        };
        entries.push(TokenEntry {
            token: token.to_string(),
            principal,
            limits,
        });
    }
    Ok(entries)
}

impl Auth {
    /// The auth of `folio serve`'s flags: `--allow-anonymous`, `--bearer-token` (principal
    /// `bearer`), `--tokens-file` (TOML `principal = "token"`), or `local-dev-strict`.
    pub fn from_flags(
        bearer_token: Option<&str>,
        tokens_file: Option<&Path>,
        allow_anonymous: bool,
    ) -> Result<Auth, AuthConfigError> {
        let mut tokens = Vec::new();
        if let Some(token) = bearer_token {
            if token.is_empty() {
                return Err(AuthConfigError::EmptyBearerToken);
            }
            tokens.push(("bearer".to_string(), token.to_string()));
        }
        if let Some(path) = tokens_file {
            for entry in read_tokens_file(path)? {
                tokens.push((entry.principal, entry.token));
            }
        }
        match (tokens.is_empty(), allow_anonymous) {
            (true, true) => Ok(Auth::Anonymous),
            (true, false) => Ok(Auth::LocalDevStrict),
            (false, false) => Ok(Auth::Tokens(tokens)),
            (false, true) => Err(AuthConfigError::AnonymousWithTokens),
        }
    }

    /// The principal of a request from `peer` with `headers`.
    pub fn authenticate(&self, headers: &HeaderMap, peer: SocketAddr) -> Result<String, AuthError> {
        match self {
            Auth::Anonymous => Ok("anonymous".to_string()),
            Auth::LocalDevStrict => {
                if let Some(name) = FORWARDED_HEADERS.iter().find(|h| headers.contains_key(**h)) {
                    return Err(AuthError::Forbidden(format!(
                        "local-dev-strict refuses proxied requests ({name} header); serve with --bearer-token or --tokens-file behind a proxy"
                    )));
                }
                if !peer.ip().is_loopback() {
                    return Err(AuthError::Forbidden(
                        "local-dev-strict admits loopback callers only; serve with --bearer-token or --tokens-file".into(),
                    ));
                }
                Ok("local".to_string())
            }
            Auth::Tokens(tokens) => {
                let presented = headers
                    .get(http::header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.strip_prefix("Bearer "))
                    .ok_or_else(|| {
                        AuthError::Unauthorized("missing Authorization: Bearer <token>".into())
                    })?;
                // Compare against every token so timing does not reveal which one matched.
                let mut found = None;
                for (principal, token) in tokens {
                    if bool::from(token.as_bytes().ct_eq(presented.as_bytes())) {
                        found = Some(principal.clone());
                    }
                }
                found.ok_or_else(|| AuthError::Unauthorized("invalid bearer token".into()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(ip: &str) -> SocketAddr {
        format!("{ip}:1234").parse().unwrap()
    }

    #[test]
    fn local_dev_strict_admits_loopback_without_proxy_headers() {
        let auth = Auth::LocalDevStrict;
        let mut headers = HeaderMap::new();
        assert_eq!(
            auth.authenticate(&headers, peer("127.0.0.1")),
            Ok("local".into())
        );
        assert!(matches!(
            auth.authenticate(&headers, peer("10.0.0.2")),
            Err(AuthError::Forbidden(_))
        ));
        for name in FORWARDED_HEADERS {
            headers.clear();
            headers.insert(name, "1.2.3.4".parse().unwrap());
            assert!(matches!(
                auth.authenticate(&headers, peer("127.0.0.1")),
                Err(AuthError::Forbidden(_))
            ));
        }
    }

    fn headers_with(authorization: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("authorization", authorization.parse().unwrap());
        headers
    }

    #[test]
    fn tokens_map_to_principals() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.toml");
        std::fs::write(&file, "alice = \"a-token\"\nbob = \"b-token\"\n").unwrap();
        let auth = Auth::from_flags(None, Some(&file), false).unwrap();
        let mut headers = HeaderMap::new();
        assert!(matches!(
            auth.authenticate(&headers, peer("127.0.0.1")),
            Err(AuthError::Unauthorized(_))
        ));
        headers.insert("authorization", "Bearer b-token".parse().unwrap());
        assert_eq!(
            auth.authenticate(&headers, peer("10.1.1.1")),
            Ok("bob".into())
        );
        headers.insert("authorization", "Bearer nope".parse().unwrap());
        assert!(matches!(
            auth.authenticate(&headers, peer("127.0.0.1")),
            Err(AuthError::Unauthorized(_))
        ));
        assert!(Auth::from_flags(Some("s"), None, true).is_err());
        std::fs::write(
            &file,
            "alice = \"a-token\"\n[bob]\ntoken = \"b-token\"\nlimits = { sessions = 2 }\n",
        )
        .unwrap();
        let auth = Auth::from_flags(None, Some(&file), false).unwrap();
        assert_eq!(
            auth.authenticate(&headers_with("Bearer b-token"), peer("10.1.1.1")),
            Ok("bob".into())
        );
        let entries = read_tokens_file(&file).unwrap();
        assert_eq!(
            entries[1].limits.as_ref().unwrap()["sessions"].as_integer(),
            Some(2)
        );
        std::fs::write(&file, "[bob]\ntoken = \"b\"\nlimit = 1\n").unwrap();
        assert_eq!(
            read_tokens_file(&file).unwrap_err().to_string(),
            format!(
                "tokens file {}: bob.limit is not a key: an entry has token and limits",
                file.display()
            )
        );
        assert_eq!(Auth::from_flags(None, None, true), Ok(Auth::Anonymous));
    }
}
