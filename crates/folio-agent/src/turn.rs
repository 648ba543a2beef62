//! The turn loop: build the request, stream the model, run tool calls, record every effect as
//! an event, and loop until the model answers without tool calls (docs/architecture.md).
//!
//! The step loop is one piece that a root turn and a subagent both run through. A root turn's
//! events are the session's log, and its conversation is rebuilt from them. A subagent runs the
//! same loop inside its parent's `Task` call over a conversation of its own: its events are kept
//! in memory, and only its tool calls reach the log (tagged with the subagent, their call ids
//! scoped by the `Task` call id), so the parent's conversation sees the `Task` call and its result.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use folio_fs::FileSystem;
use folio_model::{ModelError, ModelRequest, Provider, ResponseAssembler, ToolSpec};
use folio_protocol::{
    ActionApprovalRequested, ActionApprovalResolved, ActionResult, ActionsRequested,
    ApprovalDecision, Event, EventBody, FinishReason, MessageAppended, MessageCompleted,
    MessageReceived, ReasoningAppended, ReasoningCompleted, StepCompleted, StepStarted,
    TurnCompleted, TurnFailed, TurnStarted, Usage,
};
use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::compaction::ContextBudget;
use crate::conversation::conversation;
use crate::sink::{EventSink, SinkError};
use crate::tools::{
    ScratchMode, SessionContext, TodoList, ToolContext, ToolError, ToolOutput, ToolRegistry, spill,
};
use crate::workspace::{LazyWorkspace, PrepareError};

mod compact;
mod open;
mod record;
mod trace;

use open::open_calls;
pub use open::{pending_approvals, restart_answers};
use record::{Recorder, Scope};
use trace::{Covering, LogRange};
pub use trace::{TurnTrace, trace_direct_call};

pub use folio_protocol::TURN_INTERRUPTED;

/// What a turn runs with: the model, the tools, the tree, and its step limit.
#[derive(Clone)]
pub struct Harness {
    /// The agent's name, on its spans and metrics.
    pub agent: String,
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
    /// How long a parked call waits for a decision when its tool names no timeout of its own
    /// (`[approvals] timeout`; `None`: until someone decides).
    pub approval_timeout: Option<std::time::Duration>,
    /// The context budget: window, compaction threshold, what to keep, who summarizes.
    pub context: ContextBudget,
    /// What model calls cost: each call's usage is priced by the model that answered.
    pub prices: Arc<folio_model::PriceTable>,
    /// The A/B variant this harness runs (`agent_sdk.variant` on its spans and metrics);
    /// `None`: the agent as written.
    pub variant: Option<String>,
}

/// One turn's inputs from its session.
pub struct Turn {
    /// The session id.
    pub session_id: String,
    /// This turn's id (`turn_…`).
    pub turn_id: String,
    /// The session's events so far from [`context_start`](crate::context_start) on (what
    /// the conversation and any summary can need), including this turn's `message.received`.
    pub events: Vec<Event>,
    /// The FileSystem bound for this turn.
    pub fs: Arc<dyn FileSystem>,
    /// The session workspace on the host.
    pub workspace: PathBuf,
    /// Host default or authored root.
    pub scratch: ScratchMode,
    /// The host workspace to prepare before the turn's first tool call (`None`: nothing to
    /// prepare, as under an authored root).
    pub prepare: Option<LazyWorkspace>,
    /// Fires on stop or preempt.
    pub cancel: CancellationToken,
    /// The session's todo list.
    pub todos: TodoList,
    /// Session facts tools see (dry run, purpose, continuation key).
    pub context: SessionContext,
    /// Where the turn came from, for its span.
    pub trace: TurnTrace,
    /// Issues host API credentials to the processes the turn's tool calls start (`None`: no
    /// host API, as under `folio run`).
    pub host: Option<Arc<dyn crate::tools::host::HostBroker>>,
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

/// Why a step loop stopped before an answer; its runner words it (`turn.failed` for a root
/// turn, the `Task` call's error for a subagent).
enum Stop {
    /// The cancellation token fired (stop, preempt).
    Interrupted,
    /// The model was called `max_steps` times without answering.
    StepLimit,
    /// A model error, an event that could not be recorded, a workspace that could not be
    /// prepared, or a failed compaction.
    Failed(TurnFailure),
    /// The provider refused the request as larger than the model's context window.
    ContextOverflow(ModelError),
}

/// Why a step loop failed, with its cause; its `Display` is the `turn.failed` message of a
/// root turn and the `Task` call's error of a subagent.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TurnFailure {
    /// The model call failed (or its answer could not be assembled).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// An event could not be recorded in the log.
    #[error("could not record an event: {0}")]
    Record(#[source] SinkError),
    /// The host session workspace could not be prepared for a tool call.
    #[error(transparent)]
    Workspace(#[from] PrepareError),
    /// Summarizing the older conversation failed for this reason.
    #[error("compacting the conversation failed: {0}")]
    Compaction(#[source] Box<TurnFailure>),
    /// The summarizer answered with no text (the cause of a [`TurnFailure::Compaction`]).
    #[error("the model wrote an empty summary")]
    EmptySummary,
    /// The model asked for more tool calls than one turn may make.
    #[error(
        "tool_calls_per_turn: the turn asked for {asked} tool calls; at most {limit} are allowed ([limits] tool_calls_per_turn in folio.toml)"
    )]
    ToolCallLimit {
        /// The calls asked for so far, this step's included.
        asked: u64,
        /// The limit.
        limit: u64,
    },
}

impl Stop {
    /// The `error.type` of a span that ended this way.
    fn kind(&self) -> &'static str {
        match self {
            Stop::Interrupted => "interrupted",
            Stop::StepLimit => "step_limit",
            Stop::Failed(_) => "failed",
            Stop::ContextOverflow(_) => "context_overflow",
        }
    }
}

/// Why a subagent run ended without a reply; its message is the `Task` tool's error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SubagentError {
    /// The turn was stopped or preempted while the subagent ran.
    #[error("subagent \"{id}\" was interrupted")]
    Interrupted {
        /// The subagent's id.
        id: String,
    },
    /// The subagent used all its model calls without answering.
    #[error("subagent \"{id}\" reached its step limit ({max_steps} model calls) without answering")]
    StepLimit {
        /// The subagent's id.
        id: String,
        /// Its step limit.
        max_steps: u32,
    },
    /// The subagent's turn failed (a model or event-log error, as reported).
    #[error(transparent)]
    Failed(TurnFailure),
    /// The subagent's conversation outgrew its model's context window.
    #[error(transparent)]
    ContextOverflow(ModelError),
}

/// The `action.result` of a finished call.
fn action_result(
    call_id: String,
    tool: String,
    result: Result<ToolOutput, ToolError>,
    started: Instant,
) -> ActionResult {
    let (output, error) = match result {
        Ok(output) => (Some(output.to_event_value()), None),
        Err(ToolError(message)) => (None, Some(message)),
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
fn model_stop(cancel: &CancellationToken, err: ModelError) -> Stop {
    if cancel.is_cancelled() {
        Stop::Interrupted
    } else if err.is_context_overflow() {
        Stop::ContextOverflow(err)
    } else {
        Stop::Failed(err.into())
    }
}

impl Harness {
    /// The agent and variant its spans and metrics name.
    pub fn who(&self) -> folio_telemetry::metrics::Who<'_> {
        folio_telemetry::metrics::Who {
            agent: &self.agent,
            variant: self.variant.as_deref(),
        }
    }

    /// Runs one turn, recording its events through `sink`; never panics on model or tool errors.
    pub async fn run_turn(&self, mut turn: Turn, sink: &dyn EventSink) -> TurnOutcome {
        let started = Instant::now();
        let (span, range) = self.turn_span(&turn);
        let recorder = Recorder {
            sink,
            scope: Scope::Root,
            range: &range,
        };
        let body = EventBody::TurnStarted(TurnStarted {
            model: self.model.clone(),
        });
        let run = async {
            let outcome = match self.emit(&mut turn, recorder, body).await {
                Ok(()) => self.steps(&mut turn, recorder, started, 1).await,
                Err(stop) => Err(stop),
            };
            self.finish(turn, recorder, outcome).await
        };
        run.instrument(span).await
    }

    /// The span of `turn` and the log range it covers so far (from its `message.received`).
    fn turn_span(&self, turn: &Turn) -> (tracing::Span, LogRange) {
        let span = trace::turn_span(
            self.who(),
            &self.model,
            &turn.session_id,
            &turn.turn_id,
            &turn.trace,
        );
        let range = LogRange::new();
        if let Some(first) = trace::first_index(&turn.events, &turn.turn_id) {
            range.logged(first);
        }
        (span, range)
    }

    /// Runs this harness as subagent `id` inside the parent's call `ctx.call_id` of turn
    /// `turn_id`: the turn's step loop over a conversation of its own that starts with `prompt`.
    /// Only its tool calls and their results reach `sink` (tagged with `id`, call ids scoped by
    /// the parent's call id); a tool that needs a human approval is refused, since only the
    /// parent's turn can park. Returns the subagent's reply, or why it failed.
    pub(crate) async fn run_subagent(
        &self,
        id: &str,
        prompt: &str,
        ctx: &ToolContext,
        sink: &dyn EventSink,
        turn_id: &str,
    ) -> Result<String, SubagentError> {
        let mut turn = Turn {
            session_id: ctx.session_id.clone(),
            turn_id: turn_id.to_string(),
            events: Vec::new(),
            fs: ctx.fs.clone(),
            workspace: ctx.workspace.clone(),
            scratch: ctx.scratch.clone(),
            // The parent prepared the workspace before its `Task` call ran.
            prepare: None,
            cancel: ctx.cancel.clone(),
            todos: ctx.todos.clone(),
            context: SessionContext {
                dry_run: ctx.dry_run,
                purpose: ctx.purpose.clone(),
                continuation_key: ctx.continuation_key.clone(),
                principal: ctx.principal.clone(),
                peer_depth: ctx.peer_depth,
                // A subagent's run is its parent's one `Task` call.
                tool_calls_per_turn: None,
            },
            trace: TurnTrace::default(),
            host: ctx.host.clone(),
        };
        let span = trace::subagent_span(self.who(), id, &ctx.session_id, turn_id);
        let range = LogRange::new();
        let recorder = Recorder {
            sink,
            scope: Scope::Subagent {
                id,
                task_call_id: &ctx.call_id,
            },
            range: &range,
        };
        let body = EventBody::MessageReceived(MessageReceived {
            text: prompt.to_string(),
            admission: None,
            coalesced: None,
            client_message_id: None,
            request_digest: None,
        });
        let run = async {
            match self.emit(&mut turn, recorder, body).await {
                Ok(()) => self.steps(&mut turn, recorder, Instant::now(), 1).await,
                Err(stop) => Err(stop),
            }
        };
        let outcome = run.instrument(span.clone()).await;
        range.record_on(&span);
        if outcome.is_err() {
            span.record("otel.status_code", "ERROR");
            span.record("error.type", "subagent_failed");
        }
        outcome.map_err(|stop| match stop {
            Stop::Interrupted => SubagentError::Interrupted { id: id.to_string() },
            Stop::StepLimit => SubagentError::StepLimit {
                id: id.to_string(),
                max_steps: self.max_steps,
            },
            Stop::Failed(failure) => SubagentError::Failed(failure),
            Stop::ContextOverflow(err) => SubagentError::ContextOverflow(err),
        })
    }

    /// Resumes a turn that was parked on an approval when the server stopped: runs the calls of
    /// its last `actions.requested` that have no result yet (through the approval gate), then
    /// continues its steps. `turn.events` must hold the log from [`context_start`](crate::context_start)
    /// on, this turn's events included.
    pub async fn resume_turn(&self, mut turn: Turn, sink: &dyn EventSink) -> TurnOutcome {
        let started = Instant::now();
        let open = open_calls(&turn.events, &turn.turn_id);
        let (span, range) = self.turn_span(&turn);
        let recorder = Recorder {
            sink,
            scope: Scope::Root,
            range: &range,
        };
        let pending = open
            .calls
            .into_iter()
            .map(|call| {
                let prepared = self.prepare(&call);
                (call, prepared)
            })
            .collect();
        let run = async {
            let outcome = match self
                .execute_calls(&mut turn, recorder, pending, &open.approvals)
                .await
            {
                Ok(()) => {
                    self.steps(&mut turn, recorder, started, open.step + 1)
                        .await
                }
                Err(stop) => Err(stop),
            };
            self.finish(turn, recorder, outcome).await
        };
        run.instrument(span).await
    }

    /// Records how a turn ended (in the log and on its span) and syncs the log.
    async fn finish(
        &self,
        turn: Turn,
        recorder: Recorder<'_>,
        outcome: Result<String, Stop>,
    ) -> TurnOutcome {
        let sink = recorder.sink;
        let turn_id = turn.turn_id.clone();
        let failure = outcome.as_ref().err().map(Stop::kind);
        let outcome = match outcome {
            Ok(reply) => TurnOutcome::Completed { reply },
            Err(stop) => {
                let message = match stop {
                    Stop::Interrupted => TURN_INTERRUPTED.to_string(),
                    Stop::StepLimit => format!(
                        "step limit reached: the turn made {} model calls without finishing (raise max_steps in agent.toml)",
                        self.max_steps
                    ),
                    Stop::Failed(failure) => failure.to_string(),
                    Stop::ContextOverflow(err) => err.to_string(),
                };
                let body = EventBody::TurnFailed(TurnFailed {
                    message: message.clone(),
                });
                match sink.emit(Some(&turn_id), body).await {
                    Ok(event) => recorder.range.logged(event.index),
                    Err(err) => {
                        tracing::error!(session = %turn.session_id, "could not record turn.failed: {err}");
                    }
                }
                TurnOutcome::Failed { message }
            }
        };
        let span = tracing::Span::current();
        recorder.range.record_on(&span);
        trace::turn_ended(&span, self.who(), &turn.events, &turn_id, failure);
        if let Err(err) = sink.checkpoint().await {
            tracing::error!(session = %turn.session_id, "could not sync the event log: {err}");
        }
        outcome
    }

    /// Records one event of the loop: a root turn's in the log, a subagent's in its own
    /// conversation (its tool calls in the log too); either way the loop's conversation sees it.
    async fn emit(
        &self,
        turn: &mut Turn,
        recorder: Recorder<'_>,
        body: EventBody,
    ) -> Result<(), Stop> {
        let record = |body| async {
            recorder
                .sink
                .emit(Some(&turn.turn_id), body)
                .await
                .map_err(|err| Stop::Failed(TurnFailure::Record(err)))
        };
        let event = match recorder.scope {
            Scope::Root => {
                let event = record(body).await?;
                recorder.range.logged(event.index);
                event
            }
            Scope::Subagent { .. } => {
                if let Some(logged) = recorder.scope.logged_by_subagent(&body) {
                    recorder.range.logged(record(logged).await?.index);
                }
                Event {
                    index: turn.events.len() as u64,
                    session_id: turn.session_id.clone(),
                    turn_id: Some(turn.turn_id.clone()),
                    at: chrono::Utc::now(),
                    body,
                }
            }
        };
        turn.events.push(event);
        Ok(())
    }

    /// The step loop: request → stream → record → run calls, until the model answers without
    /// tool calls (its reply) or the step limit.
    async fn steps(
        &self,
        turn: &mut Turn,
        recorder: Recorder<'_>,
        started: Instant,
        first_step: u32,
    ) -> Result<String, Stop> {
        let tools = self.tool_specs();
        let system = self.system_prompt(&turn.scratch, &turn.workspace);
        let mut usage = None;
        let mut compaction_usage = None;
        let mut asked: u64 = 0;
        for step in first_step..=self.max_steps {
            self.emit(turn, recorder, EventBody::StepStarted(StepStarted { step }))
                .await?;
            let step_started = Instant::now();
            let request = |turn: &Turn| ModelRequest {
                model: self.model.clone(),
                system: system.clone(),
                messages: conversation(&turn.events),
                tools: tools.clone(),
                params: self.params.clone(),
            };
            let mut next = request(turn);
            let root = matches!(recorder.scope, Scope::Root);
            let over = root
                .then(|| {
                    self.context
                        .counter
                        .request_over(&next, self.context.threshold())
                })
                .flatten();
            if let Some(tokens) = over
                && self
                    .compact(turn, recorder, &next, tokens, &mut compaction_usage)
                    .await?
            {
                next = request(turn);
            }
            // The model call's span covers the events recording its response, up to this step's
            // `step.completed` and `actions.requested` (dropped before its calls run).
            let mut chat = self.chat_span(recorder, &next);
            let response = match self.stream_step(turn, recorder, &next, &chat).await {
                // The provider counts differently than we estimated: compact once and retry.
                Err(Stop::ContextOverflow(err)) if root => {
                    drop(chat);
                    let tokens = self.context.counter.request(&next);
                    if !self
                        .compact(turn, recorder, &next, tokens, &mut compaction_usage)
                        .await?
                    {
                        return Err(Stop::Failed(err.into()));
                    }
                    next = request(turn);
                    chat = self.chat_span(recorder, &next);
                    self.stream_step(turn, recorder, &next, &chat).await?
                }
                other => other?,
            };
            usage = Usage::sum_reported([usage, response.usage]);
            if let Some(reasoning) = &response.reasoning {
                self.emit(
                    turn,
                    recorder,
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
                    recorder,
                    EventBody::MessageCompleted(MessageCompleted {
                        text: response.text.clone(),
                    }),
                )
                .await?;
            }
            self.emit(
                turn,
                recorder,
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
                    usage: response.usage,
                }),
            )
            .await?;
            if response.tool_calls.is_empty() {
                let body = EventBody::TurnCompleted(TurnCompleted {
                    reply: response.text.clone(),
                    usage: Usage::sum_reported([usage, compaction_usage]),
                    compaction_usage,
                    steps: step,
                    duration_ms: started.elapsed().as_millis() as u64,
                });
                drop(chat);
                self.emit(turn, recorder, body).await?;
                return Ok(response.text);
            }
            asked += response.tool_calls.len() as u64;
            if let Some(limit) = turn.context.tool_calls_per_turn
                && asked > limit
            {
                return Err(Stop::Failed(TurnFailure::ToolCallLimit { asked, limit }));
            }
            let prepared = self
                .request_calls(turn, recorder, response.tool_calls)
                .await?;
            drop(chat);
            self.execute_calls(turn, recorder, prepared, &HashMap::new())
                .await?;
        }
        Err(Stop::StepLimit)
    }

    /// The `chat {model}` span of a step's model call for `request`, covering what `recorder`
    /// appends until it is dropped.
    fn chat_span<'a>(&self, recorder: Recorder<'a>, request: &ModelRequest) -> Covering<'a> {
        Covering::new(
            trace::chat_span(self.provider.name(), self.variant.as_deref(), request),
            recorder.range,
        )
    }

    /// Streams one model call in `span`, recording deltas as they arrive.
    async fn stream_step(
        &self,
        turn: &mut Turn,
        recorder: Recorder<'_>,
        request: &ModelRequest,
        span: &tracing::Span,
    ) -> Result<folio_model::Response, Stop> {
        self.call_model(turn, Some(recorder), self.provider.as_ref(), request, span)
            .await
    }

    /// One model call through `provider`, in its `chat {model}` span `span` (whose event range
    /// the caller records); its text and reasoning deltas are recorded as they arrive when a
    /// `recorder` is given (a compaction request records none).
    async fn call_model(
        &self,
        turn: &mut Turn,
        recorder: Option<Recorder<'_>>,
        provider: &dyn Provider,
        request: &ModelRequest,
        span: &tracing::Span,
    ) -> Result<folio_model::Response, Stop> {
        let started = Instant::now();
        let mut first_chunk = None;
        let mut response = self
            .stream_model(turn, recorder, provider, request, started, &mut first_chunk)
            .instrument(span.clone())
            .await;
        if let Ok(answer) = &mut response
            && let Some(usage) = answer.usage
        {
            let model = answer.model.as_deref().unwrap_or(&request.model);
            answer.usage = Some(self.prices.priced(usage, model));
        }
        let ended = response.as_ref().map_err(Stop::kind);
        trace::chat_ended(
            span,
            provider.name(),
            self.variant.as_deref(),
            &request.model,
            started,
            first_chunk,
            ended,
        );
        response
    }

    /// Streams one model call (see [`Harness::call_model`]), noting when the first chunk came.
    async fn stream_model(
        &self,
        turn: &mut Turn,
        recorder: Option<Recorder<'_>>,
        provider: &dyn Provider,
        request: &ModelRequest,
        started: Instant,
        first_chunk: &mut Option<std::time::Duration>,
    ) -> Result<folio_model::Response, Stop> {
        let cancel = turn.cancel.clone();
        // Made for the turn's session: a recording provider files the exchange under it.
        let call = folio_model::for_session(
            &turn.session_id,
            provider.stream(request, cancel.child_token()),
        );
        let mut stream = tokio::select! {
            stream = call => {
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
            first_chunk.get_or_insert_with(|| started.elapsed());
            let Some(recorder) = recorder else {
                assembler.push(&delta);
                continue;
            };
            match &delta {
                folio_model::Delta::Text(text) if !text.is_empty() => {
                    let body = EventBody::MessageAppended(MessageAppended {
                        delta: text.clone(),
                    });
                    self.emit(turn, recorder, body).await?;
                }
                folio_model::Delta::Reasoning(text) if !text.is_empty() => {
                    let body = EventBody::ReasoningAppended(ReasoningAppended {
                        delta: text.clone(),
                    });
                    self.emit(turn, recorder, body).await?;
                }
                _ => {}
            }
            assembler.push(&delta);
        }
        assembler.finish().map_err(|err| Stop::Failed(err.into()))
    }

    /// Prepares every call and records `actions.requested`; returns the prepared calls, for
    /// [`Harness::execute_calls`].
    async fn request_calls(
        &self,
        turn: &mut Turn,
        recorder: Recorder<'_>,
        calls: Vec<folio_model::ToolCall>,
    ) -> Result<Vec<(folio_model::ToolCall, Result<Value, ToolError>)>, Stop> {
        let prepared: Vec<_> = calls
            .into_iter()
            .map(|call| {
                let prepared = self.prepare(&call);
                (call, prepared)
            })
            .collect();
        let requested = prepared
            .iter()
            .map(|(call, input)| {
                call.to_requested(input.as_ref().unwrap_or(&call.input).clone(), None)
            })
            .collect();
        self.emit(
            turn,
            recorder,
            EventBody::ActionsRequested(ActionsRequested { calls: requested }),
        )
        .await?;
        Ok(prepared)
    }

    /// The schemas of every tool, as sent to the model.
    fn tool_specs(&self) -> Vec<ToolSpec> {
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
    fn system_prompt(&self, scratch: &ScratchMode, workspace: &Path) -> String {
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
    async fn invoke(
        &self,
        name: &str,
        input: Value,
        ctx: &ToolContext,
        sink: &dyn EventSink,
        turn_id: &str,
    ) -> Result<ToolOutput, ToolError> {
        let Some(tool) = self.tools.get(name) else {
            return Err(ToolError(self.tools.missing(name)));
        };
        let result = match tool.turn_tool() {
            Some(turn_tool) => turn_tool.call_in_turn(input, ctx, sink, turn_id).await,
            None => tool.call(input, ctx).await,
        };
        self.bound(ctx, result?).await
    }

    /// A tool output within the budget: text (or JSON) over `tool_output_tokens` is spilled
    /// to a scratch file and replaced by its head and where to read the rest.
    async fn bound(&self, ctx: &ToolContext, output: ToolOutput) -> Result<ToolOutput, ToolError> {
        let limit = self.context.tool_output_tokens;
        let text = match output {
            ToolOutput::Text(text) if self.context.counter.exceeds(&text, limit) => text,
            ToolOutput::Json(value) => {
                let text = value.to_string();
                if !self.context.counter.exceeds(&text, limit) {
                    return Ok(ToolOutput::Json(value));
                }
                text
            }
            other => return Ok(other),
        };
        spill(ctx, text).await.map(ToolOutput::Text)
    }

    /// Validates a model's call against its tool (alias mapping included).
    fn prepare(&self, call: &folio_model::ToolCall) -> Result<Value, ToolError> {
        match self.tools.get(&call.name) {
            Some(tool) => tool.prepare(call.input.clone()),
            None => Err(ToolError(self.tools.missing(&call.name))),
        }
    }

    /// Runs prepared calls in order, each through the approval gate, recording each result.
    /// `approvals` holds the calls whose approval is already recorded (requested → decision).
    async fn execute_calls(
        &self,
        turn: &mut Turn,
        recorder: Recorder<'_>,
        prepared: Vec<(folio_model::ToolCall, Result<Value, ToolError>)>,
        approvals: &HashMap<String, Option<ActionApprovalResolved>>,
    ) -> Result<(), Stop> {
        for (call, input) in prepared {
            if turn.cancel.is_cancelled() {
                return Err(Stop::Interrupted);
            }
            let subagent = match recorder.scope {
                Scope::Root => None,
                Scope::Subagent { id, .. } => Some(id),
            };
            let span = trace::tool_span(
                &call.name,
                &recorder.scope.logged_call_id(&call.id),
                subagent,
                self.variant.as_deref(),
                input.as_ref().unwrap_or(&call.input),
            );
            let before = recorder.range.last();
            self.execute_call(turn, recorder, call, input, approvals)
                .instrument(span.clone())
                .await?;
            recorder.range.record_since(&span, before);
        }
        Ok(())
    }

    /// Runs one prepared call through the approval gate (in its tool span) and records its
    /// result.
    async fn execute_call(
        &self,
        turn: &mut Turn,
        recorder: Recorder<'_>,
        call: folio_model::ToolCall,
        input: Result<Value, ToolError>,
        approvals: &HashMap<String, Option<ActionApprovalResolved>>,
    ) -> Result<(), Stop> {
        let call_started = Instant::now();
        let denied = match (&input, self.tools.get(&call.name), recorder.scope) {
            (Ok(input), Some(tool), Scope::Root) if tool.needs_approval() => {
                let timeout = tool.approval_timeout().or(self.approval_timeout);
                let recorded = approvals.get(&call.id);
                self.approval_gate(turn, recorder, &call, input, recorded, timeout)
                    .await?
            }
            (Ok(_), Some(tool), Scope::Subagent { .. }) if tool.needs_approval() => Some(format!(
                "{} needs a human approval, which a subagent cannot ask for; the parent agent must call it",
                call.name
            )),
            _ => None,
        };
        let result = match (input, denied) {
            (Err(error), _) => Err(error),
            (Ok(_), Some(message)) => Err(ToolError(message)),
            (Ok(input), None) => {
                if let Some(workspace) = &turn.prepare {
                    workspace
                        .ready()
                        .await
                        .map_err(|err| Stop::Failed(err.into()))?;
                }
                let ctx = ToolContext {
                    fs: turn.fs.clone(),
                    workspace: turn.workspace.clone(),
                    scratch: turn.scratch.clone(),
                    cancel: turn.cancel.clone(),
                    todos: turn.todos.clone(),
                    session_id: turn.session_id.clone(),
                    call_id: recorder.scope.logged_call_id(&call.id),
                    dry_run: turn.context.dry_run,
                    purpose: turn.context.purpose.clone(),
                    continuation_key: turn.context.continuation_key.clone(),
                    principal: turn.context.principal.clone(),
                    peer_depth: turn.context.peer_depth,
                    turn_id: Some(turn.turn_id.clone()),
                    host: turn.host.clone(),
                };
                self.invoke(&call.name, input, &ctx, recorder.sink, &turn.turn_id)
                    .await
            }
        };
        if turn.cancel.is_cancelled() {
            return Err(Stop::Interrupted);
        }
        let result = action_result(call.id, call.name, result, call_started);
        trace::tool_ended(
            &tracing::Span::current(),
            &result.tool,
            self.variant.as_deref(),
            result.output.as_ref(),
            result.error.as_deref(),
        );
        self.emit(turn, recorder, EventBody::ActionResult(result))
            .await?;
        Ok(())
    }

    /// Parks a call until a human decides: records `action.approval_requested` (unless already
    /// recorded; with `expiresAt` when the call has a `timeout`), waits (at most until the
    /// recorded deadline: then folio denies it, `approval timed out`), records
    /// `action.approval_resolved`; returns the denial message, if any.
    async fn approval_gate(
        &self,
        turn: &mut Turn,
        recorder: Recorder<'_>,
        call: &folio_model::ToolCall,
        input: &Value,
        recorded: Option<&Option<ActionApprovalResolved>>,
        timeout: Option<std::time::Duration>,
    ) -> Result<Option<String>, Stop> {
        let resolved = match recorded {
            Some(Some(resolved)) => resolved.clone(),
            Some(None) | None => {
                let expires_at = if recorded.is_none() {
                    // A deadline too far to represent is no deadline. Rounded up to the whole
                    // millisecond, as events are timed: the denial is never timed before it.
                    let expires_at = timeout
                        .and_then(|timeout| chrono::Duration::from_std(timeout).ok())
                        .and_then(|timeout| chrono::Utc::now().checked_add_signed(timeout))
                        .and_then(|at| {
                            chrono::DurationRound::duration_round_up(
                                at,
                                chrono::TimeDelta::milliseconds(1),
                            )
                            .ok()
                        });
                    let body = EventBody::ActionApprovalRequested(ActionApprovalRequested {
                        call_id: call.id.clone(),
                        tool: call.name.clone(),
                        input: input.clone(),
                        elicitation: None,
                        expires_at,
                    });
                    self.emit(turn, recorder, body).await?;
                    expires_at
                } else {
                    // Resumed after a restart: the deadline is the recorded one.
                    recorded_expiry(&turn.events, &call.id)
                };
                let pending = folio_telemetry::metrics::approval_pending(self.who());
                let decided = tokio::select! {
                    resolved = recorder.sink.await_approval(&call.id) => Some(resolved),
                    () = until(expires_at) => None,
                    () = turn.cancel.cancelled() => return Err(Stop::Interrupted),
                };
                let resolved = match decided {
                    Some(resolved) => resolved,
                    None if recorder.sink.expire_approval(&call.id).await => timed_out(&call.id),
                    // A decision arrived as the deadline passed: it stands.
                    None => tokio::select! {
                        resolved = recorder.sink.await_approval(&call.id) => resolved,
                        () = turn.cancel.cancelled() => return Err(Stop::Interrupted),
                    },
                };
                drop(pending);
                self.emit(
                    turn,
                    recorder,
                    EventBody::ActionApprovalResolved(resolved.clone()),
                )
                .await?;
                resolved
            }
        };
        Ok(match resolved.decision {
            // The server accepts only approve/deny for a call; an elicitation's answer that
            // reached a call through another sink counts as yes or no.
            ApprovalDecision::Approve | ApprovalDecision::Accept => None,
            ApprovalDecision::Deny | ApprovalDecision::Decline | ApprovalDecision::Cancel => {
                Some(denied_message(&resolved))
            }
        })
    }
}

/// The `expiresAt` of the recorded `action.approval_requested` of `call_id`, if any.
fn recorded_expiry(events: &[Event], call_id: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    events.iter().rev().find_map(|event| match &event.body {
        EventBody::ActionApprovalRequested(requested) if requested.call_id == call_id => {
            requested.expires_at
        }
        _ => None,
    })
}

/// Completes at `deadline` (at once when it has passed); never without one.
async fn until(deadline: Option<chrono::DateTime<chrono::Utc>>) {
    match deadline {
        Some(at) => {
            let wait = (at - chrono::Utc::now()).to_std().unwrap_or_default();
            tokio::time::sleep(wait).await;
        }
        None => std::future::pending().await,
    }
}

/// Folio's denial of a call whose approval deadline passed with no decision.
fn timed_out(call_id: &str) -> ActionApprovalResolved {
    ActionApprovalResolved {
        call_id: call_id.to_string(),
        decision: ApprovalDecision::Deny,
        reason: Some(folio_protocol::APPROVAL_TIMED_OUT.to_string()),
        by: folio_protocol::DECIDED_BY_FOLIO.to_string(),
        content: None,
    }
}

/// The tool error a denied call returns to the model (a contract string).
pub fn denied_message(resolved: &ActionApprovalResolved) -> String {
    folio_protocol::denial_message(&resolved.by, resolved.reason.as_deref())
}
