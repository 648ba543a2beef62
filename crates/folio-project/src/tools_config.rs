//! `tools` in `agent.toml`: either the allowlist as a list (`tools = ["read", "webSearch"]`) or
//! a `[tools]` table holding the allowlist (`allow`) and the configuration of the built-in
//! tools that need a backend (`[tools.web_search]`, `[tools.read_lints]`).
//!
//! **Decision (Folio):** TOML cannot hold both `tools = [...]` and `[tools.web_search]`, so the
//! table form carries the list as `allow`; an omitted `allow` is an omitted allowlist (the full
//! default set, which then includes the configured `WebSearch` and `ReadLints`).

use std::path::Path;

use schemars::JsonSchema;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::{Deserialize, Deserializer};

use crate::report::Report;

/// `tools` of `agent.toml`: the allowlist, or a table with the allowlist and tool settings.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[serde(untagged)]
pub enum ToolsSection {
    /// `tools = ["read", "grep"]`: the native allowlist (docs/tools.md).
    List(Vec<String>),
    /// `[tools]` with `allow`, `web_search` and `read_lints`.
    Table(ToolsTable),
}

impl ToolsSection {
    /// The allowlist (`None` = omitted: the full default set).
    pub fn allowlist(&self) -> Option<&[String]> {
        match self {
            ToolsSection::List(names) => Some(names),
            ToolsSection::Table(table) => table.allow.as_deref(),
        }
    }

    /// `[tools.web_search]`, when configured.
    pub fn web_search(&self) -> Option<&WebSearchConfig> {
        match self {
            ToolsSection::List(_) => None,
            ToolsSection::Table(table) => table.web_search.as_ref(),
        }
    }

    /// `[tools.read_lints]`, when configured.
    pub fn read_lints(&self) -> Option<&ReadLintsConfig> {
        match self {
            ToolsSection::List(_) => None,
            ToolsSection::Table(table) => table.read_lints.as_ref(),
        }
    }
}

impl<'de> Deserialize<'de> for ToolsSection {
    // By hand rather than `untagged`, so a mistake inside the table keeps its precise message
    // (an unknown key with its nearest valid one) instead of "did not match any variant".
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ToolsSection;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of tool names or a [tools] table")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                Vec::deserialize(SeqAccessDeserializer::new(seq)).map(ToolsSection::List)
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                ToolsTable::deserialize(MapAccessDeserializer::new(map)).map(ToolsSection::Table)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// `[tools]` as a table.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsTable {
    /// The native allowlist; omitted = the full default set.
    pub allow: Option<Vec<String>>,
    /// The search backend of `WebSearch`.
    pub web_search: Option<WebSearchConfig>,
    /// The linters of `ReadLints`.
    pub read_lints: Option<ReadLintsConfig>,
}

/// Which search API `WebSearch` calls.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchProvider {
    /// A SearXNG instance's JSON API (`GET {endpoint}?q=…&format=json`; JSON output must be
    /// enabled in the instance's `search.formats`).
    Searxng,
    /// The Brave Search API (`GET`, `X-Subscription-Token`).
    Brave,
    /// The Tavily search API (`POST` JSON, `Authorization: Bearer`).
    Tavily,
    /// A local program: `{"query", "maxResults"}` on stdin, results as JSON on stdout.
    Command,
}

impl SearchProvider {
    /// The name written in `agent.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchProvider::Searxng => "searxng",
            SearchProvider::Brave => "brave",
            SearchProvider::Tavily => "tavily",
            SearchProvider::Command => "command",
        }
    }

    /// The official endpoint, for the hosted APIs.
    pub fn default_endpoint(self) -> Option<&'static str> {
        match self {
            SearchProvider::Brave => Some("https://api.search.brave.com/res/v1/web/search"),
            SearchProvider::Tavily => Some("https://api.tavily.com/search"),
            SearchProvider::Searxng | SearchProvider::Command => None,
        }
    }

    /// The environment variable holding the API key when `api_key_env` is omitted.
    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            SearchProvider::Brave => Some("BRAVE_API_KEY"),
            SearchProvider::Tavily => Some("TAVILY_API_KEY"),
            SearchProvider::Searxng | SearchProvider::Command => None,
        }
    }
}

/// `[tools.web_search]`: where `WebSearch` searches.
#[derive(Debug, Clone, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebSearchConfig {
    /// `searxng`, `brave`, `tavily` or `command`.
    pub provider: SearchProvider,
    /// The search URL (required for `searxng`, e.g. `http://127.0.0.1:8888/search`; brave and
    /// tavily default to their official endpoints).
    pub endpoint: Option<String>,
    /// The environment variable holding the API key (brave: `BRAVE_API_KEY`, tavily:
    /// `TAVILY_API_KEY` by default; searxng: optional, sent as a bearer token).
    pub api_key_env: Option<String>,
    /// For `command`: the program and its arguments, resolved relative to `agent/`.
    pub command: Option<Vec<String>>,
    /// Results asked for and kept per search (default 10).
    #[schemars(range(min = 1, max = 50))]
    pub max_results: Option<u32>,
    /// Seconds a search may take (default 30).
    #[schemars(range(min = 1))]
    pub timeout_secs: Option<u64>,
}

/// `[tools.read_lints]`: the linters `ReadLints` runs in the session workspace.
#[derive(Debug, Clone, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadLintsConfig {
    /// The linters, run one after another.
    #[schemars(length(min = 1))]
    pub commands: Vec<LintCommand>,
    /// Diagnostics returned at most per call (default 200); the rest are counted.
    #[schemars(range(min = 1))]
    pub max_diagnostics: Option<usize>,
}

/// One linter of `[tools.read_lints] commands`.
#[derive(Debug, Clone, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LintCommand {
    /// The name diagnostics are tagged with (default: the program's file name).
    pub name: Option<String>,
    /// The program and its arguments; a relative program path with a `/` resolves against
    /// `agent/`, a bare name is looked up on `PATH`. Runs in the session workspace.
    #[schemars(length(min = 1))]
    pub command: Vec<String>,
    /// What the linter prints.
    pub format: LintFormat,
    /// Pass the workspace files matching this glob (e.g. `**/*.sh`) as arguments, for linters
    /// that do not walk directories; without it the paths asked for (if any) are passed.
    pub files: Option<String>,
    /// Seconds before the linter's process group is killed (default 120).
    #[schemars(range(min = 1))]
    pub timeout_secs: Option<u64>,
}

impl LintCommand {
    /// The name diagnostics are tagged with.
    pub fn display_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| {
            let program = self.command.first().map(String::as_str).unwrap_or("lint");
            program.rsplit('/').next().unwrap_or(program).to_string()
        })
    }
}

/// A diagnostics format `ReadLints` reads.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LintFormat {
    /// SARIF 2.1.0 JSON (`runs[].results[]`).
    Sarif,
    /// rustc `--error-format=json` or cargo/clippy `--message-format=json` lines.
    Rustc,
    /// `ruff check --output-format=json`.
    Ruff,
    /// `eslint --format json`.
    Eslint,
    /// Lines `file:line:col: [severity:] message` (gcc style; `shellcheck -f gcc`).
    Text,
}

/// The rules serde cannot say about `[tools.web_search]` and `[tools.read_lints]`: required
/// fields per provider, ranges, and `read_lints` with `[root]` (fail closed).
pub(crate) fn check(tools: &ToolsSection, rooted: bool, manifest: &Path, findings: &mut Report) {
    if let Some(search) = tools.web_search() {
        check_web_search(search, manifest, findings);
    }
    let Some(lints) = tools.read_lints() else {
        return;
    };
    if rooted {
        findings.error(
            manifest,
            "tools.read_lints: cannot be combined with [root]; linters run on the host workspace (fail closed: remove one of them)".into(),
        );
    }
    if lints.commands.is_empty() {
        findings.error(
            manifest,
            "tools.read_lints.commands: list at least one linter, e.g. { command = [\"ruff\", \"check\", \"--output-format=json\"], format = \"ruff\" }".into(),
        );
    }
    if lints.max_diagnostics == Some(0) {
        findings.error(
            manifest,
            "tools.read_lints.max_diagnostics: must be at least 1".into(),
        );
    }
    for (index, lint) in lints.commands.iter().enumerate() {
        if lint
            .command
            .first()
            .is_none_or(|program| program.is_empty())
        {
            findings.error(
                manifest,
                format!("tools.read_lints.commands[{index}].command: name the linter program and its arguments"),
            );
        }
        if lint.timeout_secs == Some(0) {
            findings.error(
                manifest,
                format!("tools.read_lints.commands[{index}].timeout_secs: must be at least 1"),
            );
        }
    }
}

fn check_web_search(search: &WebSearchConfig, manifest: &Path, findings: &mut Report) {
    let provider = search.provider.as_str();
    match (search.provider, &search.command) {
        (SearchProvider::Command, None) => findings.error(
            manifest,
            "tools.web_search.command: provider \"command\" needs the program to run, e.g. command = [\"./search.py\"]".into(),
        ),
        (SearchProvider::Command, Some(command)) if command.first().is_none_or(|p| p.is_empty()) => findings.error(
            manifest,
            "tools.web_search.command: name the program and its arguments".into(),
        ),
        (SearchProvider::Command, Some(_)) => {}
        (_, Some(_)) => findings.error(
            manifest,
            format!("tools.web_search.command: only provider \"command\" runs a program; provider \"{provider}\" calls its HTTP API (remove command)"),
        ),
        (_, None) => {}
    }
    match (&search.endpoint, search.provider) {
        (None, SearchProvider::Searxng) => findings.error(
            manifest,
            "tools.web_search.endpoint: provider \"searxng\" needs the instance's search URL, e.g. endpoint = \"http://127.0.0.1:8888/search\"".into(),
        ),
        (Some(_), SearchProvider::Command) => findings.error(
            manifest,
            "tools.web_search.endpoint: provider \"command\" runs a program and calls no endpoint (remove endpoint)".into(),
        ),
        (Some(url), _) if !(url.starts_with("http://") || url.starts_with("https://")) => findings.error(
            manifest,
            format!("tools.web_search.endpoint: \"{url}\" is not an http(s) URL"),
        ),
        _ => {}
    }
    if search.max_results.is_some_and(|n| !(1..=50).contains(&n)) {
        findings.error(
            manifest,
            "tools.web_search.max_results: must be between 1 and 50".into(),
        );
    }
    if search.timeout_secs == Some(0) {
        findings.error(
            manifest,
            "tools.web_search.timeout_secs: must be at least 1".into(),
        );
    }
    if search.provider == SearchProvider::Command && search.api_key_env.is_some() {
        findings.error(
            manifest,
            "tools.web_search.api_key_env: provider \"command\" takes no key (the program reads its own environment; remove api_key_env)".into(),
        );
    }
    let key_env = search
        .api_key_env
        .as_deref()
        .or(search.provider.default_key_env());
    if let Some(var) = key_env
        && std::env::var_os(var).is_none()
    {
        findings.warning(
            manifest,
            format!("tools.web_search: the API key variable {var} is not set, so every WebSearch call will fail until it is (set {var})"),
        );
    }
}
