//! `agent.toml` and `folio.toml`: the typed manifest of an agent, parsed strictly (unknown keys
//! are errors that name the nearest valid key).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

/// `folio.toml` at the project root.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// The project's name (default: the directory name).
    pub name: Option<String>,
}

/// `agent/agent.toml`; every field is optional.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Display name; default `folio.toml` name, else the directory name.
    pub name: Option<String>,
    /// One line saying what the agent is for.
    pub description: Option<String>,
    /// `provider:model` (models.md); subagents inherit when omitted.
    pub model: Option<String>,
    /// The native tool allowlist (tools.md); `None` = the full default set.
    pub tools: Option<Vec<String>>,
    /// `"local"` only; `"cloud"` is refused.
    pub runtime: Option<String>,
    /// Model calls per turn before the turn fails (default 50).
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
    /// An authored FileSystem instead of the host disk: mount path → mount.
    pub root: Option<BTreeMap<String, MountSpec>>,
}

/// `[provider]`: where and how to reach the model server.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    /// The API base URL (required for `openai-compatible`).
    pub base_url: Option<String>,
    /// The environment variable holding the API key.
    pub api_key_env: Option<String>,
}

/// `[local]`: host-default workspace options.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LocalSection {
    /// Parent directory for session workspaces.
    pub cwd: Option<String>,
    /// A fixed workspace instead of one per session.
    pub workspace_dir: Option<String>,
    /// Confine Shell child processes.
    pub sandbox: Option<bool>,
}

/// `[concurrency]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ConcurrencySection {
    /// Turns running at once across the agent; excess turns queue.
    pub max_running_turns: Option<u32>,
}

/// One mount of `[root]`: a host directory, an in-memory tree, or an overlay of mounts.
#[derive(Debug, Clone, Deserialize, PartialEq)]
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
    /// `{ overlay = [ {…}, {…} ] }`: earlier layers win; read-only.
    Overlay {
        /// The layers, upper first.
        overlay: Vec<MountSpec>,
        /// Attach the full-text search index.
        #[serde(default)]
        index: bool,
    },
}

/// Every key `agent.toml` accepts at the top level (for "did you mean" hints).
pub(crate) const AGENT_KEYS: &[&str] = &[
    "name",
    "description",
    "model",
    "tools",
    "runtime",
    "max_steps",
    "model_params",
    "provider",
    "local",
    "concurrency",
    "root",
];

/// The valid key closest to `unknown`, when one is close enough to be a likely typo.
pub(crate) fn nearest_key<'a>(unknown: &str, valid: &[&'a str]) -> Option<&'a str> {
    valid
        .iter()
        .map(|key| (strsim::damerau_levenshtein(unknown, key), *key))
        .filter(|(distance, key)| *distance <= 2.max(key.len() / 3))
        .min()
        .map(|(_, key)| key)
}
