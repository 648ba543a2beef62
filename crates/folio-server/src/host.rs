//! The host API socket: the routes a session's processes call with `FOLIO_HOST_TOKEN`
//! (docs/host-api.md), served for one agent's [`SessionManager`] on a Unix socket under its
//! state root (`<state>/host.sock`, mode 0600, so nothing listens on a port), or on a loopback
//! port where a socket cannot be made (a state root path too long for a socket address).
//!
//! Every route is `POST /v1/host/<group>/<verb>` with a JSON body, except
//! `GET /v1/host/whoami`. The token names one call of one session; a call acts on that
//! session's data only, and no route takes a session id. A token whose call has ended is
//! refused with `401`, like an unknown one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::extract::{FromRequestParts, Path as UrlPath, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter, on};
use folio_protocol::{
    Acknowledged, CallConnectionTool, CancelReminder, ErrorCode, GetArtifact, HostOutput,
    HostReminders, KvDelete, KvGet, KvList, KvPut, ListArtifacts, OkTrue, Operation, PutArtifact,
    RecordMetric, ReminderResponse, Scope, SetReminder, SpanAttributes, WriteLog,
};
use folio_session::{Grant, Host, ManagerError, SessionManager};
use serde::Serialize;
use serde_json::{Value, json};

use crate::http::{ApiError, ApiJson};

/// Longest path a Unix socket address holds (`sun_path`, less its terminating NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Where the host API of one agent is served, until the manager shuts down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEndpoint {
    /// `unix:<path>` or `http://127.0.0.1:<port>` (what `FOLIO_HOST_URL` says).
    pub url: String,
}

/// Why the host API could not be served.
#[derive(Debug, thiserror::Error)]
#[error("cannot serve the host API at {at}: {source}; check that the state root is writable")]
pub struct HostServeError {
    /// The socket path or address.
    at: String,
    /// The OS error.
    #[source]
    source: std::io::Error,
}

/// Serves `manager`'s host API on `<state_root>/host.sock` (a loopback port when that path is
/// too long for a socket) until the manager shuts down, and tells the manager where, so the
/// grants of its sessions' processes carry the address.
pub async fn serve_host_api(
    manager: &SessionManager,
    state_root: &Path,
) -> Result<HostEndpoint, HostServeError> {
    let app = router(manager.host());
    let shutdown = manager.shutdown_token();
    let socket = socket_path(state_root);
    let url = if socket.as_os_str().len() <= MAX_SOCKET_PATH {
        let listener = bind_socket(&socket).map_err(|source| HostServeError {
            at: socket.display().to_string(),
            source,
        })?;
        tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move { shutdown.cancelled().await })
                .await;
            if let Err(err) = served {
                tracing::warn!("the host API socket stopped: {err}");
            }
        });
        format!("unix:{}", socket.display())
    } else {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|source| HostServeError {
                at: "127.0.0.1".into(),
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| HostServeError {
            at: "127.0.0.1".into(),
            source,
        })?;
        tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move { shutdown.cancelled().await })
                .await;
            if let Err(err) = served {
                tracing::warn!("the host API port stopped: {err}");
            }
        });
        format!("http://{addr}")
    };
    manager.host().serve_at(url.clone());
    Ok(HostEndpoint { url })
}

/// Binds the socket at `path` (a stale one from a crashed server is replaced: the state
/// root's lock says no other server uses it), readable and writable by this user only.
fn bind_socket(path: &Path) -> std::io::Result<tokio::net::UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::remove_file(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => return Err(err),
        _ => {}
    }
    let listener = tokio::net::UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// The host API's routes over `host`: the [`Scope::Call`] routes of the route table (which
/// the OpenAPI document is generated from).
pub fn router(host: Host) -> Router {
    let mut router = Router::new();
    for route in folio_protocol::routes() {
        if route.scope != Scope::Call {
            continue;
        }
        let method = match route.method {
            folio_protocol::Method::Get => MethodFilter::GET,
            folio_protocol::Method::Post => MethodFilter::POST,
            folio_protocol::Method::Delete => MethodFilter::DELETE,
        };
        if let Some(handler) = handler(route.operation, method) {
            router = router.route(route.path, handler);
        }
    }
    router
        .fallback(|| async {
            ApiError::not_found(
                "no such host API route; see docs/host-api.md (POST /v1/host/<group>/<verb>)",
            )
        })
        .with_state(host)
}

/// The handler of each host API operation; `None` for the HTTP API's.
fn handler(operation: Operation, method: MethodFilter) -> Option<MethodRouter<Host>> {
    Some(match operation {
        Operation::HostWhoami => on(method, whoami),
        Operation::HostFiles => on(method, files),
        Operation::HostKvGet => on(method, kv_get),
        Operation::HostKvPut => on(method, kv_put),
        Operation::HostKvDelete => on(method, kv_delete),
        Operation::HostKvList => on(method, kv_list),
        Operation::HostSetReminder => on(method, set_reminder),
        Operation::HostListReminders => on(method, list_reminders),
        Operation::HostCancelReminder => on(method, cancel_reminder),
        Operation::HostPutArtifact => on(method, put_artifact),
        Operation::HostGetArtifact => on(method, get_artifact),
        Operation::HostListArtifacts => on(method, list_artifacts),
        Operation::HostListConnections => on(method, list_connections),
        Operation::HostCallConnection => on(method, call_connection),
        Operation::HostSpanAttributes => on(method, span_attributes),
        Operation::HostMetric => on(method, metric),
        Operation::HostLog => on(method, log),
        Operation::CreateSession
        | Operation::FollowUp
        | Operation::GetSession
        | Operation::DeleteSession
        | Operation::StopSession
        | Operation::ForkSession
        | Operation::IssueToken
        | Operation::SaveEvalCase
        | Operation::StreamSession
        | Operation::SessionEvents
        | Operation::ResolveApproval
        | Operation::CallSessionTool
        | Operation::SetReminder
        | Operation::ListReminders
        | Operation::CancelReminder
        | Operation::ListSessions
        | Operation::CallTool
        | Operation::DescribeAgent
        | Operation::ListSchedules
        | Operation::Logs
        | Operation::ListVariants
        | Operation::Limits
        | Operation::ListArtifacts
        | Operation::GetArtifact
        | Operation::ArtifactContent
        | Operation::ListEvals
        | Operation::GetEval
        | Operation::OpenApi
        | Operation::ListAgents => return None,
    })
}

/// A request's grant: its bearer token is live, and its session has calls left.
struct Caller(Arc<Grant>);

impl FromRequestParts<Host> for Caller {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, host: &Host) -> Result<Self, Self::Rejection> {
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::trim);
        let Some(token) = token else {
            return Err(ApiError::new(
                ErrorCode::Unauthorized,
                "no bearer token: send Authorization: Bearer $FOLIO_HOST_TOKEN (set for the processes of a session's tool calls and hooks)",
            )
            .into_response());
        };
        let Some(grant) = host.authorize(token) else {
            return Err(ApiError::new(
                ErrorCode::Unauthorized,
                "the host token is not valid: it is unknown, or the call it was issued for has ended (a token works only while its process runs)",
            )
            .into_response());
        };
        host.admit(&grant).map_err(refusal)?;
        Ok(Caller(grant))
    }
}

/// A manager error as an answer: its status and body, with `Retry-After` on a `429`.
fn refusal(err: ManagerError) -> Response {
    ApiError::from(err).into_response()
}

/// Records the call (`action.host_call`) and answers with `body` or the error.
async fn answer<T: Serialize>(
    host: &Host,
    grant: &Grant,
    operation: &str,
    detail: Value,
    result: Result<T, ManagerError>,
) -> Response {
    host.record(grant, operation, detail, result.as_ref().err())
        .await;
    match result {
        Ok(body) => (StatusCode::OK, axum::Json(body)).into_response(),
        Err(err) => refusal(err),
    }
}

async fn whoami(State(host): State<Host>, Caller(grant): Caller) -> Response {
    (StatusCode::OK, axum::Json(host.whoami(&grant))).into_response()
}

async fn files(
    State(host): State<Host>,
    Caller(grant): Caller,
    UrlPath(operation): UrlPath<String>,
    ApiJson(input): ApiJson<Value>,
) -> Response {
    let result = host.files(&grant, &operation, input.clone()).await;
    let detail = match &result {
        Ok((_, detail)) => detail.clone(),
        Err(_) => json!({"path": input.get("path").cloned().unwrap_or(Value::Null)}),
    };
    let result = result.map(|(output, _)| HostOutput { ok: OkTrue, output });
    answer(&host, &grant, &format!("files.{operation}"), detail, result).await
}

async fn kv_get(
    State(host): State<Host>,
    Caller(grant): Caller,
    ApiJson(request): ApiJson<KvGet>,
) -> Response {
    let result = host.kv_get(&grant, &request).await;
    kv_answer(&host, &grant, "kv.get", result).await
}

async fn kv_put(
    State(host): State<Host>,
    Caller(grant): Caller,
    ApiJson(request): ApiJson<KvPut>,
) -> Response {
    let result = host.kv_put(&grant, &request).await;
    kv_answer(&host, &grant, "kv.put", result).await
}

async fn kv_delete(
    State(host): State<Host>,
    Caller(grant): Caller,
    ApiJson(request): ApiJson<KvDelete>,
) -> Response {
    let result = host.kv_delete(&grant, &request).await;
    kv_answer(&host, &grant, "kv.delete", result).await
}

async fn kv_list(
    State(host): State<Host>,
    Caller(grant): Caller,
    ApiJson(request): ApiJson<KvList>,
) -> Response {
    let result = host.kv_list(&grant, &request).await;
    kv_answer(&host, &grant, "kv.list", result).await
}

/// Answers a storage call, recording the detail the engine gave (or, refused, nothing more
/// than the error).
async fn kv_answer<T: Serialize>(
    host: &Host,
    grant: &Grant,
    operation: &str,
    result: Result<(T, Value), ManagerError>,
) -> Response {
    let (result, detail) = match result {
        Ok((body, detail)) => (Ok(body), detail),
        Err(err) => (Err(err), Value::Null),
    };
    answer(host, grant, operation, detail, result).await
}

async fn set_reminder(
    State(host): State<Host>,
    Caller(grant): Caller,
    ApiJson(request): ApiJson<SetReminder>,
) -> Response {
    let result = host.set_reminder(&grant, request).await;
    let detail = match &result {
        Ok(reminder) => json!({"reminderId": reminder.reminder_id, "at": reminder.at}),
        Err(_) => Value::Null,
    };
    let result = result.map(|reminder| ReminderResponse {
        ok: OkTrue,
        reminder,
    });
    answer(&host, &grant, "reminders.set", detail, result).await
}

async fn list_reminders(State(host): State<Host>, Caller(grant): Caller) -> Response {
    let result = host
        .reminders_of(&grant)
        .await
        .map(|reminders| HostReminders {
            ok: OkTrue,
            reminders,
        });
    let detail = match &result {
        Ok(list) => json!({"count": list.reminders.len()}),
        Err(_) => Value::Null,
    };
    answer(&host, &grant, "reminders.list", detail, result).await
}

async fn cancel_reminder(
    State(host): State<Host>,
    Caller(grant): Caller,
    ApiJson(request): ApiJson<CancelReminder>,
) -> Response {
    let result = host
        .cancel_reminder(&grant, &request.reminder_id)
        .await
        .map(|()| Acknowledged { ok: OkTrue });
    let detail = json!({"reminderId": request.reminder_id});
    answer(&host, &grant, "reminders.cancel", detail, result).await
}

async fn put_artifact(
    State(host): State<Host>,
    Caller(grant): Caller,
    ApiJson(request): ApiJson<PutArtifact>,
) -> Response {
    let detail = json!({"kind": request.kind, "key": request.key});
    let result = host.put_artifact(&grant, request).await;
    let detail = match &result {
        Ok(put) => {
            json!({"artifactId": put.artifact.id, "kind": put.artifact.kind, "key": put.artifact.key})
        }
        Err(_) => detail,
    };
    answer(&host, &grant, "artifacts.put", detail, result).await
}

async fn get_artifact(
    State(host): State<Host>,
    Caller(grant): Caller,
    ApiJson(request): ApiJson<GetArtifact>,
) -> Response {
    let result = host.get_artifact(&request).await;
    let detail =
        json!({"artifactId": request.artifact_id, "kind": request.kind, "key": request.key});
    answer(&host, &grant, "artifacts.get", detail, result).await
}

async fn list_artifacts(
    State(host): State<Host>,
    Caller(grant): Caller,
    ApiJson(request): ApiJson<ListArtifacts>,
) -> Response {
    let result = host.list_artifacts(&grant, &request).await;
    let detail = json!({"kind": request.kind, "sessionOnly": request.session_only});
    answer(&host, &grant, "artifacts.list", detail, result).await
}

async fn list_connections(State(host): State<Host>, Caller(grant): Caller) -> Response {
    let listed = host.connections().await;
    let detail = json!({"connections": listed.connections.iter().map(|c| &c.connection).collect::<Vec<_>>()});
    answer(&host, &grant, "connections.list", detail, Ok(listed)).await
}

async fn call_connection(
    State(host): State<Host>,
    Caller(grant): Caller,
    ApiJson(request): ApiJson<CallConnectionTool>,
) -> Response {
    let detail = json!({"connection": request.connection, "tool": request.tool});
    let result = host.call_connection(request).await;
    answer(&host, &grant, "connections.call", detail, result).await
}

async fn span_attributes(
    State(host): State<Host>,
    Caller(grant): Caller,
    ApiJson(request): ApiJson<SpanAttributes>,
) -> Response {
    let result = host
        .span_attributes(&grant, &request)
        .map(|_| Acknowledged { ok: OkTrue });
    let detail = json!({"names": request.attributes.keys().collect::<Vec<_>>()});
    answer(&host, &grant, "telemetry.attributes", detail, result).await
}

async fn metric(
    State(host): State<Host>,
    Caller(grant): Caller,
    ApiJson(request): ApiJson<RecordMetric>,
) -> Response {
    let result = host
        .metric(&grant, &request)
        .map(|()| Acknowledged { ok: OkTrue });
    let detail = json!({"name": request.name, "kind": request.kind, "value": request.value});
    answer(&host, &grant, "telemetry.metric", detail, result).await
}

async fn log(
    State(host): State<Host>,
    Caller(grant): Caller,
    ApiJson(request): ApiJson<WriteLog>,
) -> Response {
    let level = request.level;
    let bytes = request.message.len();
    let result = host
        .log(&grant, request)
        .map(|()| Acknowledged { ok: OkTrue });
    let detail = json!({"level": level, "bytes": bytes});
    answer(&host, &grant, "telemetry.log", detail, result).await
}

/// The socket path of a state root's host API (for tools and tests that look for it).
pub fn socket_path(state_root: &Path) -> PathBuf {
    state_root.join("host.sock")
}
