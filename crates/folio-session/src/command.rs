//! What a session's actor is asked to do: [`Command`]s, each with its reply channel, and the
//! [`Pending`] messages that start turns.

use std::collections::BTreeMap;

use folio_protocol::{ActionApprovalResolved, Admission, Event, EventBody, ToolCallResult};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::error::ManagerError;
use crate::prepare::WorkspacePrep;
use crate::turn_slots::TurnTicket;

/// What shows in a session's log once something was done (by this server's actor or by the
/// server owning the session's turn): a check over the events.
pub(crate) type Done = Box<dyn Fn(&[Event]) -> bool + Send + Sync>;

/// A message admitted to a session, with the workspace files its turn writes first.
pub(crate) struct Pending {
    pub(crate) text: String,
    pub(crate) files: BTreeMap<String, String>,
    /// The W3C `traceparent` of the request that brought it, which parents its turn.
    pub(crate) trace_parent: Option<String>,
    /// Work done in the host workspace before its turn (a channel's checkout).
    pub(crate) prepare: Option<WorkspacePrep>,
}

impl Pending {
    /// Joins messages (arrival order) into one: texts separated by a blank line, later files
    /// replacing earlier ones; returns it with how many were joined.
    pub(crate) fn join(messages: Vec<Pending>) -> (Pending, u32) {
        let count = messages.len() as u32;
        let mut texts = Vec::new();
        let mut files = BTreeMap::new();
        let mut trace_parent = None;
        let mut prepare = None;
        for message in messages {
            texts.push(message.text);
            files.extend(message.files);
            // The latest request that carried a trace context parents the joined turn.
            trace_parent = message.trace_parent.or(trace_parent);
            // The latest preparation stands for the joined turn (it checks out the newest head).
            prepare = message.prepare.or(prepare);
        }
        (
            Pending {
                text: texts.join("\n\n"),
                files,
                trace_parent,
                prepare,
            },
            count,
        )
    }
}

/// The messages queued by `coalesce` (`message.queued`) that no turn drained yet and no end of
/// a turn cleared (`session.waiting`/`completed`/`failed`): what a restart still has to run.
pub(crate) fn queued_messages(events: &[Event]) -> Vec<Pending> {
    let mut queued = Vec::new();
    for event in events {
        match &event.body {
            EventBody::MessageQueued(message) => queued.push(Pending {
                text: message.text.clone(),
                files: message.workspace_files.clone(),
                trace_parent: None,
                prepare: None,
            }),
            EventBody::MessageReceived(_)
            | EventBody::SessionWaiting(_)
            | EventBody::SessionCompleted(_)
            | EventBody::SessionFailed(_) => queued.clear(),
            _ => {}
        }
    }
    queued
}

/// A message asking to be admitted to a session.
pub(crate) struct Admit {
    pub(crate) message: Pending,
    pub(crate) admission: Option<Admission>,
    /// The continuation token presented (HTTP follow-ups): checked, and rotated on acceptance.
    pub(crate) token: Option<String>,
    /// The idempotency key: a message with a recorded key is not admitted twice.
    pub(crate) key: Option<String>,
    /// The keyed request's digest ([`crate::token::request_digest`]): a recorded key with
    /// another digest is refused (`idempotency_key_reused`).
    pub(crate) digest: Option<String>,
    /// The caller's place among the admitted turns ([`crate::turn_slots::TurnSlots::admit`]); `None`: a message
    /// that runs whatever the load (its turn takes an unrefused ticket).
    pub(crate) ticket: Option<TurnTicket>,
}

/// Commands a session's actor receives.
pub(crate) enum Command {
    /// Admits a message; answers the rotated token when one was presented.
    Send {
        admit: Admit,
        reply: oneshot::Sender<Result<Option<String>, ManagerError>>,
    },
    /// Takes over a turn whose owner died (a server whose lease expired, or the process that
    /// had the state root before): records it as `server restarted` unless parked on an
    /// approval, resumes one that waited for what the dead process held in memory, runs what
    /// was queued, and repairs the metadata from the log; answers once that is done.
    Recover {
        reply: oneshot::Sender<()>,
    },
    /// Appends one event and commits it (a channel's delivery record, a reminder's events on
    /// a shared store, where only the owner writes the log).
    Record {
        turn_id: Option<String>,
        body: EventBody,
        /// Not appended when this holds for the log (an event recorded once).
        unless: Option<Done>,
        reply: oneshot::Sender<Result<(), ManagerError>>,
    },
    /// Replaces the continuation token (its hash) durably.
    IssueToken {
        hash: String,
        reply: oneshot::Sender<Result<(), ManagerError>>,
    },
    Stop {
        reply: oneshot::Sender<()>,
    },
    Tool {
        name: String,
        input: Value,
        /// The W3C `traceparent` of the request, which parents the call's span.
        trace_parent: Option<String>,
        reply: oneshot::Sender<Result<ToolCallResult, ManagerError>>,
    },
    Resolve {
        resolved: ActionApprovalResolved,
        reply: oneshot::Sender<Result<(), ManagerError>>,
    },
    Close {
        delete: bool,
        reply: oneshot::Sender<()>,
    },
}
