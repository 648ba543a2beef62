//! Where host-default session workspaces live: under the state root
//! (`sessions/<id>/workspace`), or under a workspace root (`folio serve --workspace-root DIR`:
//! `<DIR>/<session id>`), which servers sharing sessions keep on a shared filesystem.
//!
//! A workspace root carries an id (`.folio-workspace-root`, written once, by whichever server
//! opens it first); a session records the id of the root its workspace was made under. A
//! server runs a host-default turn of a session only where it sees that root (the same id,
//! mounted at any path); otherwise it refuses the turn and says which root to mount, instead of
//! running it in an empty workspace. An agent with a `[root]` or a live root keeps its files
//! there, not in the host workspace, and is not refused.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{ManagerError, OpenError};
use crate::state::{SessionMeta, StateRoot};

/// The file in a workspace root that holds its id.
const MARKER: &str = ".folio-workspace-root";

/// A directory holding session workspaces, with its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceRoot {
    path: PathBuf,
    id: String,
}

impl WorkspaceRoot {
    /// Opens the workspace root at `path`, creating it and its id when missing; two servers
    /// opening one new root at once agree on one id.
    pub fn open(path: &Path) -> Result<WorkspaceRoot, OpenError> {
        let io = |what: &str, err: std::io::Error| {
            OpenError::io(
                format!(
                    "workspace root {} (pass --workspace-root a directory this server can write): {what}",
                    path.display()
                ),
                err,
            )
        };
        std::fs::create_dir_all(path).map_err(|e| io("cannot create it", e))?;
        let marker = path.join(MARKER);
        if !marker.exists() {
            // Written whole to a file of this process's own, then linked into place: a server
            // that loses the race reads the winner's id, never a half-written one.
            let id = format!("wsr_{}", ulid::Ulid::generate());
            let mine = path.join(format!("{MARKER}.{id}"));
            let mut file =
                std::fs::File::create(&mine).map_err(|e| io("cannot write its id", e))?;
            file.write_all(format!("{id}\n").as_bytes())
                .and_then(|()| file.sync_all())
                .map_err(|e| io("cannot write its id", e))?;
            let linked = std::fs::hard_link(&mine, &marker);
            let _ = std::fs::remove_file(&mine);
            match linked {
                Ok(()) => {
                    std::fs::File::open(path)
                        .and_then(|dir| dir.sync_all())
                        .map_err(|e| io("cannot sync its id", e))?;
                }
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(err) => return Err(io("cannot write its id", err)),
            }
        }
        let text = std::fs::read_to_string(&marker).map_err(|e| io("cannot read its id", e))?;
        let id = text.trim();
        if !id.starts_with("wsr_") || id.len() != 30 {
            return Err(OpenError::Unusable(format!(
                "workspace root {}: {} does not hold a workspace root id; it is not a folio workspace root (or was edited): pass another directory",
                path.display(),
                marker.display()
            )));
        }
        Ok(WorkspaceRoot {
            path: path.to_path_buf(),
            id: id.to_string(),
        })
    }

    /// The workspace root of agent `slug` when several agents share this one: `<root>/<slug>`.
    pub fn for_agent(&self, slug: &str) -> Result<WorkspaceRoot, OpenError> {
        WorkspaceRoot::open(&self.path.join(slug))
    }

    /// Its id (`wsr_` + a ULID).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Where it is on this server.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The host workspace of the session `meta` describes on a server with `root` (`None`: no
/// `--workspace-root`), or why this server cannot see it (`Refused`).
pub(crate) fn session_workspace(
    state: &StateRoot,
    root: Option<&WorkspaceRoot>,
    meta: &SessionMeta,
) -> Result<PathBuf, ManagerError> {
    let id = &meta.session_id;
    match (&meta.workspace_root, root) {
        (None, _) => Ok(state.workspace_dir(id)),
        (Some(wanted), Some(root)) if *wanted == root.id => Ok(root.path.join(id)),
        (Some(wanted), root) => Err(ManagerError::Refused(format!(
            "session {id} keeps its workspace under the workspace root {wanted}, which this server does not see ({}): start it with --workspace-root on the shared filesystem holding {wanted}",
            match root {
                Some(root) => format!(
                    "its --workspace-root {} is {}",
                    root.path.display(),
                    root.id
                ),
                None => "it has no --workspace-root".to_string(),
            }
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_keeps_its_id_and_a_foreign_marker_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let first = WorkspaceRoot::open(&dir.path().join("shared")).unwrap();
        let again = WorkspaceRoot::open(&dir.path().join("shared")).unwrap();
        assert_eq!(first, again, "the id is written once");
        let other = WorkspaceRoot::open(&dir.path().join("other")).unwrap();
        assert_ne!(first.id(), other.id());
        let names: Vec<_> = std::fs::read_dir(first.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, [MARKER], "no temporary file is left");
        std::fs::write(other.path().join(MARKER), "hello\n").unwrap();
        let refused = WorkspaceRoot::open(other.path()).unwrap_err().to_string();
        assert!(
            refused.contains("does not hold a workspace root id"),
            "{refused}"
        );
    }

    #[test]
    fn servers_racing_to_open_a_new_root_agree_on_its_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared");
        let ids: Vec<String> = std::thread::scope(|scope| {
            let racers: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| WorkspaceRoot::open(&path).unwrap().id))
                .collect();
            racers
                .into_iter()
                .map(|racer| racer.join().unwrap())
                .collect()
        });
        assert!(ids.windows(2).all(|pair| pair[0] == pair[1]), "{ids:?}");
    }
}
