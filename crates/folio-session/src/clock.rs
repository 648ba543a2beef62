//! [`Clock`]: where the scheduler reads the time and waits for it, so tests move time instead of
//! sleeping.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

/// A future a clock hands out while waiting.
pub type Wait = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The time as the scheduler sees it.
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> DateTime<Utc>;
    /// Completes at or after `at` (at once when `at` has passed).
    fn sleep_until(&self, at: DateTime<Utc>) -> Wait;
}

/// The longest single wait of the system clock: a wall clock that jumps (NTP, suspend) is
/// noticed within this long.
const LONGEST_WAIT: Duration = Duration::from_secs(30);

/// The system clock, optionally shifted by a fixed amount (`folio serve` reads the shift from
/// `FOLIO_TEST_CLOCK_START`, so an end-to-end test can start just before a slot).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock {
    shift: chrono::Duration,
}

impl SystemClock {
    /// The real time.
    pub fn new() -> Self {
        SystemClock::default()
    }

    /// Real time running from `start` now on.
    pub fn starting_at(start: DateTime<Utc>) -> Self {
        SystemClock {
            shift: start - Utc::now(),
        }
    }
}

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + self.shift
    }

    fn sleep_until(&self, at: DateTime<Utc>) -> Wait {
        let wait = (at - self.now())
            .to_std()
            .unwrap_or(Duration::ZERO)
            .min(LONGEST_WAIT);
        Box::pin(tokio::time::sleep(wait))
    }
}

/// A clock that moves only when told: tests set or advance it, and every sleeper whose instant
/// has come wakes.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: std::sync::Arc<watch::Sender<DateTime<Utc>>>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: DateTime<Utc>) -> Self {
        ManualClock {
            now: std::sync::Arc::new(watch::Sender::new(start)),
        }
    }

    /// Moves the clock to `at` (never backwards: an earlier instant is ignored).
    pub fn set(&self, at: DateTime<Utc>) {
        self.now.send_if_modified(|now| {
            let later = at > *now;
            if later {
                *now = at;
            }
            later
        });
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: chrono::Duration) {
        self.set(self.now() + by);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.borrow()
    }

    fn sleep_until(&self, at: DateTime<Utc>) -> Wait {
        let mut rx = self.now.subscribe();
        Box::pin(async move {
            // The sender lives as long as the clock; a dropped clock never wakes the sleeper.
            if rx.wait_for(|now| *now >= at).await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }
}
