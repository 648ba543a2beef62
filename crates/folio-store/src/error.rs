//! What a store operation can fail with, as values a caller can act on.

use chrono::{DateTime, Utc};

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The session (or lease, or record) does not exist.
    #[error("{0} does not exist")]
    NotFound(String),
    /// A session with this id exists already.
    #[error("session {0} exists already")]
    AlreadyExists(String),
    /// An append lost the race for its index: another writer appended first. Read the log's
    /// end and retry (or give up when the other writer must not be raced).
    #[error(
        "session {session_id}: append expected index {expected} but the log is at {actual}; another writer appended first: read the log's end and retry"
    )]
    Conflict {
        /// The session.
        session_id: String,
        /// The index the append expected to write first.
        expected: u64,
        /// The index the log is at (its next index).
        actual: u64,
    },
    /// The caller's lease on the session was taken over (or released): its fencing token is
    /// stale and it must stop writing; the turn belongs to the new owner.
    #[error(
        "session {session_id}: fencing token {fence} is stale (the lease was taken over or released); this server no longer owns the session's turn"
    )]
    Fenced {
        /// The session.
        session_id: String,
        /// The stale fencing token presented.
        fence: u64,
    },
    /// Another owner holds an unexpired lease on the session.
    #[error(
        "session {session_id}: its turn is owned by {owner} until {expires_at}; send stop/preempt to that owner or wait for the lease to expire"
    )]
    LeaseHeld {
        /// The session.
        session_id: String,
        /// The owner holding the lease.
        owner: String,
        /// When the lease expires unless renewed.
        expires_at: DateTime<Utc>,
    },
    /// The store cannot be reached now (connection lost, pool exhausted, database restarting);
    /// the operation did not happen and may be retried.
    #[error("the session store is unavailable: {0}; retrying may succeed")]
    Unavailable(String),
    /// The store's schema is newer than this binary understands.
    #[error(
        "the session store's schema is version {found}, newer than the {supported} this folio supports; upgrade folio"
    )]
    Schema {
        /// The schema version found in the store.
        found: i64,
        /// The newest schema version this binary supports.
        supported: i64,
    },
    /// Host I/O failed (the disk store).
    #[error("{context}: {source}")]
    Io {
        /// What was being done, naming the file.
        context: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The backend failed in a way not covered above (a corrupt record, a database error);
    /// the message says what and where.
    #[error("{message}")]
    Backend {
        /// What failed and where (with the underlying error's text when there is one).
        message: String,
        /// The error underneath (a database or encoding error), when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl StoreError {
    /// A backend failure the message describes (a corrupt record, a name it refuses).
    pub fn backend(message: impl Into<String>) -> StoreError {
        StoreError::Backend {
            message: message.into(),
            source: None,
        }
    }

    /// A backend failure: `source` stopped `what`.
    pub fn backend_from(
        what: impl std::fmt::Display,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> StoreError {
        StoreError::Backend {
            message: format!("{what}: {source}"),
            source: Some(Box::new(source)),
        }
    }

    /// Whether retrying the same operation later may succeed (a lost index race or a store
    /// that is briefly unreachable).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            StoreError::Conflict { .. } | StoreError::Unavailable(_)
        )
    }
}
