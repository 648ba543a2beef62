//! `artifacts.toml`: the artifact kinds an agent tags (each with an optional JSON Schema its
//! records' `data` must satisfy) and the retention cap; folio-agent keeps the store.

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::report::Report;
use crate::schema_check::compile_schema;

/// Default retention cap.
const DEFAULT_MAX: usize = 1000;

const REGISTRY_KEYS: &[&str] = &["agent_tool", "max", "kinds"];

/// `artifacts.toml` as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactsManifest {
    /// Offer `tag_artifact` to the model (needs at least one kind).
    #[serde(default)]
    pub agent_tool: bool,
    /// Retention cap (default 1000): past it, the least recently updated records are evicted.
    #[schemars(range(min = 1))]
    pub max: Option<usize>,
    /// The kinds by name.
    #[serde(default)]
    pub kinds: BTreeMap<String, ArtifactKindManifest>,
}

/// `[kinds.<name>]` of `artifacts.toml`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactKindManifest {
    /// What records of this kind are.
    pub description: Option<String>,
    /// The JSON Schema (written as a TOML table) that records' `data` must satisfy.
    pub schema: Option<Value>,
}

/// One artifact kind.
#[derive(Debug, Clone, PartialEq)]
pub struct ArtifactKind {
    /// What records of this kind are.
    pub description: Option<String>,
    /// The JSON Schema `data` must satisfy (none: any value).
    pub schema: Option<Value>,
}

/// `artifacts.toml`: the artifact kinds and retention.
#[derive(Debug, Clone, PartialEq)]
pub struct ArtifactsConfig {
    /// Whether `tag_artifact` is offered to the model.
    pub agent_tool: bool,
    /// Retention cap: past it, the least recently updated records are evicted.
    pub max: usize,
    /// The kinds by name.
    pub kinds: BTreeMap<String, ArtifactKind>,
}

impl Default for ArtifactsConfig {
    /// No `artifacts.toml`: any kind, no tool, the default cap.
    fn default() -> Self {
        ArtifactsConfig {
            agent_tool: false,
            max: DEFAULT_MAX,
            kinds: BTreeMap::new(),
        }
    }
}

/// Reads `artifacts.toml` of `agent_dir`, when present.
pub(crate) fn discover_artifacts(agent_dir: &Path, report: &mut Report) -> Option<ArtifactsConfig> {
    let file = agent_dir.join("artifacts.toml");
    if !file.is_file() {
        return None;
    }
    let manifest = report.parse::<ArtifactsManifest>(&file, REGISTRY_KEYS)?;
    if manifest.agent_tool && manifest.kinds.is_empty() {
        report.error(
            &file,
            "agent_tool: tag_artifact needs at least one kind; add a [kinds.<name>] table or set agent_tool = false".into(),
        );
        return None;
    }
    if manifest.max == Some(0) {
        report.error(&file, "max: must be at least 1".into());
        return None;
    }
    let mut kinds = BTreeMap::new();
    for (name, kind) in manifest.kinds {
        let schema = kind.schema;
        if let Some(schema) = &schema
            && let Err(err) = compile_schema(schema)
        {
            report.error(&file, format!("kinds.{name}.schema: {err}"));
            continue;
        }
        kinds.insert(
            name,
            ArtifactKind {
                description: kind.description,
                schema,
            },
        );
    }
    Some(ArtifactsConfig {
        agent_tool: manifest.agent_tool,
        max: manifest.max.unwrap_or(DEFAULT_MAX),
        kinds,
    })
}
