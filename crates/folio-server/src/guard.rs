//! The outer guard of every route (docs/http-api.md "Guards"): a web page the
//! developer visits can reach a loopback server, so in every auth mode the `Host` must be a
//! loopback name, the bound address or a configured host (DNS rebinding), a foreign `Origin` or
//! `Sec-Fetch-Site: cross-site` is refused unless the origin is configured, bodies must be JSON
//! (`415` otherwise: `text/plain`, form and multipart bodies need no CORS preflight), and a
//! declared `Content-Length` over the limit is refused at once (`413`). No CORS headers are ever
//! sent. The guard also turns the framework's bare error answers (`405`, a path parameter that is
//! not UTF-8, a timeout) into the `{ok: false, error, message}` body every route uses.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::body::to_bytes;
use axum::extract::{Request, State};
use axum::http::uri::Authority;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use folio_protocol::{ErrorBody, ErrorCode};

/// Largest framework error body the guard reads to reword it as JSON.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// Which hosts and browser origins the server answers beyond loopback and same-origin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Browsers {
    /// Extra `Host` values (`name` matches any port, `name:port` only that port): the bound
    /// address, `--public-url`'s host and every `--allowed-host`.
    allowed_hosts: Vec<HostEntry>,
    /// Extra origins (`scheme://host[:port]`, or `null`): `--public-url` and `--allowed-origin`.
    allowed_origins: Vec<String>,
}

/// A configured host, lowercased, brackets stripped from IPv6 literals.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostEntry {
    host: String,
    port: Option<u16>,
}

/// A host or origin flag that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BrowsersError {
    /// `--allowed-host` is not `name` or `name:port`.
    #[error("--allowed-host {0:?} is not a host name or host:port (e.g. folio.example.com)")]
    Host(String),
    /// `--allowed-origin` / `--public-url` is not `scheme://host[:port]`.
    #[error(
        "{flag} {value:?} is not an origin: write scheme://host[:port] (e.g. https://folio.example.com)"
    )]
    Origin {
        /// The flag that carried it.
        flag: &'static str,
        /// What was given.
        value: String,
    },
}

impl Browsers {
    /// The policy of `folio serve`'s flags: the server listens on `bound`; `public_url` is the
    /// address clients use behind a proxy (its host and origin are allowed); `hosts` and
    /// `origins` are `--allowed-host` and `--allowed-origin`.
    pub fn from_flags(
        bound: SocketAddr,
        public_url: Option<&str>,
        hosts: &[String],
        origins: &[String],
    ) -> Result<Browsers, BrowsersError> {
        let mut browsers = Browsers::default();
        if !bound.ip().is_unspecified() {
            browsers.allowed_hosts.push(HostEntry {
                host: normalize_host(&bound.ip().to_string()),
                port: None,
            });
        }
        if let Some(url) = public_url {
            let origin = normalize_origin(url.trim_end_matches('/')).ok_or_else(|| {
                BrowsersError::Origin {
                    flag: "--public-url",
                    value: url.to_string(),
                }
            })?;
            let authority = origin.split_once("://").map_or("", |(_, rest)| rest);
            browsers
                .allowed_hosts
                .push(parse_host(authority).ok_or_else(|| BrowsersError::Origin {
                    flag: "--public-url",
                    value: url.to_string(),
                })?);
            browsers.allowed_origins.push(origin);
        }
        for host in hosts {
            let entry = parse_host(host).ok_or_else(|| BrowsersError::Host(host.clone()))?;
            browsers.allowed_hosts.push(entry);
        }
        for origin in origins {
            let normalized = normalize_origin(origin).ok_or_else(|| BrowsersError::Origin {
                flag: "--allowed-origin",
                value: origin.clone(),
            })?;
            browsers.allowed_origins.push(normalized);
        }
        Ok(browsers)
    }

    /// The `Host` values rmcp's own check on `/v1/mcp` admits: loopback names and the
    /// configured hosts (the guard has already applied the full rule).
    pub(crate) fn mcp_hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).into();
        for entry in &self.allowed_hosts {
            hosts.push(match entry.port {
                Some(port) if entry.host.contains(':') => format!("[{}]:{port}", entry.host),
                Some(port) => format!("{}:{port}", entry.host),
                None => entry.host.clone(),
            });
        }
        hosts
    }

    /// Why a request with `headers` must be refused (`None`: the browser rules admit it).
    /// `authority` is the request target's, which HTTP/2 carries instead of a `Host` header.
    fn refusal(
        &self,
        method: &Method,
        headers: &HeaderMap,
        authority: Option<&str>,
    ) -> Option<Refusal> {
        let host = headers
            .get(header::HOST)
            .map(|v| v.to_str().unwrap_or(""))
            .or(authority);
        if let Some(host) = host {
            let admitted = parse_host(host).is_some_and(|entry| self.host_admitted(&entry));
            if !admitted {
                return Some(Refusal::forbidden(format!(
                    "Host {host:?} is not served here (DNS rebinding guard): use localhost or the listening address, or start the server with --allowed-host / --public-url"
                )));
            }
        }
        let origin = headers
            .get(header::ORIGIN)
            .map(|v| v.to_str().unwrap_or(""));
        let listed = origin.is_some_and(|o| {
            normalize_origin(o).is_some_and(|o| self.allowed_origins.contains(&o))
        });
        if let Some(origin) = origin
            && !listed
            && !same_origin(origin, host)
        {
            return Some(Refusal::forbidden(format!(
                "requests from the web origin {origin:?} are refused: only same-origin pages may call this server; start it with --allowed-origin {origin} to admit that site"
            )));
        }
        let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
        if fetch_site.is_some_and(|s| s.eq_ignore_ascii_case("cross-site")) && !listed {
            return Some(Refusal::forbidden(
                "cross-site browser requests are refused (Sec-Fetch-Site: cross-site); open the page from this server or start it with --allowed-origin",
            ));
        }
        if carries_body(method, headers) && !is_json(headers) {
            let given = headers
                .get(header::CONTENT_TYPE)
                .map_or("none".to_string(), |v| {
                    String::from_utf8_lossy(v.as_bytes()).into_owned()
                });
            return Some(Refusal {
                code: ErrorCode::UnsupportedMediaType,
                message: format!(
                    "request bodies must be JSON: send Content-Type: application/json (got {given})"
                ),
            });
        }
        None
    }

    fn host_admitted(&self, entry: &HostEntry) -> bool {
        let loopback = entry.host == "localhost"
            || entry
                .host
                .parse::<IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        loopback
            || self.allowed_hosts.iter().any(|allowed| {
                allowed.host == entry.host && allowed.port.is_none_or(|p| entry.port == Some(p))
            })
    }
}

/// A refused request: the error code (which fixes the status) and the message for a person.
struct Refusal {
    code: ErrorCode,
    message: String,
}

impl Refusal {
    fn forbidden(message: impl Into<String>) -> Refusal {
        Refusal {
            code: ErrorCode::Forbidden,
            message: message.into(),
        }
    }
}

/// The `{ok: false, error, message}` answer.
fn error_response(code: ErrorCode, message: &str) -> Response {
    let status = StatusCode::from_u16(code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(ErrorBody::new(code, message))).into_response()
}

/// The configured body limit, for extractors that report a `413`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLimit(pub(crate) usize);

/// The `413` message naming the configured limit.
pub(crate) fn too_large_message(limit: usize) -> String {
    format!(
        "the request body is over the limit ({}); send less or raise the server's body limit",
        human_size(limit)
    )
}

/// `1048576` → `1 MiB`, `2048` → `2 KiB`, anything else in bytes.
fn human_size(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    match bytes {
        0 => "0 bytes".into(),
        b if b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b % KIB == 0 => format!("{} KiB", b / KIB),
        b => format!("{b} bytes"),
    }
}

/// The guard's settings: the browser rules and the body limit.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    /// Hosts and origins admitted beyond loopback and same-origin.
    pub(crate) browsers: Browsers,
    /// Largest accepted request body.
    pub(crate) body_limit: usize,
}

impl Guard {
    /// The guard of a router admitting `browsers` and bodies up to `body_limit` bytes.
    pub(crate) fn new(browsers: Browsers, body_limit: usize) -> Arc<Guard> {
        Arc::new(Guard {
            browsers,
            body_limit,
        })
    }
}

/// The middleware: refuses what the browser rules and the body limit forbid, then rewords bare
/// framework errors as JSON.
pub(crate) async fn guard(
    State(guard): State<Arc<Guard>>,
    mut req: Request,
    next: Next,
) -> Response {
    let body_limit = guard.body_limit;
    if let Some(refusal) = guard.browsers.refusal(
        req.method(),
        req.headers(),
        req.uri().authority().map(|a| a.as_str()),
    ) {
        return error_response(refusal.code, &refusal.message);
    }
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > body_limit as u64) {
        return error_response(ErrorCode::PayloadTooLarge, &too_large_message(body_limit));
    }
    req.extensions_mut().insert(BodyLimit(body_limit));
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let response = next.run(req).await;
    json_error(response, &method, &path).await
}

/// A `4xx`/`5xx` answer whose body is not JSON becomes `{ok: false, error, message}`.
async fn json_error(response: Response, method: &Method, path: &str) -> Response {
    let status = response.status();
    let is_json_body = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| media_type(ct).ends_with("json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json_body {
        return response;
    }
    let allow = response.headers().get(header::ALLOW).cloned();
    let text = match to_bytes(response.into_body(), ERROR_BODY_LIMIT).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_string(),
        Err(_) => String::new(),
    };
    let (code, fallback) = match status {
        StatusCode::METHOD_NOT_ALLOWED => (
            ErrorCode::MethodNotAllowed,
            format!("{method} is not allowed on {path}; see the route table in the API docs"),
        ),
        StatusCode::NOT_FOUND => (ErrorCode::NotFound, format!("no such route: {path}")),
        StatusCode::REQUEST_TIMEOUT => (
            ErrorCode::RequestTimeout,
            "the request took too long to answer; try again".to_string(),
        ),
        StatusCode::UNAUTHORIZED => (
            ErrorCode::Unauthorized,
            "missing or bad credentials".to_string(),
        ),
        StatusCode::FORBIDDEN => (ErrorCode::Forbidden, "not allowed".to_string()),
        StatusCode::PAYLOAD_TOO_LARGE => {
            (ErrorCode::PayloadTooLarge, "the body is too large".into())
        }
        StatusCode::UNSUPPORTED_MEDIA_TYPE => (
            ErrorCode::UnsupportedMediaType,
            "send Content-Type: application/json".to_string(),
        ),
        s if s.is_server_error() => (
            ErrorCode::Internal,
            "the server failed; see its log".to_string(),
        ),
        _ => (ErrorCode::InvalidRequest, format!("bad request to {path}")),
    };
    let message = if text.is_empty() {
        fallback
    } else {
        text.lines().next().unwrap_or_default().to_string()
    };
    let mut out = error_response(code, &message);
    // Statuses without a code of their own (e.g. 406 from /v1/mcp) keep their status.
    *out.status_mut() = status;
    // Keep `Allow` on 405 so clients still learn the methods.
    if let Some(allow) = allow {
        out.headers_mut().insert(header::ALLOW, allow);
    }
    out
}

/// Whether the request carries a body that must be JSON.
fn carries_body(method: &Method, headers: &HeaderMap) -> bool {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return headers.contains_key(header::CONTENT_TYPE) && has_content(headers);
    }
    headers.contains_key(header::CONTENT_TYPE) || has_content(headers)
}

/// A non-zero `Content-Length` or a chunked body.
fn has_content(headers: &HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() != "0")
}

/// `application/json` or `application/<something>+json`.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(ct) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let media = media_type(ct);
    media == "application/json"
        || media
            .strip_prefix("application/")
            .is_some_and(|sub| sub.ends_with("+json"))
}

/// The lowercased media type of a `Content-Type` value, without parameters.
fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// `name` or `name:port` (IPv6 in brackets) as a host entry; `None` when it is not one.
fn parse_host(value: &str) -> Option<HostEntry> {
    let authority: Authority = value.trim().parse().ok()?;
    if authority.as_str().contains('@') || authority.host().is_empty() {
        return None;
    }
    Some(HostEntry {
        host: normalize_host(authority.host()),
        port: authority.port_u16(),
    })
}

/// `scheme://host[:port]` lowercased with the scheme's default port dropped, or `null`.
fn normalize_origin(value: &str) -> Option<String> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("null") {
        return Some("null".into());
    }
    let uri: axum::http::Uri = value.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    if !matches!(scheme.as_str(), "http" | "https") || !matches!(uri.path(), "" | "/") {
        return None;
    }
    let entry = parse_host(uri.authority()?.as_str())?;
    let default_port = if scheme == "https" { 443 } else { 80 };
    let host = if entry.host.contains(':') {
        format!("[{}]", entry.host)
    } else {
        entry.host
    };
    Some(match entry.port {
        Some(port) if port != default_port => format!("{scheme}://{host}:{port}"),
        _ => format!("{scheme}://{host}"),
    })
}

/// Whether `origin` names this server as reached through `host` (the `Host` header).
fn same_origin(origin: &str, host: Option<&str>) -> bool {
    let (Some(origin), Some(host)) = (normalize_origin(origin), host.and_then(parse_host)) else {
        return false;
    };
    ["http", "https"].iter().any(|scheme| {
        let own = match host.port {
            Some(port) => format!("{scheme}://{}:{port}", bracket(&host.host)),
            None => format!("{scheme}://{}", bracket(&host.host)),
        };
        normalize_origin(&own).is_some_and(|own| own == origin)
    })
}

fn bracket(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn hosts_are_loopback_bound_or_configured() {
        let bound: SocketAddr = "10.0.0.5:3000".parse().unwrap();
        let browsers = Browsers::from_flags(
            bound,
            Some("https://folio.example.com"),
            &["api.internal:8443".into()],
            &[],
        )
        .unwrap();
        let cases = [
            ("localhost:3000", true),
            ("LOCALHOST", true),
            ("127.0.0.1:3000", true),
            ("127.9.9.9", true),
            ("[::1]:3000", true),
            ("10.0.0.5:3000", true),
            ("folio.example.com", true),
            ("api.internal:8443", true),
            ("api.internal:8444", false),
            ("attacker.example:3000", false),
            ("127.0.0.1.nip.io:3000", false),
            ("localhost.attacker.example", false),
            ("user@localhost", false),
            ("", false),
        ];
        for (host, admitted) in cases {
            let refused = browsers
                .refusal(&Method::GET, &headers(&[("host", host)]), None)
                .is_some();
            assert_eq!(refused, !admitted, "Host {host:?}");
            // HTTP/2 names the host in the request target instead.
            if !host.is_empty() {
                let by_target = browsers.refusal(&Method::GET, &HeaderMap::new(), Some(host));
                assert_eq!(by_target.is_some(), !admitted, "authority {host:?}");
            }
        }
    }

    #[test]
    fn origins_must_be_same_or_listed() {
        let bound: SocketAddr = "127.0.0.1:3000".parse().unwrap();
        let browsers =
            Browsers::from_flags(bound, None, &[], &["https://app.example.com".into()]).unwrap();
        let cases = [
            ("http://localhost:3000", true),
            ("http://LOCALHOST:3000/", true),
            ("http://localhost:3001", false),
            ("https://app.example.com:443", true),
            ("http://app.example.com", false),
            ("null", false),
            ("http://attacker.example", false),
            ("garbage", false),
        ];
        for (origin, admitted) in cases {
            let h = headers(&[("host", "localhost:3000"), ("origin", origin)]);
            assert_eq!(
                browsers.refusal(&Method::GET, &h, None).is_none(),
                admitted,
                "Origin {origin:?}"
            );
        }
    }

    #[test]
    fn bad_flags_are_refused() {
        let bound: SocketAddr = "127.0.0.1:3000".parse().unwrap();
        assert_eq!(
            Browsers::from_flags(bound, None, &["a b".into()], &[]),
            Err(BrowsersError::Host("a b".into()))
        );
        assert!(Browsers::from_flags(bound, Some("folio.example.com"), &[], &[]).is_err());
        assert!(Browsers::from_flags(bound, None, &[], &["ftp://x".into()]).is_err());
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(human_size(1024 * 1024), "1 MiB");
        assert_eq!(human_size(4096), "4 KiB");
        assert_eq!(human_size(1000), "1000 bytes");
    }
}
