//! The `run --json` / `trajectory --json` result, built from an event log.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Event, EventBody, Usage};

/// The result of `folio run --json` and `folio trajectory --json`.
///
/// Both commands build it with [`RunResult::from_events`] so they print the same thing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// The session the events belong to.
    pub session_id: String,
    /// Whether the last turn completed and the session did not fail.
    pub ok: bool,
    /// The last turn's reply.
    pub reply: String,
    /// Every turn, in order.
    pub turns: Vec<TurnSummary>,
    /// Every tool call, in request order, paired with its result.
    pub tool_calls: Vec<ToolCallRecord>,
    /// Usage summed over the turns that reported it; `null` when none did.
    pub usage: Option<Usage>,
    /// The failure message when `ok` is false.
    pub error: Option<String>,
    /// Where the conversation was compacted (absent when it never was).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compactions: Vec<CompactionPoint>,
}

/// One `context.compacted` of a [`RunResult`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionPoint {
    /// The turn that compacted.
    pub turn_id: Option<String>,
    /// The index of the `context.compacted` event.
    pub index: u64,
    /// Events before this index were summarized.
    pub up_to_index: u64,
    /// Estimated request tokens before and after.
    pub tokens_before: u64,
    /// Estimated request tokens after.
    pub tokens_after: u64,
}

/// One turn of a [`RunResult`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnSummary {
    /// The turn id.
    pub turn_id: String,
    /// Whether the turn completed.
    pub ok: bool,
    /// The reply (`turn.completed`), or for a failed turn the last assistant text it produced.
    pub reply: String,
    /// Turn duration: from `turn.completed`, else from the `at` of its first and last events.
    pub duration_ms: u64,
    /// Usage from `turn.completed`; `null` for a turn that did not complete or whose provider
    /// reported none.
    pub usage: Option<Usage>,
}

/// One tool call of a [`RunResult`]: `actions.requested` paired with `action.result` by `callId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallRecord {
    /// The tool-call id.
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// The call's input.
    pub input: Value,
    /// The result's output; for a failed call its error message; `null` when no result was recorded.
    pub output: Value,
    /// Whether the result was an error.
    pub is_error: bool,
    /// Call duration in milliseconds (0 when no result was recorded).
    pub duration_ms: u64,
    /// The subagent the call delegated to, if any.
    pub subagent: Option<String>,
}

/// Message of a turn whose log has no `turn.completed` or `turn.failed`.
const UNFINISHED_TURN: &str = "turn did not finish";
/// Error of a log without any turn.
const NO_TURNS: &str = "no turn in the event log";

/// How a turn ended.
enum TurnEnd {
    /// `turn.completed`: the reply, duration and usage.
    Completed {
        reply: String,
        duration_ms: u64,
        usage: Option<Usage>,
    },
    /// `turn.failed`: its message.
    Failed { message: String },
}

#[derive(Default)]
struct TurnState {
    turn_id: String,
    outcome: Option<TurnEnd>,
    last_text: String,
    first_at: Option<chrono::DateTime<chrono::Utc>>,
    last_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl RunResult {
    /// The result of the one turn `turn_id` of a session's `events`: what an eval step and a
    /// case written from a session expect of it.
    pub fn of_turn(events: &[Event], turn_id: &str) -> RunResult {
        let turn: Vec<Event> = events
            .iter()
            .filter(|event| event.turn_id.as_deref() == Some(turn_id))
            .cloned()
            .collect();
        RunResult::from_events(&turn)
    }

    /// Builds the result from a session's events (in log order).
    pub fn from_events(events: &[Event]) -> RunResult {
        let session_id = events
            .first()
            .map(|event| event.session_id.clone())
            .unwrap_or_default();
        let mut turns: Vec<TurnState> = Vec::new();
        let mut turn_by_id: HashMap<String, usize> = HashMap::new();
        let mut tool_calls: Vec<ToolCallRecord> = Vec::new();
        let mut call_by_id: HashMap<String, usize> = HashMap::new();
        let mut session_failure: Option<String> = None;
        let mut compactions = Vec::new();

        for event in events {
            if let Some(turn_id) = &event.turn_id {
                let position = *turn_by_id.entry(turn_id.clone()).or_insert_with(|| {
                    turns.push(TurnState {
                        turn_id: turn_id.clone(),
                        ..TurnState::default()
                    });
                    turns.len() - 1
                });
                let turn = &mut turns[position];
                turn.first_at.get_or_insert(event.at);
                turn.last_at = Some(event.at);
                match &event.body {
                    EventBody::TurnCompleted(done) => {
                        turn.outcome = Some(TurnEnd::Completed {
                            reply: done.reply.clone(),
                            duration_ms: done.duration_ms,
                            usage: done.usage,
                        });
                    }
                    EventBody::TurnFailed(failed) => {
                        turn.outcome = Some(TurnEnd::Failed {
                            message: failed.message.clone(),
                        });
                    }
                    EventBody::MessageCompleted(message) => {
                        turn.last_text = message.text.clone();
                    }
                    _ => {}
                }
            }
            match &event.body {
                EventBody::ActionsRequested(requested) => {
                    for call in &requested.calls {
                        call_by_id.insert(call.call_id.clone(), tool_calls.len());
                        tool_calls.push(ToolCallRecord {
                            call_id: call.call_id.clone(),
                            tool: call.tool.clone(),
                            input: call.input.clone(),
                            output: Value::Null,
                            is_error: false,
                            duration_ms: 0,
                            subagent: call.subagent.clone(),
                        });
                    }
                }
                EventBody::ActionResult(result) => {
                    if let Some(&position) = call_by_id.get(&result.call_id) {
                        let record = &mut tool_calls[position];
                        record.output = match (&result.output, &result.error) {
                            (Some(output), _) => output.clone(),
                            (None, Some(error)) => Value::String(error.clone()),
                            (None, None) => Value::Null,
                        };
                        record.is_error = result.is_error;
                        record.duration_ms = result.duration_ms;
                    }
                }
                EventBody::SessionFailed(failed) => session_failure = Some(failed.message.clone()),
                EventBody::ContextCompacted(compacted) => compactions.push(CompactionPoint {
                    turn_id: event.turn_id.clone(),
                    index: event.index,
                    up_to_index: compacted.up_to_index,
                    tokens_before: compacted.tokens_before,
                    tokens_after: compacted.tokens_after,
                }),
                _ => {}
            }
        }

        let turns: Vec<(TurnSummary, Option<String>)> = turns
            .into_iter()
            .map(|turn| {
                // Whole milliseconds, as the log stores them: events held in memory (sub-ms
                // precision) and the same events read back from disk give the same result.
                let elapsed = match (turn.first_at, turn.last_at) {
                    (Some(first), Some(last)) => {
                        u64::try_from(last.timestamp_millis() - first.timestamp_millis())
                            .unwrap_or(0)
                    }
                    _ => 0,
                };
                let (ok, reply, duration_ms, usage, error) = match turn.outcome {
                    Some(TurnEnd::Completed {
                        reply,
                        duration_ms,
                        usage,
                    }) => (true, reply, duration_ms, usage, None),
                    Some(TurnEnd::Failed { message }) => {
                        (false, turn.last_text, elapsed, None, Some(message))
                    }
                    None => (
                        false,
                        turn.last_text,
                        elapsed,
                        None,
                        Some(UNFINISHED_TURN.to_string()),
                    ),
                };
                let summary = TurnSummary {
                    turn_id: turn.turn_id,
                    ok,
                    reply,
                    duration_ms,
                    usage,
                };
                (summary, error)
            })
            .collect();

        let last_error = match turns.last() {
            Some((_, error)) => error.clone(),
            None => Some(NO_TURNS.to_string()),
        };
        let error = session_failure.or(last_error);
        let reply = turns
            .last()
            .map(|(summary, _)| summary.reply.clone())
            .unwrap_or_default();
        let usage = Usage::sum_reported(turns.iter().map(|(summary, _)| summary.usage));
        RunResult {
            session_id,
            ok: error.is_none(),
            reply,
            turns: turns.into_iter().map(|(summary, _)| summary).collect(),
            tool_calls,
            usage,
            error,
            compactions,
        }
    }
}
