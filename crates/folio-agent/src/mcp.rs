//! MCP connections (`mcp-connections/<name>.toml`, `host-connections/<name>.toml`): clients of
//! MCP servers over stdio (a child process) or streamable HTTP, built on `rmcp`.
//!
//! A [`McpConnection`] starts its server lazily (on the first tool listing or call), restarts it
//! after a crash with exponential backoff, and kills it (with its process group) on
//! [`McpConnection::shutdown`] or drop. Each tool of a model-facing connection becomes a
//! [`McpTool`] named `mcp__<server>__<tool>`; host connections are never offered to the model.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::{
    StreamableHttpClientTransport, TokioChildProcess,
    streamable_http_client::StreamableHttpClientTransportConfig,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::Mutex;

use crate::manifest::{Report, expand_template, is_slug, template_vars, toml_files};
use crate::tools::process::kill_group;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};

/// Looks up an environment variable for `${NAME}` templates (never mutates the process env).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The process environment as an [`EnvLookup`].
pub fn process_env() -> EnvLookup {
    Arc::new(|name: &str| std::env::var(name).ok())
}

/// How long a tool call may take before it is abandoned (default; `timeout_secs` overrides).
const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(300);
/// How long starting a server (spawn + initialize + first listing) may take.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Backoff before the first restart; doubles per consecutive failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A call waits at most this long for a pending restart before failing fast.
const MAX_WAIT_FOR_RESTART: Duration = Duration::from_secs(5);
/// Lines of server stderr kept for error messages.
const STDERR_TAIL: usize = 20;

const MANIFEST_KEYS: &[&str] = &[
    "description",
    "url",
    "headers",
    "command",
    "args",
    "env",
    "agent",
    "timeout_secs",
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    description: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    agent: Option<String>,
    timeout_secs: Option<u64>,
}

/// How Folio reaches an MCP server. Values keep their `${NAME}` templates as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program (a name on `PATH`, or a path relative to the manifest's folder).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables (templated).
        env: BTreeMap<String, String>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint URL (templated).
        url: String,
        /// Headers sent with every request (templated).
        headers: BTreeMap<String, String>,
    },
    /// A peer agent mounted in the same `folio serve` (its `/v1/mcp`).
    Peer {
        /// The peer agent's slug.
        agent: String,
    },
}

/// One connection manifest as discovered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The server name (the file name without `.toml`).
    pub name: String,
    /// What the server offers.
    pub description: Option<String>,
    /// How to reach it.
    pub transport: McpTransport,
    /// The manifest file.
    pub file: PathBuf,
    /// Per-call timeout.
    pub call_timeout: Duration,
}

impl McpServerConfig {
    /// Every `${NAME}` the manifest references, sorted and deduplicated.
    pub fn template_vars(&self) -> Vec<String> {
        let mut names: Vec<String> = match &self.transport {
            McpTransport::Stdio { args, env, .. } => args
                .iter()
                .chain(env.values())
                .flat_map(|v| template_vars(v))
                .collect(),
            McpTransport::Http { url, headers } => std::iter::once(url)
                .chain(headers.values())
                .flat_map(|v| template_vars(v))
                .collect(),
            McpTransport::Peer { .. } => Vec::new(),
        };
        names.sort();
        names.dedup();
        names
    }
}

/// Reads every manifest of `folder` (`mcp-connections` or `host-connections`) in `agent_dir`.
pub(crate) fn discover_connections(
    agent_dir: &Path,
    folder: &str,
    report: &mut Report,
) -> Vec<McpServerConfig> {
    let mut servers = Vec::new();
    for file in toml_files(&agent_dir.join(folder)) {
        let name = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !is_slug(&name) || name.contains("__") {
            report.error(
                &file,
                format!("name: \"{name}\" must match [A-Za-z0-9][A-Za-z0-9_-]* without \"__\" (it becomes mcp__{name}__<tool>)"),
            );
            continue;
        }
        let Some(manifest) = report.parse::<Manifest>(&file, MANIFEST_KEYS) else {
            continue;
        };
        let chosen = [
            manifest.url.is_some(),
            manifest.command.is_some(),
            manifest.agent.is_some(),
        ];
        if chosen.iter().filter(|c| **c).count() != 1 {
            report.error(
                &file,
                "transport: set exactly one of url (streamable HTTP), command (stdio) or agent (a peer agent)".into(),
            );
            continue;
        }
        if manifest.command.is_none() && (!manifest.args.is_empty() || !manifest.env.is_empty()) {
            report.error(
                &file,
                "args/env: only a stdio connection (command) takes args and env".into(),
            );
            continue;
        }
        if manifest.url.is_none() && !manifest.headers.is_empty() {
            report.error(
                &file,
                "headers: only a streamable HTTP connection (url) takes headers".into(),
            );
            continue;
        }
        if manifest.timeout_secs == Some(0) {
            report.error(&file, "timeout_secs: must be at least 1".into());
            continue;
        }
        let transport = match (manifest.url, manifest.command, manifest.agent) {
            (Some(url), _, _) => McpTransport::Http {
                url,
                headers: manifest.headers,
            },
            (_, Some(command), _) => McpTransport::Stdio {
                command,
                args: manifest.args,
                env: manifest.env,
            },
            (_, _, Some(agent)) => McpTransport::Peer { agent },
            (None, None, None) => continue,
        };
        let config = McpServerConfig {
            name,
            description: manifest.description,
            transport,
            file: file.clone(),
            call_timeout: manifest
                .timeout_secs
                .map_or(DEFAULT_CALL_TIMEOUT, Duration::from_secs),
        };
        for var in config.template_vars() {
            if std::env::var_os(&var).is_none() {
                report.warning(
                    &file,
                    format!("${{{var}}} is not set; the connection will fail to open until it is"),
                );
            }
        }
        servers.push(config);
    }
    servers
}

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
        /// What happened.
        reason: String,
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

/// A client of one MCP server, started lazily and restarted after crashes.
pub struct McpConnection {
    config: McpServerConfig,
    base_dir: PathBuf,
    env: EnvLookup,
    state: Mutex<State>,
}

enum State {
    Idle,
    Running(Box<Running>),
    Down { failures: u32, retry_at: Instant },
}

struct Running {
    service: RunningService<RoleClient, ()>,
    tools: Vec<rmcp::model::Tool>,
    pid: Option<u32>,
    stderr: Arc<StdMutex<VecDeque<String>>>,
    /// Consecutive failures before this start (reset by a successful call).
    failures: u32,
    /// Which start this is, so a late error from an earlier one never marks this one down.
    generation: u64,
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

    /// Calls `tool` with `arguments`, starting or restarting the server if needed.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallToolResult, McpError> {
        let (peer, generation) = {
            let mut state = self.state.lock().await;
            self.ensure_running(&mut state).await?;
            let State::Running(running) = &*state else {
                return Err(self.not_running("it is not started".into()));
            };
            if running.service.is_closed() {
                let reason = self.exit_reason(running);
                self.mark_down(&mut state);
                return Err(self.not_running(reason));
            }
            (running.service.peer().clone(), running.generation)
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let result = tokio::time::timeout(self.config.call_timeout, peer.call_tool(params)).await;
        match result {
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
        }
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
            Ok(Err(reason)) => {
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
                    reason: format!("no answer within {}s", START_TIMEOUT.as_secs()),
                })
            }
        }
    }

    async fn start(&self) -> Result<Running, String> {
        let env = &*self.env;
        let stderr = Arc::new(StdMutex::new(VecDeque::new()));
        let (service, pid) = match &self.config.transport {
            McpTransport::Stdio {
                command,
                args,
                env: vars,
            } => {
                let program = if command.contains('/') && !Path::new(command).is_absolute() {
                    self.config
                        .file
                        .parent()
                        .unwrap_or(&self.base_dir)
                        .join(command)
                        .display()
                        .to_string()
                } else {
                    command.clone()
                };
                let mut cmd = tokio::process::Command::new(&program);
                for arg in args {
                    cmd.arg(expand_template(arg, env).map_err(|e| format!("args: {e}"))?);
                }
                for (key, value) in vars {
                    cmd.env(
                        key,
                        expand_template(value, env).map_err(|e| format!("env {key}: {e}"))?,
                    );
                }
                cmd.current_dir(&self.base_dir);
                let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
                wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
                let (transport, child_stderr) = TokioChildProcess::builder(wrapped)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|err| format!("cannot run {program}: {err}"))?;
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
                let service = ().serve(transport).await.map_err(|err| {
                    let tail = stderr
                        .lock()
                        .map(|l| l.iter().cloned().collect::<Vec<_>>().join(" | "))
                        .unwrap_or_default();
                    if tail.is_empty() {
                        format!("MCP handshake failed: {err}")
                    } else {
                        format!("MCP handshake failed: {err} (stderr: {tail})")
                    }
                })?;
                (service, pid)
            }
            McpTransport::Http { url, headers } => {
                let url = expand_template(url, env).map_err(|e| format!("url: {e}"))?;
                let mut custom = HashMap::new();
                for (key, value) in headers {
                    let value =
                        expand_template(value, env).map_err(|e| format!("headers.{key}: {e}"))?;
                    let name = reqwest::header::HeaderName::from_bytes(key.as_bytes())
                        .map_err(|err| format!("headers.{key}: {err}"))?;
                    let value = reqwest::header::HeaderValue::from_str(&value)
                        .map_err(|err| format!("headers.{key}: {err}"))?;
                    custom.insert(name, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.clone())
                    .custom_headers(custom);
                let transport = StreamableHttpClientTransport::from_config(config);
                let service =
                    ().serve(transport)
                        .await
                        .map_err(|err| format!("cannot open {url}: {err}"))?;
                (service, None)
            }
            McpTransport::Peer { agent } => {
                return Err(format!(
                    "peer agent \"{agent}\" is reachable only inside `folio serve`, which mounts it"
                ));
            }
        };
        let tools = match service.peer().list_all_tools().await {
            Ok(tools) => tools,
            Err(err) => {
                stop(Running {
                    service,
                    tools: Vec::new(),
                    pid,
                    stderr,
                    failures: 0,
                    generation: 0,
                })
                .await;
                return Err(format!("tools/list failed: {err}"));
            }
        };
        Ok(Running {
            service,
            tools,
            pid,
            stderr,
            failures: 0,
            generation: STARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
        })
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

/// The longest tool name model providers accept (OpenAI: `^[a-zA-Z0-9_-]{1,64}$`).
const MAX_TOOL_NAME: usize = 64;

/// The `mcp__<server>__<tool>` name of an MCP tool: characters providers reject become `_`, and a
/// name over 64 characters keeps its first 55 and ends in `_` + 8 hex digits of a hash of the
/// whole name, so long names stay distinct and stable.
pub fn mcp_tool_name(server: &str, tool: &str) -> String {
    let tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = format!("mcp__{server}__{tool}");
    if name.len() <= MAX_TOOL_NAME {
        return name;
    }
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(name.as_bytes());
    let suffix: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}_{suffix}", &name[..MAX_TOOL_NAME - 9])
}

/// One tool of an MCP server, offered to the model as `mcp__<server>__<tool>`.
pub struct McpTool {
    connection: Arc<McpConnection>,
    name: String,
    tool: String,
    description: String,
    schema: Value,
}

impl McpTool {
    /// The model-facing tool for `tool` of `connection`.
    pub fn new(connection: Arc<McpConnection>, tool: &rmcp::model::Tool) -> Self {
        let description = tool
            .description
            .as_deref()
            .map(str::to_string)
            .unwrap_or_else(|| format!("{} (MCP server {})", tool.name, connection.name()));
        McpTool {
            name: mcp_tool_name(connection.name(), &tool.name),
            tool: tool.name.to_string(),
            description,
            schema: Value::Object((*tool.input_schema).clone()),
            connection,
        }
    }

    /// Every tool of `connection`, starting its server.
    pub async fn all(connection: &Arc<McpConnection>) -> Result<Vec<McpTool>, McpError> {
        Ok(connection
            .list_tools()
            .await?
            .iter()
            .map(|tool| McpTool::new(connection.clone(), tool))
            .collect())
    }
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn prepare(&self, input: Value) -> Result<Value, ToolError> {
        match input {
            Value::Null => Ok(json!({})),
            Value::Object(map) => Ok(Value::Object(map)),
            other => Err(ToolError(format!(
                "input must be a JSON object, got {}",
                crate::tools::args::json_type(&other)
            ))),
        }
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let arguments = match input {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let result = tokio::select! {
            result = self.connection.call_tool(&self.tool, arguments) => result,
            () = ctx.cancel.cancelled() => {
                return Err(ToolError("tool call cancelled".into()));
            }
        };
        let result = result.map_err(|err| ToolError(err.to_string()))?;
        tool_output(result)
    }
}

/// Maps an MCP `tools/call` result to a tool output: one text or image part as itself, several
/// as content parts; `isError` becomes a tool error carrying the text.
pub fn tool_output(result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut parts: Vec<Value> = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(text) => parts.push(json!({"type": "text", "text": text.text})),
            ContentBlock::Image(image) => parts
                .push(json!({"type": "image", "mimeType": image.mime_type, "data": image.data})),
            ContentBlock::Resource(resource) => {
                let text = match &resource.resource {
                    rmcp::model::ResourceContents::TextResourceContents { uri, text, .. } => {
                        format!("[resource {uri}]\n{text}")
                    }
                    rmcp::model::ResourceContents::BlobResourceContents {
                        uri, mime_type, ..
                    } => format!(
                        "[resource {uri} ({}), binary]",
                        mime_type.as_deref().unwrap_or("application/octet-stream")
                    ),
                    other => serde_json::to_string(other).unwrap_or_default(),
                };
                parts.push(json!({"type": "text", "text": text}));
            }
            other => parts.push(json!({
                "type": "text",
                "text": serde_json::to_string(other).unwrap_or_default(),
            })),
        }
    }
    if result.is_error == Some(true) {
        let text: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        let message = if text.is_empty() {
            "the MCP tool reported an error".to_string()
        } else {
            text.join("\n")
        };
        return Err(ToolError(message));
    }
    if parts.is_empty() {
        return Ok(match result.structured_content {
            Some(value) => ToolOutput::Json(value),
            None => ToolOutput::Text(String::new()),
        });
    }
    if parts.len() == 1 {
        let part = &parts[0];
        if part["type"] == "text" {
            return Ok(ToolOutput::Text(
                part["text"].as_str().unwrap_or_default().to_string(),
            ));
        }
        if let (Some(mime_type), Some(data)) = (part["mimeType"].as_str(), part["data"].as_str()) {
            return Ok(ToolOutput::Image {
                mime_type: mime_type.to_string(),
                data: data.to_string(),
            });
        }
    }
    Ok(ToolOutput::Json(Value::Array(parts)))
}

/// The connections of an agent: model-facing ones and host-only ones, by name.
#[derive(Clone, Default)]
pub struct Connections {
    /// `mcp-connections/`: their tools are offered to the model.
    pub model: BTreeMap<String, Arc<McpConnection>>,
    /// `host-connections/`: callable from host code only.
    pub host: BTreeMap<String, Arc<McpConnection>>,
}

impl Connections {
    /// Connections for the given manifests (nothing starts yet).
    pub fn new(
        model: &[McpServerConfig],
        host: &[McpServerConfig],
        base_dir: &Path,
        env: &EnvLookup,
    ) -> Self {
        let open = |configs: &[McpServerConfig]| {
            configs
                .iter()
                .map(|config| {
                    (
                        config.name.clone(),
                        Arc::new(McpConnection::new(config.clone(), base_dir, env.clone())),
                    )
                })
                .collect()
        };
        Connections {
            model: open(model),
            host: open(host),
        }
    }

    /// Stops every running server.
    pub async fn shutdown(&self) {
        for connection in self.model.values().chain(self.host.values()) {
            connection.shutdown().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::TextContent;

    #[test]
    fn names_and_backoff() {
        assert_eq!(mcp_tool_name("srv", "get-sum"), "mcp__srv__get-sum");
        assert_eq!(mcp_tool_name("srv", "a.b c"), "mcp__srv__a_b_c");
        let long = mcp_tool_name("srv", &"x".repeat(80));
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("mcp__srv__xxx"));
        assert_ne!(long, mcp_tool_name("srv", &"x".repeat(81)));
        assert_eq!(long, mcp_tool_name("srv", &"x".repeat(80)));
        assert_eq!(backoff(1), Duration::from_millis(200));
        assert_eq!(backoff(2), Duration::from_millis(400));
        assert_eq!(backoff(40), MAX_BACKOFF);
    }

    #[test]
    fn results_map_to_outputs() {
        let text = CallToolResult::success(vec![ContentBlock::Text(TextContent::new("hi"))]);
        assert_eq!(tool_output(text).unwrap(), ToolOutput::Text("hi".into()));
        let image = CallToolResult::success(vec![ContentBlock::image("AAAA", "image/png")]);
        assert_eq!(
            tool_output(image).unwrap(),
            ToolOutput::Image {
                mime_type: "image/png".into(),
                data: "AAAA".into()
            }
        );
        let mixed = CallToolResult::success(vec![
            ContentBlock::text("a"),
            ContentBlock::image("AAAA", "image/png"),
        ]);
        assert_eq!(
            tool_output(mixed).unwrap(),
            ToolOutput::Json(json!([
                {"type": "text", "text": "a"},
                {"type": "image", "mimeType": "image/png", "data": "AAAA"}
            ]))
        );
        let failed = CallToolResult::error(vec![ContentBlock::text("boom")]);
        assert_eq!(tool_output(failed).unwrap_err(), ToolError("boom".into()));
    }
}
