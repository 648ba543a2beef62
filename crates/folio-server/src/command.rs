//! What a session's actor is asked to do: [`Command`]s, each with its reply channel, and the
//! [`Pending`] messages that start turns.

use std::collections::BTreeMap;

use folio_protocol::{ActionApprovalResolved, Admission, ToolCallResult};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::error::ManagerError;

/// A message admitted to a session, with the workspace files its turn writes first.
pub(crate) struct Pending {
    pub(crate) text: String,
    pub(crate) files: BTreeMap<String, String>,
}

impl Pending {
    /// Joins messages (arrival order) into one: texts separated by a blank line, later files
    /// replacing earlier ones; returns it with how many were joined.
    pub(crate) fn join(messages: Vec<Pending>) -> (Pending, u32) {
        let count = messages.len() as u32;
        let mut texts = Vec::new();
        let mut files = BTreeMap::new();
        for message in messages {
            texts.push(message.text);
            files.extend(message.files);
        }
        (
            Pending {
                text: texts.join("\n\n"),
                files,
            },
            count,
        )
    }
}

/// Commands a session's actor receives.
pub(crate) enum Command {
    Send {
        message: Pending,
        admission: Option<Admission>,
        reply: oneshot::Sender<Result<(), ManagerError>>,
    },
    Stop {
        reply: oneshot::Sender<()>,
    },
    Tool {
        name: String,
        input: Value,
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
