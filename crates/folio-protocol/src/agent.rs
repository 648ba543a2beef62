//! What discovery found about an agent: [`AgentInfo`] (`folio info --json`) and
//! [`AgentDescription`] (`GET /v1/agent`, which adds the live tool registry and the mount).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::OkTrue;

/// How bad a discovery diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Discovery fails; `validate` exits 1; `run`/`serve` refuse to start.
    Error,
    /// Worth fixing; the agent still runs.
    Warning,
}

/// One finding of discovery, about one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticInfo {
    /// Error or warning.
    pub severity: Severity,
    /// The file, relative to the project directory (`agent/agent.toml`).
    pub file: String,
    /// 1-based line, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// What is wrong and what to do, in one line.
    pub message: String,
}

/// Whether an authored tool only reads or also changes the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolEffect {
    /// Safe to run in a dry-run session.
    Read,
    /// Replaced by its dry-run result in a dry-run session.
    Write,
}

/// Where an authored tool runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolExecution {
    /// On the host, as a model-facing tool.
    Server,
    /// Copied into the session workspace and run by the model through `Shell`.
    Agent,
}

/// An authored tool as discovery found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthoredToolInfo {
    /// Tool name.
    pub name: String,
    /// What the model is told about it.
    pub description: String,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// `read` or `write`.
    pub effect: ToolEffect,
    /// `server` or `agent`.
    pub execution: ToolExecution,
    /// Whether each call waits for a person's approval.
    pub needs_approval: bool,
    /// Seconds before the command is killed.
    pub timeout_secs: u64,
    /// JSON Schema of the input.
    pub input_schema: Value,
}

/// How a skill is authored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SkillForm {
    /// `skills/<name>.md`.
    Flat,
    /// `skills/<name>/SKILL.md` plus siblings.
    Packaged,
    /// `skills/<name>.toml` with a generating command.
    Generated,
}

/// A skill's frontmatter, as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SkillFrontmatterInfo {
    /// The `name` key, when present.
    pub name: Option<String>,
    /// The `description` key, when present.
    pub description: Option<String>,
    /// Tools the skill expects.
    #[serde(
        rename = "allowed-tools",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub allowed_tools: Option<Value>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// The skill's license.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// Environment requirements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<String>,
}

/// A skill as discovery found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SkillInfo {
    /// The name the model refers to it by.
    pub name: String,
    /// How it is authored.
    pub form: SkillForm,
    /// The routing rule, when known before loading.
    pub description: Option<String>,
    /// The frontmatter.
    pub frontmatter: SkillFrontmatterInfo,
    /// Its file or folder, relative to the project directory.
    pub path: String,
}

/// How an MCP connection is reached (templates kept as written).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum TransportInfo {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint URL.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
    /// A peer agent: mounted in the same `folio serve`, or on another server at `url`.
    Peer {
        /// The peer agent's slug.
        agent: String,
        /// The peer's `/v1/mcp` on another server (`None`: mounted in the same server).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
    },
}

/// An MCP connection as discovery found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionInfo {
    /// The connection name.
    pub name: String,
    /// What the server offers.
    pub description: Option<String>,
    /// How to reach it.
    pub transport: TransportInfo,
    /// Every `${NAME}` the manifest references.
    pub env_vars: Vec<String>,
}

/// A subagent as discovery found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubagentInfo {
    /// Its id (the folder name).
    pub id: String,
    /// When to delegate to it.
    pub description: String,
    /// Its own model, when it has one.
    pub model: Option<String>,
}

/// A hook as discovery found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HookInfo {
    /// The hook name.
    pub name: String,
    /// The event types it runs on.
    pub events: Vec<String>,
    /// The program and its arguments.
    pub command: Vec<String>,
}

/// One artifact kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactKindInfo {
    /// The kind name.
    pub name: String,
    /// What it is for.
    pub description: Option<String>,
    /// JSON Schema of its data.
    pub schema: Option<Value>,
}

/// The agent's artifact settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactsInfo {
    /// Whether the model is offered `tag_artifact`.
    pub agent_tool: bool,
    /// Most artifacts kept.
    pub max: usize,
    /// The kinds.
    pub kinds: Vec<ArtifactKindInfo>,
}

/// A channel as discovery found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChannelInfo {
    /// The channel id (its file name).
    pub id: String,
    /// `webhook`, `github` or `slack`.
    pub kind: String,
}

/// A schedule as discovery found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ScheduleInfo {
    /// The schedule name (its file name).
    pub name: String,
    /// Five-field cron, UTC.
    pub cron: String,
    /// The first message of each task session it opens.
    pub prompt: String,
}

/// What discovery found in an agent project: the body of `folio info --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    /// Display name.
    pub name: String,
    /// What the agent does, when it says.
    pub description: Option<String>,
    /// The model spec of `agent.toml`, when set.
    pub model: Option<String>,
    /// Whether the agent has an authored `root/` tree.
    pub rooted: bool,
    /// The built-in tools it may use.
    pub native_tools: Vec<String>,
    /// Authored tools.
    pub tools: Vec<AuthoredToolInfo>,
    /// Skills.
    pub skills: Vec<SkillInfo>,
    /// MCP connections whose tools the model sees.
    pub mcp_connections: Vec<ConnectionInfo>,
    /// MCP connections only the host (tools and hooks) uses.
    pub host_connections: Vec<ConnectionInfo>,
    /// Subagents.
    pub subagents: Vec<SubagentInfo>,
    /// Hooks.
    pub hooks: Vec<HookInfo>,
    /// Artifact settings, when the agent keeps artifacts.
    pub artifacts: Option<ArtifactsInfo>,
    /// Channels.
    pub channels: Vec<ChannelInfo>,
    /// Schedules.
    pub schedules: Vec<ScheduleInfo>,
    /// The sandbox seed folder, relative to the project directory.
    pub sandbox: Option<String>,
    /// Discovery's diagnostics.
    #[serde(default)]
    pub diagnostics: Vec<DiagnosticInfo>,
    /// What opening each MCP connection found (`folio info --connect`; empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connection_checks: Vec<ConnectionCheck>,
    /// Where each streamable-HTTP MCP connection stands with OAuth for the local principal
    /// (`folio info`; empty when not looked up).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connection_auth: Vec<ConnectionAuthState>,
}

/// One MCP connection's OAuth state (`folio info`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConnectionAuthState {
    /// The connection name.
    pub name: String,
    /// Its state.
    pub auth: ConnectionAuth,
}

/// Where an MCP connection stands with OAuth. It never carries a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ConnectionAuth {
    /// No OAuth: Folio holds no token for it and its manifest has no `[oauth]` (a server that
    /// has not asked for authorization).
    None,
    /// A token is stored.
    #[serde(rename_all = "camelCase")]
    TokenStored {
        /// When the access token expires, when the server said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expires_at: Option<chrono::DateTime<chrono::Utc>>,
        /// Whether it has expired.
        expired: bool,
        /// The scopes granted.
        scopes: Vec<String>,
        /// Whether Folio renews it without a person (a refresh token, or a client-credentials
        /// grant).
        refreshable: bool,
    },
    /// A person must authorize first (`folio mcp login <name>`).
    NeedsLogin {
        /// Why.
        reason: String,
    },
    /// Machine to machine (`grant = "client_credentials"`): no token yet; Folio obtains one
    /// itself when the server asks.
    ClientCredentials,
}

/// What opening one MCP connection found (`folio info --connect`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionCheck {
    /// The connection name.
    pub name: String,
    /// The MCP protocol version the server agreed to, when it opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// How many tools it offers, when it opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<usize>,
    /// Why it did not open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The agent half of [`AgentDescription`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentHeader {
    /// The URL segment it is mounted under.
    pub slug: String,
    /// Display name.
    pub name: String,
    /// What the agent does, when it says.
    pub description: Option<String>,
    /// The model spec turns run with.
    pub model: String,
    /// Whether the agent has an authored `root/` tree.
    pub rooted: bool,
}

/// A tool of the live registry (built-in, authored and MCP tools).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolDescription {
    /// Tool name.
    pub name: String,
    /// What the model is told about it.
    pub description: String,
    /// JSON Schema of the input.
    pub input_schema: Value,
    /// Whether each call waits for a person's approval.
    pub needs_approval: bool,
}

/// Who sees a connection's tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    /// The model calls its tools.
    Model,
    /// Only the host (tools and hooks) calls them.
    Host,
}

/// A connection of [`AgentDescription`], with who sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionDescription {
    /// The connection.
    #[serde(flatten)]
    pub connection: ConnectionInfo,
    /// `model` or `host`.
    pub visible_to: Visibility,
    /// Set while the connection is failed: why its server could not start (`MCP server "…"
    /// could not start: …`, what a call of its tools answers); `folio serve` retries it in the
    /// background and its tools appear once it starts. Absent when it runs or is not started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `GET /v1/agent`: what discovery found, with the live tool registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentDescription {
    /// Always `true`.
    pub ok: OkTrue,
    /// The agent.
    pub agent: AgentHeader,
    /// Every tool the model is offered (with its schema).
    pub tools: Vec<ToolDescription>,
    /// Skills.
    pub skills: Vec<SkillInfo>,
    /// Subagents.
    pub subagents: Vec<SubagentInfo>,
    /// MCP connections (model and host).
    pub connections: Vec<ConnectionDescription>,
    /// Channels.
    pub channels: Vec<ChannelInfo>,
    /// Hooks.
    pub hooks: Vec<HookInfo>,
    /// Schedules.
    pub schedules: Vec<ScheduleInfo>,
    /// Artifact settings, when the agent keeps artifacts.
    pub artifacts: Option<ArtifactsInfo>,
    /// Discovery's diagnostics.
    pub diagnostics: Vec<DiagnosticInfo>,
}
