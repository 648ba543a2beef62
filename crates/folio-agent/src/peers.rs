//! Peer agents: a connection manifest with `agent = "<slug>"` offers the model that agent's
//! `ask` as the tool `mcp__<connection>__ask`.
//!
//! A peer mounted in the same `folio serve` is asked in-process through its
//! [`PeerAgent`] (the server's session manager), found by slug in the [`PeerDirectory`] the
//! server fills once every agent is loaded; a peer on another server (`agent` with `url`, its
//! `/v1/mcp`, and `headers` as its auth) is asked over MCP. Either way:
//!
//! - The peer session is kept per parent session: the first ask opens one, later asks of the
//!   same connection from the same parent session continue it. The pairing is stored in the
//!   parent session's folder (`sessions/<id>/peers.json`, [`StateLayout::peers_path`]), so it
//!   survives a restart; a fork starts with no pairing and opens its own peer sessions. A
//!   session runs its tool calls one at a time, so two asks never race for the pairing.
//! - The call is an ordinary tool call in the parent's log; its result is the peer's
//!   `{status, sessionId, reply}` ([`AskResult`]), so the log names the peer session.
//! - Every session knows how many peer asks deep it is ([`ToolContext::peer_depth`]); an ask
//!   that would go past [`MAX_PEER_DEPTH`] is refused with a tool error, which cuts cycles
//!   (A asks B asks A …) on one server and, through `peerDepth` in the ask, across servers.
//! - Stopping the asking turn (stop, preempt, shutdown) stops the peer's turn: in-process the
//!   peer's session is stopped directly; across servers the dropped MCP call sends
//!   `notifications/cancelled`, and the peer's `/v1/mcp` stops the turn the ask started. The
//!   peer records `turn.failed` (`turn interrupted`), like any stopped turn. A first ask that
//!   is stopped leaves no pairing, so the next ask opens a new peer session.
//!
//! `folio run` has no server to mount a peer in: loading an agent with a same-server peer
//! outside `folio serve` fails with [`LoadError::PeerNeedsServer`](crate::LoadError), which
//! says to serve the folder holding both projects or to point `url` at a running server.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use folio_protocol::{AskArguments, AskResult, AskStatus};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::layout::StateLayout;
use crate::mcp::{McpConnection, McpError, mcp_tool_name};
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};

/// The deepest chain of peer asks a turn may start (a session asked by a person is at depth 0,
/// the peer it asks at 1, …); an ask past it is a tool error, which cuts cycles.
pub const MAX_PEER_DEPTH: u32 = 4;

/// The name of the peer tool (`ask`) on a Folio agent's `/v1/mcp`.
const ASK: &str = "ask";

/// Why a peer could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerError {
    /// The peer session to continue no longer exists (deleted): a new one is opened.
    #[error("peer session {0} no longer exists")]
    SessionGone(String),
    /// The remote peer's `/v1/mcp` could not be reached or refused the call.
    #[error(transparent)]
    Mcp(#[from] McpError),
    /// The asking turn was stopped before the remote peer answered.
    #[error("the ask was cancelled")]
    Cancelled,
    /// No agent of that slug is mounted in this server.
    #[error(
        "peer agent \"{agent}\" is not mounted in this server (mounted: {mounted}): serve the folder holding both projects"
    )]
    NotMounted {
        /// The slug asked for.
        agent: String,
        /// The slugs that are mounted, comma-separated.
        mounted: String,
    },
    /// A remote peer's `ask` answered something that is not an ask's result.
    #[error(
        "peer agent \"{agent}\" at {url} did not answer with {{status, sessionId, reply}} ({answer}): is url a Folio agent's /v1/mcp?"
    )]
    NotAnAsk {
        /// The peer's name.
        agent: String,
        /// Where it was reached.
        url: String,
        /// What it answered.
        answer: String,
    },
    /// The peer's session engine refused or failed the ask: its wire error code (which says
    /// whether asking again can help: `session_busy`, `internal`, …) and message.
    #[error("{message}")]
    Refused {
        /// The error code.
        code: folio_protocol::ErrorCode,
        /// What the engine said.
        message: String,
    },
}

/// An agent that answers peer asks in-process: `folio serve`'s session manager of each agent.
#[async_trait::async_trait]
pub trait PeerAgent: Send + Sync {
    /// Runs `ask` as `principal`: a new chat session at depth `peerDepth`, or a follow-up of
    /// `sessionId`, waiting for the turn's reply; when `cancel` fires first, stops that turn.
    async fn ask(
        &self,
        principal: &str,
        ask: AskArguments,
        cancel: &CancellationToken,
    ) -> Result<AskResult, PeerError>;
}

/// The agents mounted in one server, by slug: where a same-server peer tool finds its peer.
/// Filled after every agent is loaded (peers may ask each other).
#[derive(Clone, Default)]
pub struct PeerDirectory(Arc<RwLock<BTreeMap<String, Arc<dyn PeerAgent>>>>);

impl PeerDirectory {
    /// An empty directory.
    pub fn new() -> Self {
        PeerDirectory::default()
    }

    /// Mounts `agent` under `slug` (replacing what was there).
    pub fn mount(&self, slug: &str, agent: Arc<dyn PeerAgent>) {
        self.0
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(slug.to_string(), agent);
    }

    /// The agent mounted under `slug`.
    pub fn get(&self, slug: &str) -> Option<Arc<dyn PeerAgent>> {
        self.0
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(slug)
            .cloned()
    }

    /// The mounted slugs, sorted.
    pub fn slugs(&self) -> Vec<String> {
        self.0
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect()
    }
}

/// How a peer tool reaches its peer.
#[derive(Clone)]
enum Reach {
    /// Mounted in the same server: in-process, by slug.
    Local(PeerDirectory),
    /// On another server: its `/v1/mcp` over streamable HTTP.
    Remote(Arc<McpConnection>),
}

/// `mcp__<connection>__ask`: asks a peer agent, continuing this session's peer conversation.
pub struct PeerTool {
    name: String,
    connection: String,
    agent: String,
    description: String,
    reach: Reach,
    state: StateLayout,
}

impl PeerTool {
    /// The tool of connection `connection` asking `agent` mounted in the same server.
    pub fn local(
        connection: &str,
        agent: &str,
        description: Option<&str>,
        peers: PeerDirectory,
        state: StateLayout,
    ) -> Self {
        PeerTool::new(connection, agent, description, Reach::Local(peers), state)
    }

    /// The tool of `connection` (the peer's `/v1/mcp` on another server) asking `agent`.
    pub fn remote(
        connection: Arc<McpConnection>,
        agent: &str,
        description: Option<&str>,
        state: StateLayout,
    ) -> Self {
        let name = connection.name().to_string();
        PeerTool::new(&name, agent, description, Reach::Remote(connection), state)
    }

    fn new(
        connection: &str,
        agent: &str,
        description: Option<&str>,
        reach: Reach,
        state: StateLayout,
    ) -> Self {
        let about = description.map_or(String::new(), |d| format!(" ({})", d.trim()));
        PeerTool {
            name: mcp_tool_name(connection, ASK),
            connection: connection.to_string(),
            agent: agent.to_string(),
            description: format!(
                "Ask the peer agent \"{agent}\"{about}: it runs a turn and returns its reply. Later asks from this conversation continue the same peer conversation, so it remembers what you asked before."
            ),
            reach,
            state,
        }
    }

    /// Sends one ask to the peer. When `cancel` fires, a peer in the same server stops the
    /// turn it started; a remote call is dropped, which sends the peer's server MCP
    /// `notifications/cancelled`, and its `/v1/mcp` stops the turn the same way.
    async fn send(
        &self,
        principal: &str,
        ask: AskArguments,
        cancel: &CancellationToken,
    ) -> Result<AskResult, PeerError> {
        match &self.reach {
            Reach::Local(peers) => {
                let Some(peer) = peers.get(&self.agent) else {
                    return Err(PeerError::NotMounted {
                        agent: self.agent.clone(),
                        mounted: peers.slugs().join(", "),
                    });
                };
                peer.ask(principal, ask, cancel).await
            }
            Reach::Remote(connection) => {
                let arguments = match serde_json::to_value(&ask) {
                    Ok(Value::Object(map)) => map,
                    _ => Map::new(),
                };
                let result = tokio::select! {
                    result = connection.call_tool(ASK, arguments) => result,
                    () = cancel.cancelled() => return Err(PeerError::Cancelled),
                };
                let result = result?;
                match result
                    .structured_content
                    .clone()
                    .map(serde_json::from_value::<AskResult>)
                {
                    Some(Ok(asked)) => Ok(asked),
                    _ => {
                        let text = match crate::mcp::tool_output(result) {
                            Ok(output) => output.to_event_value().to_string(),
                            Err(err) => err.0,
                        };
                        Err(PeerError::NotAnAsk {
                            agent: self.agent.clone(),
                            url: self.connection.to_string(),
                            answer: text,
                        })
                    }
                }
            }
        }
    }
}

/// The peer sessions of one parent session, by connection name (`sessions/<id>/peers.json`).
type Pairings = BTreeMap<String, String>;

fn read_pairings(state: &StateLayout, session_id: &str) -> Result<Pairings, ToolError> {
    let path = state.peers_path(session_id);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|err| {
            ToolError(format!(
                "cannot read the peer sessions of this session ({}): {err}; delete the file to start new peer conversations",
                path.display()
            ))
        }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Pairings::new()),
        Err(err) => Err(ToolError(format!(
            "cannot read the peer sessions of this session ({}): {err}",
            path.display()
        ))),
    }
}

fn write_pairings(
    state: &StateLayout,
    session_id: &str,
    pairings: &Pairings,
) -> Result<(), ToolError> {
    let path = state.peers_path(session_id);
    let failed = |err: std::io::Error| {
        ToolError(format!(
            "cannot record the peer session in {}: {err}",
            path.display()
        ))
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(failed)?;
    }
    let bytes = serde_json::to_vec_pretty(pairings).unwrap_or_default();
    crate::artifacts::write_atomic(&path, &bytes).map_err(failed)
}

#[async_trait::async_trait]
impl Tool for PeerTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "What to ask the peer agent"}
            },
            "required": ["message"],
            "additionalProperties": false
        })
    }

    fn prepare(&self, input: Value) -> Result<Value, ToolError> {
        let Value::Object(map) = input else {
            return Err(ToolError(
                "input must be a JSON object with a message".into(),
            ));
        };
        if let Some(unknown) = map.keys().find(|k| *k != "message") {
            return Err(ToolError(format!(
                "unknown argument \"{unknown}\"; the only argument is message"
            )));
        }
        match map.get("message") {
            Some(Value::String(_)) => Ok(Value::Object(map)),
            Some(other) => Err(ToolError(format!(
                "message must be a string, got {}",
                crate::tools::input::json_type(other)
            ))),
            None => Err(ToolError("message is required".into())),
        }
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let message = input["message"].as_str().unwrap_or_default().to_string();
        let depth = ctx.peer_depth + 1;
        if depth > MAX_PEER_DEPTH {
            return Err(ToolError(format!(
                "not asking peer agent \"{}\": this session is already {} peer asks deep and the limit is {MAX_PEER_DEPTH} (agents asking each other in a cycle, A asks B asks A, end here); answer without asking it",
                self.agent, ctx.peer_depth
            )));
        }
        let mut pairings = read_pairings(&self.state, &ctx.session_id)?;
        let paired = pairings.get(&self.connection).cloned();
        let ask = |session_id: Option<String>| AskArguments {
            message: message.clone(),
            session_id,
            peer_depth: Some(depth),
        };
        let asked = match self
            .send(&ctx.principal, ask(paired.clone()), &ctx.cancel)
            .await
        {
            // The peer session was deleted: open a new one.
            Err(PeerError::SessionGone(_)) => {
                self.send(&ctx.principal, ask(None), &ctx.cancel).await
            }
            other => other,
        };
        if ctx.cancel.is_cancelled() {
            return Err(ToolError("tool call cancelled".into()));
        }
        let asked = asked.map_err(|err| {
            ToolError(format!(
                "peer agent \"{}\" could not answer: {err}",
                self.agent
            ))
        })?;
        if paired.as_deref() != Some(asked.session_id.as_str()) {
            pairings.insert(self.connection.clone(), asked.session_id.clone());
            write_pairings(&self.state, &ctx.session_id, &pairings)?;
        }
        match asked.status {
            AskStatus::Completed => Ok(ToolOutput::Json(
                serde_json::to_value(&asked).unwrap_or_default(),
            )),
            AskStatus::Failed => Err(ToolError(format!(
                "peer agent \"{}\" failed in its session {}: {}",
                self.agent, asked.session_id, asked.reply
            ))),
        }
    }
}
