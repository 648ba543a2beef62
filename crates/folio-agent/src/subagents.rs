//! The `Task` tool that delegates to subagents (`subagents/<id>/`, parsed by folio-project into
//! [`SubagentDefinition`]s).
//!
//! A subagent has its own instructions and (optionally) its own model; it inherits the parent's
//! tools minus `Task`. Its run is part of the parent's turn and goes through the same step loop
//! ([`Harness`]), over a conversation of its own: the stream records `subagent.called`, the
//! subagent's tool calls (`actions.requested` calls carry `subagent`, their call ids are prefixed
//! with the parent's `Task` call id) and their results, and `subagent.completed`. Its model steps
//! stay in its own conversation, so the parent's conversation (rebuilt from the log) only sees
//! the `Task` call and its result, the subagent's reply.

use folio_project::SubagentDefinition;
use folio_protocol::{EventBody, SubagentCalled, SubagentCompleted};
use serde_json::{Value, json};

use crate::sink::EventSink;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput, TurnTool};
use crate::turn::Harness;

/// The model-facing name of the delegation tool.
pub const TASK_TOOL: &str = "Task";

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
            Err(err) => (err.to_string(), true),
        };
        emit(EventBody::SubagentCompleted(SubagentCompleted {
            call_id: ctx.call_id.clone(),
            subagent: id.to_string(),
            reply,
            is_error,
        }))
        .await?;
        result
            .map(ToolOutput::Text)
            .map_err(|err| ToolError(err.to_string()))
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
