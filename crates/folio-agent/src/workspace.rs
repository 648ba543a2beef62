//! The local session workspace (docs/agent-folder.md "The session workspace"): before the first
//! tool call (or the first per-send files) of a session's local turns it gets `AGENTS.md`
//! (instructions + the agent-tool catalog), the skills under `.folio/skills/`, the scripts of
//! `execution = "agent"` tools under `.folio/tools/`, the `sandbox/workspace/**` seed files and
//! the `memory/` link ([`LazyWorkspace`]); before its turn, a send's `workspaceFiles` (never
//! under `memory/`). A turn that calls no tool writes nothing there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use folio_fs::{FileSystem, PathError, WorkspaceQuota};
use folio_project::{AgentDefinition, Execution, Limits, ToolDefinition};

use crate::skills::{SkillContent, materialize_host};

/// Written once a workspace is prepared, so later turns leave it as the model left it.
pub const PREPARED_MARKER: &str = ".folio/prepared";
/// Where `execution = "agent"` tools' scripts land in the workspace.
pub const AGENT_TOOLS_DIR: &str = ".folio/tools";
/// The folder per-send files may not write to (it links to durable per-agent memory).
pub const MEMORY_DIR: &str = "memory";

/// Why per-send workspace files were refused or not written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkspaceFileError {
    /// The path is absolute, leaves the workspace, or lands under `memory/`.
    #[error("workspace file \"{path}\": {reason}")]
    Refused {
        /// The path as sent.
        path: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The path is over a shape limit (depth, length or name length).
    #[error("workspace file {}", limit.describe(path))]
    OverLimit {
        /// The path as sent.
        path: String,
        /// Which limit, with the path's measure.
        limit: folio_fs::PathLimit,
    },
    /// The files would make the session workspace hold more than its quota.
    #[error("workspace files: {0}")]
    OverQuota(folio_fs::QuotaExceeded),
    /// The session workspace could not be measured against its quota.
    #[error("workspace files: cannot measure the session workspace: {0}")]
    Measure(String),
    /// Writing through the FileSystem failed.
    #[error("workspace file \"{path}\": {source}")]
    Write {
        /// The path as sent.
        path: String,
        /// The FileSystem error.
        source: PathError,
    },
    /// Writing into the host workspace failed or met a symbolic link on the way.
    #[error("workspace file \"{path}\": {source}")]
    Host {
        /// The path as sent.
        path: String,
        /// What the no-follow writer refused.
        source: folio_fs::BeneathError,
    },
}

/// Normalizes a per-send workspace path to a relative `a/b` form, refusing absolute paths,
/// paths that climb out of the workspace, and anything under `memory/` (after normalization,
/// so `./memory/x` and `foo/../memory/x` are refused too).
pub fn check_workspace_path(path: &str) -> Result<String, WorkspaceFileError> {
    let refused = |reason| WorkspaceFileError::Refused {
        path: path.to_string(),
        reason,
    };
    if path.starts_with('/') || path.starts_with('\\') {
        return Err(refused("must be relative to the workspace"));
    }
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split(['/', '\\']) {
        match segment {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Err(refused("leaves the workspace"));
                }
            }
            other => segments.push(other),
        }
    }
    if segments.is_empty() {
        return Err(refused("names no file"));
    }
    let relative = segments.join("/");
    folio_fs::check_path_limits(&relative).map_err(|limit| WorkspaceFileError::OverLimit {
        path: path.to_string(),
        limit,
    })?;
    if segments[0] == MEMORY_DIR {
        return Err(refused(
            "memory/ holds durable agent memory and cannot be written per send",
        ));
    }
    Ok(relative)
}

/// The quota of a session workspace under `limits` (`[limits]` of `folio.toml`).
pub fn workspace_quota(limits: &Limits) -> WorkspaceQuota {
    WorkspaceQuota {
        files: limits.workspace_files,
        bytes: limits.workspace_bytes,
    }
}

/// Writes a send's `workspaceFiles`, checking every path first (nothing is written when any
/// path is refused, or when they would put the host workspace over `quota`). On the host
/// default (`host_workspace`) each file is opened relative to the
/// workspace directory without following any symbolic link on the way, so a link planted in the
/// workspace cannot redirect the write outside it or into `memory/`; under an authored root the
/// files go through the turn's FileSystem.
pub async fn write_workspace_files(
    fs: &dyn FileSystem,
    host_workspace: Option<&Path>,
    files: &BTreeMap<String, String>,
    quota: WorkspaceQuota,
) -> Result<(), WorkspaceFileError> {
    let checked = files
        .iter()
        .map(|(path, contents)| check_workspace_path(path).map(|rel| (path, rel, contents)))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(workspace) = host_workspace
        && !checked.is_empty()
    {
        let mut usage = folio_fs::usage_of(workspace)
            .map_err(|err| WorkspaceFileError::Measure(err.to_string()))?;
        for (_, rel, contents) in &checked {
            usage = usage.replacing(&workspace.join(rel), contents.len() as u64);
        }
        quota.admit(usage).map_err(WorkspaceFileError::OverQuota)?;
    }
    if let Some(workspace) = host_workspace {
        // A few small files (bounded by the request body limit): written in place.
        for (path, rel, contents) in checked {
            folio_fs::write_beneath(workspace, &rel, contents.as_bytes()).map_err(|source| {
                WorkspaceFileError::Host {
                    path: path.clone(),
                    source,
                }
            })?;
        }
        return Ok(());
    }
    for (path, rel, contents) in checked {
        fs.write(&rel, contents)
            .await
            .map_err(|source| WorkspaceFileError::Write {
                path: path.clone(),
                source,
            })?;
    }
    Ok(())
}

/// The `execution = "agent"` tools of an agent.
fn agent_tools(definition: &AgentDefinition) -> Vec<&ToolDefinition> {
    definition
        .tools
        .iter()
        .filter(|tool| tool.execution == Execution::Agent)
        .collect()
}

/// The command line that runs an agent tool from the workspace root.
fn workspace_command(tool: &ToolDefinition) -> String {
    let scripts = tool.script_files();
    tool.command
        .iter()
        .map(|arg| {
            let arg = if scripts.contains(arg) {
                format!("{AGENT_TOOLS_DIR}/{}/{arg}", tool.name)
            } else {
                arg.clone()
            };
            if arg
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:@".contains(c))
            {
                arg
            } else {
                format!("'{}'", arg.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The catalog of `execution = "agent"` tools (in `AGENTS.md` and the system prompt).
pub fn agent_tool_catalog(definition: &AgentDefinition) -> Option<String> {
    let tools = agent_tools(definition);
    if tools.is_empty() {
        return None;
    }
    let mut text = String::from(
        "# Agent tools\nThese tools are scripts in the workspace. Run one with Shell from the workspace directory, passing its input as JSON on stdin: `echo '{\"input\": {…}}' | <command>`. It prints its result on stdout.\n",
    );
    for tool in tools {
        text.push_str(&format!(
            "- {}: {}\n  command: `{}`\n  input schema: {}\n",
            tool.name,
            tool.description,
            workspace_command(tool),
            tool.schema
        ));
    }
    Some(text.trim_end().to_string())
}

/// The `AGENTS.md` of a local session workspace: the instructions, then the agent-tool catalog.
pub fn agents_md(definition: &AgentDefinition) -> String {
    let mut text = definition.instructions.trim_end().to_string();
    if let Some(catalog) = agent_tool_catalog(definition) {
        text.push_str("\n\n");
        text.push_str(&catalog);
    }
    text.push('\n');
    text
}

/// A host session workspace that could not be prepared.
#[derive(Debug, thiserror::Error)]
#[error("could not prepare the workspace {} ({what}): {source}", workspace.display())]
pub struct PrepareError {
    /// The workspace directory.
    pub workspace: PathBuf,
    /// The step that failed (`AGENTS.md`, `skills`, `memory/ link`, …).
    pub what: &'static str,
    /// The OS error.
    pub source: std::io::Error,
}

/// A host session workspace prepared on its first need ([`LazyWorkspace::ready`]: the turn's
/// first tool call, its per-send files, a direct tool call) instead of at every turn, so a turn
/// that touches no file creates nothing in it. Clones share one preparation.
#[derive(Clone)]
pub struct LazyWorkspace {
    definition: Arc<AgentDefinition>,
    skills: Arc<Vec<SkillContent>>,
    workspace: PathBuf,
    memory: PathBuf,
    ready: Arc<tokio::sync::OnceCell<()>>,
}

impl LazyWorkspace {
    /// The workspace `workspace` of an agent, linking `memory` as `memory/`; nothing is written
    /// before [`LazyWorkspace::ready`].
    pub fn new(
        definition: Arc<AgentDefinition>,
        skills: Arc<Vec<SkillContent>>,
        workspace: PathBuf,
        memory: PathBuf,
    ) -> Self {
        LazyWorkspace {
            definition,
            skills,
            workspace,
            memory,
            ready: Arc::new(tokio::sync::OnceCell::new()),
        }
    }

    /// Prepares the workspace ([`prepare_host_workspace`]) unless this binding already did;
    /// a failed preparation is tried again at the next need.
    pub async fn ready(&self) -> Result<(), PrepareError> {
        self.ready
            .get_or_try_init(|| async {
                prepare_host_workspace(
                    &self.definition,
                    &self.skills,
                    &self.workspace,
                    &self.memory,
                )
                .await
                .map(drop)
            })
            .await
            .map(drop)
    }
}

/// Prepares a host session workspace before its first use; returns `false` when it was
/// already prepared (later turns keep what the model changed).
pub async fn prepare_host_workspace(
    definition: &AgentDefinition,
    skills: &[SkillContent],
    workspace: &Path,
    memory: &Path,
) -> Result<bool, PrepareError> {
    let marker = workspace.join(PREPARED_MARKER);
    if marker.exists() {
        return Ok(false);
    }
    let failed = |what: &'static str, source: std::io::Error| PrepareError {
        workspace: workspace.to_path_buf(),
        what,
        source,
    };
    tokio::fs::create_dir_all(workspace)
        .await
        .map_err(|e| failed("create", e))?;
    if let Some(seeds) = &definition.sandbox_dir {
        copy_tree(seeds, workspace).map_err(|e| failed("sandbox/workspace seeds", e))?;
    }
    tokio::fs::write(workspace.join("AGENTS.md"), agents_md(definition))
        .await
        .map_err(|e| failed("AGENTS.md", e))?;
    materialize_host(skills, workspace)
        .await
        .map_err(|e| failed("skills", e))?;
    for tool in agent_tools(definition) {
        let dir = workspace.join(AGENT_TOOLS_DIR).join(&tool.name);
        for script in tool.script_files() {
            let target = dir.join(&script);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| failed("agent tools", e))?;
            }
            std::fs::copy(tool.tools_dir.join(&script), &target)
                .map_err(|e| failed("agent tools", e))?;
        }
    }
    link_memory(workspace, memory).map_err(|e| failed("memory/ link", e))?;
    if let Some(parent) = marker.parent() {
        std::fs::create_dir_all(parent).map_err(|e| failed("marker", e))?;
    }
    tokio::fs::write(&marker, "")
        .await
        .map_err(|e| failed("marker", e))?;
    Ok(true)
}

/// Links `{workspace}/memory` to the agent's durable memory folder (created when missing), so
/// what one session keeps there the next session of the agent finds. A `memory` entry the
/// sandbox seeds already put in the workspace is left alone.
fn link_memory(workspace: &Path, memory: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(memory)?;
    let link = workspace.join(MEMORY_DIR);
    if link.symlink_metadata().is_ok() {
        return Ok(());
    }
    let target = std::path::absolute(memory)?;
    std::os::unix::fs::symlink(target, link)
}

/// Copies every file under `from` into `to`, keeping relative paths (links are not followed).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn memory_is_refused_after_normalization() {
        for path in [
            "memory/x",
            "./memory/x",
            "foo/../memory/x",
            "memory",
            "a/./../memory/b",
        ] {
            assert!(
                matches!(
                    check_workspace_path(path),
                    Err(WorkspaceFileError::Refused { .. })
                ),
                "{path} should be refused"
            );
        }
        assert!(check_workspace_path("/etc/passwd").is_err());
        assert!(check_workspace_path("../x").is_err());
        assert!(check_workspace_path("a/../../x").is_err());
        assert_eq!(check_workspace_path("./a/b/../c.txt").unwrap(), "a/c.txt");
        assert_eq!(check_workspace_path("memoryx/a").unwrap(), "memoryx/a");
        assert_eq!(
            check_workspace_path("foo/../memory/x")
                .unwrap_err()
                .to_string(),
            "workspace file \"foo/../memory/x\": memory/ holds durable agent memory and cannot be written per send"
        );
    }

    #[tokio::test]
    async fn files_are_written_only_when_every_path_is_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let fs = folio_fs::local_fs(dir.path());
        for host in [None, Some(dir.path())] {
            let mut files = BTreeMap::new();
            files.insert("in/a.txt".to_string(), "A".to_string());
            write_workspace_files(fs.as_ref(), host, &files, workspace_quota(&Limits::DEFAULT))
                .await
                .unwrap();
            assert_eq!(
                std::fs::read_to_string(dir.path().join("in/a.txt")).unwrap(),
                "A"
            );
            files.insert("b.txt".to_string(), "B".to_string());
            files.insert("./memory/c".to_string(), "C".to_string());
            assert!(
                write_workspace_files(fs.as_ref(), host, &files, workspace_quota(&Limits::DEFAULT))
                    .await
                    .is_err()
            );
            assert!(!dir.path().join("b.txt").exists());
        }
    }

    #[tokio::test]
    async fn host_files_over_the_quota_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let fs = folio_fs::local_fs(dir.path());
        std::fs::write(dir.path().join("kept.txt"), "1234").unwrap();
        let quota = WorkspaceQuota {
            files: 2,
            bytes: 10,
        };
        let files = BTreeMap::from([
            ("a.txt".to_string(), "A".to_string()),
            ("b.txt".to_string(), "B".to_string()),
        ]);
        let err = write_workspace_files(fs.as_ref(), Some(dir.path()), &files, quota)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "workspace files: the session workspace would hold 3 files; at most 2 are allowed ([limits] workspace_files): delete files first"
        );
        let big = BTreeMap::from([("kept.txt".to_string(), "x".repeat(11))]);
        let err = write_workspace_files(fs.as_ref(), Some(dir.path()), &big, quota)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("workspace_bytes"), "{err}");
        assert!(!dir.path().join("a.txt").exists());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("kept.txt")).unwrap(),
            "1234"
        );
        let deep = BTreeMap::from([("d/".repeat(3000) + "x", "x".to_string())]);
        let err = write_workspace_files(fs.as_ref(), Some(dir.path()), &deep, quota)
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("workspace file path too deep: d/d/"),
            "{err}"
        );
        assert!(!dir.path().join("d").exists());
    }

    #[tokio::test]
    async fn host_workspace_files_never_follow_links() {
        let outside = tempfile::tempdir().unwrap();
        let memory = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("victim"), "keep").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink(memory.path(), dir.path().join("notes")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("victim"), dir.path().join("v")).unwrap();
        let fs = folio_fs::local_fs(dir.path());
        for rel in ["out/victim", "out/new.txt", "notes/x", "v", "./out/deep/x"] {
            let files = BTreeMap::from([(rel.to_string(), "owned".to_string())]);
            let err = write_workspace_files(
                fs.as_ref(),
                Some(dir.path()),
                &files,
                workspace_quota(&Limits::DEFAULT),
            )
            .await
            .unwrap_err();
            assert!(
                matches!(err, WorkspaceFileError::Host { .. }),
                "{rel}: {err}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(outside.path().join("victim")).unwrap(),
            "keep"
        );
        assert!(!outside.path().join("new.txt").exists());
        assert_eq!(std::fs::read_dir(memory.path()).unwrap().count(), 0);
    }
}
