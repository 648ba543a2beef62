//! What one step's turn did, read from the session's events.

use folio_protocol::{Event, EventBody, RunResult, StepObservation};

/// The observation of turn `turn_id` of a session's `events`, which answered `message`. Files, judge
/// verdicts and the `result` are added by the runner.
pub fn observe(events: &[Event], turn_id: &str, message: &str) -> StepObservation {
    let result = RunResult::of_turn(events, turn_id);
    let turn = || {
        events
            .iter()
            .filter(move |event| event.turn_id.as_deref() == Some(turn_id))
    };
    let model_steps = turn()
        .filter(|event| matches!(event.body, EventBody::StepCompleted(_)))
        .count() as u32;
    let approvals_requested = turn()
        .filter_map(|event| match &event.body {
            EventBody::ActionApprovalRequested(requested) => Some(requested.tool.clone()),
            _ => None,
        })
        .collect();
    let summary = result.turns.first();
    StepObservation {
        message: message.to_string(),
        succeeded: result.ok,
        reply: result.reply,
        error: result.error,
        tool_calls: result.tool_calls,
        approvals_requested,
        model_steps,
        duration_ms: summary.map_or(0, |turn| turn.duration_ms),
        usage: result.usage,
        result: None,
        files: Default::default(),
        verdicts: Default::default(),
    }
}

/// The turn a step started: the turn of the first `message.received` at or after `from`.
pub fn turn_started_after(events: &[Event], from: u64) -> Option<String> {
    events
        .iter()
        .filter(|event| event.index >= from)
        .find(|event| matches!(event.body, EventBody::MessageReceived(_)))
        .and_then(|event| event.turn_id.clone())
}
