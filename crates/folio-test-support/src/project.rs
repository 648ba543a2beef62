//! Agent project folders on disk for tests, and where `scripts/install-test-deps` put the peers.

use std::path::{Path, PathBuf};

/// Writes `files` (relative path → contents) under `dir`.
pub fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (path, contents) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
}

/// A temporary project folder named `test-agent` (a valid slug, as `folio serve` mounts an
/// agent under its directory's name), removed when dropped.
pub struct Project {
    _parent: tempfile::TempDir,
    path: PathBuf,
}

impl Project {
    /// The project directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A project with `agent/instructions.md` and `agent/agent.toml`.
pub fn project(agent_toml: &str) -> Project {
    let parent = tempfile::tempdir().unwrap();
    let path = parent.path().join("test-agent");
    write_files(
        &path,
        &[
            ("agent/instructions.md", "You are a test agent.\n"),
            ("agent/agent.toml", agent_toml),
        ],
    );
    Project {
        _parent: parent,
        path,
    }
}

/// A project of a host-workspace agent on the mock model (`openai:gpt-test`), with `evals`
/// (path under `evals/` → text).
pub fn eval_project(evals: &[(&str, &str)]) -> Project {
    let dir = project("model = \"openai:gpt-test\"\n");
    let files: Vec<(String, &str)> = evals
        .iter()
        .map(|(path, text)| (format!("evals/{path}"), *text))
        .collect();
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), *t)).collect();
    write_files(dir.path(), &files);
    dir
}

/// The workspace's root directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root")
}

/// Where `scripts/install-test-deps` installs the test peers (npm packages, a Python venv).
pub fn test_deps() -> PathBuf {
    workspace_root().join("target/test-deps")
}

/// The Python of the test peers' venv (`target/test-deps/venv`).
pub fn python() -> PathBuf {
    test_deps().join("venv/bin/python")
}
