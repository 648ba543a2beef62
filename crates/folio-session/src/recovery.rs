//! What a takeover does with a session whose owner died (a server whose lease expired, or the
//! process that had the state root before: see [`folio_store_disk::DiskStore::open`]): the
//! open turn is recorded as `server restarted`, queued messages run and the metadata is
//! repaired from the log; a turn parked on an approval stays parked (one whose approval has a
//! deadline resumes to wait for it, so the deadline holds across restarts). A turn that waited for an
//! MCP server's question or an MCP authorization (held in the dead process's memory: the MCP
//! call that asked, the PKCE verifier) gets them answered as abandoned in its log and resumes:
//! the question's call fails saying to call again, the authorization's call runs again and
//! asks anew. The session's actor does it ([`Command::Recover`](crate::command::Command)).

use folio_agent::TurnOutcome;
use folio_agent::{pending_approvals, restart_answers};
use folio_protocol::{Event, EventBody};
use folio_store::boundary_status;

/// What a takeover does with a session's log.
pub(crate) enum Restart {
    /// No turn is open; how the last one ended, when one did.
    Closed(Option<TurnOutcome>),
    /// The open turn waits for an approval: it stays parked.
    Parked,
    /// The open turn waits for an approval with a deadline (`expiresAt`): it resumes, waiting
    /// for the decision until the recorded deadline (at once denied when that has passed).
    Expiring(String),
    /// The open turn waited for what the dead process held in memory (an MCP question or
    /// authorization): these answers (abandoned) are recorded and the turn resumes.
    Answer(String, Vec<EventBody>),
    /// The open turn was running: it is recorded as failed (`server restarted`).
    Failed(String),
}

/// What a takeover does with the session whose log is `events`.
pub(crate) fn restart_of(events: &[Event]) -> Restart {
    let Some(turn_id) = open_turn(events) else {
        return Restart::Closed(last_outcome(events));
    };
    let pending = pending_approvals(events, &turn_id);
    if !pending.is_empty() {
        let expiring = events.iter().any(|event| {
            matches!(&event.body, EventBody::ActionApprovalRequested(requested)
                if requested.expires_at.is_some() && pending.contains(&requested.call_id))
        });
        return if expiring {
            Restart::Expiring(turn_id)
        } else {
            Restart::Parked
        };
    }
    let answers = restart_answers(events, &turn_id);
    if answers.is_empty() {
        Restart::Failed(turn_id)
    } else {
        Restart::Answer(turn_id, answers)
    }
}

/// How the last finished turn ended, from its `turn.completed` / `turn.failed`.
fn last_outcome(events: &[Event]) -> Option<TurnOutcome> {
    events.iter().rev().find_map(|event| match &event.body {
        EventBody::TurnCompleted(done) => Some(TurnOutcome::Completed {
            reply: done.reply.clone(),
        }),
        EventBody::TurnFailed(failed) => Some(TurnOutcome::Failed {
            message: failed.message.clone(),
        }),
        _ => None,
    })
}

/// Whether the log records the end of its last turn (`session.waiting`, `completed` or
/// `failed` after its last message): events appended between turns (a reminder set, a
/// channel's delivery record) end nothing and leave nothing to end. A log with no turn is
/// ended.
pub(crate) fn turn_ended(events: &[Event]) -> bool {
    let last_message = events
        .iter()
        .rposition(|event| matches!(event.body, EventBody::MessageReceived(_)));
    let last_end = events
        .iter()
        .rposition(|event| boundary_status(&event.body).is_some());
    match (last_message, last_end) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(message), Some(end)) => end > message,
    }
}

/// The turn of the last `message.received` when it has no `turn.completed`/`turn.failed`.
pub(crate) fn open_turn(events: &[Event]) -> Option<String> {
    let mut open = None;
    for event in events {
        match &event.body {
            EventBody::MessageReceived(_) => open = event.turn_id.clone(),
            EventBody::TurnCompleted(_) | EventBody::TurnFailed(_) if event.turn_id == open => {
                open = None;
            }
            _ => {}
        }
    }
    open
}
