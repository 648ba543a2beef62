//! The state root's layout: every path under the directory an agent's sessions, artifacts and
//! memory are stored in. [`StateLayout`] is its one owner; the agent, the server and the CLI ask
//! it instead of joining path names themselves.

use std::path::{Path, PathBuf};

/// The directory one agent's state is stored under, and every path inside it:
///
/// ```text
/// <state-root>/                   default <project>/.folio/state
///   sessions/<id>/session.json    a session's metadata
///   sessions/<id>/workspace/      its host workspace
///   sessions/<id>/peers.json      the peer sessions its peer asks continue
///   traces/<id>.ndjson            its event log
///   artifacts/                    the artifact store
///   memory/                       durable memory, linked into every session workspace
///   evals/<runId>.json            a stored eval run (`folio eval`)
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateLayout {
    path: PathBuf,
}

impl StateLayout {
    /// The folder of a project that holds Folio's local data (`<project>/.folio`).
    pub const PROJECT_DIR: &str = ".folio";

    /// A state root at `path` (created on first use).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        StateLayout { path: path.into() }
    }

    /// The default state root of a project: `<project>/.folio/state`.
    pub fn for_project(project_dir: &Path) -> Self {
        StateLayout::new(project_dir.join(Self::PROJECT_DIR).join("state"))
    }

    /// The state root of agent `slug` when several agents share this root: `<root>/<slug>`.
    pub fn for_agent(&self, slug: &str) -> Self {
        StateLayout::new(self.path.join(slug))
    }

    /// The root directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `mcp-auth/<principal>/`: the principal's OAuth credentials, one file per MCP connection.
    pub fn mcp_auth_dir(&self, principal: &str) -> PathBuf {
        self.path.join("mcp-auth").join(principal)
    }

    /// `sessions/`: one folder per session.
    pub fn sessions_dir(&self) -> PathBuf {
        self.path.join("sessions")
    }

    /// `sessions/<id>`: metadata and workspace of one session.
    pub fn session_dir(&self, session_id: &str) -> PathBuf {
        self.sessions_dir().join(session_id)
    }

    /// `sessions/<id>/peers.json`: the peer sessions the session's peer asks continue, by
    /// connection name.
    pub fn peers_path(&self, session_id: &str) -> PathBuf {
        self.session_dir(session_id).join("peers.json")
    }

    /// `sessions/<id>/session.json`.
    pub fn meta_path(&self, session_id: &str) -> PathBuf {
        self.session_dir(session_id).join("session.json")
    }

    /// `sessions/<id>/workspace`: the session's host workspace.
    pub fn workspace_dir(&self, session_id: &str) -> PathBuf {
        self.session_dir(session_id).join("workspace")
    }

    /// `traces/<id>.ndjson`: the session's event log.
    pub fn trace_path(&self, session_id: &str) -> PathBuf {
        self.path
            .join("traces")
            .join(format!("{session_id}.ndjson"))
    }

    /// `artifacts/`: the artifact store.
    pub fn artifacts_dir(&self) -> PathBuf {
        self.path.join("artifacts")
    }

    /// `memory/`: the durable memory every local session workspace links as `memory/`.
    pub fn memory_dir(&self) -> PathBuf {
        self.path.join("memory")
    }

    /// `evals/`: stored eval runs (`<runId>.json`) and the state roots of their cases.
    pub fn evals_dir(&self) -> PathBuf {
        self.path.join("evals")
    }

    /// `evals/<runId>.json`: one stored eval run.
    pub fn eval_run_path(&self, run_id: &str) -> PathBuf {
        self.evals_dir().join(format!("{run_id}.json"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_path_lies_under_the_root() {
        let state = StateLayout::for_project(Path::new("proj"));
        assert_eq!(state.path(), Path::new("proj/.folio/state"));
        let demo = state.for_agent("demo");
        assert_eq!(
            [
                demo.sessions_dir(),
                demo.session_dir("ses_1"),
                demo.meta_path("ses_1"),
                demo.workspace_dir("ses_1"),
                demo.trace_path("ses_1"),
                demo.artifacts_dir(),
                demo.memory_dir(),
            ],
            [
                PathBuf::from("proj/.folio/state/demo/sessions"),
                PathBuf::from("proj/.folio/state/demo/sessions/ses_1"),
                PathBuf::from("proj/.folio/state/demo/sessions/ses_1/session.json"),
                PathBuf::from("proj/.folio/state/demo/sessions/ses_1/workspace"),
                PathBuf::from("proj/.folio/state/demo/traces/ses_1.ndjson"),
                PathBuf::from("proj/.folio/state/demo/artifacts"),
                PathBuf::from("proj/.folio/state/demo/memory"),
            ]
        );
    }
}
