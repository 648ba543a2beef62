//! Project discovery: a project folder → an [`AgentDefinition`] plus diagnostics, with every
//! fail-closed rule of tools.md reported as an error that names the file, the field and the rule.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::allowlist::{self, ALLOWLIST_NAMES, ROOT_FORBIDDEN};
use crate::config::{AGENT_KEYS, AgentConfig, ProjectConfig, nearest_key};
use crate::tools::FileTool;

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Discovery fails; `validate` exits 1; `run`/`serve` refuse to start.
    Error,
    /// Worth fixing; the agent still runs.
    Warning,
}

/// One finding of discovery, about one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The file, relative to the project directory (`agent/agent.toml`).
    pub file: String,
    /// 1-based line, where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// What is wrong and what to do, in one line.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        match self.line {
            Some(line) => write!(f, "{severity}: {}:{line}: {}", self.file, self.message),
            None => write!(f, "{severity}: {}: {}", self.file, self.message),
        }
    }
}

/// A discovered agent.
#[derive(Debug, Clone)]
pub struct AgentDefinition {
    /// Display name.
    pub name: String,
    /// What the agent is for.
    pub description: Option<String>,
    /// The project directory.
    pub project_dir: PathBuf,
    /// The `agent/` (or `bot/`) folder.
    pub agent_dir: PathBuf,
    /// The always-on system prompt.
    pub instructions: String,
    /// The parsed `agent.toml`.
    pub config: AgentConfig,
    /// The built-in tools the allowlist grants.
    pub native_tools: Vec<allowlist::NativeTool>,
}

impl AgentDefinition {
    /// Whether the agent runs on an authored `[root]` instead of the host disk.
    pub fn is_rooted(&self) -> bool {
        self.config.root.is_some()
    }

    /// Model calls per turn before the turn fails.
    pub fn max_steps(&self) -> u32 {
        self.config.max_steps.unwrap_or(50)
    }
}

/// What discovery produced: the definition (when there were no errors) and every diagnostic.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The agent, absent when any error was found.
    pub definition: Option<AgentDefinition>,
    /// Errors and warnings, errors first.
    pub diagnostics: Vec<Diagnostic>,
}

impl Discovery {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }
}

struct Findings {
    project_dir: PathBuf,
    diagnostics: Vec<Diagnostic>,
}

impl Findings {
    fn push(&mut self, severity: Severity, file: &Path, line: Option<u32>, message: String) {
        let file = file
            .strip_prefix(&self.project_dir)
            .unwrap_or(file)
            .to_string_lossy()
            .into_owned();
        self.diagnostics.push(Diagnostic {
            severity,
            file,
            line,
            message,
        });
    }

    fn error(&mut self, file: &Path, message: String) {
        self.push(Severity::Error, file, None, message);
    }

    fn warning(&mut self, file: &Path, message: String) {
        self.push(Severity::Warning, file, None, message);
    }
}

/// Discovers the agent in `project_dir`.
pub fn discover(project_dir: &Path) -> Discovery {
    let project_dir = project_dir.to_path_buf();
    let mut findings = Findings {
        project_dir: project_dir.clone(),
        diagnostics: Vec::new(),
    };
    let definition = discover_into(&project_dir, &mut findings);
    let mut diagnostics = findings.diagnostics;
    diagnostics.sort_by_key(|d| d.severity);
    let failed = diagnostics.iter().any(|d| d.severity == Severity::Error);
    Discovery {
        definition: if failed { None } else { definition },
        diagnostics,
    }
}

fn discover_into(project_dir: &Path, findings: &mut Findings) -> Option<AgentDefinition> {
    if !project_dir.is_dir() {
        findings.error(
            project_dir,
            format!(
                "{} is not a directory: pass --dir with an agent project (a folder holding agent/)",
                project_dir.display()
            ),
        );
        return None;
    }
    let project_file = project_dir.join("folio.toml");
    let project: ProjectConfig = parse_toml(&project_file, findings, &["name"]).unwrap_or_default();
    let agent_dir = ["agent", "bot"]
        .iter()
        .map(|name| project_dir.join(name))
        .find(|dir| dir.is_dir());
    let Some(agent_dir) = agent_dir else {
        findings.error(
            &project_dir.join("agent"),
            "no agent/ folder: create agent/instructions.md (or run `folio init`)".into(),
        );
        return None;
    };
    let manifest = agent_dir.join("agent.toml");
    let config: AgentConfig = parse_toml(&manifest, findings, AGENT_KEYS).unwrap_or_default();
    let instructions = read_instructions(&agent_dir, findings);
    check_config(&config, &manifest, findings);
    check_tool_names(&agent_dir, findings);
    let has_subagents = agent_dir.join("subagents").is_dir();
    let resolved = allowlist::resolve(
        config.tools.as_deref(),
        config.root.is_some(),
        has_subagents,
    );
    for warning in resolved.warnings {
        findings.warning(&manifest, format!("tools: {warning}"));
    }
    let dir_name = project_dir
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "agent".to_string());
    Some(AgentDefinition {
        name: config.name.clone().or(project.name).unwrap_or(dir_name),
        description: config.description.clone(),
        project_dir: project_dir.to_path_buf(),
        agent_dir,
        instructions: instructions?,
        config,
        native_tools: resolved.tools,
    })
}

/// Parses an optional TOML file; a missing file is `None` without a diagnostic.
fn parse_toml<T: serde::de::DeserializeOwned>(
    file: &Path,
    findings: &mut Findings,
    valid_keys: &[&str],
) -> Option<T> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
        Err(err) => {
            findings.error(file, format!("cannot read: {err}"));
            return None;
        }
    };
    match toml::from_str(&text) {
        Ok(value) => Some(value),
        Err(err) => {
            let (line, column) = err
                .span()
                .map(|span| line_column(&text, span.start))
                .unwrap_or((1, 1));
            let message = explain_toml_error(err.message(), valid_keys);
            findings.push(
                Severity::Error,
                file,
                Some(line),
                format!("column {column}: {message}"),
            );
            None
        }
    }
}

fn line_column(text: &str, offset: usize) -> (u32, u32) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() as u32 + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u32 + 1;
    (line, column)
}

/// Rewrites serde's unknown-field message into one naming the nearest valid key.
fn explain_toml_error(message: &str, valid_keys: &[&str]) -> String {
    let message = message.trim();
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return message.to_string();
    };
    let unknown = rest.split('`').next().unwrap_or_default();
    let expected = rest
        .split_once(", expected ")
        .map(|(_, e)| e.trim_start_matches("one of ").replace('`', ""))
        .unwrap_or_else(|| valid_keys.join(", "));
    let keys: Vec<&str> = expected.split(", ").collect();
    match nearest_key(unknown, &keys) {
        Some(near) => format!("unknown key `{unknown}` (did you mean `{near}`?)"),
        None => format!("unknown key `{unknown}`; valid keys: {expected}"),
    }
}

fn read_instructions(agent_dir: &Path, findings: &mut Findings) -> Option<String> {
    let single = agent_dir.join("instructions.md");
    if single.is_file() {
        return match std::fs::read_to_string(&single) {
            Ok(text) => Some(text),
            Err(err) => {
                findings.error(&single, format!("cannot read: {err}"));
                None
            }
        };
    }
    let folder = agent_dir.join("instructions");
    let mut parts: Vec<PathBuf> = std::fs::read_dir(&folder)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "md"))
                .collect()
        })
        .unwrap_or_default();
    if parts.is_empty() {
        findings.error(
            &single,
            "missing: the root agent needs always-on instructions (create instructions.md)".into(),
        );
        return None;
    }
    parts.sort();
    let mut text = String::new();
    for part in parts {
        match std::fs::read_to_string(&part) {
            Ok(chunk) => {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&chunk);
            }
            Err(err) => findings.error(&part, format!("cannot read: {err}")),
        }
    }
    Some(text)
}

/// The fail-closed rules and allowlist validity of `agent.toml`.
fn check_config(config: &AgentConfig, manifest: &Path, findings: &mut Findings) {
    if let Some(runtime) = config.runtime.as_deref().filter(|r| *r != "local") {
        findings.error(
            manifest,
            format!(
                "runtime: \"{runtime}\" is not supported; Folio runs turns locally (remove runtime or set it to \"local\")"
            ),
        );
    }
    if config.max_steps == Some(0) {
        findings.error(manifest, "max_steps: must be at least 1".into());
    }
    for name in config.tools.iter().flatten() {
        if !ALLOWLIST_NAMES.contains(&name.as_str()) {
            let hint = nearest_key(name, ALLOWLIST_NAMES)
                .map(|near| format!(" (did you mean \"{near}\"?)"))
                .unwrap_or_default();
            findings.error(
                manifest,
                format!(
                    "tools: unknown tool \"{name}\"{hint}; valid names: {}",
                    ALLOWLIST_NAMES.join(", ")
                ),
            );
        }
    }
    let Some(root) = &config.root else {
        return;
    };
    let local = [
        ("local.cwd", config.local.cwd.is_some()),
        ("local.workspace_dir", config.local.workspace_dir.is_some()),
        ("local.sandbox", config.local.sandbox.is_some()),
    ];
    for (field, set) in local {
        if set {
            findings.error(
                manifest,
                format!("{field}: cannot be combined with [root]; an authored root replaces the host workspace (fail closed: remove one of them)"),
            );
        }
    }
    for name in config.tools.iter().flatten() {
        if ROOT_FORBIDDEN.contains(&name.as_str()) {
            findings.error(
                manifest,
                format!("tools: \"{name}\" cannot be granted with [root]; shell, task and readLints need the host disk (fail closed: remove it or remove [root])"),
            );
        }
    }
    for mount in root.keys() {
        let normalized = folio_fs::normalize_fs_path(mount);
        if !mount.starts_with('/') || normalized != *mount {
            findings.error(
                manifest,
                format!(
                    "root: mount \"{mount}\" must be an absolute, normalized path such as \"/repo\""
                ),
            );
        }
        if folio_fs::is_within(&normalized, "/tmp") {
            findings.error(
                manifest,
                format!("root: mount \"{mount}\" is under /tmp, which is reserved for turn-local scratch"),
            );
        }
    }
}

/// An authored tool may not take a synthesized file tool's name, rooted or not.
fn check_tool_names(agent_dir: &Path, findings: &mut Findings) {
    let Ok(entries) = std::fs::read_dir(agent_dir.join("tools")) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if let Some(tool) = FileTool::ALL.iter().find(|t| t.tool_name() == stem) {
            findings.error(
                &path,
                format!(
                    "name: \"{stem}\" is the synthesized file tool {} (fail closed: rename the authored tool)",
                    tool.tool_name()
                ),
            );
        }
    }
}
