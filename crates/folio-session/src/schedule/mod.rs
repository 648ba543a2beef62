//! Schedules: each `agent/schedules/<name>.md` fires a task session with principal
//! `schedule:<name>` at each slot of its [`Cadence`](folio_project::Cadence).
//!
//! The [`Scheduler`] reads the time from a [`Clock`] (the system clock in `serve`, a
//! [`ManualClock`] in tests) and starts sessions through a [`Launcher`] (the
//! [`SessionManager`](crate::SessionManager) in `serve`). A slot is claimed durably in the
//! schedule's slot log under the state root (`schedules/<name>.ndjson`) before its session
//! starts, so a restart or a crash never fires it twice: a claim whose session was not recorded
//! is recorded as abandoned, not run again. Servers sharing a session store (`folio serve
//! --store`) first claim each cron slot there ([`Launcher::claim`]): one of them fires it, the
//! others record it as skipped (`claimed by another server`). Overlap (`skip`, `buffer_one`, `allow`), catch-up
//! after downtime (`latest`, `none`, `all` with a bound) and jitter are applied per slot.

mod launcher;
mod scheduler;

pub use crate::clock::{Clock, ManualClock, SystemClock, Wait};
pub use folio_store_disk::slots::SlotRecord;
pub use launcher::{Launcher, SCHEDULE_CHANNEL, schedule_principal};
pub use scheduler::{Scheduler, statuses_on_disk};

/// Why the scheduler could not read or record a schedule's slots.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// The slot log could not be read or written.
    #[error(transparent)]
    Log(#[from] folio_store_disk::slots::SlotLogError),
    /// No schedule has that name.
    #[error("no schedule named \"{0}\" (see `folio schedule list`)")]
    Unknown(String),
    /// The shared session store did not answer the slot's claim.
    #[error("cannot claim the slot in the shared session store: {0}")]
    Claim(#[source] crate::ManagerError),
}
