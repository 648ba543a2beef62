//! Hook manifests (`hooks/**/*.toml`): which events an observe-only subprocess receives, and
//! the command it runs; folio-agent dispatches them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use folio_protocol::EventBody;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::report::Report;

const HOOK_KEYS: &[&str] = &["description", "events", "command", "timeout_secs"];
/// Default timeout of one hook run.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// `hooks/<name>.toml` as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookManifest {
    /// What the hook is for.
    pub description: Option<String>,
    /// Event filters: exact types (`turn.completed`), prefixes (`action.*`) or `*`.
    #[schemars(length(min = 1))]
    pub events: Vec<String>,
    /// A shell script (run through `sh -c`) or a program and its arguments; it reads the event
    /// as JSON on stdin.
    pub command: HookCommand,
    /// Seconds one run may take before its process group is killed (default 30).
    #[schemars(range(min = 1))]
    pub timeout_secs: Option<u64>,
}

/// A hook's command: a shell script or an argument vector.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum HookCommand {
    /// Run through `sh -c`.
    Shell(String),
    /// The program and its arguments.
    Argv(Vec<String>),
}

/// One discovered hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookDefinition {
    /// The path under `hooks/` without `.toml` (`audit`, `ops/turns`).
    pub name: String,
    /// What the hook is for.
    pub description: Option<String>,
    /// Event filters: exact types (`turn.completed`), prefixes (`action.*`) or `*`.
    pub events: Vec<String>,
    /// The program and its arguments; a string command runs through `sh -c`.
    pub command: Vec<String>,
    /// How long one run may take before it is killed.
    pub timeout: Duration,
    /// The folder of the manifest: the hook's cwd, and what `./script` is relative to.
    pub dir: PathBuf,
}

impl HookDefinition {
    /// Whether this hook subscribes to events of `event_type`.
    pub fn matches(&self, event_type: &str) -> bool {
        self.events
            .iter()
            .any(|filter| filter_matches(filter, event_type))
    }
}

fn filter_matches(filter: &str, event_type: &str) -> bool {
    if filter == "*" {
        return true;
    }
    match filter.strip_suffix('*') {
        Some(prefix) => event_type.starts_with(prefix),
        None => filter == event_type,
    }
}

/// Reads every `hooks/**/*.toml` of `agent_dir`, sorted by name.
pub(crate) fn discover_hooks(agent_dir: &Path, report: &mut Report) -> Vec<HookDefinition> {
    let root = agent_dir.join("hooks");
    let mut files = Vec::new();
    collect_toml(&root, &mut files);
    files.sort();
    let mut hooks = Vec::new();
    for file in files {
        let name = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .with_extension("")
            .to_string_lossy()
            .into_owned();
        let Some(manifest) = report.parse::<HookManifest>(&file, HOOK_KEYS) else {
            continue;
        };
        if manifest.events.is_empty() {
            report.error(
                &file,
                "events: list at least one event type (e.g. [\"turn.completed\"] or [\"action.*\"])".into(),
            );
            continue;
        }
        for filter in &manifest.events {
            let known = filter == "*"
                || match filter.strip_suffix('*') {
                    Some(prefix) => EventBody::TYPES.iter().any(|t| t.starts_with(prefix)),
                    None => EventBody::TYPES.contains(&filter.as_str()),
                };
            if !known {
                report.warning(
                    &file,
                    format!("events: \"{filter}\" matches no event type, so it never fires"),
                );
            }
        }
        let command = match manifest.command {
            HookCommand::Shell(script) if !script.trim().is_empty() => {
                vec!["sh".to_string(), "-c".to_string(), script]
            }
            HookCommand::Argv(argv) if !argv.is_empty() => argv,
            _ => {
                report.error(&file, "command: must not be empty".into());
                continue;
            }
        };
        if manifest.timeout_secs == Some(0) {
            report.error(&file, "timeout_secs: must be at least 1".into());
            continue;
        }
        hooks.push(HookDefinition {
            name,
            description: manifest.description,
            events: manifest.events,
            command,
            timeout: manifest
                .timeout_secs
                .map_or(DEFAULT_TIMEOUT, Duration::from_secs),
            dir: file.parent().unwrap_or(agent_dir).to_path_buf(),
        });
    }
    hooks
}

fn collect_toml(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            collect_toml(&path, out);
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters() {
        assert!(filter_matches("*", "turn.completed"));
        assert!(filter_matches("action.*", "action.result"));
        assert!(!filter_matches("action.*", "actions.requested"));
        assert!(filter_matches("turn.completed", "turn.completed"));
        assert!(!filter_matches("turn.completed", "turn.failed"));
    }
}
