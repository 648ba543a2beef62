//! What the engine keeps about a session beyond its log: the metadata type
//! ([`folio_store::SessionMeta`]), the options a creator sets, and what a session tells its
//! tools. The state root's files themselves are `folio-store-disk`'s.

use folio_agent::tools::SessionContext;
use folio_protocol::{Event, EventBody, Usage};
pub use folio_store::{AcceptedKey, SessionMeta, new_session_id, new_turn_id, valid_session_id};

/// The replay fixture of session `session_id` in an agent's record folder `dir`
/// (`<dir>/<session id>.jsonl`); `None` when the id is not a session id (`ses_` + ULID), which is
/// all that ever names a file there.
pub fn session_fixture(dir: &std::path::Path, session_id: &str) -> Option<std::path::PathBuf> {
    valid_session_id(session_id).then(|| dir.join(format!("{session_id}.jsonl")))
}
pub use folio_store_disk::StateRoot;
pub use folio_store_disk::state::load_meta;
pub(crate) use folio_store_disk::state::lock_state_root;

/// What the session tells its tools about itself on every call.
pub(crate) fn session_context(meta: &SessionMeta) -> SessionContext {
    SessionContext {
        dry_run: meta.dry_run,
        purpose: meta.purpose.clone(),
        continuation_key: meta.continuation_key.clone(),
        principal: meta.principal.clone(),
        peer_depth: meta.peer_depth,
        tool_calls_per_turn: None,
    }
}

/// What a creator tells a new session about itself beyond its request
/// ([`SessionManager::create_with`](crate::SessionManager::create_with)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionOptions {
    /// Why the session exists (`eval` for eval cases, so hooks can skip it).
    pub purpose: Option<String>,
    /// Write tools return their `dry_run_result` instead of running.
    pub dry_run: bool,
    /// How many peer asks deep the session is (a peer agent's ask sets it; 0 otherwise).
    pub peer_depth: u32,
    /// The channel's continuation key the session is opened for.
    pub continuation_key: Option<String>,
    /// Work done in the host workspace before the first turn (a channel's checkout).
    pub prepare: Option<crate::prepare::WorkspacePrep>,
    /// Which A/B variant the session runs with (default: assigned by the agent's variants).
    pub variant: VariantChoice,
}

/// Which A/B variant a new session runs with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum VariantChoice {
    /// Assigned by the agent's variants: a pinned principal's, else by continuation key, else
    /// by weight.
    #[default]
    Assign,
    /// This variant, which `agent.toml` must define, enabled or not (`folio eval --variants`,
    /// a fork keeping its original's).
    Chosen(String),
    /// None: the agent as written (`folio eval` without `--variants`).
    Unassigned,
}

/// The token usage the `turn.completed` events of `events` report, summed: a session's
/// [`SessionMeta::usage`].
pub(crate) fn reported_usage(events: &[Event]) -> Usage {
    events
        .iter()
        .filter_map(|event| match &event.body {
            EventBody::TurnCompleted(completed) => completed.usage,
            _ => None,
        })
        .sum()
}
