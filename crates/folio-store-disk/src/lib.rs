//! The embedded session store: one agent's state root on the local disk, behind the
//! [`folio_store::SessionStore`] and [`folio_store::DeliveryStore`] traits that the PostgreSQL
//! store implements too, so one conformance suite holds both to the same promises.
//!
//! What lives where under a state root (docs/http-api.md "Storage and crashes"):
//! - `sessions/<id>/session.json`: a session's metadata ([`state::MetaFile`]);
//! - `traces/<id>.ndjson`: its event log, one JSON event per line ([`EventLog`]);
//! - `idempotency/<sha256>`: the records of keyed creates ([`create_keys`]);
//! - `schedules/<name>.ndjson`: each schedule's slot log ([`slots`]);
//! - `reminders/<id>/<reminder>.json`: reminders ([`reminders`]);
//! - `channels/deliveries.ndjson`: channel deliveries ([`DiskDeliveries`]);
//! - `evals/<runId>.json`: stored eval runs ([`eval_runs`]; a project's are under its slug,
//!   [`eval_runs_root`], whichever layout serves it);
//! - `storage/<scope>/<agent>/<owner>/<key>.entry`: storage entries ([`DiskStorage`]);
//! - `copy-in-progress`: a `folio store copy` into this state root not verified yet
//!   ([`copy_marker`]);
//! - `.lock`: held by the one process that has the state root open.
//!
//! Files become durable through one group commit ([`state::commit`]): concurrent sessions'
//! syncs of the same file or directory are shared, and a turn's appends are synced once, at
//! its durable points.
//!
//! ```no_run
//! use std::sync::Arc;
//! use folio_store::{ListQuery, SessionStore};
//! use folio_store_disk::{DiskStore, StateRoot};
//!
//! # async fn open() -> Result<(), Box<dyn std::error::Error>> {
//! let store: Arc<dyn SessionStore> = Arc::new(DiskStore::open(StateRoot::new(".folio/state/demo"))?);
//! let newest = ListQuery { principal: None, before: None, limit: 50, ..Default::default() };
//! println!("{} sessions", store.list_sessions(&newest).await?.len());
//! # Ok(())
//! # }
//! ```

pub mod create_keys;
mod deliveries;
pub mod eval_runs;
mod event_log;
mod import;
mod index;
pub mod reminders;
pub mod slots;
pub mod state;
mod storage;
mod store;

pub use deliveries::DiskDeliveries;
pub use eval_runs::{EvalRunError, eval_runs_root, list_eval_runs, read_eval_run, write_eval_run};
pub use event_log::{EventLog, LogError, last_event, now_millis, read_events};
pub use import::{copy_marker, copy_marker_path};
pub use state::{StateRoot, load_meta};
pub use storage::DiskStorage;
pub use store::DiskStore;

/// Why a state root could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// Another `folio` process holds the state root.
    #[error(
        "the state root {} is in use by another folio process: stop it, or pass --state-root with another directory",
        .0.display()
    )]
    InUse(std::path::PathBuf),
    /// The state root or its sessions could not be created or read.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the path.
        what: String,
        /// The OS error.
        #[source]
        source: folio_fs::SharedError<std::io::Error>,
    },
    /// The state root cannot be used as it is (its content or the caller's setup is wrong); the
    /// message says what to do.
    #[error("{0}")]
    Unusable(String),
}

impl OpenError {
    /// `source` stopped `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> OpenError {
        OpenError::Io {
            what: what.into(),
            source: source.into(),
        }
    }
}

/// Locks a std mutex, recovering from poisoning (state stays consistent per operation).
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}
