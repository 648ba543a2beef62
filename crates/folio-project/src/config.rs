//! `agent.toml` and `folio.toml`: the typed manifest of an agent, parsed strictly (unknown keys
//! are errors that name the nearest valid key).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

/// `folio.toml` at the project root.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// The project's name (default: the directory name).
    pub name: Option<String>,
    /// OpenTelemetry export (`[telemetry]`); each key is overridden by its `OTEL_*` variable.
    #[serde(default)]
    pub telemetry: TelemetrySection,
    /// Model prices in US dollars per million tokens (`[prices."gpt-4.1"]`), by model id or id
    /// prefix, over Folio's defaults (docs/models.md); usage of a model without one costs `null`.
    #[serde(default)]
    pub prices: BTreeMap<String, folio_protocol::ModelPrice>,
    /// Input limits and quotas (`[limits]`): the input limits have defaults; the per-principal
    /// quotas hold only where set.
    #[serde(default)]
    pub limits: crate::Limits,
}

/// `[telemetry]` in `folio.toml`: where traces, metrics and logs are exported over OTLP. Nothing
/// is exported without an endpoint; the standard `OTEL_*` variables override each key.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySection {
    /// OTLP base endpoint, e.g. `http://127.0.0.1:4318` (`OTEL_EXPORTER_OTLP_ENDPOINT`); over
    /// HTTP `/v1/traces`, `/v1/metrics` and `/v1/logs` are appended, over gRPC it is used as
    /// written (`http://127.0.0.1:4317`).
    pub endpoint: Option<String>,
    /// `http/protobuf` (default), `http/json` or `grpc` (`OTEL_EXPORTER_OTLP_PROTOCOL`).
    pub protocol: Option<String>,
    /// Headers sent with every export, e.g. a backend's API key (`OTEL_EXPORTER_OTLP_HEADERS`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The service name on every span (`OTEL_SERVICE_NAME`; default: the project's name).
    pub service_name: Option<String>,
    /// Record message and tool contents on spans (default false;
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`).
    pub capture_message_content: Option<bool>,
    /// `delta` (default) or `cumulative` metrics
    /// (`OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE`).
    pub metrics_temporality: Option<String>,
    /// How a request's W3C `traceparent` joins the turn it starts: `link` (default: the turn
    /// starts its own trace and links the caller's span) or `parent` (the caller's span parents
    /// the turn) (`FOLIO_TRACEPARENT_MODE`).
    pub traceparent: Option<String>,
    /// More collectors (`[[telemetry.destinations]]`), each with the signals it receives; the
    /// `OTEL_*` variables configure only the default one above.
    #[serde(default)]
    pub destinations: Vec<TelemetryDestination>,
}

/// One `[[telemetry.destinations]]` entry: another OTLP collector and what it receives.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TelemetryDestination {
    /// OTLP base endpoint (over HTTP each signal's path is appended; over gRPC it is used as
    /// written).
    pub endpoint: String,
    /// `http/protobuf` (default), `http/json` or `grpc`.
    pub protocol: Option<String>,
    /// Headers sent with every export to it, e.g. a backend's API key.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Which signals it receives: any of `traces`, `metrics` and `logs` (default: all three).
    pub signals: Option<Vec<String>>,
}

/// `agent/agent.toml`; every field is optional.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Display name; default `folio.toml` name, else the directory name.
    pub name: Option<String>,
    /// One line saying what the agent is for.
    pub description: Option<String>,
    /// `provider:model` (docs/models.md); subagents inherit when omitted.
    pub model: Option<String>,
    /// The native tool allowlist (docs/tools.md), or a `[tools]` table with the allowlist and
    /// the `web_search` / `read_lints` backends; `None` = the full default set.
    pub tools: Option<crate::tools_config::ToolsSection>,
    /// `"local"` only; `"cloud"` is refused.
    pub runtime: Option<String>,
    /// Model calls per turn before the turn fails (default 50).
    #[schemars(range(min = 1))]
    pub max_steps: Option<u32>,
    /// Passed through to the provider (temperature, max_tokens, reasoning_effort, …).
    #[serde(default)]
    pub model_params: Map<String, Value>,
    /// Provider overrides (`base_url`, `api_key_env`).
    #[serde(default)]
    pub provider: ProviderSection,
    /// Host-default options.
    #[serde(default)]
    pub local: LocalSection,
    /// Agent-wide concurrency limits.
    #[serde(default)]
    pub concurrency: ConcurrencySection,
    /// The context budget: window, when to compact, what to keep.
    #[serde(default)]
    pub context: ContextSection,
    /// How long the server keeps sessions.
    #[serde(default)]
    pub store: StoreSection,
    /// Human decisions on parked tool calls (the agent's default approval timeout).
    #[serde(default)]
    pub approvals: ApprovalsSection,
    /// An authored FileSystem instead of the host disk: mount path → mount.
    pub root: Option<BTreeMap<String, MountSpec>>,
    /// The name of the A/B experiment the variants form, as `ab.assigned` records it
    /// (default: the agent's name).
    pub experiment: Option<String>,
    /// A/B variants by name (`[variants.<name>]`; or `agent/variants/<name>.toml`): each new
    /// session runs with one of them, chosen once (docs/ab.md).
    #[serde(default)]
    pub variants: BTreeMap<String, VariantManifest>,
}

/// One variant as written: `[variants.<name>]` in `agent.toml` or `agent/variants/<name>.toml`.
/// Every override is optional; a variant without any is the control.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VariantManifest {
    /// The share of new sessions it gets, relative to the other enabled variants (default 1;
    /// 0: only pinned principals).
    pub weight: Option<u32>,
    /// `false`: no new session is assigned to it, and the sessions already on it keep it
    /// (default `true`).
    pub enabled: Option<bool>,
    /// Principals whose new sessions always get this variant (while it is enabled).
    #[serde(default)]
    pub pin: Vec<String>,
    /// `provider:model` instead of the agent's `model`.
    pub model: Option<String>,
    /// Merged over the agent's `model_params`: a key set here replaces the agent's.
    #[serde(default)]
    pub model_params: Map<String, Value>,
    /// A Markdown file, relative to `agent/`, whose text replaces the agent's instructions.
    pub instructions: Option<String>,
    /// The built-in tool allowlist instead of the agent's `tools` (the same names).
    pub tools: Option<Vec<String>>,
    /// The agent's skills the variant offers, by name (default: every skill).
    pub skills: Option<Vec<String>>,
}

/// `[provider]`: where and how to reach the model server.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    /// The API base URL (required for `openai-compatible`).
    pub base_url: Option<String>,
    /// The environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// `false` asks an OpenAI-compatible server for whole responses instead of streams (for
    /// servers that leave usage out of streams); default `true`.
    pub stream: Option<bool>,
    /// `true` marks the system prompt as a prompt-cache breakpoint (Anthropic `cache_control`);
    /// default `false`: a plain string, which every server speaking the format accepts.
    pub cache: Option<bool>,
    /// How long to wait for the model's first streamed byte, and then between two chunks, in
    /// milliseconds (default 120000).
    pub timeout_ms: Option<std::num::NonZeroU64>,
    /// How long to wait for the connection to the model server, in milliseconds (default 10000).
    pub connect_timeout_ms: Option<std::num::NonZeroU64>,
    /// Retries of a call that failed before its first token (429, 5xx, connection errors), with
    /// exponential backoff (default 3; 0 never retries).
    pub max_retries: Option<u32>,
    /// The API an OpenAI or OpenAI-compatible model speaks: `"chat"` (Chat Completions, the
    /// default) or `"responses"` (the Responses API; what `openai-responses:` models speak).
    pub api: Option<ProviderApi>,
}

/// `[provider] api`: which OpenAI API a model is reached through.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProviderApi {
    /// Chat Completions (`POST /chat/completions`).
    Chat,
    /// Responses (`POST /responses`).
    Responses,
}

/// `[local]`: host-default workspace options.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LocalSection {
    /// Parent directory for session workspaces.
    pub cwd: Option<String>,
    /// A fixed workspace instead of one per session.
    pub workspace_dir: Option<String>,
    /// Confine Shell child processes.
    pub sandbox: Option<bool>,
    /// Extra host paths a sandboxed Shell may read (relative to the project directory).
    pub sandbox_read: Option<Vec<String>>,
    /// Whether a sandboxed Shell keeps TCP `bind`/`connect` (default: off).
    pub sandbox_network: Option<bool>,
}

/// `[concurrency]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConcurrencySection {
    /// Turns running at once across the agent; excess turns queue.
    pub max_running_turns: Option<u32>,
    /// Turns that may wait for a slot once `max_running_turns` run (default 64; 0: none wait).
    /// A create or follow-up beyond is refused with `503 overloaded` and `Retry-After`, and
    /// nothing is written. Without `max_running_turns`, nothing queues and nothing is refused.
    pub max_queued_turns: Option<u32>,
}

/// `[store]`: how long `folio serve` keeps sessions.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreSection {
    /// Delete sessions idle for longer than this many days (no turn running, queued or
    /// waiting for an approval, no reminder pending), with their logs and workspaces; checked
    /// at start and hourly. Default: keep every session.
    pub keep_sessions_days: Option<std::num::NonZeroU32>,
}

/// `[approvals]`: how tool calls parked for a human decision wait.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsSection {
    /// How long a parked call waits for a decision before folio denies it (reason
    /// `approval timed out`), e.g. `"1h"` or `"10m"` (s, m, h, d); a tool's `approval_timeout`
    /// overrides it. Default: the call waits until someone decides.
    pub timeout: Option<String>,
}

/// `[context]`: how much conversation a model request may carry, and compaction.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextSection {
    /// The model's context window in tokens (default: known per model, else 128,000).
    pub window: Option<u64>,
    /// Compact when a request would exceed this fraction of the window (default 0.8).
    pub compact_at: Option<f64>,
    /// Most recent turns kept verbatim when compacting (default 2).
    pub keep_recent: Option<u32>,
    /// `provider:model` that writes summaries (default: the agent's model).
    pub compaction_model: Option<String>,
    /// Tokens one tool result may carry before it is spilled to a scratch file (default 10,000).
    pub tool_output_tokens: Option<u64>,
}

/// One mount of `[root]`: a host directory, an in-memory tree, an object store, or an overlay
/// of mounts.
#[derive(Debug, Clone, Deserialize, PartialEq, JsonSchema)]
#[serde(untagged)]
pub enum MountSpec {
    /// `{ host = "dir", read_only = true, index = true }` — path relative to `agent/`.
    Host {
        /// The host directory, relative to the agent folder.
        host: String,
        /// Refuse writes and deletes.
        #[serde(default)]
        read_only: bool,
        /// Attach the full-text search index.
        #[serde(default)]
        index: bool,
    },
    /// `{ temp = { "/notes.md" = "hello" } }`.
    Temp {
        /// Files of the in-memory tree.
        temp: BTreeMap<String, String>,
        /// Attach the full-text search index.
        #[serde(default)]
        index: bool,
    },
    /// `{ object_store = "s3://bucket/prefix", read_only = true, options = { … } }`: the
    /// objects under a bucket prefix (S3, GCS, Azure or `file://`), written with etag
    /// compare-and-swap.
    ObjectStore {
        /// `s3://bucket/prefix`, `gs://bucket/prefix`, `az://container/prefix` or `file:///dir`.
        object_store: String,
        /// Refuse writes and deletes.
        #[serde(default)]
        read_only: bool,
        /// Store settings (`endpoint`, `region`, `allow_http`, `access_key_id`, …); values may
        /// be `${NAME}` templates read from the environment. Unset ones come from the
        /// environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`).
        #[serde(default)]
        options: BTreeMap<String, String>,
        /// Attach the full-text search index.
        #[serde(default)]
        index: bool,
    },
    /// `{ overlay = [ {…}, {…} ] }`: earlier layers win; read-only.
    Overlay {
        /// The layers, upper first.
        overlay: Vec<MountSpec>,
        /// Attach the full-text search index.
        #[serde(default)]
        index: bool,
    },
}

/// Whether an authored tool only reads or also changes the world.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq, serde::Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// Safe to run in a dry-run session.
    Read,
    /// Replaced by `dry_run_result` in a dry-run session (the default).
    #[default]
    Write,
}

/// Where an authored tool runs.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq, serde::Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Execution {
    /// On the host, as a model-facing tool (the default).
    #[default]
    Server,
    /// Copied into the session workspace and run by the model through `Shell`.
    Agent,
}

/// `agent/tools/<name>.toml`: one authored tool (docs/tools.md "Authored tools").
#[derive(Debug, Clone, Default, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolManifest {
    /// What the tool does, shown to the model (required).
    #[schemars(required)]
    pub description: Option<String>,
    /// The program and its arguments, resolved relative to `agent/tools/` (required).
    #[schemars(required, length(min = 1))]
    pub command: Option<Vec<String>>,
    /// `read` or `write` (default `write`); only for `execution = "server"` tools.
    pub effect: Option<Effect>,
    /// Park model-initiated calls for a human decision.
    #[serde(default)]
    pub needs_approval: bool,
    /// How long a parked call waits for a decision before folio denies it (reason
    /// `approval timed out`), e.g. `"10m"` (s, m, h, d); overrides the agent's
    /// `[approvals] timeout`. Needs `needs_approval = true`.
    pub approval_timeout: Option<String>,
    /// `server` (default) or `agent`.
    #[serde(default)]
    pub execution: Execution,
    /// Seconds before the process group is killed (default 60).
    #[schemars(range(min = 1))]
    pub timeout_secs: Option<u64>,
    /// Returned instead of running a write tool in a dry-run session.
    pub dry_run_result: Option<Value>,
    /// The JSON Schema of the input, inline.
    pub input_schema: Option<Value>,
    /// The JSON Schema of the input, in a file beside the manifest.
    pub input_schema_file: Option<String>,
}

/// YAML frontmatter of a skill (the Agent Skills format).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, serde::Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillFrontmatter {
    /// Must equal the file or folder name when present.
    pub name: Option<String>,
    /// The routing rule the model sees ("Use when …").
    pub description: Option<String>,
    /// Tools the skill expects (kept and shown by `info`).
    #[serde(rename = "allowed-tools", skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Value>,
    /// Free-form metadata (kept and shown by `info`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// The skill's license (kept and shown by `info`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// Environment requirements (kept and shown by `info`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<String>,
}

/// `agent/skills/<name>.toml`: a generated skill whose command prints
/// `{description, markdown, files}`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GeneratedSkillManifest {
    /// The program and its arguments, resolved relative to `agent/skills/` (required).
    #[schemars(required, length(min = 1))]
    pub command: Option<Vec<String>>,
    /// Overrides the description the command prints.
    pub description: Option<String>,
    /// Seconds before the command is killed (default 30).
    #[schemars(range(min = 1))]
    pub timeout_secs: Option<u64>,
}

/// The frontmatter of `agent/schedules/<name>.md`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleFrontmatter {
    /// Five-field cron expression (minute hour day month weekday) or `@hourly`-style, read in
    /// `timezone` (required).
    #[schemars(required)]
    pub cron: Option<String>,
    /// IANA time zone the cron fields are read in (default `UTC`).
    pub timezone: Option<String>,
    /// A slot whose previous run is still going: `skip` (default), `buffer_one` or `allow`.
    #[schemars(extend("enum" = ["skip", "buffer_one", "allow", null]))]
    pub overlap: Option<String>,
    /// Missed slots at start: `latest` (default), `none` or `all` (at most `catch_up_limit`).
    #[schemars(extend("enum" = ["latest", "none", "all", null]))]
    pub catch_up: Option<String>,
    /// The most missed slots `catch_up = "all"` runs (default 10).
    #[schemars(range(min = 1))]
    pub catch_up_limit: Option<u32>,
    /// Each slot fires up to this many seconds late, by a fixed amount per slot (default 0).
    pub jitter_secs: Option<u32>,
    /// `false` keeps the schedule from firing (default `true`).
    pub enabled: Option<bool>,
}
