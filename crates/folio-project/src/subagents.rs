//! Subagent folders (`subagents/<id>/agent.toml` + `instructions.md`): what the `Task` tool
//! can delegate to; folio-agent runs them.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::report::{Report, is_slug};

const SUBAGENT_KEYS: &[&str] = &["description", "model", "instructions", "max_steps"];

/// Capability folders a subagent may not have (they belong to the root agent).
const IGNORED_IN_SUBAGENT: &[&str] = &[
    "tools",
    "skills",
    "channels",
    "hooks",
    "schedules",
    "sandbox",
    "mcp-connections",
    "host-connections",
    "subagents",
];

/// `subagents/<id>/agent.toml` as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubagentManifest {
    /// When to delegate to it: a routing rule shown to the parent model (required).
    pub description: Option<String>,
    /// `provider:model`; the parent's model when omitted.
    pub model: Option<String>,
    /// Its system prompt inline (or write `instructions.md` beside the manifest, not both).
    pub instructions: Option<String>,
    /// Model calls per delegation (default: the parent's).
    #[schemars(range(min = 1))]
    pub max_steps: Option<u32>,
}

/// One discovered subagent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentDefinition {
    /// The folder name: what `Task {subagent}` names.
    pub id: String,
    /// When to delegate to it (a routing rule shown to the parent model).
    pub description: String,
    /// `provider:model`; `None` inherits the parent's.
    pub model: Option<String>,
    /// Its system prompt (inline `instructions` or `instructions.md`).
    pub instructions: String,
    /// Model calls per delegation (default: the parent's).
    pub max_steps: Option<u32>,
    /// The subagent's folder.
    pub dir: PathBuf,
}

/// Reads every `subagents/<id>/` of `agent_dir`, sorted by id.
pub(crate) fn discover_subagents(agent_dir: &Path, report: &mut Report) -> Vec<SubagentDefinition> {
    let root = agent_dir.join("subagents");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    let mut subagents = Vec::new();
    for dir in dirs {
        let id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let manifest_path = dir.join("agent.toml");
        if !is_slug(&id) {
            report.error(
                &dir,
                format!("name: subagent \"{id}\" must match [A-Za-z0-9][A-Za-z0-9_-]*"),
            );
            continue;
        }
        for folder in IGNORED_IN_SUBAGENT {
            if dir.join(folder).exists() {
                report.warning(
                    &dir.join(folder),
                    format!("ignored: a subagent inherits the parent's capabilities; {folder}/ inside subagents/{id}/ is not read"),
                );
            }
        }
        if !manifest_path.is_file() {
            report.error(
                &manifest_path,
                "missing: a subagent needs agent.toml with a description (a routing rule: \"Use when …\")".into(),
            );
            continue;
        }
        let Some(manifest) = report.parse::<SubagentManifest>(&manifest_path, SUBAGENT_KEYS) else {
            continue;
        };
        let Some(description) = manifest.description.filter(|d| !d.trim().is_empty()) else {
            report.error(
                &manifest_path,
                "description: required for a subagent (a routing rule: \"Use when …\")".into(),
            );
            continue;
        };
        if manifest.max_steps == Some(0) {
            report.error(&manifest_path, "max_steps: must be at least 1".into());
            continue;
        }
        let file = dir.join("instructions.md");
        let instructions = match (manifest.instructions, file.is_file()) {
            (Some(_), true) => {
                report.error(
                    &manifest_path,
                    "instructions: set inline instructions or write instructions.md, not both"
                        .into(),
                );
                continue;
            }
            (Some(inline), false) => inline,
            (None, true) => match std::fs::read_to_string(&file) {
                Ok(text) => text,
                Err(err) => {
                    report.error(&file, format!("cannot read: {err}"));
                    continue;
                }
            },
            (None, false) => format!("You are the \"{id}\" subagent. {description}"),
        };
        if let Some(model) = &manifest.model
            && !model.contains(':')
        {
            report.error(
                &manifest_path,
                format!("model: \"{model}\" must be provider:model (e.g. openai:gpt-4.1-mini)"),
            );
            continue;
        }
        subagents.push(SubagentDefinition {
            id,
            description,
            model: manifest.model,
            instructions,
            max_steps: manifest.max_steps,
            dir,
        });
    }
    subagents
}
