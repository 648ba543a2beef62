//! Time travel for the playground: forking a session at one of its messages, and handing the
//! owner of a session a fresh continuation token (reopening a past run in a browser that never
//! saw its token).

use std::collections::BTreeMap;

use folio_protocol::{EventBody, ForkOrigin, ForkSession, SessionMode};

use crate::cluster::Remote;
use crate::command::{Admit, Command, Pending};
use crate::error::ManagerError;
use crate::live::lock;
use crate::manager::{Accepted, NewSession, SessionManager};
use crate::state::{SessionOptions, new_session_id};
use crate::token;

impl SessionManager {
    /// Forks `session_id` (owner only): a new session of `principal` whose log starts with a
    /// copy of the original's events before `atIndex` (a `message.received`), records
    /// `forkedFrom` on its `session.started`, and runs `message` as its next turn. Messages
    /// the original queued (coalesce) before that point are not copied: the message at
    /// `atIndex` drained them, and the fork replaces it. The workspace starts empty.
    pub async fn fork(
        &self,
        principal: &str,
        session_id: &str,
        request: ForkSession,
    ) -> Result<Accepted, ManagerError> {
        let original = self.owned_meta(principal, session_id).await?;
        let events = self.events(principal, session_id).await?;
        let at = request.at_index;
        match events.get(at as usize).map(|e| &e.body) {
            Some(EventBody::MessageReceived(_)) => {}
            Some(other) => {
                return Err(ManagerError::Invalid(format!(
                    "atIndex {at} is a {} event: fork at the index of a message.received event",
                    other.event_type()
                )));
            }
            None => {
                return Err(ManagerError::Invalid(format!(
                    "atIndex {at} is past the end of session {session_id} ({} events)",
                    events.len()
                )));
            }
        }
        let (mode, title) = match events.first().map(|e| &e.body) {
            Some(EventBody::SessionStarted(started)) => (started.mode, started.title.clone()),
            _ => (SessionMode::Chat, None),
        };
        let copied: Vec<_> = events[..at as usize]
            .iter()
            .skip(1)
            .filter(|e| !matches!(e.body, EventBody::MessageQueued(_)))
            .cloned()
            .collect();
        let fork_id = new_session_id();
        let token = token::new_token();
        let live = self
            .open_new(
                NewSession {
                    session_id: &fork_id,
                    token: &token,
                    principal,
                    channel: "http",
                    mode,
                    title: request.title.or(title),
                    forked_from: Some(ForkOrigin {
                        session_id: session_id.to_string(),
                        at_index: at,
                    }),
                    // An eval case's or a dry run's fork stays one.
                    options: SessionOptions {
                        purpose: original.purpose,
                        dry_run: original.dry_run,
                        peer_depth: original.peer_depth,
                        continuation_key: original.continuation_key,
                    },
                },
                &copied,
            )
            .await?;
        let admit = Admit {
            message: Pending {
                text: request.message,
                files: BTreeMap::new(),
                trace_parent: folio_telemetry::incoming_traceparent(),
            },
            admission: None,
            token: None,
            key: None,
            digest: None,
        };
        self.command(&live, &Remote::Busy, |reply| Command::Send { admit, reply })
            .await??;
        Ok(Accepted {
            session_id: fork_id,
            continuation_token: token,
            events: live.appended_since(None),
        })
    }

    /// A new continuation token for the owner of a chat session (`POST /v1/session/:id/token`):
    /// only hashes are stored, so a page reopening a past run cannot read the current token;
    /// its owner gets a fresh one instead, and the token handed out before goes stale.
    pub async fn issue_token(
        &self,
        principal: &str,
        session_id: &str,
    ) -> Result<Accepted, ManagerError> {
        let live = self.owned(principal, session_id).await?;
        if lock(&live.meta).mode == SessionMode::Task {
            return Err(ManagerError::NotFollowable(session_id.to_string()));
        }
        let token = token::new_token();
        let hash = token::hash_token(&token);
        // The session's actor changes its metadata (on a shared store: the owner's, after any
        // turn running elsewhere ended, so no later write of the owner undoes this one).
        self.command(&live, &Remote::Wait, |reply| Command::IssueToken {
            hash,
            reply,
        })
        .await??;
        Ok(Accepted {
            session_id: session_id.to_string(),
            continuation_token: token,
            events: None,
        })
    }
}
