//! The HTTP API (docs/http-api.md): one thin handler per route — parse, call the
//! [`SessionManager`], map the result to a status. Every body read or written is a
//! [`folio_protocol`] type; errors are [`ErrorBody`] (`{ok: false, error, message}`).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, DefaultBodyLimit, FromRequest, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter, get, on};
use axum::{Extension, Json, Router};
use folio_protocol::{
    Access, Acknowledged, AgentDescription, AgentHeader, AgentSummary, ApiServers, ApprovalRequest,
    ArtifactResponse, ConnectionDescription, CreateSession, DiagnosticInfo, Empty, ErrorBody,
    ErrorCode, EvalRunResponse, FollowUp, FollowUpAccepted, ForkSession, LogsResponse, OkTrue,
    Operation, Page, ReminderResponse, SaveEvalCase, SchedulesResponse, Scope, SessionCreated,
    SessionResponse, SetReminder, ToolCallRequest, ToolDescription, Visibility,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::guard::{BodyLimit, Browsers, Guard};
use crate::principal::Principal;
use folio_auth::{Auth, AuthError};
use folio_session::ManagerError;
use folio_session::SessionManager;
use folio_session::StateRoot;

/// The default request body limit: 1 MiB.
pub const BODY_LIMIT: usize = 1024 * 1024;

/// One agent served by the host.
#[derive(Clone)]
pub struct Mount {
    /// URL segment of the agent in the multi-agent layout.
    pub slug: String,
    /// The agent's sessions.
    pub manager: SessionManager,
    /// Discovery diagnostics (shown by `/v1/agent`).
    pub diagnostics: Vec<DiagnosticInfo>,
    /// The state root whose `evals/` holds the agent's stored runs (`GET /v1/evals`): the
    /// project's [`folio_store_disk::eval_runs_root`] in either layout, where `folio eval` writes.
    pub evals: StateRoot,
}

/// Where agent routes live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Every agent under `/<slug>`.
    Multi,
    /// The one agent's routes at the root.
    Single,
}

/// Host-wide HTTP settings.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// How callers authenticate.
    pub auth: Auth,
    /// Multi-agent or single layout.
    pub layout: Layout,
    /// Largest accepted request body.
    pub body_limit: usize,
    /// How long a request may take to answer (streams answer at once, then stay open).
    pub request_timeout: Duration,
    /// Serve the playground page at `/<slug>/playground`.
    pub playground: bool,
    /// `--dev`: loopback callers may list every principal's sessions (`?scope=all`), which the
    /// playground's Runs list uses; session routes still answer only their owner.
    pub dev: bool,
    /// Hosts and browser origins admitted beyond loopback and same-origin (see [`Browsers`]).
    pub browsers: Browsers,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            auth: Auth::LocalDevStrict,
            layout: Layout::Multi,
            body_limit: BODY_LIMIT,
            request_timeout: Duration::from_secs(120),
            playground: true,
            dev: false,
            browsers: Browsers::default(),
        }
    }
}

/// The caller's address as the auth layer saw it (unspecified when the server did not say).
#[derive(Debug, Clone, Copy)]
struct Peer(SocketAddr);

/// An error answer: an [`ErrorBody`] with the status of its code, and `Retry-After` (whole
/// seconds, at least 1) when waiting helps.
#[derive(Debug)]
pub(crate) struct ApiError(ErrorBody, Option<Duration>);

impl ApiError {
    pub(crate) fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError(ErrorBody::new(code, message), None)
    }

    fn invalid(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::InvalidRequest, message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::NotFound, message)
    }

    fn forbidden(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::Forbidden, message)
    }
}

impl From<ManagerError> for ApiError {
    fn from(err: ManagerError) -> Self {
        ApiError(
            ErrorBody::new(err.code(), err.to_string()),
            err.retry_after(),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0.error.status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, Json(self.0)).into_response();
        if let Some(wait) = self.1 {
            let seconds = folio_protocol::retry_after_seconds(wait);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

type ApiResult = Result<Response, ApiError>;

/// A success answer: `body` (a [`folio_protocol`] type carrying `ok: true`) with `status`.
fn ok(status: StatusCode, body: impl Serialize) -> ApiResult {
    Ok((status, Json(body)).into_response())
}

/// A JSON body: over the limit → 413, malformed or unknown field → 400 naming the field.
pub(crate) struct ApiJson<T>(pub(crate) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let limit = req
            .extensions()
            .get::<BodyLimit>()
            .map_or(BODY_LIMIT, |l| l.0);
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    ErrorCode::PayloadTooLarge,
                    crate::guard::too_large_message(limit),
                )
            } else {
                ApiError::invalid(format!("body: {}", rejection.body_text()))
            }
        })?;
        decode_body(&bytes)
            .map(ApiJson)
            .map_err(|body| ApiError(body, None))
    }
}

/// Reads a JSON route's request body as `T`, as every route does: an empty body is `{}`,
/// anything but a JSON object is refused, and malformed JSON or an unknown field is the
/// `invalid_request` error naming it. Public for the fuzz targets (`folio-fuzz`).
#[doc(hidden)]
pub fn decode_body<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ErrorBody> {
    let invalid = |message: String| ErrorBody::new(ErrorCode::InvalidRequest, message);
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        bytes
    };
    // Every body is a JSON object: serde would also read a struct from an array.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(invalid(
            "body: expected a JSON object ({...}); see the route's request schema".into(),
        ));
    }
    serde_json::from_slice(bytes).map_err(|err| invalid(format!("body: {err}")))
}

/// State of one agent's routes.
#[derive(Clone)]
struct AgentState {
    mount: Arc<Mount>,
    /// URL prefix of the agent (`/<slug>` or empty).
    prefix: String,
    /// Whether `--dev` lets loopback callers list every principal's sessions.
    dev: bool,
    /// Browser rules and body limit (also handed to `/v1/mcp`).
    guard: Arc<Guard>,
    /// `GET /v1/openapi.json`: the API's document with this agent's prefix as its server.
    openapi: Bytes,
}

/// The router of every mount, with auth, body limit and timeouts; serve it with
/// `into_make_service_with_connect_info::<SocketAddr>()`.
pub fn router(mounts: Vec<Mount>, config: HttpConfig) -> Router {
    router_with(mounts, config, Vec::new())
}

/// [`router`] plus routers that authenticate each request themselves (channels): each
/// `(slug, routes)` pair is mounted under that agent's prefix (`/<slug>` or the root) behind
/// the guard, body limit, panic and timeout layers, but not the caller auth.
pub fn router_with(mounts: Vec<Mount>, config: HttpConfig, extra: Vec<(String, Router)>) -> Router {
    let guard = Guard::new(config.browsers.clone(), config.body_limit);
    let agents: Vec<AgentSummary> = mounts
        .iter()
        .map(|m| {
            let def = &m.manager.agent().definition;
            AgentSummary {
                slug: m.slug.clone(),
                name: def.name.clone(),
                description: def.description.clone(),
            }
        })
        .collect();
    let mut app = Router::new();
    // The playground's files hold no data: they are served without authentication (the page
    // asks for a token when the API answers 401), behind the same browser guard.
    let mut pages = Router::new();
    // The OAuth redirects of MCP authorizations come from a browser, which carries no caller
    // credentials: served without authentication (the single-use `state` is the capability),
    // behind the same browser guard. So are the route table's open routes (the OpenAPI
    // document, which holds no data).
    let mut callbacks = Router::new();
    for mount in &mounts {
        let prefix = match config.layout {
            Layout::Multi => format!("/{}", mount.slug),
            Layout::Single => String::new(),
        };
        let (routes, open) = agent_routes(AgentState {
            mount: Arc::new(mount.clone()),
            openapi: folio_protocol::openapi_json(ApiServers::Prefixes(std::slice::from_ref(
                &prefix,
            )))
            .into(),
            prefix: prefix.clone(),
            dev: config.dev,
            guard: guard.clone(),
        });
        // The Agent Protocol (LangGraph clients) next to Folio's routes, behind the same auth.
        let def = &mount.manager.agent().definition;
        let routes = routes.merge(folio_agent_protocol::router(
            folio_agent_protocol::AgentMount {
                slug: mount.slug.clone(),
                name: def.name.clone(),
                description: def.description.clone(),
                manager: mount.manager.clone(),
            },
        ));
        let page = crate::playground::routes();
        let callback = Router::new()
            .route(MCP_AUTH_CALLBACK, get(mcp_auth_callback))
            .with_state(mount.manager.clone())
            .merge(open);
        (app, pages, callbacks) = match config.layout {
            Layout::Multi => (
                app.nest(&prefix, routes),
                pages.nest(&prefix, page),
                callbacks.nest(&prefix, callback),
            ),
            Layout::Single => (
                app.merge(routes),
                pages.merge(page),
                callbacks.merge(callback),
            ),
        };
    }
    if config.layout == Layout::Multi {
        // The host's own copy of the document names every agent's prefix as a server.
        let prefixes: Vec<String> = mounts.iter().map(|m| format!("/{}", m.slug)).collect();
        let document = Bytes::from(folio_protocol::openapi_json(ApiServers::Prefixes(
            &prefixes,
        )));
        callbacks = callbacks.route(
            route_path(Operation::OpenApi),
            get(move || async move { json_document(document) }),
        );
    }
    let index_agents = agents.clone();
    let layout = config.layout;
    let playground = config.playground;
    app = app
        .route(
            route_path(Operation::ListAgents),
            get(move || {
                let agents = agents.clone();
                async move { Json(agents) }
            }),
        )
        .route(
            "/",
            get(move || async move { index_page(&index_agents, layout, playground) }),
        )
        .route_layer(axum::middleware::from_fn(crate::http_trace::traced))
        .fallback(|| async { ApiError::not_found("no such route") });
    let auth = Arc::new(config.auth.clone());
    let mut app = app.layer(axum::middleware::from_fn(move |req, next| {
        let auth = auth.clone();
        authenticate(auth, req, next)
    }));
    app = app.merge(callbacks.route_layer(axum::middleware::from_fn(crate::http_trace::traced)));
    if config.playground {
        app = app.merge(pages);
    }
    for (slug, routes) in extra {
        // Extra routes (channels) get their `agent_sdk.http` span and incoming trace context too.
        let routes = routes.layer(axum::middleware::from_fn(crate::http_trace::traced));
        app = match config.layout {
            Layout::Multi => app.nest(&format!("/{slug}"), routes),
            Layout::Single => app.merge(routes),
        };
    }
    app.layer(DefaultBodyLimit::max(config.body_limit))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            |_panic: Box<dyn std::any::Any + Send>| {
                ApiError::from(ManagerError::internal(
                    "the server failed while answering; see its log",
                ))
                .into_response()
            },
        ))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            config.request_timeout,
        ))
        .layer(axum::middleware::from_fn_with_state(
            guard,
            crate::guard::guard,
        ))
}

/// The agent routes of the route table (`folio_protocol::routes`, which the OpenAPI document is
/// generated from) and `/v1/mcp`: those behind the caller's auth, and the open ones.
fn agent_routes(state: AgentState) -> (Router, Router) {
    let mut routes = Router::new();
    let mut open = Router::new();
    for route in folio_protocol::routes() {
        if route.scope != Scope::Agent {
            continue;
        }
        let method = match route.method {
            folio_protocol::Method::Get => MethodFilter::GET,
            folio_protocol::Method::Post => MethodFilter::POST,
            folio_protocol::Method::Delete => MethodFilter::DELETE,
        };
        let Some(handler) = handler(route.operation, method) else {
            continue;
        };
        match route.access {
            Access::Caller => routes = routes.route(route.path, handler),
            Access::Open => open = open.route(route.path, handler),
            // The host API's routes are served on its socket (`crate::host`), never here.
            Access::HostToken => {}
        }
    }
    // The agent as an MCP server: a protocol of its own, not in the route table.
    let routes = routes.route_service(
        "/v1/mcp",
        crate::mcp::service(
            state.mount.manager.clone(),
            state.mount.manager.shutdown_token(),
            &state.guard,
        ),
    );
    (routes.with_state(state.clone()), open.with_state(state))
}

/// The handler of each agent operation of the route table; `None` for the host's routes and
/// the host API's.
fn handler(operation: Operation, method: MethodFilter) -> Option<MethodRouter<AgentState>> {
    Some(match operation {
        Operation::CreateSession => on(method, create_session),
        Operation::FollowUp => on(method, follow_up),
        Operation::GetSession => on(method, get_session),
        Operation::DeleteSession => on(method, delete_session),
        Operation::StopSession => on(method, stop_session),
        Operation::ForkSession => on(method, fork_session),
        Operation::IssueToken => on(method, issue_token),
        Operation::SaveEvalCase => on(method, save_eval_case),
        Operation::StreamSession => on(method, stream_session),
        Operation::SessionEvents => on(method, session_events),
        Operation::ResolveApproval => on(method, resolve_approval),
        Operation::CallSessionTool => on(method, session_tool),
        Operation::SetReminder => on(method, set_reminder),
        Operation::ListReminders => on(method, list_reminders),
        Operation::CancelReminder => on(method, cancel_reminder),
        Operation::ListSessions => on(method, list_sessions),
        Operation::CallTool => on(method, unscoped_tool),
        Operation::DescribeAgent => on(method, agent_info),
        Operation::ListSchedules => on(method, list_schedules),
        Operation::Logs => on(method, logs),
        Operation::ListVariants => on(method, list_variants),
        Operation::Limits => on(method, limits),
        Operation::ListArtifacts => on(method, list_artifacts),
        Operation::GetArtifact => on(method, get_artifact),
        Operation::ArtifactContent => on(method, artifact_content),
        Operation::ListEvals => on(method, list_evals),
        Operation::GetEval => on(method, get_eval),
        Operation::OpenApi => on(method, |State(state): State<AgentState>| async move {
            json_document(state.openapi)
        }),
        Operation::ListAgents
        | Operation::HostWhoami
        | Operation::HostFiles
        | Operation::HostKvGet
        | Operation::HostKvPut
        | Operation::HostKvDelete
        | Operation::HostKvList
        | Operation::HostSetReminder
        | Operation::HostListReminders
        | Operation::HostCancelReminder
        | Operation::HostPutArtifact
        | Operation::HostGetArtifact
        | Operation::HostListArtifacts
        | Operation::HostListConnections
        | Operation::HostCallConnection
        | Operation::HostSpanAttributes
        | Operation::HostMetric
        | Operation::HostLog => return None,
    })
}

/// The path of `operation` in the route table.
fn route_path(operation: Operation) -> &'static str {
    folio_protocol::routes()
        .iter()
        .find(|route| route.operation == operation)
        .map_or("/", |route| route.path)
}

/// A JSON document served as is.
fn json_document(document: Bytes) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], document).into_response()
}

/// The route an MCP server's authorization server redirects a principal's browser to, under
/// the agent's prefix (`folio serve` passes `<agent URL>` + this as the redirect URI).
pub const MCP_AUTH_CALLBACK: &str = "/v1/mcp-auth/callback";

/// `GET /v1/mcp-auth/callback?state=…&code=…`: hands the redirect to the turn parked on that
/// authorization and tells the person, in plain text, whether it worked. Never cached, and the
/// page sends no referrer (its URL holds the code).
async fn mcp_auth_callback(
    State(manager): State<SessionManager>,
    Query(params): Query<HashMap<String, String>>,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Response {
    let outcome = match params.get("state") {
        Some(state) => {
            manager
                .approvals().mcp_authorization_redirect(state, query.as_deref().unwrap_or_default())
                .await
        }
        None => Err(ManagerError::Invalid(
            "this is not an OAuth redirect (no state): open the authorization URL the session's action.authorization_requested event shows".into(),
        )),
    };
    let (status, text) = match outcome {
        Ok(()) => (
            StatusCode::OK,
            "Folio is authorized; the session's turn goes on. You can close this tab.".to_string(),
        ),
        Err(err) => (
            StatusCode::from_u16(err.code().status()).unwrap_or(StatusCode::BAD_REQUEST),
            format!("Folio is not authorized: {err}"),
        ),
    };
    (
        status,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        format!("{text}\n"),
    )
        .into_response()
}

async fn authenticate(auth: Arc<Auth>, mut req: Request, next: Next) -> Response {
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0)
        // Without the peer address nothing proves the caller is local: fail closed.
        .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
    match auth.authenticate(req.headers(), peer) {
        Ok(principal) => {
            // The Agent Protocol routes read the same principal.
            req.extensions_mut()
                .insert(folio_agent_protocol::Caller(principal.clone()));
            req.extensions_mut().insert(Principal(principal));
            req.extensions_mut().insert(Peer(peer));
            next.run(req).await
        }
        Err(AuthError::Unauthorized(message)) => {
            ApiError::new(ErrorCode::Unauthorized, message).into_response()
        }
        Err(AuthError::Forbidden(message)) => ApiError::forbidden(message).into_response(),
    }
}

async fn create_session(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    headers: HeaderMap,
    ApiJson(mut body): ApiJson<CreateSession>,
) -> ApiResult {
    body.client_message_id = idempotency_key(&headers, body.client_message_id)?;
    let accepted = state
        .mount
        .manager
        .sessions()
        .create(&principal, "http", body)
        .await?;
    created(&state.prefix, accepted)
}

async fn follow_up(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Path(id): Path<String>,
    headers: HeaderMap,
    ApiJson(mut body): ApiJson<FollowUp>,
) -> ApiResult {
    body.client_message_id = idempotency_key(&headers, body.client_message_id)?;
    let accepted = state
        .mount
        .manager
        .turns()
        .follow_up(&principal, &id, body)
        .await?;
    crate::http_trace::covering(
        accepted.events,
        StatusCode::OK,
        FollowUpAccepted {
            ok: OkTrue,
            session_id: accepted.session_id,
            continuation_token: accepted.continuation_token,
        },
    )
}

/// The idempotency key of a message: the `Idempotency-Key` header or the body's
/// `clientMessageId` (both given, they must agree).
fn idempotency_key(headers: &HeaderMap, body: Option<String>) -> Result<Option<String>, ApiError> {
    let Some(header) = headers.get("idempotency-key") else {
        return Ok(body);
    };
    let header = header
        .to_str()
        .map_err(|_| ApiError::invalid("Idempotency-Key: must be visible ASCII characters"))?;
    match body {
        Some(body) if body != header => Err(ApiError::invalid(
            "clientMessageId: differs from the Idempotency-Key header; send one of them, or the same key in both",
        )),
        _ => Ok(Some(header.to_string())),
    }
}

async fn fork_session(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ForkSession>,
) -> ApiResult {
    let accepted = state
        .mount
        .manager
        .sessions()
        .fork(&principal, &id, body)
        .await?;
    created(&state.prefix, accepted)
}

/// The `201` answer of a new session (create and fork).
fn created(prefix: &str, accepted: folio_session::Accepted) -> ApiResult {
    let id = &accepted.session_id;
    let events = accepted.events.clone();
    crate::http_trace::covering(
        events,
        StatusCode::CREATED,
        SessionCreated {
            ok: OkTrue,
            playground_url: format!("{prefix}/playground?session={id}"),
            trace_url: format!("{prefix}/v1/session/{id}/events"),
            session_id: accepted.session_id,
            continuation_token: accepted.continuation_token,
        },
    )
}

async fn issue_token(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Path(id): Path<String>,
    ApiJson(Empty {}): ApiJson<Empty>,
) -> ApiResult {
    let accepted = state
        .mount
        .manager
        .sessions()
        .issue_token(&principal, &id)
        .await?;
    ok(
        StatusCode::OK,
        FollowUpAccepted {
            ok: OkTrue,
            session_id: accepted.session_id,
            continuation_token: accepted.continuation_token,
        },
    )
}

async fn save_eval_case(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<SaveEvalCase>,
) -> ApiResult {
    let saved = state
        .mount
        .manager
        .evals()
        .save_case(&principal, &id, &body.name)
        .await?;
    ok(StatusCode::CREATED, saved)
}

async fn stop_session(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Path(id): Path<String>,
    ApiJson(Empty {}): ApiJson<Empty>,
) -> ApiResult {
    state.mount.manager.turns().stop(&principal, &id).await?;
    ok(StatusCode::OK, Acknowledged::default())
}

async fn delete_session(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult {
    state
        .mount
        .manager
        .sessions()
        .delete(&principal, &id)
        .await?;
    ok(StatusCode::OK, Acknowledged::default())
}

async fn get_session(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult {
    let session = state.mount.manager.sessions().get(&principal, &id).await?;
    ok(
        StatusCode::OK,
        SessionResponse {
            ok: OkTrue,
            session,
        },
    )
}

/// The query parameters of `GET /v1/sessions`.
const LIST_PARAMS: &[&str] = &[
    "limit",
    "cursor",
    "q",
    "scope",
    "principal",
    "status",
    "metaKey",
    "metaValue",
    "createdFrom",
    "createdBefore",
    "updatedFrom",
    "updatedBefore",
];

async fn list_sessions(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Extension(Peer(peer)): Extension<Peer>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    for key in query.keys() {
        if !LIST_PARAMS.contains(&key.as_str()) {
            return Err(ApiError::invalid(format!(
                "unknown query parameter {key}: expected one of {}",
                LIST_PARAMS.join(", ")
            )));
        }
    }
    let limit = match query.get("limit") {
        Some(limit) => limit
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=200).contains(n))
            .ok_or_else(|| ApiError::invalid("limit must be a number from 1 to 200"))?,
        None => 50,
    };
    let cursor = query.get("cursor").map(String::as_str);
    let q = query.get("q").map(String::as_str);
    let filter = session_filter(&query)?;
    let listed = match query.get("scope").map(String::as_str) {
        None | Some("mine") => {
            if query.contains_key("principal") {
                return Err(ApiError::invalid(
                    "principal filters scope=all only (your own sessions are yours): add scope=all, or leave principal out",
                ));
            }
            Some(principal.as_str())
        }
        Some("all") => {
            if !(state.dev && peer.ip().is_loopback()) {
                return Err(ApiError::forbidden(
                    "scope=all lists every principal's sessions only under `folio dev` (or `serve --dev`) for loopback callers",
                ));
            }
            query.get("principal").map(String::as_str)
        }
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "scope must be mine or all, got {other}"
            )));
        }
    };
    let page = state
        .mount
        .manager
        .sessions()
        .list_matching(listed, limit, cursor, q, &filter)
        .await?;
    ok(StatusCode::OK, page)
}

/// The filter of `GET /v1/sessions`: `status`, `metaKey` (with `metaValue`) and the created
/// and updated ranges (RFC 3339 times; `…From` inclusive, `…Before` exclusive).
fn session_filter(query: &HashMap<String, String>) -> Result<folio_store::SessionFilter, ApiError> {
    let status = query
        .get("status")
        .map(|status| {
            serde_json::from_value::<folio_protocol::SessionStatus>(serde_json::Value::String(
                status.clone(),
            ))
            .map_err(|_| {
                ApiError::invalid(format!(
                    "status must be running, waiting, completed or failed, got {status}"
                ))
            })
        })
        .transpose()?;
    let time = |name: &str| {
        query
            .get(name)
            .map(|at| {
                chrono::DateTime::parse_from_rfc3339(at)
                    .map(|at| at.with_timezone(&chrono::Utc))
                    .map_err(|err| {
                        ApiError::invalid(format!(
                            "{name} must be an RFC 3339 time such as 2026-12-01T09:00:00Z, got {at} ({err})"
                        ))
                    })
            })
            .transpose()
    };
    let field = match (query.get("metaKey"), query.get("metaValue")) {
        (Some(key), value) => Some(folio_store::FieldFilter {
            key: folio_store::MetaKey::parse(key).ok_or_else(|| {
                ApiError::invalid(format!(
                    "metaKey must be one of channel, variant, purpose or continuationKey, got {key}"
                ))
            })?,
            value: value.cloned(),
        }),
        (None, Some(_)) => {
            return Err(ApiError::invalid(
                "metaValue needs metaKey: say which field must have that value",
            ));
        }
        (None, None) => None,
    };
    Ok(folio_store::SessionFilter {
        status,
        created: folio_store::TimeRange {
            from: time("createdFrom")?,
            until: time("createdBefore")?,
        },
        updated: folio_store::TimeRange {
            from: time("updatedFrom")?,
            until: time("updatedBefore")?,
        },
        field,
    })
}

fn ndjson(body: Body) -> Response {
    ([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response()
}

/// Appends `event` (or, for `None`, nothing) and a newline to `out`: one NDJSON line.
fn push_line(out: &mut Vec<u8>, event: Option<&folio_protocol::Event>) {
    if let Some(event) = event {
        // An event always serializes (its fields are plain data).
        let _ = serde_json::to_writer(&mut *out, event);
    }
    out.push(b'\n');
}

async fn stream_session(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let start = match query.get("startIndex") {
        Some(n) => n
            .parse::<u64>()
            .map_err(|_| ApiError::invalid("startIndex must be a non-negative integer"))?,
        None => 0,
    };
    let stream = state
        .mount
        .manager
        .events()
        .stream(&principal, &id, start)
        .await?;
    let body = futures::stream::unfold(stream.rx, |mut rx| async move {
        let item = rx.recv().await?;
        Some((Ok::<_, Infallible>(stream_chunk(item, &mut rx)), rx))
    });
    Ok(ndjson(Body::from_stream(body)))
}

/// Bytes of NDJSON a stream writes to its connection at once, at most (a line longer than
/// this goes out whole).
const STREAM_CHUNK: usize = 64 * 1024;

/// `first` and the events already waiting behind it as one body chunk: a stream that fell
/// behind (a turn fanned out to thousands of streams) catches up in a few writes, not one
/// write per event. `None` (a keep-alive tick) is an empty line.
fn stream_chunk(
    first: Option<folio_protocol::Event>,
    rx: &mut folio_session::StreamReceiver,
) -> Bytes {
    let mut chunk = Vec::new();
    let mut item = first;
    loop {
        push_line(&mut chunk, item.as_ref());
        if chunk.len() >= STREAM_CHUNK {
            break;
        }
        match rx.try_recv() {
            Some(next) => item = next,
            None => break,
        }
    }
    Bytes::from(chunk)
}

async fn session_events(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult {
    let events = state.mount.manager.events().read(&principal, &id).await?;
    let mut out = Vec::new();
    for event in &events {
        push_line(&mut out, Some(event));
    }
    Ok(ndjson(Body::from(out)))
}

async fn resolve_approval(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Path((id, call_id)): Path<(String, String)>,
    ApiJson(body): ApiJson<ApprovalRequest>,
) -> ApiResult {
    state
        .mount
        .manager
        .approvals()
        .resolve(&principal, &id, &call_id, body)
        .await?;
    ok(StatusCode::OK, Acknowledged::default())
}

async fn session_tool(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Path((id, name)): Path<(String, String)>,
    ApiJson(body): ApiJson<ToolCallRequest>,
) -> ApiResult {
    let result = state
        .mount
        .manager
        .tools()
        .call(&principal, Some(&id), &name, body.input)
        .await?;
    ok(StatusCode::OK, result)
}

async fn set_reminder(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<SetReminder>,
) -> ApiResult {
    let reminder = state
        .mount
        .manager
        .reminders()
        .set(&principal, &id, body)
        .await?;
    ok(
        StatusCode::CREATED,
        ReminderResponse {
            ok: OkTrue,
            reminder,
        },
    )
}

async fn list_reminders(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult {
    let reminders = state
        .mount
        .manager
        .reminders()
        .list(&principal, &id)
        .await?;
    ok(StatusCode::OK, Page::new(reminders, None))
}

async fn cancel_reminder(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Path((id, reminder_id)): Path<(String, String)>,
) -> ApiResult {
    state
        .mount
        .manager
        .reminders()
        .cancel(&principal, &id, &reminder_id)
        .await?;
    ok(StatusCode::OK, Acknowledged::default())
}

async fn unscoped_tool(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<ToolCallRequest>,
) -> ApiResult {
    let result = state
        .mount
        .manager
        .tools()
        .call(&principal, None, &name, body.input)
        .await?;
    ok(StatusCode::OK, result)
}

async fn agent_info(State(state): State<AgentState>) -> ApiResult {
    let agent = state.mount.manager.agent();
    let def = &agent.definition;
    // The live registry (with MCP tools) answers `tools`; the rest is what discovery found.
    let tools = agent
        .harness
        .tools
        .tools()
        .map(|tool| ToolDescription {
            name: tool.name().to_string(),
            description: tool.description().to_string(),
            input_schema: tool.input_schema(),
            needs_approval: tool.needs_approval(),
        })
        .collect();
    let found = folio_project::describe(def);
    let connections = [
        (found.mcp_connections, Visibility::Model),
        (found.host_connections, Visibility::Host),
    ]
    .into_iter()
    .flat_map(|(list, visible_to)| {
        let failed = &agent.failed_connections;
        list.into_iter()
            .map(move |connection| ConnectionDescription {
                error: (visible_to == Visibility::Model)
                    .then(|| failed.get(&connection.name))
                    .flatten()
                    .map(ToString::to_string),
                connection,
                visible_to,
            })
    })
    .collect();
    ok(
        StatusCode::OK,
        AgentDescription {
            ok: OkTrue,
            agent: AgentHeader {
                slug: state.mount.slug.clone(),
                name: found.name,
                description: found.description,
                model: agent.harness.model.clone(),
                rooted: found.rooted,
            },
            tools,
            skills: found.skills,
            subagents: found.subagents,
            connections,
            channels: found.channels,
            hooks: found.hooks,
            schedules: found.schedules,
            artifacts: found.artifacts,
            diagnostics: state.mount.diagnostics.clone(),
        },
    )
}

async fn list_schedules(State(state): State<AgentState>) -> ApiResult {
    let manager = &state.mount.manager;
    let schedules = folio_session::schedule::statuses_on_disk(
        manager.state(),
        &manager.agent().definition.schedules,
        manager.clock().now(),
    )
    .map_err(|err| ApiError::from(ManagerError::internal_from("the schedules' status", err)))?;
    ok(
        StatusCode::OK,
        SchedulesResponse {
            ok: OkTrue,
            schedules,
        },
    )
}

async fn list_variants(State(state): State<AgentState>) -> ApiResult {
    let variants = state.mount.manager.sessions().variants().await?;
    ok(StatusCode::OK, variants)
}

async fn logs(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let since = match query.get("since") {
        Some(n) => n
            .parse::<u64>()
            .map_err(|_| ApiError::invalid("since must be the seq of a log line"))?,
        None => 0,
    };
    // A principal sees only lines about its own sessions (and server-wide lines).
    let manager = &state.mount.manager;
    let mut owned = std::collections::BTreeSet::new();
    for id in manager.logs().sessions_since(since) {
        if manager.sessions().get(&principal, &id).await.is_ok() {
            owned.insert(id);
        }
    }
    let lines = manager.logs().since_visible(since, |id| owned.contains(id));
    ok(StatusCode::OK, LogsResponse { ok: OkTrue, lines })
}

async fn limits(
    State(state): State<AgentState>,
    Extension(Principal(principal)): Extension<Principal>,
) -> ApiResult {
    ok(
        StatusCode::OK,
        state.mount.manager.limits(&principal).await?,
    )
}

fn artifact_error(err: folio_agent::ArtifactError) -> ApiError {
    ApiError::from(ManagerError::internal_from("the artifacts", err))
}

async fn list_artifacts(State(state): State<AgentState>) -> ApiResult {
    let records = state
        .mount
        .manager
        .agent()
        .artifacts
        .list()
        .await
        .map_err(artifact_error)?;
    ok(StatusCode::OK, Page::new(records, None))
}

async fn get_artifact(State(state): State<AgentState>, Path(id): Path<String>) -> ApiResult {
    let record = state
        .mount
        .manager
        .agent()
        .artifacts
        .get(&id)
        .await
        .map_err(artifact_error)?
        .ok_or_else(|| ApiError::not_found(format!("no artifact {id}")))?;
    ok(
        StatusCode::OK,
        ArtifactResponse {
            ok: OkTrue,
            artifact: record,
        },
    )
}

async fn artifact_content(State(state): State<AgentState>, Path(id): Path<String>) -> ApiResult {
    let (content_type, bytes) = state
        .mount
        .manager
        .agent()
        .artifacts
        .content(&id)
        .await
        .map_err(artifact_error)?
        .ok_or_else(|| ApiError::not_found(format!("artifact {id} has no contents")))?;
    Ok(([(header::CONTENT_TYPE, content_type)], bytes).into_response())
}

fn eval_error(err: folio_store_disk::EvalRunError) -> ApiError {
    ApiError::from(ManagerError::internal_from("the stored eval runs", err))
}

async fn list_evals(State(state): State<AgentState>) -> ApiResult {
    let runs = folio_store_disk::list_eval_runs(&state.mount.evals).map_err(eval_error)?;
    ok(StatusCode::OK, Page::new(runs, None))
}

async fn get_eval(State(state): State<AgentState>, Path(run_id): Path<String>) -> ApiResult {
    let run = folio_store_disk::read_eval_run(&state.mount.evals, &run_id)
        .map_err(eval_error)?
        .ok_or_else(|| ApiError::not_found(format!("no eval run {run_id}")))?;
    ok(StatusCode::OK, EvalRunResponse { ok: OkTrue, run })
}

fn index_page(agents: &[AgentSummary], layout: Layout, playground: bool) -> Response {
    let mut items = String::new();
    for agent in agents {
        let name = html_escape(&agent.name);
        let description = html_escape(agent.description.as_deref().unwrap_or_default());
        let prefix = match layout {
            Layout::Multi => format!("/{}", html_escape(&agent.slug)),
            Layout::Single => String::new(),
        };
        let open = if playground {
            format!(" (<a href=\"{prefix}/playground\">playground</a>)")
        } else {
            String::new()
        };
        items.push_str(&format!(
            "<li><a href=\"{prefix}/v1/agent\">{name}</a>{open} — {description}</li>\n"
        ));
    }
    Html(format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Folio</title></head>\n<body><h1>Folio agents</h1>\n<ul>\n{items}</ul></body></html>\n"
    ))
    .into_response()
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
