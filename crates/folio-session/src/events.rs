//! The [`Events`] handle: a session's stored events, and following a session: its stored
//! events from a start index, then live ones as they are appended, with keep-alive ticks; a
//! task session's stream ends after its final event.
//!
//! A stream has no task of its own: its reader pulls ([`StreamReceiver::recv`]) from the
//! session's broadcast, whose events are shared ([`StreamEvent`]: one copy and one serialized
//! line per event, whatever the number of streams). A reader that falls behind never holds
//! anything else up: the broadcast drops what a lagging receiver has not taken (`Lagged`), the
//! turn appends on, and the stream, once its reader pulls again, re-reads the stored events
//! from the next index it owes, a chunk at a time, then follows the broadcast again.

use std::collections::VecDeque;
use std::sync::Arc;

use folio_protocol::{Event, EventBody, SessionMode, SessionStatus};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::time::{Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use crate::engine::Engine;
use crate::error::ManagerError;
use crate::error::store_error;
use crate::live::Live;
use crate::stream_event::StreamEvent;
use crate::sync::lock;

/// The most stored events a catching-up stream copies at a time, so that a stream far behind a
/// long log costs one chunk of memory, not the log.
const CATCH_UP_CHUNK: usize = 256;

/// A stream of a session's events: stored ones from a start index, then live ones.
pub struct EventStream {
    /// Events (and `None` for a keep-alive tick) in index order without gaps.
    pub rx: StreamReceiver,
}

/// The reading end of an [`EventStream`]: the session's broadcast, the stored events it is
/// catching up from, the next index it owes and its keep-alive clock. It holds no buffer of
/// its own (the broadcast's slots are shared by the session's streams); dropping it ends the
/// stream.
pub struct StreamReceiver {
    live: Arc<Live>,
    rx: broadcast::Receiver<Arc<StreamEvent>>,
    /// The next index owed to the reader.
    next: u64,
    task_mode: bool,
    /// Whether the stored events from `next` on are read before the broadcast again: at the
    /// start, and after a lag or a gap.
    catching_up: bool,
    /// Stored events copied while catching up, not handed out yet.
    pending: VecDeque<Event>,
    /// Until the first catch-up is done: whether the log's last event when the stream opened
    /// was a task's final one (the stream then ends once caught up).
    opening: Option<bool>,
    ended: bool,
    tick: Interval,
    shutdown: CancellationToken,
    _open: folio_telemetry::metrics::Held,
}

impl StreamReceiver {
    /// The next event (`Some(None)`: a keep-alive tick); `None` once the stream has ended.
    /// Cancel-safe: a dropped call loses nothing.
    pub async fn recv(&mut self) -> Option<Option<Arc<StreamEvent>>> {
        loop {
            if let Some(event) = self.try_recv() {
                return Some(Some(event));
            }
            if self.ended {
                return None;
            }
            tokio::select! {
                biased;
                received = self.rx.recv() => {
                    let received = match received {
                        Ok(event) => Received::Event(event),
                        Err(RecvError::Lagged(_)) => Received::Lagged,
                        Err(RecvError::Closed) => Received::Closed,
                    };
                    if let Some(event) = self.accept(received) {
                        return Some(Some(event));
                    }
                }
                _ = self.tick.tick() => return Some(None),
                () = self.live.closed.cancelled() => self.ended = true,
                () = self.shutdown.cancelled() => self.ended = true,
            }
        }
    }

    /// The next event if one is ready, without waiting; `None` when none is (or the stream
    /// has ended).
    pub fn try_recv(&mut self) -> Option<Arc<StreamEvent>> {
        loop {
            if self.ended {
                return None;
            }
            if self.catching_up {
                if let Some(event) = self.pending.pop_front() {
                    return self.hand_out(StreamEvent::shared(event));
                }
                let chunk = self.live.visible_events_from(self.next, CATCH_UP_CHUNK);
                if chunk.is_empty() {
                    self.caught_up();
                } else {
                    self.pending = chunk.into();
                }
                continue;
            }
            let received = match self.rx.try_recv() {
                Ok(event) => Received::Event(event),
                Err(TryRecvError::Lagged(_)) => Received::Lagged,
                Err(TryRecvError::Closed) => Received::Closed,
                Err(TryRecvError::Empty) => return None,
            };
            if let Some(event) = self.accept(received) {
                return Some(event);
            }
        }
    }

    /// Takes what the broadcast gave: the event owed next is handed out, an older one
    /// skipped; a gap or a lag starts a catch-up from the stored events.
    fn accept(&mut self, received: Received) -> Option<Arc<StreamEvent>> {
        match received {
            Received::Event(event) if event.index < self.next => None,
            Received::Event(event) if event.index == self.next => self.hand_out(event),
            Received::Event(_) | Received::Lagged => {
                self.catching_up = true;
                None
            }
            Received::Closed => {
                self.ended = true;
                None
            }
        }
    }

    /// Hands `event` out as the next one; a task session's final event ends the stream.
    fn hand_out(&mut self, event: Arc<StreamEvent>) -> Option<Arc<StreamEvent>> {
        self.next = event.index + 1;
        self.ended = self.task_mode && is_final(&event);
        Some(event)
    }

    /// No stored event is left to catch up from. At the first catch-up, a task whose final
    /// event the log held, or whose status says it ended, ends the stream: no event comes.
    fn caught_up(&mut self) {
        self.catching_up = false;
        if let Some(final_stored) = self.opening.take() {
            self.ended = final_stored
                || self.task_mode
                    && matches!(
                        lock(&self.live.meta).status,
                        SessionStatus::Completed | SessionStatus::Failed
                    );
        }
    }
}

/// What a stream's broadcast receiver gave.
enum Received {
    Event(Arc<StreamEvent>),
    Lagged,
    Closed,
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
        let rx = live.tx.subscribe();
        let keepalive = self
            .engine
            .settings
            .keepalive()
            .max(std::time::Duration::from_millis(1));
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + keepalive, keepalive);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let task_mode = lock(&live.meta).mode == SessionMode::Task;
        // A task whose final event the log holds has ended, whatever its saved status says
        // yet (the actor saves it a moment after the event): a stream opened past that event
        // ends at once instead of waiting for events that never come.
        let final_stored = task_mode && live.last_visible_is(is_final);
        Ok(EventStream {
            rx: StreamReceiver {
                live,
                rx,
                next: start_index,
                task_mode,
                catching_up: true,
                pending: VecDeque::new(),
                opening: Some(final_stored),
                ended: false,
                tick,
                shutdown: self.engine.life.shutdown.clone(),
                _open: folio_telemetry::metrics::stream_open(),
            },
        })
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
