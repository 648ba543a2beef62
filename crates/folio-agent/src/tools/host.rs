//! The runtime's side of the host API: before it starts a process on behalf of a session (an
//! authored tool's call, a hook run), the runtime asks the session's [`HostBroker`] for a
//! [`HostGrant`] and hands the process its address and token (`FOLIO_HOST_URL`,
//! `FOLIO_HOST_TOKEN`). The grant is revoked when it is dropped, when the process has ended.
//!
//! The engine (`folio-session`) implements the broker and answers the calls; outside a server
//! (no broker, or no socket yet) processes get no host variables.
//!
//! The model's own `Shell` gets no grant: the host API reaches host connections, which are
//! not the model's.

use folio_protocol::{HOST_TOKEN_ENV, HOST_URL_ENV};

use super::ToolContext;

/// Who a grant is for: an authored tool's call (with the call's context, whose FileSystem
/// the files routes use) or a hook's run for one event.
#[derive(Clone)]
pub enum HostCaller {
    /// An authored tool's call.
    Tool {
        /// The tool's name.
        tool: String,
        /// The call's context.
        context: Box<ToolContext>,
    },
    /// A hook's run for one event of a session.
    Hook {
        /// The hook's name.
        hook: String,
        /// The session.
        session_id: String,
        /// The event's index.
        index: u64,
    },
}

impl HostCaller {
    /// The session the caller acts for.
    pub fn session_id(&self) -> &str {
        match self {
            HostCaller::Tool { context, .. } => &context.session_id,
            HostCaller::Hook { session_id, .. } => session_id,
        }
    }

    /// The id the grant's calls are recorded under: the tool call's id, or
    /// `hook_<name>_<index>`.
    pub fn call_id(&self) -> String {
        match self {
            HostCaller::Tool { context, .. } => context.call_id.clone(),
            HostCaller::Hook { hook, index, .. } => format!("hook_{hook}_{index}"),
        }
    }
}

/// A storage request of the model's `storage_*` tools.
#[derive(Debug, Clone, PartialEq)]
pub enum StorageRequest {
    /// `storage_get`.
    Get(folio_protocol::KvGet),
    /// `storage_put`.
    Put(folio_protocol::KvPut),
    /// `storage_delete`.
    Delete(folio_protocol::KvDelete),
    /// `storage_list`.
    List(folio_protocol::KvList),
}

/// Why a `storage_*` call was refused: the engine's error, worded for the model.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StorageError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// Issues host API credentials for a session's processes, and answers the model's storage
/// tools from the same storage.
#[async_trait::async_trait]
pub trait HostBroker: Send + Sync {
    /// A credential for `caller`, valid until the grant is dropped (`None`: the host API is
    /// not served here, and the process runs without it).
    async fn grant(&self, caller: HostCaller, span: tracing::Span) -> Option<HostGrant>;

    /// Answers a `storage_*` call of the session `ctx` belongs to: the answer's JSON, or why
    /// it was refused (the tool's error).
    async fn storage(
        &self,
        ctx: &ToolContext,
        request: StorageRequest,
    ) -> Result<serde_json::Value, StorageError>;
}

/// A host API credential for one process: its address and token; revoked when dropped.
pub struct HostGrant {
    url: String,
    token: String,
    revoke: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl std::fmt::Debug for HostGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostGrant")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl HostGrant {
    /// A grant of `token` at `url`; `revoke` runs when it is dropped.
    pub fn new(url: String, token: String, revoke: impl FnOnce() + Send + Sync + 'static) -> Self {
        HostGrant {
            url,
            token,
            revoke: Some(Box::new(revoke)),
        }
    }

    /// Hands the process `FOLIO_HOST_URL` and `FOLIO_HOST_TOKEN`.
    pub fn apply(&self, command: &mut tokio::process::Command) {
        command
            .env(HOST_URL_ENV, &self.url)
            .env(HOST_TOKEN_ENV, &self.token);
    }
}

impl Drop for HostGrant {
    fn drop(&mut self) {
        if let Some(revoke) = self.revoke.take() {
            revoke();
        }
    }
}

/// A grant for `caller` from `broker`, when there is one.
pub(crate) async fn grant_for(
    broker: Option<&std::sync::Arc<dyn HostBroker>>,
    caller: HostCaller,
) -> Option<HostGrant> {
    match broker {
        Some(broker) => broker.grant(caller, tracing::Span::current()).await,
        None => None,
    }
}
