//! Every event a session appends as an OTLP log record (the logs signal, when a logs exporter is
//! installed), in the span it is appended in: a turn's events in the turn's span or the model
//! call's or tool call's inside it, so a backend shows them on the turn's trace.

use folio_protocol::{ApprovalDecision, ChannelDeliveryOutcome, Event, EventBody};
use tracing::Level;

/// Exports `event` as a log record in the current span; nothing (and no allocation) without a
/// logs exporter.
pub(crate) fn export(event: &Event) {
    folio_telemetry::session_event(folio_telemetry::SessionEvent {
        event_type: event.event_type(),
        index: event.index,
        session_id: &event.session_id,
        turn_id: event.turn_id.as_deref(),
        at: event.at.into(),
        level: severity(&event.body),
    });
}

/// How severe an event is: WARN for a failure or a refusal (a failed turn, session or tool call,
/// a denied approval or authorization), ERROR for an answer lost on its way back to a channel,
/// INFO otherwise.
fn severity(body: &EventBody) -> Level {
    match body {
        EventBody::TurnFailed(_) | EventBody::SessionFailed(_) => Level::WARN,
        EventBody::ActionResult(result) if result.is_error => Level::WARN,
        EventBody::ActionApprovalResolved(resolved) => match resolved.decision {
            ApprovalDecision::Deny | ApprovalDecision::Decline => Level::WARN,
            ApprovalDecision::Approve | ApprovalDecision::Accept | ApprovalDecision::Cancel => {
                Level::INFO
            }
        },
        EventBody::ActionAuthorizationResolved(resolved) if !resolved.authorized => Level::WARN,
        EventBody::ChannelDelivery(delivery) => match delivery.outcome {
            ChannelDeliveryOutcome::ReplyFailed => Level::ERROR,
            ChannelDeliveryOutcome::Received | ChannelDeliveryOutcome::Replied => Level::INFO,
        },
        EventBody::SessionStarted(_)
        | EventBody::AbAssigned(_)
        | EventBody::SessionWaiting(_)
        | EventBody::SessionCompleted(_)
        | EventBody::AgentBound(_)
        | EventBody::MessageReceived(_)
        | EventBody::MessageQueued(_)
        | EventBody::TurnQueued(_)
        | EventBody::TurnStarted(_)
        | EventBody::TurnCompleted(_)
        | EventBody::StepStarted(_)
        | EventBody::StepCompleted(_)
        | EventBody::ReasoningAppended(_)
        | EventBody::ReasoningCompleted(_)
        | EventBody::MessageAppended(_)
        | EventBody::MessageCompleted(_)
        | EventBody::ActionsRequested(_)
        | EventBody::ActionResult(_)
        | EventBody::ActionApprovalRequested(_)
        | EventBody::ActionAuthorizationRequested(_)
        | EventBody::ActionAuthorizationResolved(_)
        | EventBody::ActionHostCall(_)
        | EventBody::SubagentCalled(_)
        | EventBody::SubagentCompleted(_)
        | EventBody::ArtifactTagged(_)
        | EventBody::ContextCompacted(_)
        | EventBody::ReminderSet(_)
        | EventBody::ReminderFired(_)
        | EventBody::ReminderCancelled(_) => Level::INFO,
    }
}

#[cfg(test)]
mod tests {
    use folio_protocol::{
        ActionApprovalResolved, ActionResult, ChannelDelivery, SessionWaiting, TurnFailed,
    };

    use super::*;

    #[test]
    fn failures_and_refusals_warn_a_lost_answer_is_an_error() {
        let result = |is_error| {
            EventBody::ActionResult(ActionResult {
                call_id: "c".into(),
                tool: "Read".into(),
                output: None,
                error: None,
                is_error,
                duration_ms: 1,
            })
        };
        let resolved = |decision| {
            EventBody::ActionApprovalResolved(ActionApprovalResolved {
                call_id: "c".into(),
                decision,
                reason: None,
                by: "alice".into(),
                content: None,
            })
        };
        let delivery = |outcome| {
            EventBody::ChannelDelivery(ChannelDelivery {
                channel: "hook".into(),
                outcome,
                delivery_id: None,
                route: None,
                message: None,
            })
        };
        let levels: Vec<Level> = [
            EventBody::SessionWaiting(SessionWaiting {}),
            EventBody::TurnFailed(TurnFailed {
                message: "turn interrupted".into(),
            }),
            result(false),
            result(true),
            resolved(ApprovalDecision::Approve),
            resolved(ApprovalDecision::Deny),
            delivery(ChannelDeliveryOutcome::Replied),
            delivery(ChannelDeliveryOutcome::ReplyFailed),
        ]
        .iter()
        .map(severity)
        .collect();
        assert_eq!(
            levels,
            [
                Level::INFO,
                Level::WARN,
                Level::INFO,
                Level::WARN,
                Level::INFO,
                Level::WARN,
                Level::INFO,
                Level::ERROR,
            ]
        );
    }
}
