//! The [`Events`] handle: a session's stored events, and following a session: its stored
//! events from a start index, then live ones as they are appended, with keep-alive ticks; a
//! task session's stream ends after its final event.

use std::sync::Arc;

use folio_protocol::{Event, EventBody, SessionMode, SessionStatus};
use tokio::sync::mpsc;

use crate::engine::Engine;
use crate::error::ManagerError;
use crate::error::store_error;
use crate::sync::lock;

/// A stream of a session's events: stored ones from a start index, then live ones.
pub struct EventStream {
    /// Events (and `None` for a keep-alive tick) in index order without gaps.
    pub rx: mpsc::Receiver<Option<Event>>,
}

/// Reads and follows sessions' event logs.
#[derive(Clone)]
pub struct Events {
    pub(crate) engine: Arc<Engine>,
}

impl Events {
    /// Every stored event of `principal`'s session.
    pub async fn read(
        &self,
        principal: &str,
        session_id: &str,
    ) -> Result<Vec<Event>, ManagerError> {
        read(&self.engine, principal, session_id).await
    }

    /// Streams events with `index >= start_index`: subscribes to live appends first, then
    /// replays stored events, then forwards live ones skipping any index already sent.
    pub async fn stream(
        &self,
        principal: &str,
        session_id: &str,
        start_index: u64,
    ) -> Result<EventStream, ManagerError> {
        let live = self.engine.owned(principal, session_id).await?;
        let mut rx = live.tx.subscribe();
        let stored = live.visible_events();
        let (tx, out) = mpsc::channel(256);
        let shutdown = self.engine.life.shutdown.clone();
        let keepalive = self
            .engine
            .settings
            .keepalive()
            .max(std::time::Duration::from_millis(1));
        let task = live.clone();
        self.engine.life.tasks.spawn(async move {
            let _open = folio_telemetry::metrics::stream_open();
            let live = task;
            let task_mode = lock(&live.meta).mode == SessionMode::Task;
            let mut next = start_index;
            let send_from = |events: Vec<Event>, next: &mut u64| {
                let mut batch = Vec::new();
                for event in events {
                    if event.index >= *next {
                        *next = event.index + 1;
                        let last = task_mode && is_final(&event);
                        batch.push(event);
                        if last {
                            return (batch, true);
                        }
                    }
                }
                (batch, false)
            };
            // A task whose final event the log holds has ended, whatever its saved status says
            // yet (the actor saves it a moment after the event): a stream opened past that event
            // ends at once instead of waiting for events that never come.
            let final_stored = task_mode && stored.last().is_some_and(is_final);
            let (batch, done) = send_from(stored, &mut next);
            for event in batch {
                if tx.send(Some(event)).await.is_err() {
                    return;
                }
            }
            let ended = final_stored
                || task_mode
                    && matches!(
                        lock(&live.meta).status,
                        SessionStatus::Completed | SessionStatus::Failed
                    );
            if done || ended {
                return;
            }
            let mut tick = tokio::time::interval(keepalive);
            tick.tick().await;
            loop {
                let events = tokio::select! {
                    biased;
                    received = rx.recv() => match received {
                        Ok(event) if event.index < next => continue,
                        Ok(event) if event.index == next => vec![event],
                        // A gap or a lag: catch up from disk.
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                            live.visible_events()
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    },
                    _ = tick.tick() => {
                        if tx.send(None).await.is_err() {
                            return;
                        }
                        continue;
                    }
                    () = live.closed.cancelled() => return,
                    () = shutdown.cancelled() => return,
                    () = tx.closed() => return,
                };
                let (batch, done) = send_from(events, &mut next);
                for event in batch {
                    if tx.send(Some(event)).await.is_err() {
                        return;
                    }
                }
                if done {
                    return;
                }
            }
        });
        Ok(EventStream { rx: out })
    }
}

/// A task session's last event.
fn is_final(event: &Event) -> bool {
    matches!(
        event.body,
        EventBody::SessionCompleted(_) | EventBody::SessionFailed(_)
    )
}

/// Every stored event of `principal`'s session: the live copy when the session is open here.
pub(crate) async fn read(
    engine: &Engine,
    principal: &str,
    session_id: &str,
) -> Result<Vec<Event>, ManagerError> {
    engine.owned_meta(principal, session_id).await?;
    all_events(engine, session_id).await
}

/// Every stored event of session `session_id`, whoever owns it: the live copy when the session
/// is open here.
pub(crate) async fn all_events(
    engine: &Engine,
    session_id: &str,
) -> Result<Vec<Event>, ManagerError> {
    if let Some(live) = engine.live.get(session_id) {
        return Ok(live.visible_events());
    }
    engine
        .store
        .read_events(session_id, 0, None)
        .await
        .map_err(|err| store_error(&format!("cannot read session {session_id}"), err))
}
