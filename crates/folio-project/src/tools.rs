//! Authored tool manifests (`agent/tools/<name>.toml`, docs/tools.md "Authored tools"): checked into
//! [`ToolDefinition`]s; folio-agent runs them as subprocesses.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::allowlist::FileTool;
use crate::config::{Effect, Execution, ToolManifest};
use crate::report::{Report, is_valid_name};
use crate::schema_check::compile_schema;

/// Seconds an authored tool may run when its manifest names no timeout.
pub const DEFAULT_TOOL_TIMEOUT_SECS: u64 = 60;
/// Names of built-in tools other than the file tools (an authored tool may not take them).
const BUILT_IN_NAMES: &[&str] = &[
    "Shell",
    "WebFetch",
    "WebSearch",
    "UpdateTodos",
    "ReadTodos",
    "Task",
    "ReadLints",
];

/// A checked `agent/tools/<name>.toml`: what folio-agent builds an authored tool from.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// The tool name (the manifest's file stem).
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// The `agent/tools/` folder the command resolves against.
    pub tools_dir: PathBuf,
    /// `read` or `write`.
    pub effect: Effect,
    /// Park model-initiated calls for a human decision.
    pub needs_approval: bool,
    /// How long a parked call waits before it is denied (`approval_timeout`); `None`: the
    /// agent's default applies.
    pub approval_timeout: Option<std::time::Duration>,
    /// `server` or `agent`.
    pub execution: Execution,
    /// Seconds before the process group is killed.
    pub timeout_secs: u64,
    /// Returned instead of running a write tool in a dry-run session.
    pub dry_run_result: Option<Value>,
    /// The input's JSON Schema (a valid schema of `type = "object"`).
    pub schema: Value,
    /// The agent's name (passed to the process in `context.agent`).
    pub agent: String,
}

impl ToolDefinition {
    /// The files under `agent/tools/` the command names (the scripts an agent tool carries).
    pub fn script_files(&self) -> Vec<String> {
        self.command
            .iter()
            .filter(|arg| {
                !Path::new(arg.as_str()).is_absolute() && self.tools_dir.join(arg).is_file()
            })
            .cloned()
            .collect()
    }
}

/// Reads an approval timeout (`approval_timeout`, `[approvals] timeout`): a delay such as
/// `"10m"` ([`parse_delay`](crate::parse_delay)).
pub fn approval_timeout(text: &str) -> Result<std::time::Duration, crate::DelayError> {
    crate::parse_delay(text)?
        .to_std()
        .map_err(|_| crate::DelayError(text.to_string()))
}

/// Reads `tools/*.toml` into authored tools; names must not take a built-in tool's name
/// (synthesized file tools fail closed, rooted or not).
pub(crate) fn discover_authored_tools(
    agent_dir: &Path,
    agent_name: &str,
    findings: &mut Report,
) -> Vec<ToolDefinition> {
    let tools_dir = agent_dir.join("tools");
    let Ok(entries) = std::fs::read_dir(&tools_dir) else {
        return Vec::new();
    };
    let mut manifests: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "toml"))
        .collect();
    manifests.sort();
    let mut tools = Vec::new();
    for path in manifests {
        let Some(stem) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_string)
        else {
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
            continue;
        }
        if BUILT_IN_NAMES.contains(&stem.as_str()) {
            findings.error(
                &path,
                format!(
                    "name: \"{stem}\" is a built-in tool (fail closed: rename the authored tool)"
                ),
            );
            continue;
        }
        if !is_valid_name(&stem) || stem.starts_with("mcp__") {
            findings.error(
                &path,
                format!("name: \"{stem}\" is not a valid tool name (use 1-64 letters, digits, `-` or `_`; `mcp__` is reserved)"),
            );
            continue;
        }
        let Some(manifest) = findings.parse_optional::<ToolManifest>(&path) else {
            continue;
        };
        if let Some(tool) = build_tool(&stem, manifest, &tools_dir, &path, agent_name, findings) {
            tools.push(tool);
        }
    }
    tools
}

fn build_tool(
    name: &str,
    manifest: ToolManifest,
    tools_dir: &Path,
    path: &Path,
    agent_name: &str,
    findings: &mut Report,
) -> Option<ToolDefinition> {
    let mut ok = true;
    let description = manifest.description.filter(|d| !d.trim().is_empty());
    if description.is_none() {
        findings.error(
            path,
            "description: missing (say what the tool does; the model reads it)".into(),
        );
        ok = false;
    }
    let command = manifest
        .command
        .filter(|c| !c.is_empty() && !c[0].is_empty());
    if command.is_none() {
        findings.error(
            path,
            "command: missing (the program and its arguments, e.g. [\"python3\", \"tool.py\"])"
                .into(),
        );
        ok = false;
    }
    if manifest.timeout_secs == Some(0) {
        findings.error(path, "timeout_secs: must be at least 1".into());
        ok = false;
    }
    if manifest.execution == Execution::Agent {
        // The model runs an agent tool itself through Shell: Folio never sees the call, so it
        // can neither park it, time it out, nor hold a write back in a dry-run session.
        let host_only = [
            ("effect", manifest.effect.is_some()),
            ("needs_approval", manifest.needs_approval),
            ("approval_timeout", manifest.approval_timeout.is_some()),
            ("timeout_secs", manifest.timeout_secs.is_some()),
            ("dry_run_result", manifest.dry_run_result.is_some()),
        ];
        for (field, set) in host_only {
            if set {
                findings.error(
                    path,
                    format!("{field}: has no effect with execution = \"agent\" (the model runs the script through Shell, where Folio cannot apply it): remove {field} or use execution = \"server\""),
                );
                ok = false;
            }
        }
    }
    let approval_timeout = match manifest.approval_timeout.as_deref().map(approval_timeout) {
        Some(Ok(timeout)) => Some(timeout),
        Some(Err(err)) => {
            findings.error(path, format!("approval_timeout: {err}"));
            ok = false;
            None
        }
        None => None,
    };
    if approval_timeout.is_some()
        && !manifest.needs_approval
        && manifest.execution == Execution::Server
    {
        findings.warning(
            path,
            "approval_timeout: ignored without needs_approval = true (no call of this tool waits for a decision)"
                .into(),
        );
    }
    let effect = manifest.effect.unwrap_or_default();
    if manifest.dry_run_result.is_some() && effect == Effect::Read {
        findings.warning(
            path,
            "dry_run_result: ignored for effect = \"read\" (read tools run in dry-run sessions)"
                .into(),
        );
    }
    let schema = match (manifest.input_schema, manifest.input_schema_file) {
        (Some(_), Some(_)) => {
            findings.error(
                path,
                "input_schema_file: cannot be combined with [input_schema] (keep one)".into(),
            );
            return None;
        }
        (Some(schema), None) => schema,
        (None, Some(file)) => {
            let schema_path = tools_dir.join(&file);
            let parsed = std::fs::read_to_string(&schema_path)
                .map_err(|err| err.to_string())
                .and_then(|text| {
                    serde_json::from_str::<serde_json::Value>(&text).map_err(|err| err.to_string())
                });
            match parsed {
                Ok(schema) => schema,
                Err(err) => {
                    findings.error(
                        path,
                        format!("input_schema_file: cannot read {file} as JSON: {err}"),
                    );
                    return None;
                }
            }
        }
        (None, None) => serde_json::json!({"type": "object"}),
    };
    if schema.get("type").and_then(|t| t.as_str()) != Some("object") {
        findings.error(
            path,
            "input_schema: the input schema must have type = \"object\"".into(),
        );
        ok = false;
    }
    if !ok {
        return None;
    }
    if let Err(err) = compile_schema(&schema) {
        findings.error(path, format!("input_schema: {err}"));
        return None;
    }
    Some(ToolDefinition {
        name: name.to_string(),
        description: description.unwrap_or_default(),
        command: command.unwrap_or_default(),
        tools_dir: tools_dir.to_path_buf(),
        effect,
        needs_approval: manifest.needs_approval,
        approval_timeout,
        execution: manifest.execution,
        timeout_secs: manifest.timeout_secs.unwrap_or(DEFAULT_TOOL_TIMEOUT_SECS),
        dry_run_result: manifest.dry_run_result,
        schema,
        agent: agent_name.to_string(),
    })
}
