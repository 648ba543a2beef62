//! [`OAuthMcpServer`]: a streamable-HTTP MCP server behind OAuth 2.1, with the authorization
//! server it trusts, on `127.0.0.1:0`: protected-resource and authorization-server metadata,
//! dynamic client registration, an authorization endpoint that logs a named user in at once
//! (the test plays the person by following the URL with `user=<name>`), a token endpoint that
//! checks PKCE (S256) and rotates refresh tokens, and short-lived access tokens. Its one tool,
//! `whoami`, answers the user the presented token belongs to, so a test sees whose token a call
//! used. Every token it issues is recorded, so a test can look for them where they must not be.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Form, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use sha2::Digest as _;

/// An OAuth-protected MCP server with its authorization server (see the module docs).
pub struct OAuthMcpServer {
    addr: SocketAddr,
    state: Arc<AuthState>,
}

/// The user a token was issued to (a request extension of an authorized MCP request).
#[derive(Debug, Clone)]
struct User(String);

/// A code waiting for its exchange.
struct Grant {
    user: String,
    client_id: String,
    redirect_uri: String,
    challenge: String,
}

struct AuthState {
    base: String,
    access_ttl: Duration,
    clients: Mutex<Vec<String>>,
    codes: Mutex<HashMap<String, Grant>>,
    access: Mutex<HashMap<String, (String, Instant)>>,
    refresh: Mutex<HashMap<String, String>>,
    issued: Mutex<Vec<String>>,
    refreshes: AtomicUsize,
    counter: AtomicUsize,
}

impl AuthState {
    fn fresh(&self, kind: &str) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let random: u64 = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or_default();
        format!("{kind}-{n}-{random:x}")
    }

    /// Issues an access and a refresh token to `user`, recording both.
    fn issue(&self, user: &str) -> Value {
        let access = self.fresh("at");
        let refresh = self.fresh("rt");
        self.access.lock().unwrap().insert(
            access.clone(),
            (user.to_string(), Instant::now() + self.access_ttl),
        );
        self.refresh
            .lock()
            .unwrap()
            .insert(refresh.clone(), user.to_string());
        self.issued
            .lock()
            .unwrap()
            .extend([access.clone(), refresh.clone()]);
        json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.access_ttl.as_secs(),
            "refresh_token": refresh,
        })
    }
}

impl OAuthMcpServer {
    /// Starts the server; access tokens live `access_ttl`.
    pub async fn start(access_ttl: Duration) -> OAuthMcpServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(AuthState {
            base: format!("http://{addr}"),
            access_ttl,
            clients: Mutex::default(),
            codes: Mutex::default(),
            access: Mutex::default(),
            refresh: Mutex::default(),
            issued: Mutex::default(),
            refreshes: AtomicUsize::new(0),
            counter: AtomicUsize::new(0),
        });
        let mcp = StreamableHttpService::new(
            || Ok(Whoami),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default().with_sse_keep_alive(None),
        );
        let app = Router::new()
            .route_service("/mcp", mcp)
            .route_layer(axum::middleware::from_fn_with_state(state.clone(), bearer))
            .route(
                "/.well-known/oauth-protected-resource",
                get(resource_metadata),
            )
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                get(resource_metadata),
            )
            .route(
                "/.well-known/oauth-authorization-server",
                get(server_metadata),
            )
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(state.clone());
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        OAuthMcpServer { addr, state }
    }

    /// The MCP endpoint (`http://127.0.0.1:P/mcp`).
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Every access and refresh token issued so far.
    pub fn issued_tokens(&self) -> Vec<String> {
        self.state.issued.lock().unwrap().clone()
    }

    /// How many refresh-token grants were answered.
    pub fn refreshes(&self) -> usize {
        self.state.refreshes.load(Ordering::Relaxed)
    }

    /// How many clients registered (one per principal that authorized).
    pub fn registered_clients(&self) -> usize {
        self.state.clients.lock().unwrap().len()
    }
}

/// Lets a request with a live access token through as its user; anything else gets 401 with
/// the challenge pointing at the protected-resource metadata.
async fn bearer(State(state): State<Arc<AuthState>>, mut request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let user = presented.and_then(|token| {
        let access = state.access.lock().unwrap();
        access
            .get(&token)
            .filter(|(_, until)| Instant::now() < *until)
            .map(|(user, _)| user.clone())
    });
    match user {
        Some(user) => {
            request.extensions_mut().insert(User(user));
            next.run(request).await
        }
        None => (
            StatusCode::UNAUTHORIZED,
            [(
                header::WWW_AUTHENTICATE,
                format!(
                    "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
                    state.base
                ),
            )],
        )
            .into_response(),
    }
}

async fn resource_metadata(State(state): State<Arc<AuthState>>) -> Json<Value> {
    Json(json!({
        "resource": format!("{}/mcp", state.base),
        "authorization_servers": [state.base],
    }))
}

async fn server_metadata(State(state): State<Arc<AuthState>>) -> Json<Value> {
    let base = &state.base;
    Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    }))
}

async fn register(State(state): State<Arc<AuthState>>, Json(body): Json<Value>) -> Response {
    let client_id = state.fresh("client");
    state.clients.lock().unwrap().push(client_id.clone());
    let mut answer = body;
    answer["client_id"] = json!(client_id);
    answer["token_endpoint_auth_method"] = json!("none");
    (StatusCode::CREATED, Json(answer)).into_response()
}

/// The login page, played by the test: `user=<name>` logs that user in and redirects back
/// with a code; `deny=1` redirects back with `error=access_denied`.
async fn authorize(
    State(state): State<Arc<AuthState>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let field = |name: &str| query.get(name).cloned().unwrap_or_default();
    let redirect_uri = field("redirect_uri");
    let known = state.clients.lock().unwrap().contains(&field("client_id"));
    if !known || redirect_uri.is_empty() || field("code_challenge_method") != "S256" {
        return (StatusCode::BAD_REQUEST, "bad authorization request").into_response();
    }
    let separator = if redirect_uri.contains('?') { '&' } else { '?' };
    let state_param = urlencode(&field("state"));
    let location = if query.contains_key("deny") {
        format!("{redirect_uri}{separator}error=access_denied&state={state_param}")
    } else {
        let Some(user) = query.get("user").cloned() else {
            return (StatusCode::BAD_REQUEST, "who logs in? add user=<name>").into_response();
        };
        let code = state.fresh("code");
        state.codes.lock().unwrap().insert(
            code.clone(),
            Grant {
                user,
                client_id: field("client_id"),
                redirect_uri: redirect_uri.clone(),
                challenge: field("code_challenge"),
            },
        );
        format!("{redirect_uri}{separator}code={code}&state={state_param}")
    };
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}

async fn token(
    State(state): State<Arc<AuthState>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let refused =
        |error: &str| (StatusCode::BAD_REQUEST, Json(json!({"error": error}))).into_response();
    let field = |name: &str| form.get(name).cloned().unwrap_or_default();
    match field("grant_type").as_str() {
        "authorization_code" => {
            let Some(grant) = state.codes.lock().unwrap().remove(&field("code")) else {
                return refused("invalid_grant");
            };
            let verifier = sha2::Sha256::digest(field("code_verifier").as_bytes());
            let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(verifier);
            if challenge != grant.challenge
                || field("redirect_uri") != grant.redirect_uri
                || field("client_id") != grant.client_id
            {
                return refused("invalid_grant");
            }
            Json(state.issue(&grant.user)).into_response()
        }
        "refresh_token" => {
            let Some(user) = state
                .refresh
                .lock()
                .unwrap()
                .remove(&field("refresh_token"))
            else {
                return refused("invalid_grant");
            };
            state.refreshes.fetch_add(1, Ordering::Relaxed);
            Json(state.issue(&user)).into_response()
        }
        _ => refused("unsupported_grant_type"),
    }
}

/// Percent-encodes a query value.
fn urlencode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The MCP server: one tool, `whoami`.
#[derive(Clone)]
struct Whoami;

impl ServerHandler for Whoami {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut schema = serde_json::Map::new();
        schema.insert("type".into(), json!("object"));
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "whoami",
            "The user the presented token belongs to.",
            schema,
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "whoami" {
            return Err(ErrorData::invalid_params("unknown tool", None));
        }
        let user = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<User>())
            .map(|user| user.0.clone())
            .unwrap_or_default();
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("you are {user}"))]).into())
    }
}
