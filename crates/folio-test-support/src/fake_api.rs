//! [`FakeApi`]: a local stand-in for a provider's HTTP API (GitHub's REST API, Slack's Web API,
//! a `[deliver]` target) that records every call and answers scripted statuses, so a test
//! asserts exactly what Folio sent. It can also serve git repositories over smart HTTP
//! ([`FakeApi::serve_git`], `git http-backend` as a CGI), asking for GitHub's installation
//! token the way GitHub does (HTTP Basic `x-access-token:<token>`).

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// One call the fake API received.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiCall {
    /// `POST`, `PATCH`, …
    pub method: String,
    /// The path with its query (`/repos/o/r/issues/1/comments`).
    pub path: String,
    /// Headers, lowercase names.
    pub headers: BTreeMap<String, String>,
    /// The JSON body (`null` when empty or not JSON).
    pub body: Value,
    /// When it arrived (to check that a client waited, e.g. a `Retry-After`).
    pub received_at: Instant,
}

/// A scripted answer: a status, with `Retry-After` (seconds) for a rate-limited one.
#[derive(Debug, Clone, Copy)]
struct Scripted {
    status: u16,
    retry_after: Option<u64>,
}

#[derive(Default)]
struct Shared {
    calls: Mutex<Vec<ApiCall>>,
    statuses: Mutex<VecDeque<Scripted>>,
    bodies: Mutex<BTreeMap<String, Value>>,
    git: Mutex<Option<GitRepos>>,
}

/// The repositories served under `/git/`.
#[derive(Clone)]
struct GitRepos {
    root: PathBuf,
    token: Option<String>,
}

/// The path prefix of the served repositories.
const GIT_PREFIX: &str = "/git/";

/// A recording HTTP API on `127.0.0.1:0`: every request is recorded, then answered with the
/// next scripted status (default 200) and a JSON body: the one scripted for its path
/// ([`FakeApi::respond`]), else `{"ok": true, "id": <n>, "ts": "<n>"}` (`n` counts calls from
/// 1: the ids GitHub and the message timestamps Slack hand out). A rate-limited answer
/// ([`FakeApi::rate_limit`]) is a `429` with `Retry-After` and Slack's
/// `{"ok": false, "error": "ratelimited"}`.
pub struct FakeApi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl FakeApi {
    /// Starts the fake API.
    ///
    /// # Panics
    /// When no loopback port can be bound (a broken test machine, not a test failure).
    pub async fn start() -> FakeApi {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .fallback(record)
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("fake API: cannot bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("fake API: no local address");
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                eprintln!("fake API stopped: {error}");
            }
        });
        FakeApi { addr, shared, task }
    }

    /// `http://127.0.0.1:P`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Answers the next calls with these statuses, in order (then 200 again).
    pub fn answer(&self, statuses: impl IntoIterator<Item = u16>) {
        lock(&self.shared.statuses).extend(statuses.into_iter().map(|status| Scripted {
            status,
            retry_after: None,
        }));
    }

    /// Answers the next call (after those already scripted) with `429 Too Many Requests` and
    /// `Retry-After: <seconds>`.
    pub fn rate_limit(&self, seconds: u64) {
        lock(&self.shared.statuses).push_back(Scripted {
            status: 429,
            retry_after: Some(seconds),
        });
    }

    /// Answers every call to `path` (without its query) with `body` instead of the default.
    pub fn respond(&self, path: &str, body: Value) {
        lock(&self.shared.bodies).insert(path.to_string(), body);
    }

    /// Serves the bare repositories under `root` at `<url>/git/<path under root>` (git smart
    /// HTTP through `git http-backend`); with `token`, only to requests whose `Authorization`
    /// is `Basic base64(x-access-token:<token>)` (others get `401`). These requests are recorded
    /// as calls too.
    pub fn serve_git(&self, root: &Path, token: Option<&str>) {
        *lock(&self.shared.git) = Some(GitRepos {
            root: root.to_path_buf(),
            token: token.map(String::from),
        });
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<ApiCall> {
        lock(&self.shared.calls).clone()
    }

    /// Waits until `n` calls were recorded (at most `timeout`), then returns every call.
    pub async fn wait_for(&self, n: usize, timeout: Duration) -> Vec<ApiCall> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let calls = self.calls();
            if calls.len() >= n || tokio::time::Instant::now() >= deadline {
                return calls;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Answers a git smart HTTP request with `git http-backend` (a CGI), after the token check.
async fn git_backend(git: &GitRepos, call: &ApiCall, body: &[u8]) -> Response {
    use base64::Engine as _;
    use tokio::io::AsyncWriteExt;
    if let Some(token) = &git.token {
        let expected = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"))
        );
        if call.headers.get("authorization") != Some(&expected) {
            return (
                StatusCode::UNAUTHORIZED,
                [(axum::http::header::WWW_AUTHENTICATE, "Basic realm=\"git\"")],
                "the installation token is missing or wrong",
            )
                .into_response();
        }
    }
    let (path, query) = call.path.split_once('?').unwrap_or((&call.path, ""));
    let header = |name: &str| call.headers.get(name).cloned().unwrap_or_default();
    let child = tokio::process::Command::new("git")
        .arg("http-backend")
        .env("GIT_PROJECT_ROOT", &git.root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("PATH_INFO", &path[GIT_PREFIX.len() - 1..])
        .env("QUERY_STRING", query)
        .env("REQUEST_METHOD", &call.method)
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("GIT_PROTOCOL", header("git-protocol"))
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(err) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("git http-backend: {err}"),
            )
                .into_response();
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(body).await;
    }
    let output = match child.wait_with_output().await {
        Ok(output) => output,
        Err(err) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("git http-backend: {err}"),
            )
                .into_response();
        }
    };
    cgi_response(&output.stdout)
}

/// A CGI program's output (headers, a blank line, the body) as an HTTP answer.
fn cgi_response(out: &[u8]) -> Response {
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| (at, 4))
        .or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|at| (at, 2)));
    let Some((at, gap)) = split else {
        return (StatusCode::BAD_GATEWAY, "git http-backend wrote no headers").into_response();
    };
    let mut builder = axum::http::Response::builder().status(StatusCode::OK);
    for line in String::from_utf8_lossy(&out[..at]).lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value
                .split_whitespace()
                .next()
                .and_then(|c| c.parse().ok())
                .unwrap_or(500);
            builder = builder.status(code);
        } else {
            builder = builder.header(name.trim(), value);
        }
    }
    builder
        .body(axum::body::Body::from(out[at + gap..].to_vec()))
        .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
}

async fn record(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let method = req.method().to_string();
    let path = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.uri().path().to_string(), |p| p.to_string());
    let scripted = lock(&shared.bodies).get(req.uri().path()).cloned();
    let headers = req
        .headers()
        .iter()
        .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_string())))
        .collect();
    let bytes = axum::body::to_bytes(req.into_body(), 16 * 1024 * 1024)
        .await
        .unwrap_or_else(|_| Bytes::new());
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let received_at = Instant::now();
    let git = lock(&shared.git).clone();
    if let Some(git) = git
        && path.starts_with(GIT_PREFIX)
    {
        let call = ApiCall {
            method,
            path,
            headers,
            body,
            received_at,
        };
        let answer = git_backend(&git, &call, &bytes).await;
        lock(&shared.calls).push(call);
        return answer;
    }
    let n = {
        let mut calls = lock(&shared.calls);
        calls.push(ApiCall {
            method,
            path,
            headers,
            body,
            received_at,
        });
        calls.len()
    };
    let answer = lock(&shared.statuses).pop_front().unwrap_or(Scripted {
        status: 200,
        retry_after: None,
    });
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Some(seconds) = answer.retry_after {
        let body = serde_json::json!({"ok": false, "error": "ratelimited"});
        return (
            status,
            [(axum::http::header::RETRY_AFTER, seconds.to_string())],
            axum::Json(body),
        )
            .into_response();
    }
    let body =
        scripted.unwrap_or_else(|| serde_json::json!({"ok": true, "id": n, "ts": n.to_string()}));
    (status, axum::Json(body)).into_response()
}
