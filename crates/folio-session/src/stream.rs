//! Following a session: its stored events from a start index, then live ones as they are
//! appended, with keep-alive ticks; a task session's stream ends after its final event.

use folio_protocol::{Event, EventBody, SessionMode, SessionStatus};
use tokio::sync::mpsc;

use crate::error::ManagerError;
use crate::live::lock;
use crate::manager::SessionManager;

/// A stream of a session's events: stored ones from a start index, then live ones.
pub struct EventStream {
    /// Events (and `None` for a keep-alive tick) in index order without gaps.
    pub rx: mpsc::Receiver<Option<Event>>,
}

impl SessionManager {
    /// Streams events with `index >= start_index`: subscribes to live appends first, then
    /// replays stored events, then forwards live ones skipping any index already sent.
    pub async fn stream(
        &self,
        principal: &str,
        session_id: &str,
        start_index: u64,
    ) -> Result<EventStream, ManagerError> {
        let live = self.owned(principal, session_id).await?;
        let mut rx = live.tx.subscribe();
        let stored = live.visible_events();
        let (tx, out) = mpsc::channel(256);
        let shutdown = self.inner.shutdown.clone();
        let keepalive = std::time::Duration::from_millis(
            self.inner
                .keepalive_ms
                .load(std::sync::atomic::Ordering::Relaxed)
                .max(1),
        );
        let task = live.clone();
        self.inner.tasks.spawn(async move {
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
            let (batch, done) = send_from(stored, &mut next);
            for event in batch {
                if tx.send(Some(event)).await.is_err() {
                    return;
                }
            }
            let ended = task_mode
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
