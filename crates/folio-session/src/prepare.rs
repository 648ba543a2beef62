//! Work a channel does in a session's host workspace before a turn reads it (the GitHub
//! channel checks out the pull request's head there): [`WorkspacePrep`] rides with the message
//! that wakes the session and runs in the turn, before the message's workspace files are
//! written and before the model is asked anything. It is not durable: a message queued across
//! a restart runs without it.

use std::fmt;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

/// Prepares a session's host workspace before a turn.
pub trait PrepareWorkspace: Send + Sync {
    /// Prepares `workspace` (the host workspace directory of session `session`); reports its
    /// own failures (the turn runs either way).
    fn prepare<'a>(
        &'a self,
        session: &'a str,
        workspace: &'a Path,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
}

/// A shared [`PrepareWorkspace`] carried by a message (equal only to itself).
#[derive(Clone)]
pub struct WorkspacePrep(pub Arc<dyn PrepareWorkspace>);

impl fmt::Debug for WorkspacePrep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WorkspacePrep")
    }
}

impl PartialEq for WorkspacePrep {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for WorkspacePrep {}
