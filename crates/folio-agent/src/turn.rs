//! The turn loop: build the request, stream the model, run tool calls, record every effect as
//! an event, and loop until the model answers without tool calls (architecture.md).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use folio_fs::FileSystem;
use folio_model::{ModelRequest, Provider, ResponseAssembler, ToolSpec};
use folio_protocol::{
    ActionApprovalRequested, ActionApprovalResolved, ActionResult, ActionsRequested,
    ApprovalDecision, Event, EventBody, FinishReason, MessageAppended, MessageCompleted,
    ReasoningAppended, ReasoningCompleted, RequestedCall, StepCompleted, StepStarted,
    TurnCompleted, TurnFailed, TurnStarted, Usage,
};
use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::conversation::conversation;
use crate::tools::{
    ScratchMode, SessionContext, TodoList, ToolContext, ToolError, ToolOutput, ToolRegistry,
};

pub use folio_protocol::TURN_INTERRUPTED;

/// Where a turn records its events: the session's log (and whatever follows it).
#[async_trait::async_trait]
pub trait EventSink: Send + Sync {
    /// Appends one event and returns it with its index and time.
    async fn emit(&self, turn_id: Option<&str>, body: EventBody) -> Result<Event, String>;
    /// Makes everything emitted so far durable (called at turn boundaries).
    async fn checkpoint(&self) -> Result<(), String>;
    /// Waits for the human decision on a parked call (its `action.approval_requested` is
    /// recorded); the turn records the returned `action.approval_resolved`. Without an approver
    /// (outside `folio serve`) the call is denied.
    async fn await_approval(&self, call_id: &str) -> ActionApprovalResolved {
        ActionApprovalResolved {
            call_id: call_id.to_string(),
            decision: ApprovalDecision::Deny,
            reason: Some(
                "no approver is attached to this session (approvals need folio serve)".into(),
            ),
            by: "folio".to_string(),
        }
    }
}

/// A tool that records events of its own in the turn (`Task`, `tag_artifact`): the turn
/// loop calls [`TurnTool::call_in_turn`] instead of [`crate::tools::Tool::call`].
#[async_trait::async_trait]
pub trait TurnTool: Send + Sync {
    /// Runs on prepared input inside turn `turn_id`, recording its events through `sink`.
    async fn call_in_turn(
        &self,
        input: Value,
        ctx: &ToolContext,
        sink: &dyn EventSink,
        turn_id: &str,
    ) -> Result<ToolOutput, ToolError>;
}

/// What a turn runs with: the model, the tools, the tree, and its step limit.
#[derive(Clone)]
pub struct Harness {
    /// The provider answering model calls.
    pub provider: Arc<dyn Provider>,
    /// The model id sent to the provider.
    pub model: String,
    /// The system prompt (instructions and catalogs).
    pub system: String,
    /// Passed through to the provider.
    pub params: serde_json::Map<String, Value>,
    /// The tools the model may call.
    pub tools: ToolRegistry,
    /// Model calls per turn before the turn fails.
    pub max_steps: u32,
}

/// One turn's inputs from its session.
pub struct Turn {
    /// The session id.
    pub session_id: String,
    /// This turn's id (`turn_…`).
    pub turn_id: String,
    /// The session's events so far, including this turn's `message.received`.
    pub events: Vec<Event>,
    /// The FileSystem bound for this turn.
    pub fs: Arc<dyn FileSystem>,
    /// The session workspace on the host.
    pub workspace: PathBuf,
    /// Host default or authored root.
    pub scratch: ScratchMode,
    /// Fires on stop or preempt.
    pub cancel: CancellationToken,
    /// The session's todo list.
    pub todos: TodoList,
    /// Session facts tools see (dry run, purpose, continuation key).
    pub context: SessionContext,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnOutcome {
    /// `turn.completed` with this reply.
    Completed {
        /// The final assistant text.
        reply: String,
    },
    /// `turn.failed` with this message (`turn interrupted` when cancelled).
    Failed {
        /// Why.
        message: String,
    },
}

/// A turn's failure before it is recorded as `turn.failed`.
enum Stop {
    Interrupted,
    Failed(String),
}

/// The `action.result` of a finished call.
pub(crate) fn action_result(
    call_id: String,
    tool: String,
    result: Result<ToolOutput, String>,
    started: Instant,
) -> ActionResult {
    let (output, error) = match result {
        Ok(output) => (Some(output.to_event_value()), None),
        Err(message) => (None, Some(message)),
    };
    ActionResult {
        call_id,
        tool,
        is_error: error.is_some(),
        output,
        error,
        duration_ms: started.elapsed().as_millis() as u64,
    }
}

/// A model error, or an interruption when the turn was cancelled while the model was called.
fn model_stop(cancel: &CancellationToken, err: folio_model::ModelError) -> Stop {
    if cancel.is_cancelled() {
        Stop::Interrupted
    } else {
        Stop::Failed(err.to_string())
    }
}

impl Harness {
    /// Runs one turn, recording its events through `sink`; never panics on model or tool errors.
    pub async fn run_turn(&self, mut turn: Turn, sink: &dyn EventSink) -> TurnOutcome {
        let started = Instant::now();
        let outcome = match self
            .emit(
                &mut turn,
                sink,
                EventBody::TurnStarted(TurnStarted {
                    model: self.model.clone(),
                }),
            )
            .await
        {
            Ok(()) => self.steps(&mut turn, sink, started, 1).await,
            Err(stop) => Err(stop),
        };
        self.finish(turn, sink, outcome).await
    }

    /// Resumes a turn that was parked on an approval when the server stopped: runs the calls of
    /// its last `actions.requested` that have no result yet (through the approval gate), then
    /// continues its steps. `turn.events` must hold the session's log, this turn's events included.
    pub async fn resume_turn(&self, mut turn: Turn, sink: &dyn EventSink) -> TurnOutcome {
        let started = Instant::now();
        let open = open_calls(&turn.events, &turn.turn_id);
        let pending = open
            .calls
            .into_iter()
            .map(|call| {
                let prepared = self.prepare(&call);
                (call, prepared)
            })
            .collect();
        let outcome = match self
            .execute_calls(&mut turn, sink, pending, &open.approvals)
            .await
        {
            Ok(()) => self.steps(&mut turn, sink, started, open.step + 1).await,
            Err(stop) => Err(stop),
        };
        self.finish(turn, sink, outcome).await
    }

    /// Records how a turn ended and syncs the log.
    async fn finish(
        &self,
        turn: Turn,
        sink: &dyn EventSink,
        outcome: Result<TurnOutcome, Stop>,
    ) -> TurnOutcome {
        let turn_id = turn.turn_id.clone();
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(stop) => {
                let message = match stop {
                    Stop::Interrupted => TURN_INTERRUPTED.to_string(),
                    Stop::Failed(message) => message,
                };
                let body = EventBody::TurnFailed(TurnFailed {
                    message: message.clone(),
                });
                if let Err(err) = sink.emit(Some(&turn_id), body).await {
                    tracing::error!(session = %turn.session_id, "could not record turn.failed: {err}");
                }
                TurnOutcome::Failed { message }
            }
        };
        if let Err(err) = sink.checkpoint().await {
            tracing::error!(session = %turn.session_id, "could not sync the event log: {err}");
        }
        outcome
    }

    async fn emit(
        &self,
        turn: &mut Turn,
        sink: &dyn EventSink,
        body: EventBody,
    ) -> Result<(), Stop> {
        let event = sink
            .emit(Some(&turn.turn_id), body)
            .await
            .map_err(|err| Stop::Failed(format!("could not record an event: {err}")))?;
        turn.events.push(event);
        Ok(())
    }

    async fn steps(
        &self,
        turn: &mut Turn,
        sink: &dyn EventSink,
        started: Instant,
        first_step: u32,
    ) -> Result<TurnOutcome, Stop> {
        let tools = self.tool_specs();
        let system = self.system_prompt(&turn.scratch, &turn.workspace);
        let mut usage = None;
        for step in first_step..=self.max_steps {
            self.emit(turn, sink, EventBody::StepStarted(StepStarted { step }))
                .await?;
            let step_started = Instant::now();
            let request = ModelRequest {
                model: self.model.clone(),
                system: system.clone(),
                messages: conversation(&turn.events),
                tools: tools.clone(),
                params: self.params.clone(),
            };
            let response = self.stream_step(turn, sink, &request).await?;
            usage = Usage::sum_reported([usage, response.usage]);
            if let Some(reasoning) = &response.reasoning {
                self.emit(
                    turn,
                    sink,
                    EventBody::ReasoningCompleted(ReasoningCompleted {
                        text: reasoning.text.clone(),
                        signature: reasoning.signature.clone(),
                    }),
                )
                .await?;
            }
            if !response.text.is_empty() {
                self.emit(
                    turn,
                    sink,
                    EventBody::MessageCompleted(MessageCompleted {
                        text: response.text.clone(),
                    }),
                )
                .await?;
            }
            self.emit(
                turn,
                sink,
                EventBody::StepCompleted(StepCompleted {
                    step,
                    duration_ms: step_started.elapsed().as_millis() as u64,
                    finish_reason: response.finish_reason.clone().unwrap_or(
                        if response.tool_calls.is_empty() {
                            FinishReason::Stop
                        } else {
                            FinishReason::ToolCalls
                        },
                    ),
                }),
            )
            .await?;
            if response.tool_calls.is_empty() {
                let body = EventBody::TurnCompleted(TurnCompleted {
                    reply: response.text.clone(),
                    usage,
                    steps: step,
                    duration_ms: started.elapsed().as_millis() as u64,
                });
                self.emit(turn, sink, body).await?;
                return Ok(TurnOutcome::Completed {
                    reply: response.text,
                });
            }
            self.run_calls(turn, sink, response.tool_calls).await?;
        }
        Err(Stop::Failed(format!(
            "step limit reached: the turn made {} model calls without finishing (raise max_steps in agent.toml)",
            self.max_steps
        )))
    }

    /// Streams one model call, recording deltas as they arrive.
    async fn stream_step(
        &self,
        turn: &mut Turn,
        sink: &dyn EventSink,
        request: &ModelRequest,
    ) -> Result<folio_model::Response, Stop> {
        let cancel = turn.cancel.clone();
        let mut stream = tokio::select! {
            stream = self.provider.stream(request, cancel.child_token()) => {
                stream.map_err(|err| model_stop(&cancel, err))?
            }
            () = cancel.cancelled() => return Err(Stop::Interrupted),
        };
        let mut assembler = ResponseAssembler::new();
        loop {
            let delta = tokio::select! {
                delta = stream.next() => delta,
                () = cancel.cancelled() => return Err(Stop::Interrupted),
            };
            let Some(delta) = delta else { break };
            let delta = delta.map_err(|err| model_stop(&cancel, err))?;
            match &delta {
                folio_model::Delta::Text(text) if !text.is_empty() => {
                    let body = EventBody::MessageAppended(MessageAppended {
                        delta: text.clone(),
                    });
                    self.emit(turn, sink, body).await?;
                }
                folio_model::Delta::Reasoning(text) if !text.is_empty() => {
                    let body = EventBody::ReasoningAppended(ReasoningAppended {
                        delta: text.clone(),
                    });
                    self.emit(turn, sink, body).await?;
                }
                _ => {}
            }
            assembler.push(&delta);
        }
        assembler
            .finish()
            .map_err(|err| Stop::Failed(err.to_string()))
    }

    /// Prepares every call, records `actions.requested`, then runs each and records its result.
    async fn run_calls(
        &self,
        turn: &mut Turn,
        sink: &dyn EventSink,
        calls: Vec<folio_model::ToolCall>,
    ) -> Result<(), Stop> {
        let prepared: Vec<_> = calls
            .into_iter()
            .map(|call| {
                let prepared = self.prepare(&call);
                (call, prepared)
            })
            .collect();
        let requested = prepared
            .iter()
            .map(|(call, input)| RequestedCall {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                input: input.as_ref().unwrap_or(&call.input).clone(),
                subagent: None,
            })
            .collect();
        self.emit(
            turn,
            sink,
            EventBody::ActionsRequested(ActionsRequested { calls: requested }),
        )
        .await?;
        self.execute_calls(turn, sink, prepared, &HashMap::new())
            .await
    }

    /// Validates a call's input with its tool (an unknown tool is an error for the model).
    /// The schemas of every tool, as sent to the model.
    pub(crate) fn tool_specs(&self) -> Vec<ToolSpec> {
        self.tools
            .tools()
            .map(|tool| ToolSpec {
                name: tool.name().to_string(),
                description: tool.description().to_string(),
                input_schema: tool.input_schema(),
            })
            .collect()
    }

    /// The system prompt of a turn: the instructions plus where the workspace is.
    pub(crate) fn system_prompt(&self, scratch: &ScratchMode, workspace: &Path) -> String {
        let workspace = match scratch {
            ScratchMode::Rooted => "/".to_string(),
            ScratchMode::Host => workspace.display().to_string(),
        };
        format!(
            "{}\n\n# Environment\nWorkspace Path: {workspace}",
            self.system.trim_end()
        )
    }

    /// Runs prepared `input` on tool `name`; tools that record events get the turn's sink.
    pub(crate) async fn invoke(
        &self,
        name: &str,
        input: Value,
        ctx: &ToolContext,
        sink: &dyn EventSink,
        turn_id: &str,
    ) -> Result<ToolOutput, String> {
        let Some(tool) = self.tools.get(name) else {
            return Err(format!("unknown tool \"{name}\""));
        };
        let result = match tool.turn_tool() {
            Some(turn_tool) => turn_tool.call_in_turn(input, ctx, sink, turn_id).await,
            None => tool.call(input, ctx).await,
        };
        result.map_err(|e| e.0)
    }

    /// Validates a model's call against its tool (alias mapping included).
    pub(crate) fn prepare(&self, call: &folio_model::ToolCall) -> Result<Value, String> {
        match self.tools.get(&call.name) {
            Some(tool) => tool.prepare(call.input.clone()).map_err(|e| e.0),
            None => Err(format!(
                "unknown tool \"{}\"; available tools: {}",
                call.name,
                self.tools.names().collect::<Vec<_>>().join(", ")
            )),
        }
    }

    /// Runs prepared calls in order, each through the approval gate, recording each result.
    /// `approvals` holds the calls whose approval is already recorded (requested → decision).
    async fn execute_calls(
        &self,
        turn: &mut Turn,
        sink: &dyn EventSink,
        prepared: Vec<(folio_model::ToolCall, Result<Value, String>)>,
        approvals: &HashMap<String, Option<ActionApprovalResolved>>,
    ) -> Result<(), Stop> {
        for (call, input) in prepared {
            if turn.cancel.is_cancelled() {
                return Err(Stop::Interrupted);
            }
            let call_started = Instant::now();
            let denied = match (&input, self.tools.get(&call.name)) {
                (Ok(input), Some(tool)) if tool.needs_approval() => {
                    self.approval_gate(turn, sink, &call, input, approvals.get(&call.id))
                        .await?
                }
                _ => None,
            };
            let result = match (input, denied) {
                (Err(message), _) | (Ok(_), Some(message)) => Err(message),
                (Ok(input), None) => {
                    let ctx = ToolContext {
                        fs: turn.fs.clone(),
                        workspace: turn.workspace.clone(),
                        scratch: turn.scratch.clone(),
                        cancel: turn.cancel.clone(),
                        todos: turn.todos.clone(),
                        session_id: turn.session_id.clone(),
                        call_id: call.id.clone(),
                        dry_run: turn.context.dry_run,
                        purpose: turn.context.purpose.clone(),
                        continuation_key: turn.context.continuation_key.clone(),
                    };
                    self.invoke(&call.name, input, &ctx, sink, &turn.turn_id)
                        .await
                }
            };
            if turn.cancel.is_cancelled() {
                return Err(Stop::Interrupted);
            }
            let body =
                EventBody::ActionResult(action_result(call.id, call.name, result, call_started));
            self.emit(turn, sink, body).await?;
        }
        Ok(())
    }

    /// Parks a call until a human decides: records `action.approval_requested` (unless already
    /// recorded), waits, records `action.approval_resolved`; returns the denial message, if any.
    async fn approval_gate(
        &self,
        turn: &mut Turn,
        sink: &dyn EventSink,
        call: &folio_model::ToolCall,
        input: &Value,
        recorded: Option<&Option<ActionApprovalResolved>>,
    ) -> Result<Option<String>, Stop> {
        let resolved = match recorded {
            Some(Some(resolved)) => resolved.clone(),
            Some(None) | None => {
                if recorded.is_none() {
                    let body = EventBody::ActionApprovalRequested(ActionApprovalRequested {
                        call_id: call.id.clone(),
                        tool: call.name.clone(),
                        input: input.clone(),
                    });
                    self.emit(turn, sink, body).await?;
                }
                let resolved = tokio::select! {
                    resolved = sink.await_approval(&call.id) => resolved,
                    () = turn.cancel.cancelled() => return Err(Stop::Interrupted),
                };
                self.emit(
                    turn,
                    sink,
                    EventBody::ActionApprovalResolved(resolved.clone()),
                )
                .await?;
                resolved
            }
        };
        Ok(match resolved.decision {
            ApprovalDecision::Approve => None,
            ApprovalDecision::Deny => Some(denied_message(&resolved)),
        })
    }
}

/// The tool error a denied call returns to the model (a contract string).
pub fn denied_message(resolved: &ActionApprovalResolved) -> String {
    folio_protocol::denial_message(&resolved.by, resolved.reason.as_deref())
}

/// The unanswered calls of a turn's last `actions.requested`, with what is recorded about them.
struct OpenCalls {
    /// The last step the turn started.
    step: u32,
    /// Calls without an `action.result`, in order.
    calls: Vec<folio_model::ToolCall>,
    /// Calls whose approval was requested → the recorded decision, if any.
    approvals: HashMap<String, Option<ActionApprovalResolved>>,
}

fn open_calls(events: &[Event], turn_id: &str) -> OpenCalls {
    let mut open = OpenCalls {
        step: 0,
        calls: Vec::new(),
        approvals: HashMap::new(),
    };
    for event in events {
        if event.turn_id.as_deref() != Some(turn_id) {
            continue;
        }
        match &event.body {
            EventBody::StepStarted(started) => open.step = started.step,
            EventBody::ActionsRequested(requested) => {
                open.calls = requested
                    .calls
                    .iter()
                    .map(|call| folio_model::ToolCall {
                        id: call.call_id.clone(),
                        name: call.tool.clone(),
                        input: call.input.clone(),
                    })
                    .collect();
            }
            EventBody::ActionResult(result) => open.calls.retain(|c| c.id != result.call_id),
            EventBody::ActionApprovalRequested(requested) => {
                open.approvals.insert(requested.call_id.clone(), None);
            }
            EventBody::ActionApprovalResolved(resolved) => {
                open.approvals
                    .insert(resolved.call_id.clone(), Some(resolved.clone()));
            }
            _ => {}
        }
    }
    open
}

/// The call ids of a turn's approvals that are requested and not yet resolved.
pub fn pending_approvals(events: &[Event], turn_id: &str) -> Vec<String> {
    let open = open_calls(events, turn_id);
    open.calls
        .iter()
        .filter(|call| matches!(open.approvals.get(&call.id), Some(None)))
        .map(|call| call.id.clone())
        .collect()
}
