//! What a turn left open: the calls of its last `actions.requested` without a result, and
//! their recorded approvals (a resumed turn runs them; the server lists pending approvals).

use std::collections::HashMap;

use folio_protocol::{ActionApprovalResolved, Event, EventBody};

/// The unanswered calls of a turn's last `actions.requested`, with what is recorded about them.
pub(super) struct OpenCalls {
    /// The last step the turn started.
    pub(super) step: u32,
    /// Calls without an `action.result`, in order.
    pub(super) calls: Vec<folio_model::ToolCall>,
    /// Calls whose approval was requested → the recorded decision, if any.
    pub(super) approvals: HashMap<String, Option<ActionApprovalResolved>>,
}

/// What turn `turn_id` left open in `events`.
pub(super) fn open_calls(events: &[Event], turn_id: &str) -> OpenCalls {
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
            // A subagent's calls run inside the parent's `Task` call, never on their own.
            EventBody::ActionsRequested(requested)
                if requested.calls.iter().all(|c| c.subagent.is_none()) =>
            {
                open.calls = requested
                    .calls
                    .iter()
                    .map(folio_model::ToolCall::from)
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

#[cfg(test)]
mod tests {
    use super::*;
    use folio_protocol::{
        ActionApprovalRequested, ActionResult, ActionsRequested, RequestedCall, StepStarted,
    };
    use serde_json::json;

    fn event(index: u64, body: EventBody) -> Event {
        Event {
            index,
            session_id: "ses_test".into(),
            turn_id: Some("turn_1".into()),
            at: chrono::Utc::now(),
            body,
        }
    }

    fn call(call_id: &str, tool: &str, subagent: Option<&str>) -> RequestedCall {
        RequestedCall {
            call_id: call_id.into(),
            tool: tool.into(),
            input: json!({}),
            subagent: subagent.map(str::to_string),
        }
    }

    fn result(call_id: &str, tool: &str) -> EventBody {
        EventBody::ActionResult(ActionResult {
            call_id: call_id.into(),
            tool: tool.into(),
            output: Some(json!("ok")),
            error: None,
            is_error: false,
            duration_ms: 1,
        })
    }

    /// A `Task` call ran a subagent (whose calls the log records after the parent's
    /// `actions.requested`), then the parent's next call parked: the parked call is still open.
    #[test]
    fn a_parked_call_after_a_subagent_run_stays_open() {
        let events: Vec<Event> = [
            EventBody::StepStarted(StepStarted { step: 2 }),
            EventBody::ActionsRequested(ActionsRequested {
                calls: vec![call("c1", "Task", None), call("c2", "post", None)],
            }),
            EventBody::ActionsRequested(ActionsRequested {
                calls: vec![call("c1/s1", "Read", Some("researcher"))],
            }),
            result("c1/s1", "Read"),
            result("c1", "Task"),
            EventBody::ActionApprovalRequested(ActionApprovalRequested {
                call_id: "c2".into(),
                tool: "post".into(),
                input: json!({}),
                elicitation: None,
            }),
        ]
        .into_iter()
        .enumerate()
        .map(|(index, body)| event(index as u64, body))
        .collect();
        assert_eq!(pending_approvals(&events, "turn_1"), ["c2"]);
        let open = open_calls(&events, "turn_1");
        assert_eq!(open.step, 2);
        assert_eq!(
            open.calls,
            [folio_model::ToolCall {
                id: "c2".into(),
                name: "post".into(),
                input: json!({}),
            }]
        );
    }
}
