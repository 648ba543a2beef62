//! What can go wrong talking to the PostgreSQL store, in terms a caller can act on; each maps
//! onto the [`StoreError`] a [`SessionStore`](folio_store::SessionStore) caller sees.

use folio_store::StoreError;

/// An error of the PostgreSQL store.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// The store URL does not parse.
    #[error(
        "invalid PostgreSQL URL ({message}); expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
    )]
    BadUrl {
        /// What the parser said.
        message: String,
    },
    /// No connection could be made (or kept) within the retry budget.
    #[error(
        "cannot reach PostgreSQL at {host}:{port} ({message}); check that the server is running, that the URL's host and port are right, and that it accepts connections from this machine"
    )]
    Unreachable {
        /// The host of the URL (or the unix socket directory).
        host: String,
        /// The port of the URL.
        port: u16,
        /// The underlying error.
        message: String,
    },
    /// The server answered but refused the connection (authentication, unknown database).
    #[error(
        "PostgreSQL at {host}:{port} refused the connection ({message}); check the URL's user, password and database name"
    )]
    Refused {
        /// The host of the URL.
        host: String,
        /// The port of the URL.
        port: u16,
        /// What the server said.
        message: String,
    },
    /// The database was migrated by a newer Folio than this binary.
    #[error(
        "the database's Folio schema is version {found}, newer than the {supported} this folio supports: it was migrated by a newer folio; run that version (or upgrade this one) instead of pointing an older folio at it"
    )]
    SchemaNewer {
        /// The newest migration applied to the database.
        found: i64,
        /// The newest migration this binary carries.
        supported: i64,
    },
    /// An append lost the race for its index: the log's next index is `actual`.
    #[error(
        "session {session_id}: append at index {expected} lost the race, the log's next index is {actual}; re-read the log and retry"
    )]
    Conflict {
        /// The session.
        session_id: String,
        /// The index the append was for.
        expected: u64,
        /// The log's next index now.
        actual: u64,
    },
    /// The caller's lease was taken over (or released): its fencing token is stale.
    #[error(
        "session {session_id}: the lease with fencing token {token} is no longer held (another server took the turn over); stop writing to this session"
    )]
    Fenced {
        /// The session.
        session_id: String,
        /// The stale token.
        token: u64,
    },
    /// A live lease held by someone else.
    #[error("session {session_id} is running on {owner} (lease valid until {expires_at})")]
    LeaseHeld {
        /// The session.
        session_id: String,
        /// The server that holds the lease.
        owner: String,
        /// When that lease expires unless renewed.
        expires_at: chrono::DateTime<chrono::Utc>,
    },
    /// The session does not exist.
    #[error("session {session_id}")]
    NotFound {
        /// The session.
        session_id: String,
    },
    /// A session with this id exists already.
    #[error("session {session_id}")]
    AlreadyExists {
        /// The session.
        session_id: String,
    },
    /// A stored row does not parse: the database was edited by hand or corrupted.
    #[error("PostgreSQL store: {what} is corrupt ({message})")]
    Corrupt {
        /// Which row.
        what: String,
        /// The parse error.
        message: String,
    },
    /// The migrations failed to apply.
    #[error("migrating the PostgreSQL store failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// Any other database error (not transient, or transient past the retry budget).
    #[error("PostgreSQL store: {0}")]
    Database(#[source] sqlx::Error),
}

impl From<PgError> for StoreError {
    fn from(err: PgError) -> Self {
        match err {
            PgError::NotFound { session_id } => {
                StoreError::NotFound(format!("session {session_id}"))
            }
            PgError::AlreadyExists { session_id } => StoreError::AlreadyExists(session_id),
            PgError::Conflict {
                session_id,
                expected,
                actual,
            } => StoreError::Conflict {
                session_id,
                expected,
                actual,
            },
            PgError::Fenced { session_id, token } => StoreError::Fenced {
                session_id,
                fence: token,
            },
            PgError::LeaseHeld {
                session_id,
                owner,
                expires_at,
            } => StoreError::LeaseHeld {
                session_id,
                owner,
                expires_at,
            },
            PgError::SchemaNewer { found, supported } => StoreError::Schema { found, supported },
            unreachable @ PgError::Unreachable { .. } => {
                StoreError::Unavailable(unreachable.to_string())
            }
            other @ (PgError::BadUrl { .. }
            | PgError::Refused { .. }
            | PgError::Corrupt { .. }
            | PgError::Migrate(_)
            | PgError::Database(_)) => StoreError::Backend {
                message: other.to_string(),
                source: Some(Box::new(other)),
            },
        }
    }
}
