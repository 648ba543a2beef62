//! The [`Events`] handle: a session's stored events, and following a session: its stored
//! events from a start index, then live ones as they are appended, with keep-alive ticks; a
//! task session's stream ends after its final event.
//!
//! Each stream is one task between the session's broadcast and the stream's own bounded
//! buffer. A reader that falls behind never holds anything else up: the broadcast drops what a
//! lagging receiver has not taken (`Lagged`), the turn appends on, and the stream's task, once
//! its reader takes events again, re-reads the stored events from the next index it owes, a
//! chunk at a time, then follows the broadcast again.

use std::ops::ControlFlow;
use std::sync::Arc;

use folio_protocol::{Event, EventBody, SessionMode, SessionStatus};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use crate::engine::Engine;
use crate::error::ManagerError;
use crate::error::store_error;
use crate::live::Live;
use crate::sync::lock;

/// Events a stream's buffer holds before its task waits for the reader; also the most stored
/// events a catching-up stream copies at a time, so that a stream far behind a long log costs
/// one chunk of memory, not the log.
const STREAM_BUFFER: usize = 256;

/// A stream of a session's events: stored ones from a start index, then live ones.
pub struct EventStream {
    /// Events (and `None` for a keep-alive tick) in index order without gaps.
    pub rx: StreamReceiver,
}

/// The receiving end of an [`EventStream`]. Its buffer holds boxed events: the channel
/// allocates its slots 32 at a time as soon as it opens, and a slot of a boxed event is 8 bytes
/// where an event is about 250, so each open stream costs ~250 bytes of buffer instead of ~8 KiB.
pub struct StreamReceiver(mpsc::Receiver<Option<Box<Event>>>);

impl StreamReceiver {
    /// The next event (`Some(None)`: a keep-alive tick); `None` once the stream has ended.
    pub async fn recv(&mut self) -> Option<Option<Event>> {
        self.0.recv().await.map(|item| item.map(|event| *event))
    }

    /// The next event if one is waiting, without waiting; `None` when none is (or the stream
    /// has ended).
    pub fn try_recv(&mut self) -> Option<Option<Event>> {
        self.0.try_recv().ok().map(|item| item.map(|event| *event))
    }
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
    /// replays stored events, then forwards live ones skipping any index already sent; one that
    /// fell behind the broadcast catches up from the stored events.
    pub async fn stream(
        &self,
        principal: &str,
        session_id: &str,
        start_index: u64,
    ) -> Result<EventStream, ManagerError> {
        let live = self.engine.owned(principal, session_id).await?;
        let mut rx = live.tx.subscribe();
        let (tx, out) = mpsc::channel(STREAM_BUFFER);
        let shutdown = self.engine.life.shutdown.clone();
        let keepalive = self
            .engine
            .settings
            .keepalive()
            .max(std::time::Duration::from_millis(1));
        self.engine.life.tasks.spawn(async move {
            let _open = folio_telemetry::metrics::stream_open();
            let task_mode = lock(&live.meta).mode == SessionMode::Task;
            // A task whose final event the log holds has ended, whatever its saved status says
            // yet (the actor saves it a moment after the event): a stream opened past that event
            // ends at once instead of waiting for events that never come.
            let final_stored = task_mode && live.last_visible_is(is_final);
            let mut forward = Forward {
                live,
                tx,
                next: start_index,
                task_mode,
            };
            if forward.catch_up().await.is_break() {
                return;
            }
            let ended = final_stored
                || task_mode
                    && matches!(
                        lock(&forward.live.meta).status,
                        SessionStatus::Completed | SessionStatus::Failed
                    );
            if ended {
                return;
            }
            let mut tick = tokio::time::interval(keepalive);
            tick.tick().await;
            loop {
                let flow = tokio::select! {
                    biased;
                    received = rx.recv() => match received {
                        Ok(event) if event.index < forward.next => continue,
                        Ok(event) if event.index == forward.next => forward.send(event).await,
                        // A gap or a lag: catch up from the stored events.
                        Ok(_) | Err(RecvError::Lagged(_)) => forward.catch_up().await,
                        Err(RecvError::Closed) => return,
                    },
                    _ = tick.tick() => match forward.tx.send(None).await {
                        Ok(()) => continue,
                        Err(_) => return,
                    },
                    () = forward.live.closed.cancelled() => return,
                    () = shutdown.cancelled() => return,
                    () = forward.tx.closed() => return,
                };
                if flow.is_break() {
                    return;
                }
            }
        });
        Ok(EventStream {
            rx: StreamReceiver(out),
        })
    }
}

/// One stream's sending side: the next index it owes its reader.
struct Forward {
    live: Arc<Live>,
    tx: mpsc::Sender<Option<Box<Event>>>,
    next: u64,
    task_mode: bool,
}

impl Forward {
    /// Sends `event` unless it was sent already; breaks once the reader is gone or a task
    /// session's final event went out.
    async fn send(&mut self, event: Event) -> ControlFlow<()> {
        if event.index < self.next {
            return ControlFlow::Continue(());
        }
        self.next = event.index + 1;
        let last = self.task_mode && is_final(&event);
        if self.tx.send(Some(Box::new(event))).await.is_err() || last {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    /// Sends the stored events from the next index on, [`STREAM_BUFFER`] at a time, until none
    /// is left; only what the reader has not had is copied.
    async fn catch_up(&mut self) -> ControlFlow<()> {
        loop {
            let chunk = self.live.visible_events_from(self.next, STREAM_BUFFER);
            if chunk.is_empty() {
                return ControlFlow::Continue(());
            }
            for event in chunk {
                self.send(event).await?;
            }
        }
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
