//! Where a turn records its events: the [`EventSink`] trait, shared by the turn loop and the
//! tools that record events of their own.

use folio_protocol::{ActionApprovalResolved, ApprovalDecision, Event, EventBody};

/// Why an event could not be recorded (the store's own error as its source).
#[derive(Debug, thiserror::Error)]
#[error("{source}")]
pub struct SinkError {
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl SinkError {
    /// Wraps the store's error (or a message).
    pub fn new(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> SinkError {
        SinkError {
            source: source.into(),
        }
    }
}

/// Where a turn records its events: the session's log (and whatever follows it).
#[async_trait::async_trait]
pub trait EventSink: Send + Sync {
    /// Appends one event and returns it with its index and time.
    async fn emit(&self, turn_id: Option<&str>, body: EventBody) -> Result<Event, SinkError>;
    /// Makes everything emitted so far durable (called at turn boundaries).
    async fn checkpoint(&self) -> Result<(), SinkError>;
    /// Waits for the human decision on a parked call (its `action.approval_requested` is
    /// recorded); the turn records the returned `action.approval_resolved`. Without an approver
    /// (outside `folio serve`) the call is denied (an elicitation: declined).
    async fn await_approval(&self, call_id: &str) -> ActionApprovalResolved {
        ActionApprovalResolved {
            call_id: call_id.to_string(),
            decision: ApprovalDecision::Deny,
            reason: Some(
                "no approver is attached to this session (approvals need folio serve)".into(),
            ),
            by: "folio".to_string(),
            content: None,
        }
    }

    /// Settles a parked call whose approval deadline (`expiresAt`) passed: `true` when no
    /// decision arrived first, and none is accepted from now on (the turn records folio's
    /// denial, `approval timed out`); `false` when a decision arrived first (the turn takes
    /// it from [`EventSink::await_approval`]).
    async fn expire_approval(&self, _call_id: &str) -> bool {
        true
    }

    /// Waits for the OAuth redirect of a parked MCP authorization (its
    /// `action.authorization_requested` is recorded) whose authorization request carried
    /// `state`; the redirect's query comes back, with where the outcome of the code exchange
    /// goes. Without a server to receive redirects (outside `folio serve`): `None`.
    async fn await_authorization(
        &self,
        _call_id: &str,
        _state: &str,
    ) -> Option<AuthorizationRedirect> {
        None
    }
}

/// The OAuth redirect a parked MCP authorization receives from the server's callback route.
#[derive(Debug)]
pub struct AuthorizationRedirect {
    /// The redirect's query string (`code=…&state=…`, or `error=…&state=…`).
    pub query: String,
    /// Takes the outcome of the code exchange (`Err`: why not authorized) for the browser.
    pub done: tokio::sync::oneshot::Sender<Result<(), AuthorizationFailure>>,
}

/// Why a parked MCP authorization did not complete after its redirect arrived. It is `Clone`
/// (the rmcp error behind an `Arc`): the turn records it in `action.authorization_resolved`
/// and hands the same outcome to the redirect's sender.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AuthorizationFailure {
    /// The authorization server redirected with an OAuth `error` instead of a code (the
    /// person refused, or the server did): authorize again.
    #[error("the authorization server answered {error}")]
    Refused {
        /// The redirect's `error` parameter (`access_denied`, …).
        error: String,
    },
    /// Exchanging the redirect's code for tokens failed.
    #[error("the code exchange failed: {source}")]
    Exchange {
        /// rmcp's error.
        #[source]
        source: std::sync::Arc<rmcp::transport::auth::AuthError>,
    },
}
