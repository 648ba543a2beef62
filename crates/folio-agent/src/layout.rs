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
///   github/                       GitHub channels' repository mirrors and checkout indexes
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

    /// `mcp-auth/<principal>/`: the principal's OAuth credentials, one file per MCP connection
    /// (the name made one safe path segment by [`principal_segment`]).
    pub fn mcp_auth_dir(&self, principal: &str) -> PathBuf {
        self.path
            .join("mcp-auth")
            .join(principal_segment(principal))
    }

    /// `github/`: the GitHub channels' cache (bare mirrors of PR repositories, per
    /// installation, and the index of each session's checkout).
    pub fn github_dir(&self) -> PathBuf {
        self.path.join("github")
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

/// A principal's name as one path segment: each byte outside `[A-Za-z0-9._@+-]` becomes `%XX`,
/// a name of dots only has its dots written `%2E`, and the empty name is `%`; so no name leaves
/// its parent folder (`/`, `..`) and two names never share a folder.
fn principal_segment(principal: &str) -> String {
    if principal.is_empty() {
        return "%".to_string();
    }
    let dots_only = principal.bytes().all(|b| b == b'.');
    principal
        .bytes()
        .map(|b| match b {
            b'.' if dots_only => "%2E".to_string(),
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'@' | b'+' | b'-' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever a tokens file names a principal, its credentials folder is one plain segment
        /// right under `mcp-auth/`, and distinct names get distinct folders.
        #[test]
        fn every_principal_gets_its_own_folder_under_mcp_auth(a in ".{0,12}", b in ".{0,12}") {
            let state = StateLayout::for_project(Path::new("proj"));
            let root = state.path().join("mcp-auth");
            let (dir_a, dir_b) = (state.mcp_auth_dir(&a), state.mcp_auth_dir(&b));
            let components: Vec<_> = dir_a.strip_prefix(&root).unwrap().components().collect();
            prop_assert_eq!(components.len(), 1);
            prop_assert!(matches!(components[0], std::path::Component::Normal(_)));
            prop_assert_eq!(a == b, dir_a == dir_b);
        }
    }

    #[test]
    fn plain_principal_names_are_kept() {
        let state = StateLayout::for_project(Path::new("p"));
        assert_eq!(
            state.mcp_auth_dir("local"),
            Path::new("p/.folio/state/mcp-auth/local")
        );
        assert_eq!(
            state.mcp_auth_dir(".."),
            Path::new("p/.folio/state/mcp-auth/%2E%2E")
        );
        assert_eq!(
            state.mcp_auth_dir("a/b"),
            Path::new("p/.folio/state/mcp-auth/a%2Fb")
        );
    }

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
