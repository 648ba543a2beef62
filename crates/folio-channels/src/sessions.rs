//! The background work of a delivery: its continuation key picks the session (same key → same
//! session; a new key or none → a new chat session), the delivery id is the message's
//! idempotency key (so a re-run after a restart never admits it twice), and the outcome is
//! recorded.

use std::sync::Arc;

use folio_protocol::{CreateSession, DeliveryStatus};
use folio_server::{ChannelMessage, ManagerError};

use crate::Channel;
use crate::store::Work;

/// Runs delivery `id`'s work and records its outcome (nothing to run → ignored).
pub(crate) async fn run(channel: Arc<Channel>, id: String, work: Option<Work>) {
    let (status, session_id, message) = match &work {
        None => (DeliveryStatus::Ignored, None, None),
        Some(work) => match to_session(&channel, &id, work).await {
            Ok(session_id) => (DeliveryStatus::Accepted, Some(session_id), None),
            Err(err) => (DeliveryStatus::Failed, None, Some(err.to_string())),
        },
    };
    let logs = channel.manager.logs();
    match (&session_id, &message) {
        (Some(session), _) => logs.about(session).info(format!(
            "channel {}: delivery {id} reached session {session}",
            channel.id
        )),
        (None, Some(reason)) => logs.warn(format!(
            "channel {}: delivery {id} failed: {reason}",
            channel.id
        )),
        (None, None) => {}
    }
    let store = channel.store.clone();
    let recorded_id = id.clone();
    let follow = session_id.clone();
    let recorded = tokio::task::spawn_blocking(move || {
        store.finish(&recorded_id, status, session_id, message)
    })
    .await;
    let failure = match recorded {
        Ok(Ok(())) => None,
        Ok(Err(err)) => Some(err.to_string()),
        Err(err) => Some(err.to_string()),
    };
    if let Some(err) = failure {
        logs.error(format!(
            "channel {}: the outcome of delivery {id} was not recorded ({err}); it runs again after a restart and is not admitted twice",
            channel.id
        ));
    }
    if let (Some(replier), Some(session), Some(work)) = (&channel.replier, follow, work) {
        replier.follow(channel.clone(), session, id, work.body);
    }
}

/// Admits the work's message to its session, creating the session when the key names none.
async fn to_session(channel: &Channel, id: &str, work: &Work) -> Result<String, ManagerError> {
    let principal = channel.principal();
    let manager = &channel.manager;
    // One lookup-or-create at a time, so two deliveries with a new key open one session.
    let _one_at_a_time = channel.sessions.lock().await;
    if let Some(key) = &work.continuation
        && let Some(session_id) = channel.store.session_for(key)
    {
        let message = ChannelMessage {
            text: work.message.clone(),
            workspace_files: work.workspace_files.clone(),
            admission: Some(work.admission),
            key: Some(id.to_string()),
        };
        match manager.send_message(&principal, &session_id, message).await {
            Ok(()) => return Ok(session_id),
            // Deleted (or not followable): the key opens a new session below.
            Err(ManagerError::NotFound(_) | ManagerError::NotFollowable(_)) => {}
            Err(err) => return Err(err),
        }
    }
    let request = CreateSession {
        message: work.message.clone(),
        title: work.title.clone(),
        workspace_files: work.workspace_files.clone(),
        mode: None,
        client_message_id: Some(id.to_string()),
    };
    let accepted = manager.create(&principal, "webhook", request).await?;
    if let Some(key) = &work.continuation {
        let store = channel.store.clone();
        let key = key.clone();
        let session_id = accepted.session_id.clone();
        tokio::task::spawn_blocking(move || store.bind(&key, &session_id))
            .await
            .map_err(|_| ManagerError::Internal("the continuation key was not recorded".into()))?
            .map_err(|err| ManagerError::Internal(err.to_string()))?;
    }
    Ok(accepted.session_id)
}
