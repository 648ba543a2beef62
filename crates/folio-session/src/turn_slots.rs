//! The cap on turns running at once across an agent (`[concurrency] max_running_turns`), how
//! many may wait for it (`max_queued_turns`), and the tickets that hold a place in that count.
//!
//! Decision: a caller's create or follow-up takes a ticket before anything is written; with the
//! cap set, a ticket past `max_running_turns + max_queued_turns` admitted turns is refused with
//! `503 overloaded` and a `Retry-After` from recent turns' durations, so an overloaded server
//! sheds work instead of queueing it without bound. Turns that must run whatever the load (a
//! schedule, a reminder, a channel delivery already acknowledged, recovery after a restart)
//! take a ticket that is counted but never refused. The bound is per server process, as the
//! running cap is.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use folio_project::ConcurrencySection;
use tokio::sync::Semaphore;

use crate::error::ManagerError;

/// How many turns may wait for a slot when `max_queued_turns` is not set.
pub(crate) const DEFAULT_MAX_QUEUED_TURNS: u32 = 64;

/// The longest `Retry-After` an overloaded server answers.
const LONGEST_WAIT: Duration = Duration::from_secs(60);

/// The cap on turns running at once, how many wait for it, and the turns admitted.
pub(crate) struct TurnSlots {
    /// `None`: no cap.
    pub(crate) slots: Option<Arc<Semaphore>>,
    /// Turns waiting for a slot.
    pub(crate) queued: AtomicU32,
    /// The running cap (0 without one).
    cap: u32,
    /// The most turns a caller's ticket may bring the admitted count to (`None`: no bound).
    bound: Option<u32>,
    /// `max_queued_turns` as set or defaulted, for the refusal's message.
    max_queued: u32,
    /// Turns admitted and not ended (running, waiting, or on their way to a slot).
    admitted: Arc<AtomicU32>,
    /// The mean of recent turns' running times in milliseconds (exponentially weighted).
    mean_turn_ms: AtomicU64,
}

/// A place among the admitted turns, given back when dropped (when the turn ends, or when the
/// message it was taken for starts no turn).
pub(crate) struct TurnTicket {
    admitted: Arc<AtomicU32>,
}

impl Drop for TurnTicket {
    fn drop(&mut self) {
        self.admitted.fetch_sub(1, Ordering::SeqCst);
    }
}

impl TurnSlots {
    /// The slots `[concurrency]` sets.
    pub(crate) fn new(concurrency: &ConcurrencySection) -> Self {
        let cap = concurrency.max_running_turns.map(|n| n.max(1));
        let max_queued = concurrency
            .max_queued_turns
            .unwrap_or(DEFAULT_MAX_QUEUED_TURNS);
        TurnSlots {
            slots: cap.map(|n| Arc::new(Semaphore::new(n as usize))),
            queued: AtomicU32::new(0),
            cap: cap.unwrap_or(0),
            bound: cap.map(|n| n.saturating_add(max_queued)),
            max_queued,
            admitted: Arc::new(AtomicU32::new(0)),
            mean_turn_ms: AtomicU64::new(0),
        }
    }

    /// A place for a caller's turn, or `503 overloaded` when `max_running_turns` turns run and
    /// `max_queued_turns` wait.
    pub(crate) fn admit(&self) -> Result<TurnTicket, ManagerError> {
        let Some(bound) = self.bound else {
            return Ok(self.ticket());
        };
        self.admitted
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < bound).then_some(n + 1)
            })
            .map(|_| TurnTicket {
                admitted: self.admitted.clone(),
            })
            .map_err(|_| {
                let retry_after = self.retry_after();
                ManagerError::Overloaded {
                    message: format!(
                        "the server is running {} turns (max_running_turns = {}) with {} waiting (max_queued_turns = {}): retry after {} s, or raise [concurrency] in agent.toml",
                        self.cap,
                        self.cap,
                        self.queued.load(Ordering::SeqCst),
                        self.max_queued,
                        retry_after.as_secs()
                    ),
                    retry_after,
                }
            })
    }

    /// A place for a turn that runs whatever the load (counted, never refused).
    pub(crate) fn ticket(&self) -> TurnTicket {
        self.admitted.fetch_add(1, Ordering::SeqCst);
        TurnTicket {
            admitted: self.admitted.clone(),
        }
    }

    /// Records that a turn held a slot for `took`.
    pub(crate) fn ran(&self, took: Duration) {
        let took = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        // Each turn moves the mean an eighth of the way: recent load counts most.
        let _ = self
            .mean_turn_ms
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |mean| {
                Some(if mean == 0 {
                    took
                } else {
                    mean - mean / 8 + took / 8
                })
            });
    }

    /// How long until a refused caller likely finds room: the waiting turns and one more,
    /// run `cap` at a time at the mean turn's length; from 1 to 60 seconds.
    fn retry_after(&self) -> Duration {
        let mean = Duration::from_millis(self.mean_turn_ms.load(Ordering::Relaxed));
        let rounds = self.queued.load(Ordering::SeqCst) / self.cap.max(1) + 1;
        (mean * rounds).clamp(Duration::from_secs(1), LONGEST_WAIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(running: Option<u32>, queued: Option<u32>) -> TurnSlots {
        TurnSlots::new(&ConcurrencySection {
            max_running_turns: running,
            max_queued_turns: queued,
        })
    }

    #[test]
    fn callers_are_refused_past_running_plus_queued_until_a_ticket_is_given_back() {
        let slots = slots(Some(2), Some(1));
        let held: Vec<TurnTicket> = (0..3).map(|_| slots.admit().unwrap()).collect();
        let refused = slots.admit().err().unwrap();
        assert!(matches!(refused, ManagerError::Overloaded { .. }));
        assert!(
            refused.to_string().contains("max_queued_turns = 1"),
            "{refused}"
        );
        // A turn that must run is counted past the bound, and holds its place too.
        let forced = slots.ticket();
        drop(held);
        assert_eq!(slots.admitted.load(Ordering::SeqCst), 1);
        drop(forced);
        assert!(slots.admit().is_ok());
    }

    #[test]
    fn without_a_running_cap_nothing_is_refused() {
        let slots = slots(None, Some(0));
        let held: Vec<TurnTicket> = (0..1000).map(|_| slots.admit().unwrap()).collect();
        assert_eq!(held.len(), 1000);
    }

    #[test]
    fn retry_after_follows_the_mean_turn_and_stays_within_a_minute() {
        let slots = slots(Some(1), Some(0));
        assert_eq!(slots.retry_after(), Duration::from_secs(1));
        slots.ran(Duration::from_secs(4));
        assert_eq!(slots.retry_after(), Duration::from_secs(4));
        slots.queued.store(2, Ordering::SeqCst);
        assert_eq!(slots.retry_after(), Duration::from_secs(12));
        slots.ran(Duration::from_secs(3600));
        assert_eq!(slots.retry_after(), LONGEST_WAIT);
    }
}
