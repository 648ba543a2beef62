//! The `Task` tool that delegates to subagents (`subagents/<id>/`, parsed by folio-project into
//! [`SubagentDefinition`]s).
//!
//! A subagent has its own instructions and (optionally) its own model; it inherits the parent's
//! tools minus `Task`. Its run is part of the parent's turn: the stream records
//! `subagent.called`, the subagent's tool calls (`actions.requested` calls carry `subagent`,
//! their call ids are prefixed with the parent's `Task` call id), and `subagent.completed`.
//! Its model steps are not recorded as message events, so the parent's conversation (rebuilt
//! from the log) only sees the `Task` call and its result, the subagent's reply.

use std::time::Instant;

use folio_model::{Message, ModelRequest, ResponseAssembler};
use folio_project::SubagentDefinition;
use folio_protocol::{
    ActionsRequested, EventBody, RequestedCall, SubagentCalled, SubagentCompleted,
};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::conversation::content_of;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
use crate::turn::{EventSink, Harness, TurnTool, action_result};

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
        let result = run_subagent(subagent, &prompt, ctx, sink, turn_id).await;
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

/// The subagent's own loop: model steps and tool calls until it answers without tool calls.
async fn run_subagent(
    subagent: &Subagent,
    prompt: &str,
    ctx: &ToolContext,
    sink: &dyn EventSink,
    turn_id: &str,
) -> Result<String, String> {
    let harness = &subagent.harness;
    let id = &subagent.definition.id;
    let tools = harness.tool_specs();
    let system = harness.system_prompt(&ctx.scratch, &ctx.workspace);
    let mut messages = vec![Message::User {
        text: prompt.to_string(),
    }];
    let emit = |body: EventBody| async move {
        sink.emit(Some(turn_id), body)
            .await
            .map(|_| ())
            .map_err(|err| format!("could not record an event: {err}"))
    };
    for _ in 0..harness.max_steps {
        let request = ModelRequest {
            model: harness.model.clone(),
            system: system.clone(),
            messages: messages.clone(),
            tools: tools.clone(),
            params: harness.params.clone(),
        };
        let response = tokio::select! {
            response = stream(harness, &request, ctx) => response?,
            () = ctx.cancel.cancelled() => return Err(interrupted(id)),
        };
        if response.tool_calls.is_empty() {
            return Ok(response.text);
        }
        messages.push(response.to_message());
        // The subagent's call ids are scoped by the parent's Task call, so they never collide
        // with the parent's own calls in the session log.
        let calls: Vec<(String, folio_model::ToolCall, Result<Value, String>)> = response
            .tool_calls
            .into_iter()
            .map(|call| {
                let prepared = harness.prepare(&call);
                (format!("{}/{}", ctx.call_id, call.id), call, prepared)
            })
            .collect();
        emit(EventBody::ActionsRequested(ActionsRequested {
            calls: calls
                .iter()
                .map(|(event_id, call, prepared)| RequestedCall {
                    call_id: event_id.clone(),
                    tool: call.name.clone(),
                    input: prepared.as_ref().unwrap_or(&call.input).clone(),
                    subagent: Some(id.clone()),
                })
                .collect(),
        }))
        .await?;
        for (event_id, call, prepared) in calls {
            if ctx.cancel.is_cancelled() {
                return Err(interrupted(id));
            }
            let started = Instant::now();
            let result = match prepared {
                Err(message) => Err(message),
                Ok(input) => {
                    let call_ctx = ToolContext {
                        call_id: event_id.clone(),
                        ..ctx.clone()
                    };
                    match harness.tools.get(&call.name) {
                        // The approval gate lives in the parent's turn loop; a subagent fails
                        // closed instead of running a tool that needs a human decision.
                        Some(tool) if tool.needs_approval() => Err(format!(
                            "{} needs a human approval, which a subagent cannot ask for; the parent agent must call it",
                            call.name
                        )),
                        _ => {
                            harness
                                .invoke(&call.name, input, &call_ctx, sink, turn_id)
                                .await
                        }
                    }
                }
            };
            if ctx.cancel.is_cancelled() {
                return Err(interrupted(id));
            }
            let result = action_result(event_id, call.name, result, started);
            let content = match (&result.error, &result.output) {
                (Some(error), _) => vec![folio_model::ContentPart::Text {
                    text: error.clone(),
                }],
                (None, Some(output)) => content_of(output),
                (None, None) => Vec::new(),
            };
            messages.push(Message::ToolResult {
                call_id: call.id.clone(),
                tool: result.tool.clone(),
                content,
                is_error: result.is_error,
            });
            emit(EventBody::ActionResult(result)).await?;
        }
    }
    Err(format!(
        "subagent \"{id}\" reached its step limit ({} model calls) without answering",
        harness.max_steps
    ))
}

fn interrupted(id: &str) -> String {
    format!("subagent \"{id}\" was interrupted")
}

async fn stream(
    harness: &Harness,
    request: &ModelRequest,
    ctx: &ToolContext,
) -> Result<folio_model::Response, String> {
    let mut deltas = harness
        .provider
        .stream(request, ctx.cancel.child_token())
        .await
        .map_err(|err| err.to_string())?;
    let mut assembler = ResponseAssembler::new();
    while let Some(delta) = deltas.next().await {
        let delta = delta.map_err(|err| err.to_string())?;
        assembler.push(&delta);
    }
    assembler.finish().map_err(|err| err.to_string())
}
