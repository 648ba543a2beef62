//! Subagents (`subagents/<id>/agent.toml` + `instructions.md`) and the `Task` tool that
//! delegates to them.
//!
//! A subagent has its own instructions and (optionally) its own model; it inherits the parent's
//! tools minus `Task`. Its run is part of the parent's turn and goes through the same step loop
//! ([`Harness`]), over a conversation of its own: the stream records `subagent.called`, the
//! subagent's tool calls (`actions.requested` calls carry `subagent`, their call ids are prefixed
//! with the parent's `Task` call id) and their results, and `subagent.completed`. Its model steps
//! stay in its own conversation, so the parent's conversation (rebuilt from the log) only sees
//! the `Task` call and its result, the subagent's reply.

use std::path::{Path, PathBuf};

use folio_protocol::{EventBody, SubagentCalled, SubagentCompleted};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::manifest::{Report, is_slug};
use crate::sink::EventSink;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput, TurnTool};
use crate::turn::Harness;

/// The model-facing name of the delegation tool.
pub const TASK_TOOL: &str = "Task";

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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    description: Option<String>,
    model: Option<String>,
    instructions: Option<String>,
    max_steps: Option<u32>,
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
        let Some(manifest) = report.parse::<Manifest>(&manifest_path, SUBAGENT_KEYS) else {
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

/// A subagent ready to run: its definition and the harness it runs with.
#[derive(Clone)]
pub struct Subagent {
    /// What discovery found.
    pub definition: SubagentDefinition,
    /// Its model, instructions, tools (the parent's minus `Task`) and step limit.
    pub harness: Harness,
}

/// The `Task` tool: delegates a prompt to a subagent inside the parent's turn.
pub struct TaskTool {
    subagents: Vec<Subagent>,
    description: String,
}

impl TaskTool {
    /// The tool over `subagents`.
    pub fn new(subagents: Vec<Subagent>) -> Self {
        let catalog: Vec<String> = subagents
            .iter()
            .map(|s| format!("- {}: {}", s.definition.id, s.definition.description.trim()))
            .collect();
        let description = format!(
            "Delegate a self-contained task to a subagent. It works with the same tools and workspace and returns its final answer. Subagents:\n{}",
            catalog.join("\n")
        );
        TaskTool {
            subagents,
            description,
        }
    }

    /// The subagents this tool delegates to.
    pub fn subagents(&self) -> &[Subagent] {
        &self.subagents
    }

    /// Runs the delegation of call `ctx.call_id`, recording its events through `sink`; the
    /// result is the subagent's reply (or its failure as a tool error).
    pub async fn delegate(
        &self,
        input: Value,
        ctx: &ToolContext,
        sink: &dyn EventSink,
        turn_id: &str,
    ) -> Result<ToolOutput, ToolError> {
        let id = input["subagent"].as_str().unwrap_or_default();
        let prompt = input["prompt"].as_str().unwrap_or_default().to_string();
        let Some(subagent) = self.subagents.iter().find(|s| s.definition.id == id) else {
            return Err(ToolError(format!(
                "unknown subagent \"{id}\"; available: {}",
                self.ids()
            )));
        };
        let emit = |body: EventBody| async move {
            sink.emit(Some(turn_id), body)
                .await
                .map(|_| ())
                .map_err(|err| ToolError(format!("could not record an event: {err}")))
        };
        emit(EventBody::SubagentCalled(SubagentCalled {
            call_id: ctx.call_id.clone(),
            subagent: id.to_string(),
            prompt: prompt.clone(),
        }))
        .await?;
        let result = subagent
            .harness
            .run_subagent(id, &prompt, ctx, sink, turn_id)
            .await;
        let (reply, is_error) = match &result {
            Ok(reply) => (reply.clone(), false),
            Err(message) => (message.clone(), true),
        };
        emit(EventBody::SubagentCompleted(SubagentCompleted {
            call_id: ctx.call_id.clone(),
            subagent: id.to_string(),
            reply,
            is_error,
        }))
        .await?;
        result.map(ToolOutput::Text).map_err(ToolError)
    }

    fn ids(&self) -> String {
        self.subagents
            .iter()
            .map(|s| s.definition.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[async_trait::async_trait]
impl Tool for TaskTool {
    fn name(&self) -> &str {
        TASK_TOOL
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        let ids: Vec<&str> = self
            .subagents
            .iter()
            .map(|s| s.definition.id.as_str())
            .collect();
        json!({
            "type": "object",
            "properties": {
                "subagent": {"type": "string", "enum": ids, "description": "Which subagent to delegate to"},
                "prompt": {"type": "string", "description": "The full task for the subagent; it sees nothing else of this conversation"}
            },
            "required": ["subagent", "prompt"],
            "additionalProperties": false
        })
    }

    fn prepare(&self, input: Value) -> Result<Value, ToolError> {
        let Value::Object(map) = input else {
            return Err(ToolError("input must be a JSON object".into()));
        };
        if let Some(unknown) = map.keys().find(|k| *k != "subagent" && *k != "prompt") {
            return Err(ToolError(format!(
                "unknown argument \"{unknown}\"; valid arguments: subagent, prompt"
            )));
        }
        for name in ["subagent", "prompt"] {
            match map.get(name) {
                Some(Value::String(_)) => {}
                Some(_) => return Err(ToolError(format!("{name}: must be a string"))),
                None => return Err(ToolError(format!("missing required argument \"{name}\""))),
            }
        }
        let id = map["subagent"].as_str().unwrap_or_default();
        if !self.subagents.iter().any(|s| s.definition.id == id) {
            return Err(ToolError(format!(
                "subagent: unknown subagent \"{id}\"; available: {}",
                self.ids()
            )));
        }
        Ok(Value::Object(map))
    }

    async fn call(&self, _input: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError(
            "Task runs only inside a model turn (it records the subagent's events in the session)"
                .into(),
        ))
    }

    fn turn_tool(&self) -> Option<&dyn TurnTool> {
        Some(self)
    }
}

#[async_trait::async_trait]
impl TurnTool for TaskTool {
    async fn call_in_turn(
        &self,
        input: Value,
        ctx: &ToolContext,
        sink: &dyn EventSink,
        turn_id: &str,
    ) -> Result<ToolOutput, ToolError> {
        self.delegate(input, ctx, sink, turn_id).await
    }
}
