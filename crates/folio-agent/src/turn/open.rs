//! What a turn left open: the calls of its last `actions.requested` without a result, and
//! their recorded approvals (a resumed turn runs them; the server lists pending approvals).

use std::collections::HashMap;

use folio_protocol::{
    ActionApprovalResolved, ActionAuthorizationResolved, ActionResult, ApprovalDecision, Event,
    EventBody,
};

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

/// The reason recorded on an MCP server's question a restart abandoned.
const QUESTION_ABANDONED: &str =
    "server restarted: the MCP call that asked this question ended with the old process";

/// The error recorded for the tool call whose question a restart abandoned.
const CALL_ABANDONED: &str = "the server restarted while this call waited for an answer to its MCP server's question, and the call ended with the old process; call the tool again to be asked again";

/// The reason recorded on an MCP authorization a restart abandoned.
const AUTHORIZATION_ABANDONED: &str =
    "server restarted: the login it waited for belonged to the old process; the call asks again";

/// The events that answer what turn `turn_id` waited for in the memory of a process that died:
/// an MCP server's question (the call that asked it ended with the process, so it is recorded
/// `cancel`led and its call failed, saying to call again) and an MCP authorization (its PKCE
/// verifier died too: recorded as not authorized; the call, never sent, asks again when the
/// turn resumes). Empty when the turn waits for nothing of the kind.
pub fn restart_answers(events: &[Event], turn_id: &str) -> Vec<EventBody> {
    let open = open_calls(events, turn_id);
    let mut answers = Vec::new();
    let mut failed_calls = Vec::new();
    let mut authorizations: Vec<String> = Vec::new();
    for event in events {
        if event.turn_id.as_deref() != Some(turn_id) {
            continue;
        }
        match &event.body {
            EventBody::ActionApprovalRequested(requested)
                if requested.elicitation.is_some()
                    && matches!(open.approvals.get(&requested.call_id), Some(None)) =>
            {
                answers.push(EventBody::ActionApprovalResolved(ActionApprovalResolved {
                    call_id: requested.call_id.clone(),
                    decision: ApprovalDecision::Cancel,
                    reason: Some(QUESTION_ABANDONED.to_string()),
                    by: "folio".to_string(),
                    content: None,
                }));
                if let Some(call_id) = requested.input.get("callId").and_then(|id| id.as_str()) {
                    failed_calls.push(call_id.to_string());
                }
            }
            EventBody::ActionAuthorizationRequested(requested) => {
                authorizations.push(requested.call_id.clone());
            }
            EventBody::ActionAuthorizationResolved(resolved) => {
                authorizations.retain(|id| *id != resolved.call_id);
            }
            _ => {}
        }
    }
    for call in open
        .calls
        .iter()
        .filter(|call| failed_calls.contains(&call.id))
    {
        answers.push(EventBody::ActionResult(ActionResult {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            output: None,
            error: Some(CALL_ABANDONED.to_string()),
            is_error: true,
            duration_ms: 0,
        }));
    }
    answers.extend(authorizations.into_iter().map(|call_id| {
        EventBody::ActionAuthorizationResolved(ActionAuthorizationResolved {
            call_id,
            authorized: false,
            reason: Some(AUTHORIZATION_ABANDONED.to_string()),
        })
    }));
    answers
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
                expires_at: None,
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

    /// A question and an authorization left waiting by a dead process are answered: the
    /// question cancelled with its call failed, the authorization not granted (its call stays
    /// open, to run again); a question already answered is left alone.
    #[test]
    fn a_restart_answers_what_the_dead_process_waited_for() {
        use folio_protocol::{ActionAuthorizationRequested, Elicitation};
        let question = |id: &str, call: &str| {
            EventBody::ActionApprovalRequested(ActionApprovalRequested {
                call_id: id.into(),
                tool: "mcp__s__ask".into(),
                input: json!({"callId": call}),
                expires_at: None,
                elicitation: Some(Elicitation {
                    server: "s".into(),
                    message: "name?".into(),
                    requested_schema: json!({"type": "object"}),
                }),
            })
        };
        let events: Vec<Event> = [
            EventBody::StepStarted(StepStarted { step: 1 }),
            EventBody::ActionsRequested(ActionsRequested {
                calls: vec![
                    call("c1", "mcp__s__ask", None),
                    call("c2", "mcp__s__ask", None),
                    call("c3", "mcp__s__docs", None),
                ],
            }),
            question("eli_1", "c1"),
            EventBody::ActionApprovalResolved(ActionApprovalResolved {
                call_id: "eli_1".into(),
                decision: ApprovalDecision::Decline,
                reason: None,
                by: "local".into(),
                content: None,
            }),
            result("c1", "mcp__s__ask"),
            question("eli_2", "c2"),
            EventBody::ActionAuthorizationRequested(ActionAuthorizationRequested {
                call_id: "auth_1".into(),
                tool: "mcp__s__docs".into(),
                server: "s".into(),
                url: "https://as/authorize?state=x".into(),
            }),
        ]
        .into_iter()
        .enumerate()
        .map(|(index, body)| event(index as u64, body))
        .collect();
        let answers = restart_answers(&events, "turn_1");
        let types: Vec<&str> = answers.iter().map(EventBody::event_type).collect();
        assert_eq!(
            types,
            [
                "action.approval_resolved",
                "action.result",
                "action.authorization_resolved"
            ]
        );
        assert!(matches!(&answers[0], EventBody::ActionApprovalResolved(r)
            if r.call_id == "eli_2" && r.decision == ApprovalDecision::Cancel));
        assert!(matches!(&answers[1], EventBody::ActionResult(r)
            if r.call_id == "c2" && r.is_error && r.error.as_deref() == Some(CALL_ABANDONED)));
        assert!(
            matches!(&answers[2], EventBody::ActionAuthorizationResolved(r)
            if r.call_id == "auth_1" && !r.authorized)
        );
        assert!(restart_answers(&events[..5], "turn_1").is_empty());
    }
}
