//! [`ManagerError`]: why a session operation was refused, one wire error code each.

use std::sync::Arc;

use folio_protocol::ErrorCode;

use folio_store_disk::LogError;

/// Why a session operation was refused; each maps to one HTTP status and error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManagerError {
    /// The body or a parameter is invalid (`400 invalid_request`).
    #[error("{0}")]
    Invalid(String),
    /// No such session, tool or approval (`404 not_found`).
    #[error("{0}")]
    NotFound(String),
    /// The session belongs to another principal (`403 forbidden`).
    #[error("session {0} belongs to another principal")]
    Forbidden(String),
    /// An unscoped direct call of a built-in tool (`403 forbidden`; see `direct.rs`).
    #[error(
        "{0} is a built-in tool and runs only in a session: call POST /v1/session/<id>/tools/{0} on your own session (unscoped calls run authored tools only)"
    )]
    BuiltInUnscoped(String),
    /// The server will not do it here (`403 forbidden`), e.g. write into a read-only project.
    #[error("{0}")]
    Refused(String),
    /// What the request would create exists already (`409 already_exists`).
    #[error("{0}")]
    Exists(String),
    /// The continuation token is not the current one (`409 stale_continuation_token`).
    #[error("the continuation token is stale: use the token returned by the last accepted message")]
    StaleToken,
    /// A follow-up to a task session (`409 session_not_followable`).
    #[error("session {0} is a task session and takes no follow-ups")]
    NotFollowable(String),
    /// A session-bound tool call while a turn runs (`409 session_busy`).
    #[error("session {0} is running a turn; try again when it is waiting")]
    Busy(String),
    /// A second decision on one approval (`409 approval_resolved`).
    #[error("approval {0} is already resolved")]
    ApprovalResolved(String),
    /// An idempotency key sent again with another request (`422 idempotency_key_reused`).
    #[error(
        "the idempotency key {0:?} was already used with a different request: a retry must repeat the first request exactly; send a new key (Idempotency-Key / clientMessageId) for a new request"
    )]
    KeyReused(String),
    /// Too many calls, or too much stored: refused now (`429`), with how long to wait when
    /// waiting helps.
    #[error("{message}")]
    Limited {
        /// What limit was reached and what to do.
        message: String,
        /// When a retry may succeed (`Retry-After`).
        retry_after: Option<std::time::Duration>,
    },
    /// The server runs and queues as many turns as `[concurrency]` lets it (`503
    /// overloaded`): refused before anything was written.
    #[error("{message}")]
    Overloaded {
        /// What is full and what to do.
        message: String,
        /// When a retry likely finds room (`Retry-After`).
        retry_after: std::time::Duration,
    },
    /// A message or its files over a `[limits]` size (`413 payload_too_large`).
    #[error("{0}")]
    TooLarge(String),
    /// A compare-and-set write found another version (`409 version_conflict`).
    #[error("{0}")]
    Conflict(String),
    /// Anything else (`500 internal`): what failed, and the error that stopped it.
    #[error(transparent)]
    Internal(InternalError),
}

/// A failure the caller cannot fix by changing the request (`500 internal`): what was being
/// done, and the underlying error when there is one ([`std::error::Error::source`]).
///
/// It displays as `what: cause`, so the wire message names both; clones share the cause, and
/// two are equal when they display the same.
#[derive(Debug, Clone)]
pub struct InternalError {
    /// What was being done (or, without a cause, what went wrong).
    what: String,
    /// The error that stopped it.
    cause: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl InternalError {
    /// What was being done when it failed.
    pub fn what(&self) -> &str {
        &self.what
    }
}

impl std::fmt::Display for InternalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.cause {
            Some(cause) => write!(f, "{}: {cause}", self.what),
            None => f.write_str(&self.what),
        }
    }
}

impl std::error::Error for InternalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_deref()
            .map(|cause| cause as &(dyn std::error::Error + 'static))
    }
}

impl PartialEq for InternalError {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for InternalError {}

impl ManagerError {
    /// An internal error saying what went wrong, with no underlying error.
    pub fn internal(what: impl Into<String>) -> ManagerError {
        ManagerError::Internal(InternalError {
            what: what.into(),
            cause: None,
        })
    }

    /// An internal error: `cause` stopped `what`.
    pub fn internal_from(
        what: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> ManagerError {
        ManagerError::Internal(InternalError {
            what: what.into(),
            cause: Some(Arc::new(cause)),
        })
    }

    /// How long to wait before trying again (`Retry-After`), when waiting helps.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            ManagerError::Limited { retry_after, .. } => *retry_after,
            ManagerError::Overloaded { retry_after, .. } => Some(*retry_after),
            _ => None,
        }
    }

    /// The wire error code (which fixes the HTTP status).
    pub fn code(&self) -> ErrorCode {
        match self {
            ManagerError::Invalid(_) => ErrorCode::InvalidRequest,
            ManagerError::NotFound(_) => ErrorCode::NotFound,
            ManagerError::Forbidden(_)
            | ManagerError::BuiltInUnscoped(_)
            | ManagerError::Refused(_) => ErrorCode::Forbidden,
            ManagerError::Exists(_) => ErrorCode::AlreadyExists,
            ManagerError::StaleToken => ErrorCode::StaleContinuationToken,
            ManagerError::NotFollowable(_) => ErrorCode::SessionNotFollowable,
            ManagerError::Busy(_) => ErrorCode::SessionBusy,
            ManagerError::ApprovalResolved(_) => ErrorCode::ApprovalResolved,
            ManagerError::KeyReused(_) => ErrorCode::IdempotencyKeyReused,
            ManagerError::Limited { .. } => ErrorCode::RateLimited,
            ManagerError::Overloaded { .. } => ErrorCode::Overloaded,
            ManagerError::Conflict(_) => ErrorCode::VersionConflict,
            ManagerError::TooLarge(_) => ErrorCode::PayloadTooLarge,
            ManagerError::Internal(_) => ErrorCode::Internal,
        }
    }
}

impl From<LogError> for ManagerError {
    fn from(err: LogError) -> Self {
        ManagerError::internal_from("the session's event log", err)
    }
}

/// An I/O failure while doing `what`, as an internal error.
pub(crate) fn io_error(what: &str, err: std::io::Error) -> ManagerError {
    ManagerError::internal_from(what, err)
}

/// A shared session store's failure while doing `what`: what it does not have is not found,
/// anything else is internal (the store's message says whether a retry may succeed).
pub(crate) fn store_error(what: &str, err: folio_store::StoreError) -> ManagerError {
    match err {
        folio_store::StoreError::NotFound(_) => ManagerError::NotFound(format!("{what}: {err}")),
        err => ManagerError::internal_from(what, err),
    }
}

pub use folio_store_disk::OpenError;
