//! The lifecycle of one MCP client: a [`McpConnection`] starts its server lazily (on the first
//! tool listing or call) over stdio (a child process) or streamable HTTP, restarts it after a
//! crash with exponential backoff, and kills it (with its process group) on
//! [`McpConnection::shutdown`] or drop.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex as StdMutex, OnceLock};
use std::time::{Duration, Instant};

use folio_project::{McpServerConfig, McpTransport, expand_template};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{ClientInitializeError, RoleClient, RunningService, ServiceError};
use rmcp::transport::{
    StreamableHttpClientTransport, TokioChildProcess,
    streamable_http_client::StreamableHttpClientTransportConfig,
};
use serde_json::{Map, Value};
use tokio::io::AsyncBufReadExt;

use super::elicitation::{Callers, FolioClient};
use super::oauth::{self, McpAuth};
use super::traced_http::{HttpClientError, TracedHttpClient};
use crate::layout::StateLayout;
use tokio::sync::Mutex;
use tracing::Instrument;

use crate::env::EnvLookup;
use crate::tools::DuplicateTool;
use crate::tools::process::kill_group;
use folio_fs::SharedError;

/// How long starting a server (spawn + initialize + first listing) may take.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Backoff before the first restart; doubles per consecutive failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A call waits at most this long for a pending restart before failing fast.
const MAX_WAIT_FOR_RESTART: Duration = Duration::from_secs(5);
/// Lines of server stderr kept for error messages.
const STDERR_TAIL: usize = 20;

/// Why an MCP operation failed, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The server is down (it crashed or could not be started); the next call restarts it.
    #[error(
        "MCP server \"{server}\" is not running: {reason}; it will be restarted on the next call"
    )]
    NotRunning {
        /// The server name.
        server: String,
        /// What happened.
        reason: String,
    },
    /// The server could not be opened (bad template, spawn failure, failed handshake).
    #[error("MCP server \"{server}\" could not start: {reason}")]
    Start {
        /// The server name.
        server: String,
        /// What failed, with its cause.
        #[source]
        reason: StartError,
    },
    /// The server wants OAuth authorization this client cannot ask for by itself: a
    /// principal's client under `folio serve`, whose tool call parks on it (see `McpTool`).
    #[error(
        "MCP server \"{server}\" needs OAuth authorization: a turn that calls one of its tools asks for it"
    )]
    NeedsAuthorization {
        /// The server name.
        server: String,
        /// The server's `WWW-Authenticate` challenge.
        challenge: String,
    },
    /// The server answered the request with an error.
    #[error("MCP server \"{server}\": {message}")]
    Call {
        /// The server name.
        server: String,
        /// The server's message.
        message: String,
    },
}

/// Why an MCP server could not start, with the cause a caller can match on; the errors of
/// rmcp, reqwest and the OS are [`SharedError`]s because [`McpError`] is kept (and cloned) in
/// [`Agent::failed_connections`](crate::Agent::failed_connections).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    /// A `${NAME}` template of the manifest names a variable that is not set.
    #[error("{field}: {source}")]
    Template {
        /// The setting (`args`, `env KEY`, `url`, `headers.KEY`).
        field: String,
        /// The unset variable.
        #[source]
        source: folio_project::UnsetVariable,
    },
    /// A `headers` key is not a valid HTTP header name.
    #[error("headers.{key}: {source}")]
    HeaderName {
        /// The key.
        key: String,
        /// Why it is invalid.
        #[source]
        source: SharedError<reqwest::header::InvalidHeaderName>,
    },
    /// A `headers` value (after expansion) is not a valid HTTP header value.
    #[error("headers.{key}: {source}")]
    HeaderValue {
        /// The key.
        key: String,
        /// Why it is invalid.
        #[source]
        source: SharedError<reqwest::header::InvalidHeaderValue>,
    },
    /// The stdio server's program could not be run.
    #[error("cannot run {program}: {source}")]
    Spawn {
        /// The program, as resolved against the manifest's folder.
        program: String,
        /// The OS error.
        #[source]
        source: SharedError<std::io::Error>,
    },
    /// The stdio server started but the MCP `initialize` handshake failed.
    #[error("MCP handshake failed: {source}{}", stderr_note(stderr))]
    Handshake {
        /// The handshake's error.
        #[source]
        source: SharedError<ClientInitializeError>,
        /// The last lines the server wrote to stderr, joined with ` | ` (may be empty).
        stderr: String,
    },
    /// The HTTP server could not be opened (connection or `initialize` failed).
    #[error("cannot open {url}: {source}")]
    Open {
        /// The server's URL.
        url: String,
        /// The client's error.
        #[source]
        source: SharedError<ClientInitializeError>,
    },
    /// The server started but listing its tools failed.
    #[error("tools/list failed: {0}")]
    ListTools(#[source] SharedError<ServiceError>),
    /// The HTTP client could not be built.
    #[error(transparent)]
    HttpClient(SharedError<HttpClientError>),
    /// An OAuth step failed (a `[oauth]` setting, a refusal, a failed authorization).
    #[error(transparent)]
    OAuth(SharedError<oauth::OAuthError>),
    /// A peer agent without `url` can only be asked inside `folio serve`.
    #[error("peer agent \"{agent}\" is reachable only inside `folio serve`, which mounts it")]
    PeerOutsideServe {
        /// The peer agent's slug.
        agent: String,
    },
    /// Starting (spawn, handshake, first listing) took longer than the start timeout.
    #[error("no answer within {}s", after.as_secs())]
    Timeout {
        /// The start timeout.
        after: Duration,
    },
    /// One of its tools has the name of a tool already registered.
    #[error(transparent)]
    DuplicateTool(#[from] DuplicateTool),
}

/// ` (stderr: …)` after a failed handshake, when the server wrote anything.
fn stderr_note(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!(" (stderr: {stderr})")
    }
}

/// A client of one MCP server, started lazily and restarted after crashes.
pub struct McpConnection {
    config: McpServerConfig,
    base_dir: PathBuf,
    env: EnvLookup,
    state: Mutex<State>,
    callers: Callers,
    auth: Option<McpAuth>,
    /// Under `folio serve`: each principal's own client of this (streamable-HTTP) server.
    principals: OnceLock<Principals>,
    /// A principal's client: where the server's OAuth callback route is; such a client answers
    /// a needed authorization with [`McpError::NeedsAuthorization`] instead of asking.
    redirect_uri: Option<String>,
}

/// The clients of one server that act for the principals of a serving process.
struct Principals {
    /// Where each principal's tokens live (`mcp-auth/<principal>/`).
    state: StateLayout,
    /// The server's OAuth callback route (`…/v1/mcp-auth/callback`).
    redirect_uri: String,
    /// A store other servers share, keeping the tokens instead of the state root.
    shared: Option<Arc<dyn super::SharedCredentials>>,
    /// The clients started so far, by principal.
    clients: StdMutex<HashMap<String, Arc<McpConnection>>>,
}

/// Why a server did not start: what failed, or that it needs an authorization first.
enum StartFailure {
    Failed(StartError),
    NeedsAuthorization(String),
}

impl From<StartError> for StartFailure {
    fn from(err: StartError) -> StartFailure {
        StartFailure::Failed(err)
    }
}

impl From<oauth::OAuthError> for StartFailure {
    fn from(err: oauth::OAuthError) -> StartFailure {
        StartFailure::Failed(StartError::OAuth(err.into()))
    }
}

impl From<HttpClientError> for StartFailure {
    fn from(err: HttpClientError) -> StartFailure {
        StartFailure::Failed(StartError::HttpClient(err.into()))
    }
}

/// How one attempt of a tool call ended.
enum Call {
    /// With a result or an error to return.
    Done(Result<CallToolResult, McpError>),
    /// The server refused it with an OAuth challenge.
    Challenged {
        /// The `WWW-Authenticate` value.
        challenge: String,
        /// The server's URL.
        url: String,
        /// The start that was refused.
        generation: u64,
    },
}

enum State {
    Idle,
    Running(Box<Running>),
    Down { failures: u32, retry_at: Instant },
}

struct Running {
    service: RunningService<RoleClient, FolioClient>,
    tools: Vec<rmcp::model::Tool>,
    pid: Option<u32>,
    stderr: Arc<StdMutex<VecDeque<String>>>,
    /// Consecutive failures before this start (reset by a successful call).
    failures: u32,
    /// Which start this is, so a late error from an earlier one never marks this one down.
    generation: u64,
    /// The URL of a streamable-HTTP server (templates resolved).
    http_url: Option<String>,
}

/// Numbers every server start in the process.
static STARTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl std::fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnection")
            .field("name", &self.config.name)
            .finish_non_exhaustive()
    }
}

impl McpConnection {
    /// A connection to `config`'s server; `base_dir` is the cwd of a stdio server, `env`
    /// resolves `${NAME}` templates each time the client opens. Nothing starts yet.
    pub fn new(config: McpServerConfig, base_dir: &Path, env: EnvLookup) -> Self {
        McpConnection {
            config,
            base_dir: base_dir.to_path_buf(),
            env,
            state: Mutex::new(State::Idle),
            callers: Callers::default(),
            auth: None,
            principals: OnceLock::new(),
            redirect_uri: None,
        }
    }

    /// Makes this streamable-HTTP connection act for each principal with its own client and
    /// tokens (`state`'s `mcp-auth/<principal>/`, or `shared`): a principal's client parks a tool call that
    /// needs authorization, the redirect coming back to `redirect_uri`. Other transports (a
    /// child process, a peer) keep one client for everyone. Set once, by `folio serve`.
    pub fn serve_principals(
        &self,
        state: StateLayout,
        redirect_uri: String,
        shared: Option<Arc<dyn super::SharedCredentials>>,
    ) {
        if matches!(self.config.transport, McpTransport::Http { .. }) {
            let _ = self.principals.set(Principals {
                state,
                redirect_uri,
                shared,
                clients: StdMutex::new(HashMap::new()),
            });
        }
    }

    /// The client acting for `principal` (started lazily, never with another principal's
    /// tokens), or `None` when this connection has one client for everyone.
    pub(crate) fn for_principal(&self, principal: &str) -> Option<Arc<McpConnection>> {
        let principals = self.principals.get()?;
        let mut clients = principals
            .clients
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let client = clients.entry(principal.to_string()).or_insert_with(|| {
            let mut client =
                McpConnection::new(self.config.clone(), &self.base_dir, self.env.clone());
            client.auth = Some(McpAuth {
                dir: principals.state.mcp_auth_dir(principal),
                login: None,
                shared: (principals.shared.clone()).map(|store| (store, principal.to_string())),
            });
            client.redirect_uri = Some(principals.redirect_uri.clone());
            Arc::new(client)
        });
        Some(client.clone())
    }

    /// Starts the authorization a principal's client needs after the server's `challenge`:
    /// the session that completes it with the redirect to the server's callback route (storing
    /// the tokens for this principal only). Fails for a client that is not a principal's.
    pub(crate) async fn begin_authorization(
        &self,
        challenge: &str,
    ) -> Result<rmcp::transport::auth::AuthorizationSession, oauth::OAuthError> {
        let (Some(auth), Some(redirect_uri)) = (&self.auth, &self.redirect_uri) else {
            return Err(oauth::OAuthError::NotFromATurn {
                server: self.config.name.clone(),
            });
        };
        let McpTransport::Http { url, .. } = &self.config.transport else {
            return Err(oauth::OAuthError::NotHttp {
                server: self.config.name.clone(),
            });
        };
        let env = &*self.env;
        let url = expand_template(url, env)
            .map_err(|source| oauth::OAuthError::UrlTemplate { source })?;
        let identity =
            oauth::ClientIdentity::resolve(self.config.oauth.as_ref(), env, self.manifest_dir())?;
        let store = auth.store(&self.config.name);
        oauth::begin(
            &url,
            challenge,
            &store,
            &identity,
            identity.scopes.clone(),
            redirect_uri,
        )
        .await
    }

    /// This connection with OAuth: tokens from (and to) `auth`'s store, and, when `auth` can
    /// ask a person, the authorization flow when the server answers 401.
    pub fn with_auth(mut self, auth: McpAuth) -> Self {
        self.auth = Some(auth);
        self
    }

    /// The tool calls in flight that take this server's elicitations.
    pub(crate) fn callers(&self) -> &Callers {
        &self.callers
    }

    /// The protocol version negotiated with the running server (none before it starts).
    pub async fn protocol_version(&self) -> Option<String> {
        match &*self.state.lock().await {
            State::Running(running) => running
                .service
                .peer()
                .peer_info()
                .map(|info| info.protocol_version.to_string()),
            State::Idle | State::Down { .. } => None,
        }
    }

    /// The server name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The manifest this connection was built from.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// The process id of a running stdio server (for diagnostics and tests).
    pub async fn server_pid(&self) -> Option<u32> {
        match &*self.state.lock().await {
            State::Running(running) => running.pid,
            State::Idle | State::Down { .. } => None,
        }
    }

    /// The server's tools, starting it if needed.
    pub async fn list_tools(&self) -> Result<Vec<rmcp::model::Tool>, McpError> {
        let mut state = self.state.lock().await;
        self.ensure_running(&mut state).await?;
        match &*state {
            State::Running(running) => Ok(running.tools.clone()),
            State::Idle | State::Down { .. } => Err(self.not_running("it is not started".into())),
        }
    }

    /// Calls `tool` with `arguments`, starting or restarting the server if needed. With OAuth,
    /// a call the server refuses with a challenge (a `403 insufficient_scope` asking for more
    /// scopes, or a `401` for a revoked token) is authorized again — with the union of the
    /// granted and the required scopes — and retried on a fresh connection, at most
    /// `MAX_AUTHORIZATIONS` times.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallToolResult, McpError> {
        let mut authorizer: Option<oauth::Authorizer> = None;
        loop {
            let (challenge, url, generation, auth) =
                match (self.call_once(tool, arguments.clone()).await, &self.auth) {
                    (
                        Call::Challenged {
                            challenge,
                            url,
                            generation,
                        },
                        Some(auth),
                    ) => (challenge, url, generation, auth),
                    (Call::Done(result), _) => return result,
                    (Call::Challenged { challenge, .. }, None) => {
                        return Err(McpError::Call {
                            server: self.config.name.clone(),
                            message: format!("the server asks for authorization ({challenge})"),
                        });
                    }
                };
            let failed = |err: oauth::OAuthError| McpError::Call {
                server: self.config.name.clone(),
                message: err.to_string(),
            };
            let authorizer = match &mut authorizer {
                Some(authorizer) => authorizer,
                None => {
                    let identity = oauth::ClientIdentity::resolve(
                        self.config.oauth.as_ref(),
                        &*self.env,
                        self.manifest_dir(),
                    )
                    .map_err(failed)?;
                    authorizer.insert(oauth::Authorizer::new(
                        &self.config.name,
                        &url,
                        auth,
                        identity,
                    ))
                }
            };
            // A principal's client under `folio serve` cannot ask anyone: the call parks on
            // the authorization instead.
            let answered = if self.redirect_uri.is_some() && authorizer.needs_person() {
                Err(None)
            } else {
                authorizer.answer(&challenge).await.map_err(Some)
            };
            // The refused connection is replaced: the next call opens a fresh one with the
            // stored token.
            {
                let mut state = self.state.lock().await;
                if matches!(&*state, State::Running(running) if running.generation == generation)
                    && let State::Running(running) = std::mem::replace(&mut *state, State::Idle)
                {
                    tokio::spawn(stop(*running));
                }
            }
            match answered {
                Ok(()) => {}
                Err(Some(err)) => return Err(failed(err)),
                Err(None) => {
                    return Err(McpError::NeedsAuthorization {
                        server: self.config.name.clone(),
                        challenge,
                    });
                }
            }
        }
    }

    /// One attempt of [`McpConnection::call_tool`].
    async fn call_once(&self, tool: &str, arguments: Map<String, Value>) -> Call {
        let (peer, generation, http_url) = {
            let mut state = self.state.lock().await;
            if let Err(err) = self.ensure_running(&mut state).await {
                return Call::Done(Err(err));
            }
            let State::Running(running) = &*state else {
                return Call::Done(Err(self.not_running("it is not started".into())));
            };
            if running.service.is_closed() {
                let reason = self.exit_reason(running);
                self.mark_down(&mut state);
                return Call::Done(Err(self.not_running(reason)));
            }
            (
                running.service.peer().clone(),
                running.generation,
                running.http_url.clone(),
            )
        };
        // A CLIENT span per the MCP semantic conventions; its trace context goes in `_meta`.
        // It carries no event-index range: the request appends nothing to the session's log
        // (the call's `action.result` is recorded after it returns), and its parent
        // `agent_sdk.tool` span carries the range of the call's events.
        let span = tracing::info_span!(
            "tools/call",
            otel.name = format!("tools/call {tool}"),
            otel.kind = "client",
            mcp.method.name = "tools/call",
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = tool,
            agent_sdk.mcp.server = %self.config.name,
            otel.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let trace: Map<String, Value> = span
            .in_scope(folio_telemetry::trace_headers)
            .into_iter()
            .map(|(key, value)| (key, Value::String(value)))
            .collect();
        if !trace.is_empty() {
            params.meta = Some(trace.into());
        }
        let result = tokio::time::timeout(self.config.call_timeout, peer.call_tool(params))
            .instrument(span.clone())
            .await;
        let failed = match &result {
            Ok(Ok(result)) if result.is_error == Some(true) => Some("tool_error"),
            Ok(Ok(_)) => None,
            Ok(Err(_)) => Some("mcp_error"),
            Err(_) => Some("timeout"),
        };
        if let Some(kind) = failed {
            span.record("otel.status_code", "ERROR");
            span.record("error.type", kind);
        }
        if let (Ok(Err(error)), Some(url)) = (&result, &http_url)
            && let Some(challenge) = error.auth_challenge()
        {
            return Call::Challenged {
                challenge: challenge.to_string(),
                url: url.clone(),
                generation,
            };
        }
        Call::Done(match result {
            Ok(Ok(result)) => {
                if let State::Running(running) = &mut *self.state.lock().await {
                    running.failures = 0;
                }
                Ok(result)
            }
            Ok(Err(ServiceError::McpError(error))) => Err(McpError::Call {
                server: self.config.name.clone(),
                message: error.message.to_string(),
            }),
            Ok(Err(error)) => {
                let mut state = self.state.lock().await;
                let reason = match &*state {
                    State::Running(running) if running.generation == generation => {
                        let reason = if running.service.is_closed() {
                            self.exit_reason(running)
                        } else {
                            error.to_string()
                        };
                        self.mark_down(&mut state);
                        reason
                    }
                    _ => error.to_string(),
                };
                Err(self.not_running(reason))
            }
            Err(_) => Err(McpError::Call {
                server: self.config.name.clone(),
                message: format!(
                    "tool {tool} did not answer within {}s",
                    self.config.call_timeout.as_secs()
                ),
            }),
        })
    }

    /// Stops the server: closes the client and kills the child process group.
    pub async fn shutdown(&self) {
        let previous = std::mem::replace(&mut *self.state.lock().await, State::Idle);
        if let State::Running(running) = previous {
            stop(*running).await;
        }
    }

    fn not_running(&self, reason: String) -> McpError {
        McpError::NotRunning {
            server: self.config.name.clone(),
            reason,
        }
    }

    fn exit_reason(&self, running: &Running) -> String {
        let tail = running
            .stderr
            .lock()
            .map(|lines| {
                lines
                    .iter()
                    .rev()
                    .take(3)
                    .rev()
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        if tail.is_empty() {
            "the server exited".to_string()
        } else {
            format!("the server exited (stderr: {})", tail.join(" | "))
        }
    }

    fn mark_down(&self, state: &mut State) {
        let previous = std::mem::replace(state, State::Idle);
        let failures = match previous {
            State::Running(running) => {
                let failures = running.failures + 1;
                tokio::spawn(stop(*running));
                failures
            }
            State::Down { failures, .. } => failures + 1,
            State::Idle => 1,
        };
        *state = State::Down {
            failures,
            retry_at: Instant::now() + backoff(failures),
        };
    }

    async fn ensure_running(&self, state: &mut State) -> Result<(), McpError> {
        let failures = match &*state {
            State::Running(_) => return Ok(()),
            State::Idle => 0,
            State::Down { failures, retry_at } => {
                let wait = retry_at.saturating_duration_since(Instant::now());
                if wait > MAX_WAIT_FOR_RESTART {
                    return Err(self.not_running(format!(
                        "it failed {failures} times in a row; next restart in {}s",
                        wait.as_secs()
                    )));
                }
                tokio::time::sleep(wait).await;
                *failures
            }
        };
        match tokio::time::timeout(START_TIMEOUT, self.start()).await {
            Ok(Ok(mut running)) => {
                running.failures = failures;
                tracing::info!(server = %self.config.name, tools = running.tools.len(), "MCP server started");
                *state = State::Running(Box::new(running));
                Ok(())
            }
            Ok(Err(StartFailure::NeedsAuthorization(challenge))) => {
                // Not a failure of the server: it starts once the principal has authorized.
                *state = State::Idle;
                Err(McpError::NeedsAuthorization {
                    server: self.config.name.clone(),
                    challenge,
                })
            }
            Ok(Err(StartFailure::Failed(reason))) => {
                let failures = failures + 1;
                *state = State::Down {
                    failures,
                    retry_at: Instant::now() + backoff(failures),
                };
                Err(McpError::Start {
                    server: self.config.name.clone(),
                    reason,
                })
            }
            Err(_) => {
                let failures = failures + 1;
                *state = State::Down {
                    failures,
                    retry_at: Instant::now() + backoff(failures),
                };
                Err(McpError::Start {
                    server: self.config.name.clone(),
                    reason: StartError::Timeout {
                        after: START_TIMEOUT,
                    },
                })
            }
        }
    }

    async fn start(&self) -> Result<Running, StartFailure> {
        let env = &*self.env;
        let stderr = Arc::new(StdMutex::new(VecDeque::new()));
        let client = FolioClient {
            server: self.config.name.clone(),
            callers: self.callers.clone(),
        };
        let (service, pid, listed, http_url) = match &self.config.transport {
            McpTransport::Stdio {
                command,
                args,
                env: vars,
            } => {
                let program = if command.contains('/') && !Path::new(command).is_absolute() {
                    self.manifest_dir().join(command).display().to_string()
                } else {
                    command.clone()
                };
                let mut cmd = tokio::process::Command::new(&program);
                for arg in args {
                    cmd.arg(
                        expand_template(arg, env).map_err(|source| StartError::Template {
                            field: "args".into(),
                            source,
                        })?,
                    );
                }
                for (key, value) in vars {
                    cmd.env(
                        key,
                        expand_template(value, env).map_err(|source| StartError::Template {
                            field: format!("env {key}"),
                            source,
                        })?,
                    );
                }
                cmd.current_dir(&self.base_dir);
                let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
                wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
                let (transport, child_stderr) = TokioChildProcess::builder(wrapped)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|err| StartError::Spawn {
                        program: program.clone(),
                        source: err.into(),
                    })?;
                let pid = transport.id();
                if let Some(child_stderr) = child_stderr {
                    let lines = stderr.clone();
                    let name = self.config.name.clone();
                    tokio::spawn(async move {
                        let mut reader = tokio::io::BufReader::new(child_stderr).lines();
                        while let Ok(Some(line)) = reader.next_line().await {
                            tracing::debug!(server = %name, "{line}");
                            if let Ok(mut lines) = lines.lock() {
                                if lines.len() == STDERR_TAIL {
                                    lines.pop_front();
                                }
                                lines.push_back(line);
                            }
                        }
                    });
                }
                let service = client.serve(transport).await.map_err(|err| {
                    let tail = stderr
                        .lock()
                        .map(|l| l.iter().cloned().collect::<Vec<_>>().join(" | "))
                        .unwrap_or_default();
                    StartError::Handshake {
                        source: err.into(),
                        stderr: tail,
                    }
                })?;
                (service, pid, None, None)
            }
            // A peer on another server is its `/v1/mcp`: a streamable HTTP server like any other.
            McpTransport::Http { url, headers }
            | McpTransport::Peer {
                url: Some(url),
                headers,
                ..
            } => {
                let url = expand_template(url, env).map_err(|source| StartError::Template {
                    field: "url".into(),
                    source,
                })?;
                let mut custom = HashMap::new();
                for (key, value) in headers {
                    let value =
                        expand_template(value, env).map_err(|source| StartError::Template {
                            field: format!("headers.{key}"),
                            source,
                        })?;
                    let name =
                        reqwest::header::HeaderName::from_bytes(key.as_bytes()).map_err(|err| {
                            StartError::HeaderName {
                                key: key.clone(),
                                source: err.into(),
                            }
                        })?;
                    let value = reqwest::header::HeaderValue::from_str(&value).map_err(|err| {
                        StartError::HeaderValue {
                            key: key.clone(),
                            source: err.into(),
                        }
                    })?;
                    custom.insert(name, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.clone())
                    .custom_headers(custom);
                let (service, tools) = self.open_http(client, &url, config).await?;
                (service, None, Some(tools), Some(url))
            }
            McpTransport::Peer {
                agent, url: None, ..
            } => {
                return Err(StartFailure::Failed(StartError::PeerOutsideServe {
                    agent: agent.clone(),
                }));
            }
        };
        let listed = match listed {
            Some(tools) => Ok(tools),
            None => service.peer().list_all_tools().await,
        };
        let tools = match listed {
            Ok(tools) => tools,
            Err(err) => {
                stop(Running {
                    service,
                    tools: Vec::new(),
                    pid,
                    stderr,
                    failures: 0,
                    generation: 0,
                    http_url: None,
                })
                .await;
                return Err(StartError::ListTools(err.into()).into());
            }
        };
        Ok(Running {
            service,
            tools,
            pid,
            stderr,
            failures: 0,
            generation: STARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
            http_url,
        })
    }
}

impl McpConnection {
    /// Opens a streamable-HTTP server and lists its tools; with OAuth, through rmcp's
    /// authorizing client, running the authorization flow once when the server asks for it
    /// (on `initialize` or on `tools/list`) and a person can be asked.
    async fn open_http(
        &self,
        client: FolioClient,
        url: &str,
        config: StreamableHttpClientTransportConfig,
    ) -> Result<
        (
            RunningService<RoleClient, FolioClient>,
            Vec<rmcp::model::Tool>,
        ),
        StartFailure,
    > {
        let cannot_open = |err: ClientInitializeError| StartError::Open {
            url: url.to_string(),
            source: err.into(),
        };
        let Some(auth) = &self.auth else {
            let transport =
                StreamableHttpClientTransport::with_client(TracedHttpClient::new()?, config);
            let service = client.serve(transport).await.map_err(cannot_open)?;
            return list_tools(service).await;
        };
        let store = auth.store(&self.config.name);
        let identity = oauth::ClientIdentity::resolve(
            self.config.oauth.as_ref(),
            &*self.env,
            self.manifest_dir(),
        )?;
        let mut authorizer = oauth::Authorizer::new(&self.config.name, url, auth, identity);
        loop {
            let manager = oauth::manager(url, &store).await?;
            let http = rmcp::transport::AuthClient::new(TracedHttpClient::new()?, manager);
            let transport = StreamableHttpClientTransport::with_client(http, config.clone());
            let challenge = match client.clone().serve(transport).await {
                Ok(service) => match service.peer().list_all_tools().await {
                    Ok(tools) => return Ok((service, tools)),
                    Err(err) => {
                        let challenge = err.auth_challenge().map(str::to_string);
                        let _ =
                            tokio::time::timeout(Duration::from_secs(5), service.cancel()).await;
                        match challenge {
                            Some(challenge) => challenge,
                            None => return Err(StartError::ListTools(err.into()).into()),
                        }
                    }
                },
                Err(err) => match err.auth_challenge() {
                    Some(challenge) => challenge.to_string(),
                    None => return Err(cannot_open(err).into()),
                },
            };
            if self.redirect_uri.is_some() && authorizer.needs_person() {
                return Err(StartFailure::NeedsAuthorization(challenge));
            }
            authorizer.answer(&challenge).await?;
        }
    }

    /// The folder of the manifest: where relative paths in it point.
    fn manifest_dir(&self) -> &Path {
        self.config.file.parent().unwrap_or(&self.base_dir)
    }
}

/// The tools of a just-opened server (its service is stopped when the listing fails).
async fn list_tools(
    service: RunningService<RoleClient, FolioClient>,
) -> Result<
    (
        RunningService<RoleClient, FolioClient>,
        Vec<rmcp::model::Tool>,
    ),
    StartFailure,
> {
    match service.peer().list_all_tools().await {
        Ok(tools) => Ok((service, tools)),
        Err(err) => {
            let _ = tokio::time::timeout(Duration::from_secs(5), service.cancel()).await;
            Err(StartError::ListTools(err.into()).into())
        }
    }
}

impl Drop for McpConnection {
    fn drop(&mut self) {
        if let Ok(mut state) = self.state.try_lock()
            && let State::Running(running) = std::mem::replace(&mut *state, State::Idle)
        {
            kill_group(running.pid);
        }
    }
}

fn backoff(failures: u32) -> Duration {
    let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(16));
    FIRST_BACKOFF.saturating_mul(factor).min(MAX_BACKOFF)
}

/// Closes the client, kills the process group, and waits for the transport (and with it the
/// child) to be released so no zombie is left.
async fn stop(running: Running) {
    kill_group(running.pid);
    let _ = tokio::time::timeout(Duration::from_secs(5), running.service.cancel()).await;
    if let Some(pid) = running.pid {
        // The transport's cleanup reaps the child in a task of its own; wait for it.
        let proc_dir = PathBuf::from(format!("/proc/{pid}"));
        for _ in 0..100 {
            if !proc_dir.exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        assert_eq!(backoff(1), Duration::from_millis(200));
        assert_eq!(backoff(2), Duration::from_millis(400));
        assert_eq!(backoff(40), MAX_BACKOFF);
    }
}
