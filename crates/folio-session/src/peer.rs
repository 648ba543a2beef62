//! `ask`: one message to an agent, waiting for its turn's reply — the tool of `/v1/mcp` and
//! of a peer agent in the same server ([`PeerAgent`], called in-process), one implementation.

use folio_agent::peers::{PeerAgent, PeerError};
use folio_protocol::{Admission, AskArguments, AskResult, AskStatus, CreateSession, EventBody};

use tokio_util::sync::CancellationToken;

use crate::error::ManagerError;
use std::sync::Arc;

use crate::engine::Engine;
use crate::events::Events;
use crate::sessions::Sessions;
use crate::state::SessionOptions;
use crate::turns::Turns;

/// The channel of the sessions a peer agent in the same server opens.
const PEER_CHANNEL: &str = "peer";

/// Asks agents one message and waits for the reply (`/v1/mcp`'s tool, peer agents).
#[derive(Clone)]
pub struct Peers {
    pub(crate) engine: Arc<Engine>,
}

impl Peers {
    /// Sends `ask.message` as `principal` through `channel`: a new chat session (at depth
    /// `ask.peerDepth`), or a follow-up of `ask.sessionId` with preempt admission; waits for
    /// the turn to end and answers its reply. When `cancel` fires first (the asker's own turn
    /// was stopped or preempted, or an MCP client cancelled its `tools/call`), the turn it
    /// started is stopped too (`turn interrupted`), so no peer keeps working for nobody.
    pub async fn ask(
        &self,
        principal: &str,
        channel: &str,
        ask: AskArguments,
        cancel: &CancellationToken,
    ) -> Result<AskResult, ManagerError> {
        let engine = &self.engine;
        let sessions = Sessions {
            engine: engine.clone(),
        };
        let turns = Turns {
            engine: engine.clone(),
        };
        let events = Events {
            engine: engine.clone(),
        };
        let AskArguments {
            message,
            session_id,
            peer_depth,
        } = ask;
        let (id, start) = match session_id {
            None => {
                let options = SessionOptions {
                    peer_depth: peer_depth.unwrap_or(0),
                    ..SessionOptions::default()
                };
                let accepted = sessions
                    .create_with(principal, channel, CreateSession::message(message), options)
                    .await?;
                (accepted.session_id, 0)
            }
            Some(id) => {
                let start = events.read(principal, &id).await?.len() as u64;
                turns
                    .send(principal, &id, &message, Some(Admission::Preempt))
                    .await?;
                (id, start)
            }
        };
        let mut stream = events.stream(principal, &id, start).await?;
        loop {
            let event = tokio::select! {
                event = stream.rx.recv() => event,
                () = cancel.cancelled() => {
                    turns.stop(principal, &id).await?;
                    return Err(ManagerError::internal(format!(
                        "the ask was cancelled, and the turn it started in session {id} was stopped"
                    )));
                }
            };
            let Some(event) = event else { break };
            let (status, reply) = match event.as_ref().map(|e| &e.body) {
                Some(EventBody::TurnCompleted(done)) => (AskStatus::Completed, done.reply.clone()),
                Some(EventBody::TurnFailed(failed)) => (AskStatus::Failed, failed.message.clone()),
                _ => continue,
            };
            return Ok(AskResult {
                status,
                session_id: id,
                reply,
            });
        }
        Err(ManagerError::internal(format!(
            "session {id} ended before the turn finished (the server is shutting down): ask again"
        )))
    }
}

#[async_trait::async_trait]
impl PeerAgent for Peers {
    async fn ask(
        &self,
        principal: &str,
        ask: AskArguments,
        cancel: &CancellationToken,
    ) -> Result<AskResult, PeerError> {
        let continued = ask.session_id.clone();
        Peers::ask(self, principal, PEER_CHANNEL, ask, cancel)
            .await
            .map_err(|err| match (err, continued) {
                (ManagerError::NotFound(_), Some(id)) => PeerError::SessionGone(id),
                (err, _) => PeerError::Refused {
                    code: err.code(),
                    message: err.to_string(),
                },
            })
    }
}
