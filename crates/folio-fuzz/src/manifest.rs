//! Agent-folder manifests: one file written into an agent folder, then the folder discovered as
//! `folio check` and `folio serve` discover it (every manifest kind's parser and checks).

use std::path::Path;

use tempfile::TempDir;

/// TOML files, each with the folder (or file) removed after the run.
const TOML_SLOTS: &[(&str, &str)] = &[
    ("folio.toml", "folio.toml"),
    ("agent/agent.toml", "agent/agent.toml"),
    ("agent/tools/fuzz.toml", "agent/tools"),
    ("agent/channels/fuzz.toml", "agent/channels"),
    ("agent/mcp-connections/fuzz.toml", "agent/mcp-connections"),
    ("agent/host-connections/fuzz.toml", "agent/host-connections"),
    ("agent/hooks/fuzz.toml", "agent/hooks"),
    ("agent/artifacts.toml", "agent/artifacts.toml"),
    ("agent/variants/fuzz.toml", "agent/variants"),
    ("agent/skills/fuzz.toml", "agent/skills"),
    ("agent/subagents/fuzz/agent.toml", "agent/subagents"),
    ("evals/fuzz.toml", "evals"),
];

/// Markdown files whose YAML frontmatter is parsed.
const MARKDOWN_SLOTS: &[(&str, &str)] = &[
    ("agent/skills/fuzz.md", "agent/skills"),
    ("agent/skills/fuzz/SKILL.md", "agent/skills"),
    ("agent/schedules/fuzz.md", "agent/schedules"),
];

/// A TOML manifest: the first byte picks the file (folio.toml, agent.toml, a tool, channel,
/// MCP connection, hook, artifacts, variant, generated skill, subagent or eval), the rest is
/// its text.
pub fn manifest(data: &[u8]) {
    discover_with(TOML_SLOTS, data);
}

/// A markdown file with YAML frontmatter: the first byte picks a flat skill, a packaged skill's
/// `SKILL.md` or a schedule, the rest is its text.
pub fn frontmatter(data: &[u8]) {
    discover_with(MARKDOWN_SLOTS, data);
}

fn discover_with(slots: &[(&str, &str)], data: &[u8]) {
    PROJECT.with(|project| discover_in(project.path(), slots, data));
}

fn discover_in(project: &Path, slots: &[(&str, &str)], data: &[u8]) {
    let (pick, text) = crate::selector(data);
    let (file, written) = slots[usize::from(pick) % slots.len()];
    let path = project.join(file);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create the manifest's folder");
    }
    if file.starts_with("agent/subagents/") {
        std::fs::write(
            path.with_file_name("instructions.md"),
            "You review drafts.\n",
        )
        .expect("write the subagent's instructions");
    }
    std::fs::write(&path, text).expect("write the manifest");
    let found = folio_project::discover(project);
    for diagnostic in &found.diagnostics {
        let _ = diagnostic.to_string();
    }
    if let Some(definition) = &found.definition {
        let _ = serde_json::to_string(&folio_project::describe(definition));
    }
    if file.starts_with("evals/") {
        let evals = folio_project::discover_evals(project);
        let _ = evals.has_errors();
    }
    remove(&project.join(written));
}

thread_local! {
    /// The project folder of this thread: `agent/instructions.md` and nothing else between
    /// runs (removed when the thread ends).
    static PROJECT: TempDir = new_project();
}

fn new_project() -> TempDir {
    let dir = tempfile::Builder::new()
        .prefix("folio-fuzz-project")
        .tempdir()
        .expect("create the project folder");
    std::fs::create_dir_all(dir.path().join("agent")).expect("create agent/");
    std::fs::write(
        dir.path().join("agent/instructions.md"),
        "You answer questions about the weather.\n",
    )
    .expect("write the instructions");
    dir
}

fn remove(path: &Path) {
    let removed = if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    if let Err(err) = removed {
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound, "{err}");
    }
}
