//! Authored tools (`agent/tools/<name>.toml`, tools.md "Authored tools"): input validated
//! against the manifest's JSON Schema, then a subprocess that reads `{input, context}` on stdin
//! and prints its result on stdout.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Command;

use super::process::{Finished, Outcome, run_in_group, tail_lines};
use super::{FileTool, Tool, ToolContext, ToolError, ToolOutput};
use crate::config::{Effect, Execution, ToolManifest};
use crate::discovery::is_valid_name;
use crate::manifest::Report;

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

/// Lines of stderr a failing tool's error carries.
const STDERR_TAIL_LINES: usize = 20;

/// A tool declared by `agent/tools/<name>.toml`, ready to validate input and run.
#[derive(Clone)]
pub struct AuthoredTool {
    name: String,
    description: String,
    command: Vec<String>,
    tools_dir: PathBuf,
    effect: Effect,
    needs_approval: bool,
    execution: Execution,
    timeout: Duration,
    dry_run_result: Option<Value>,
    schema: Value,
    validator: Arc<jsonschema::Validator>,
    agent: String,
}

impl std::fmt::Debug for AuthoredTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthoredTool")
            .field("name", &self.name)
            .field("command", &self.command)
            .field("effect", &self.effect)
            .field("execution", &self.execution)
            .finish_non_exhaustive()
    }
}

/// The parts of a manifest an [`AuthoredTool`] is built from (checked by discovery).
#[derive(Debug, Clone)]
pub struct AuthoredToolSpec {
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
    /// `server` or `agent`.
    pub execution: Execution,
    /// Seconds before the process group is killed.
    pub timeout_secs: u64,
    /// Returned instead of running a write tool in a dry-run session.
    pub dry_run_result: Option<Value>,
    /// The input's JSON Schema.
    pub schema: Value,
    /// The agent's name (passed to the process in `context.agent`).
    pub agent: String,
}

impl AuthoredTool {
    /// Compiles the tool's schema; an invalid schema is a one-line error. Remote `$ref`s are
    /// never fetched (jsonschema is built without its resolvers).
    pub fn new(spec: AuthoredToolSpec) -> Result<AuthoredTool, String> {
        let validator = jsonschema::validator_for(&spec.schema).map_err(|err| {
            let at = err
                .instance_path()
                .as_str()
                .trim_start_matches('/')
                .replace('/', ".");
            if at.is_empty() {
                format!("not a valid JSON Schema: {err}")
            } else {
                format!("not a valid JSON Schema at {at}: {err}")
            }
        })?;
        Ok(AuthoredTool {
            name: spec.name,
            description: spec.description,
            command: spec.command,
            tools_dir: spec.tools_dir,
            effect: spec.effect,
            needs_approval: spec.needs_approval,
            execution: spec.execution,
            timeout: Duration::from_secs(spec.timeout_secs.max(1)),
            dry_run_result: spec.dry_run_result,
            schema: spec.schema,
            validator: Arc::new(validator),
            agent: spec.agent,
        })
    }

    /// `read` or `write`.
    pub fn effect(&self) -> Effect {
        self.effect
    }

    /// `server` (a model-facing tool) or `agent` (copied into the workspace).
    pub fn execution(&self) -> Execution {
        self.execution
    }

    /// The program and its arguments, as written in the manifest.
    pub fn command(&self) -> &[String] {
        &self.command
    }

    /// The folder the command resolves against.
    pub fn tools_dir(&self) -> &Path {
        &self.tools_dir
    }

    /// Seconds before the process group is killed.
    pub fn timeout_secs(&self) -> u64 {
        self.timeout.as_secs()
    }

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

    /// Validates and runs the tool without a model (`folio call`, `POST /v1/tools/:name`):
    /// the approval gate is skipped, the schema is not.
    pub async fn call_direct(
        &self,
        input: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let input = self.prepare(input)?;
        self.call(input, ctx).await
    }

    fn resolved_program(&self) -> PathBuf {
        let program = Path::new(&self.command[0]);
        if program.components().count() > 1 && program.is_relative() {
            self.tools_dir.join(program)
        } else {
            program.to_path_buf()
        }
    }
}

/// The one-line message of a schema violation, naming the failing field.
fn schema_error(error: &jsonschema::ValidationError<'_>) -> String {
    let pointer = error.instance_path().as_str();
    let at = pointer
        .trim_start_matches('/')
        .replace('/', ".")
        .replace("~1", "/")
        .replace("~0", "~");
    let field = |name: &str| {
        if at.is_empty() {
            name.to_string()
        } else {
            format!("{at}.{name}")
        }
    };
    match error.kind() {
        jsonschema::error::ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_string);
            format!("{}: required field is missing", field(&name))
        }
        jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => unexpected
            .iter()
            .map(|name| format!("{}: unknown field (not in the input schema)", field(name)))
            .collect::<Vec<_>>()
            .join("; "),
        _ if at.is_empty() => format!("input: {error}"),
        _ => format!("{at}: {error}"),
    }
}

#[async_trait::async_trait]
impl Tool for AuthoredTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn prepare(&self, input: Value) -> Result<Value, ToolError> {
        let mut errors: Vec<String> = self
            .validator
            .iter_errors(&input)
            .map(|error| schema_error(&error))
            .collect();
        errors.sort();
        errors.dedup();
        if errors.is_empty() {
            return Ok(input);
        }
        Err(ToolError(format!("invalid input: {}", errors.join("; "))))
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if ctx.dry_run && self.effect == Effect::Write {
            return Ok(ToolOutput::Json(self.dry_run_result.clone().unwrap_or_else(
                || json!({"dryRun": true, "note": format!("dry run: {} was not run", self.name)}),
            )));
        }
        let stdin = json!({
            "input": input,
            "context": {
                "sessionId": ctx.session_id,
                "toolCallId": ctx.call_id,
                "purpose": ctx.purpose,
                "dryRun": ctx.dry_run,
                "continuationKey": ctx.continuation_key,
                "agent": self.agent,
            },
        });
        let mut command = Command::new(self.resolved_program());
        command
            .args(&self.command[1..])
            .current_dir(&self.tools_dir)
            .env("FOLIO_WORKSPACE", &ctx.workspace)
            .env("FOLIO_SESSION_ID", &ctx.session_id)
            .env("FOLIO_TOOL_CALL_ID", &ctx.call_id);
        let Finished {
            outcome,
            stdout,
            stderr,
        } = run_in_group(
            command,
            Some(stdin.to_string().into_bytes()),
            self.timeout,
            &ctx.cancel,
        )
        .await
        .map_err(|err| {
            ToolError(format!(
                "{}: could not start `{}`: {err}",
                self.name, self.command[0]
            ))
        })?;
        let tail = tail_lines(&stderr, STDERR_TAIL_LINES);
        let with_tail = |message: String| {
            if tail.is_empty() {
                message
            } else {
                format!("{message}; stderr:\n{tail}")
            }
        };
        match outcome {
            Outcome::Cancelled => Err(ToolError(format!(
                "{} cancelled: the turn was stopped",
                self.name
            ))),
            Outcome::TimedOut => Err(ToolError(with_tail(format!(
                "{} timed out after {} s and was killed",
                self.name,
                self.timeout.as_secs()
            )))),
            Outcome::Exited(status) if !status.success() => {
                let code = status
                    .code()
                    .map_or_else(|| "a signal".to_string(), |c| format!("code {c}"));
                Err(ToolError(with_tail(format!(
                    "{} exited with {code}",
                    self.name
                ))))
            }
            Outcome::Exited(_) => parse_stdout(stdout),
        }
    }

    fn needs_approval(&self) -> bool {
        self.needs_approval
    }
}

/// A tool's stdout as its result: the `{content, isError}` envelope, any JSON value, or text.
fn parse_stdout(stdout: String) -> Result<ToolOutput, ToolError> {
    let trimmed = stdout.trim();
    let Ok(value) = serde_json::from_str::<Value>(trimmed) else {
        return Ok(ToolOutput::Text(stdout.trim_end().to_string()));
    };
    let envelope = value
        .as_object()
        .filter(|object| {
            object.keys().all(|k| k == "content" || k == "isError")
                && object.get("content").is_some_and(Value::is_array)
        })
        .map(|object| {
            (
                object["content"].as_array().cloned().unwrap_or_default(),
                object.get("isError").and_then(Value::as_bool) == Some(true),
            )
        });
    let Some((parts, is_error)) = envelope else {
        return Ok(ToolOutput::Json(value));
    };
    let texts: Vec<&str> = parts
        .iter()
        .filter(|part| part["type"] == "text")
        .filter_map(|part| part["text"].as_str())
        .collect();
    if is_error {
        return Err(ToolError(texts.join("\n")));
    }
    let images: Vec<&Value> = parts.iter().filter(|p| p["type"] == "image").collect();
    match (texts.len(), images.as_slice()) {
        (_, []) => Ok(ToolOutput::Text(texts.join("\n"))),
        (0, [image]) => match (image["mimeType"].as_str(), image["data"].as_str()) {
            (Some(mime_type), Some(data)) => Ok(ToolOutput::Image {
                mime_type: mime_type.to_string(),
                data: data.to_string(),
            }),
            _ => Err(ToolError(
                "tool printed an image part without mimeType and data".into(),
            )),
        },
        _ => Ok(ToolOutput::Json(Value::Array(parts))),
    }
}

/// Reads `tools/*.toml` into authored tools; names must not take a built-in tool's name
/// (synthesized file tools fail closed, rooted or not).
pub(crate) fn discover_authored_tools(
    agent_dir: &Path,
    agent_name: &str,
    findings: &mut Report,
) -> Vec<Arc<AuthoredTool>> {
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
            tools.push(Arc::new(tool));
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
) -> Option<AuthoredTool> {
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
    if manifest.dry_run_result.is_some() && manifest.effect == Effect::Read {
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
    let spec = AuthoredToolSpec {
        name: name.to_string(),
        description: description.unwrap_or_default(),
        command: command.unwrap_or_default(),
        tools_dir: tools_dir.to_path_buf(),
        effect: manifest.effect,
        needs_approval: manifest.needs_approval,
        execution: manifest.execution,
        timeout_secs: manifest.timeout_secs.unwrap_or(DEFAULT_TOOL_TIMEOUT_SECS),
        dry_run_result: manifest.dry_run_result,
        schema,
        agent: agent_name.to_string(),
    };
    match AuthoredTool::new(spec) {
        Ok(tool) => Some(tool),
        Err(err) => {
            findings.error(path, format!("input_schema: {err}"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn stdout_forms() {
        assert_eq!(
            parse_stdout("{\"a\": 1}\n".into()),
            Ok(ToolOutput::Json(json!({"a": 1})))
        );
        assert_eq!(
            parse_stdout("hello\nworld\n".into()),
            Ok(ToolOutput::Text("hello\nworld".into()))
        );
        assert_eq!(
            parse_stdout(r#"{"content":[{"type":"text","text":"hi"}]}"#.into()),
            Ok(ToolOutput::Text("hi".into()))
        );
        assert_eq!(
            parse_stdout(r#"{"content":[{"type":"text","text":"bad"}],"isError":true}"#.into()),
            Err(ToolError("bad".into()))
        );
        assert_eq!(
            parse_stdout(
                r#"{"content":[{"type":"image","mimeType":"image/png","data":"AA=="}]}"#.into()
            ),
            Ok(ToolOutput::Image {
                mime_type: "image/png".into(),
                data: "AA==".into()
            })
        );
        assert_eq!(parse_stdout("42".into()), Ok(ToolOutput::Json(json!(42))));
    }
}
