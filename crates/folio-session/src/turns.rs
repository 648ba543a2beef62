//! The [`Turns`] handle: messages to an existing session (HTTP follow-ups with their
//! continuation token, in-process channels' messages without one), admitted by the session's
//! actor (preempt or coalesce), and stopping a session's turn.

use std::collections::BTreeMap;
use std::sync::Arc;

use folio_protocol::{Admission, FollowUp, SessionMode};

use crate::command::{Admit, Command, Pending};
use crate::engine::Engine;
use crate::error::ManagerError;
use crate::fault::FaultPoint;
use crate::live::Live;
use crate::prepare::WorkspacePrep;
use crate::quotas::Sending;
use crate::remote::{Owner, Remote};
use crate::sessions::{Accepted, check_send};
use crate::sync::lock;
use crate::token;

/// A message an in-process channel sends to an existing session ([`Turns::send_message`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChannelMessage {
    /// The message text.
    pub text: String,
    /// Files written into the session workspace before the turn (relative path → contents).
    pub workspace_files: BTreeMap<String, String>,
    /// What a busy session does with it (default preempt).
    pub admission: Option<Admission>,
    /// The idempotency key: a message with a recorded key is not admitted twice.
    pub key: Option<String>,
    /// Work done in the host workspace before the message's turn (a channel's checkout).
    pub prepare: Option<WorkspacePrep>,
}

/// Sends messages to sessions and stops their turns.
#[derive(Clone)]
pub struct Turns {
    pub(crate) engine: Arc<Engine>,
}

impl Turns {
    /// Sends a follow-up through the HTTP channel: checks the token, admits the message
    /// (preempt by default, or coalesce), records it durably, then rotates the token. With an
    /// idempotency key (`clientMessageId`), a retry of the same request gets the first answer
    /// and the key with another request is refused (`idempotency_key_reused`).
    pub async fn follow_up(
        &self,
        principal: &str,
        session_id: &str,
        request: FollowUp,
    ) -> Result<Accepted, ManagerError> {
        self.engine.life.refuse_when_closing()?;
        let digest = match &request.client_message_id {
            Some(key) => {
                token::check_key(key)?;
                // The token is not part of the request a retry repeats: it is checked apart.
                Some(token::request_digest(&FollowUp {
                    continuation_token: String::new(),
                    client_message_id: None,
                    ..request.clone()
                })?)
            }
            None => None,
        };
        let live = self.engine.owned(principal, session_id).await?;
        if lock(&live.meta).mode == SessionMode::Task {
            return Err(ManagerError::NotFollowable(session_id.to_string()));
        }
        check_send(
            &request.message,
            &request.workspace_files,
            &self.engine.agent.get().definition.limits,
        )?;
        let ticket = self.engine.admit_turn()?;
        self.engine
            .quotas
            .admit(&self.engine, principal, Sending::FollowUp(session_id))
            .await?;
        let coalesce = request.admission == Some(Admission::Coalesce);
        // A coalesced message may be relayed to the server running the turn; one without a key
        // gets one for the relay, so that its answer's token is known here and repeats are
        // harmless.
        let relay_key = match &request.client_message_id {
            None if coalesce => Some(format!("relay:{}", ulid::Ulid::generate())),
            _ => None,
        };
        let key = request.client_message_id.clone().or(relay_key.clone());
        let mut remote = remote_for(&live, request.admission, key.as_deref());
        if let (true, Remote::Wait, Some(key)) = (coalesce, &remote, &key) {
            let relayed = crate::remote::Relayed {
                text: request.message.clone(),
                workspace_files: request.workspace_files.clone(),
                token: request.continuation_token.clone(),
                key: key.clone(),
                digest: digest.clone(),
            };
            remote = Remote::relay(&relayed).unwrap_or(Remote::Wait);
        }
        let owner = self.engine.own(&live, &remote).await?;
        // Queued by the owner (seen in the log; or found there once the owner's turn ended and
        // this server took the session: a relay key is nobody else's).
        let relayed = matches!(owner, Owner::Done)
            || relay_key.as_ref().is_some_and(|key| {
                live.with_events(|events| token::recorded(events, key).is_some())
            });
        if let (true, Some(key)) = (relayed, &key) {
            self.engine.fault(FaultPoint::BeforeReply);
            return Ok(Accepted {
                session_id: session_id.to_string(),
                continuation_token: token::derived_token(&request.continuation_token, key),
                events: None,
            });
        }
        let admit = Admit {
            message: Pending {
                text: request.message,
                files: request.workspace_files,
                trace_parent: folio_telemetry::incoming_traceparent(),
                prepare: None,
            },
            admission: request.admission,
            token: Some(request.continuation_token),
            key: request.client_message_id,
            digest,
            ticket: Some(ticket),
        };
        let before = live.last_index();
        let token = self
            .engine
            .command(&live, &Remote::Busy, |reply| Command::Send { admit, reply })
            .await??
            .ok_or_else(|| {
                ManagerError::internal("the session accepted the message without a token")
            })?;
        self.engine.fault(FaultPoint::BeforeReply);
        Ok(Accepted {
            session_id: session_id.to_string(),
            continuation_token: token,
            events: live.appended_since(before),
        })
    }

    /// Sends a message to a session without a token (in-process channels and tests).
    pub async fn send(
        &self,
        principal: &str,
        session_id: &str,
        message: &str,
        admission: Option<Admission>,
    ) -> Result<(), ManagerError> {
        let message = ChannelMessage {
            text: message.to_string(),
            workspace_files: BTreeMap::new(),
            admission,
            key: None,
            prepare: None,
        };
        self.send_message(principal, session_id, message).await
    }

    /// Sends a message from an in-process channel (no token): its workspace files are written
    /// before the turn, and a message whose `key` is already recorded is not admitted again.
    pub async fn send_message(
        &self,
        principal: &str,
        session_id: &str,
        message: ChannelMessage,
    ) -> Result<(), ManagerError> {
        self.engine.life.refuse_when_closing()?;
        if let Some(key) = &message.key {
            token::check_key(key)?;
        }
        check_send(
            &message.text,
            &message.workspace_files,
            &self.engine.agent.get().definition.limits,
        )?;
        self.engine
            .quotas
            .admit(&self.engine, principal, Sending::FollowUp(session_id))
            .await?;
        let live = self.engine.owned(principal, session_id).await?;
        if lock(&live.meta).mode == SessionMode::Task {
            return Err(ManagerError::NotFollowable(session_id.to_string()));
        }
        let remote = remote_for(&live, message.admission, message.key.as_deref());
        let admit = Admit {
            message: Pending {
                text: message.text,
                files: message.workspace_files,
                trace_parent: folio_telemetry::incoming_traceparent(),
                prepare: message.prepare,
            },
            admission: message.admission,
            token: None,
            key: message.key,
            digest: None,
            ticket: None,
        };
        self.engine
            .command(&live, &remote, |reply| Command::Send { admit, reply })
            .await??;
        Ok(())
    }

    /// Cancels the running turn (`turn interrupted`) and clears queued messages; idle → no-op.
    pub async fn stop(&self, principal: &str, session_id: &str) -> Result<(), ManagerError> {
        let live = self.engine.owned(principal, session_id).await?;
        self.engine
            .command(&live, &Remote::stop(), |reply| Command::Stop { reply })
            .await
    }
}

/// What a message does when another server runs the session's turn, by its admission
/// (preempt: stop it first; coalesce: wait for its end, unless the caller relays it); a retry of a message whose key the log holds waits (it must not stop its own first turn).
fn remote_for(live: &Live, admission: Option<Admission>, key: Option<&str>) -> Remote {
    if key.is_some_and(|key| live.with_events(|events| token::recorded(events, key).is_some())) {
        return Remote::Wait;
    }
    match admission.unwrap_or(Admission::Preempt) {
        Admission::Coalesce => Remote::Wait,
        Admission::Preempt => Remote::stop(),
    }
}
