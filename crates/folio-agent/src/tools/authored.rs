//! Authored tools (`agent/tools/<name>.toml`, docs/tools.md "Authored tools"): input validated
//! against the manifest's JSON Schema, then a subprocess that reads `{input, context}` on stdin
//! and prints its result on stdout.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use folio_project::{Effect, Execution, InvalidSchema, ToolDefinition, compile_schema};
use serde_json::{Value, json};
use tokio::process::Command;

use super::process::{Finished, Outcome, resolve_program, run_in_group, tail_lines};
use super::{Tool, ToolContext, ToolError, ToolOutput};

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
    approval_timeout: Option<Duration>,
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

impl AuthoredTool {
    /// Builds the tool of a checked manifest, compiling its input schema (discovery has
    /// already checked that it compiles). Remote `$ref`s are never fetched.
    pub fn new(definition: &ToolDefinition) -> Result<AuthoredTool, InvalidSchema> {
        let validator = compile_schema(&definition.schema)?;
        Ok(AuthoredTool {
            name: definition.name.clone(),
            description: definition.description.clone(),
            command: definition.command.clone(),
            tools_dir: definition.tools_dir.clone(),
            effect: definition.effect,
            needs_approval: definition.needs_approval,
            approval_timeout: definition.approval_timeout,
            execution: definition.execution,
            timeout: Duration::from_secs(definition.timeout_secs.max(1)),
            dry_run_result: definition.dry_run_result.clone(),
            schema: definition.schema.clone(),
            validator: Arc::new(validator),
            agent: definition.agent.clone(),
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
}

/// The one-line message of a schema violation, naming the failing field.
pub(crate) fn schema_error(error: &jsonschema::ValidationError<'_>) -> String {
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
        let mut command = Command::new(resolve_program(&self.command[0], &self.tools_dir));
        command
            .args(&self.command[1..])
            .current_dir(&self.tools_dir)
            .env("FOLIO_WORKSPACE", &ctx.workspace)
            .env("FOLIO_SESSION_ID", &ctx.session_id)
            .env("FOLIO_TOOL_CALL_ID", &ctx.call_id);
        let grant = crate::tools::host::grant_for(
            ctx.host.as_ref(),
            crate::tools::host::HostCaller::Tool {
                tool: self.name.clone(),
                context: Box::new(ctx.clone()),
            },
        )
        .await;
        if let Some(grant) = &grant {
            grant.apply(&mut command);
        }
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
        // The process has ended: its token stops working now.
        drop(grant);
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

    fn approval_timeout(&self) -> Option<Duration> {
        self.approval_timeout
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
