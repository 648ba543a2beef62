//! Where the step loop records: a root turn's events go to the session's log; a subagent's
//! stay in its own conversation, and only its tool calls (tagged, call ids scoped) reach the log.

use folio_protocol::{ActionResult, ActionsRequested, EventBody, RequestedCall};

use super::trace::LogRange;
use crate::sink::EventSink;

/// Whose step loop runs: the root turn, or a subagent inside the parent's `Task` call.
#[derive(Clone, Copy)]
pub(super) enum Scope<'a> {
    /// Every event is appended to the session's log and is the turn's conversation.
    Root,
    /// The events are the subagent's own conversation, kept in memory; only its tool calls and
    /// their results are appended to the log.
    Subagent {
        /// The subagent's id, the tag of its calls in the log.
        id: &'a str,
        /// The parent's `Task` call id, which scopes the subagent's call ids in the log.
        task_call_id: &'a str,
    },
}

impl Scope<'_> {
    /// The id the log and the tool see for the model's call `id`: a subagent's call ids are
    /// scoped by the parent's `Task` call, so they never collide with the parent's own calls.
    pub(super) fn logged_call_id(&self, id: &str) -> String {
        match self {
            Scope::Root => id.to_string(),
            Scope::Subagent { task_call_id, .. } => format!("{task_call_id}/{id}"),
        }
    }

    /// What a subagent's event appends to the log: its tool calls, tagged and scoped, and their
    /// results; its steps and messages stay in its own conversation.
    pub(super) fn logged_by_subagent(&self, body: &EventBody) -> Option<EventBody> {
        let Scope::Subagent { id, .. } = self else {
            return None;
        };
        match body {
            EventBody::ActionsRequested(requested) => {
                Some(EventBody::ActionsRequested(ActionsRequested {
                    calls: requested
                        .calls
                        .iter()
                        .map(|call| RequestedCall {
                            call_id: self.logged_call_id(&call.call_id),
                            subagent: Some(id.to_string()),
                            ..call.clone()
                        })
                        .collect(),
                }))
            }
            EventBody::ActionResult(result) => Some(EventBody::ActionResult(ActionResult {
                call_id: self.logged_call_id(&result.call_id),
                ..result.clone()
            })),
            _ => None,
        }
    }
}

/// Where a step loop records: the session's sink, and whose loop it is.
#[derive(Clone, Copy)]
pub(super) struct Recorder<'a> {
    /// The session's log.
    pub(super) sink: &'a dyn EventSink,
    /// Whose loop records.
    pub(super) scope: Scope<'a>,
    /// The log indexes this loop appended (for its spans' event-index ranges).
    pub(super) range: &'a LogRange,
}
