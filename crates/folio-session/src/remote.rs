//! What a command does when another server owns the session's turn ([`Remote`]), and the
//! signals that carry it to that server (on a store several servers share; see the `cluster`
//! module). A server alone always owns its sessions' turns, so there these are never used.

use std::time::Duration;

use folio_protocol::EventBody;

use crate::command::Done;
use crate::error::ManagerError;

/// How long a command for another server's turn waits for that server (the stop to land, the
/// turn to end) before it fails, saying so.
pub(crate) const REMOTE_PATIENCE: Duration = Duration::from_secs(120);

/// How often a command for another server's turn checks the lease again.
pub(crate) const REMOTE_POLL: Duration = Duration::from_millis(50);

/// The signal asking the owner to stop the session's turn.
pub(crate) const STOP_SIGNAL: &str = "stop";
/// The prefix of the signal carrying an approval decision (JSON after the prefix).
pub(crate) const RESOLVE_SIGNAL: &str = "resolve ";
/// The prefix of the signal relaying a coalesced message to the owner (JSON after it).
pub(crate) const RELAY_SIGNAL: &str = "relay ";
/// The longest message a signal carries (PostgreSQL's `NOTIFY` payloads stay under 8,000
/// bytes); a coalesced message too large to relay waits for the owner's turn to end instead.
pub(crate) const MAX_SIGNAL: usize = 7_000;

/// A coalesced follow-up relayed to the server running the session's turn, which queues it
/// into that turn as if it had arrived there.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Relayed {
    pub(crate) text: String,
    pub(crate) workspace_files: std::collections::BTreeMap<String, String>,
    /// The continuation token presented.
    pub(crate) token: String,
    /// The idempotency key: the client's, or `relay:<ULID>` (how the sender sees it recorded).
    pub(crate) key: String,
    pub(crate) digest: Option<String>,
}

/// What a command does when another server owns the session's turn.
pub(crate) enum Remote {
    /// Answers `session_busy`.
    Busy,
    /// Waits for the owner's turn to end, then runs here.
    Wait,
    /// Signals `message` to the owner until its lease is free, then runs here.
    Ask(String),
    /// Signals `message` to the owner until `done` holds for the log: then the command is
    /// done (on the owner).
    AskUntil(String, Done),
}

impl Remote {
    /// Stop the owner's turn first.
    pub(crate) fn stop() -> Self {
        Remote::Ask(STOP_SIGNAL.to_string())
    }

    /// Queue a coalesced message into the owner's running turn; `None` when it is too large
    /// for a signal.
    pub(crate) fn relay(message: &Relayed) -> Option<Self> {
        let json = serde_json::to_string(message).ok()?;
        if json.len() > MAX_SIGNAL {
            return None;
        }
        let key = message.key.clone();
        Some(Remote::AskUntil(
            format!("{RELAY_SIGNAL}{json}"),
            Box::new(move |events| crate::token::recorded(events, &key).is_some()),
        ))
    }

    /// Hand an approval decision to the owner's parked turn.
    pub(crate) fn resolve(
        resolved: &folio_protocol::ActionApprovalResolved,
    ) -> Result<Self, ManagerError> {
        let json = serde_json::to_string(resolved)
            .map_err(|err| ManagerError::internal_from("cannot encode the decision", err))?;
        let call_id = resolved.call_id.clone();
        Ok(Remote::AskUntil(
            format!("{RESOLVE_SIGNAL}{json}"),
            Box::new(move |events| {
                events.iter().any(|event| {
                    matches!(&event.body, EventBody::ActionApprovalResolved(r) if r.call_id == call_id)
                })
            }),
        ))
    }
}

/// Where a command runs.
pub(crate) enum Owner {
    /// This server owns the session: its actor runs here.
    Here,
    /// The owner did it ([`Remote::AskUntil`]).
    Done,
}
