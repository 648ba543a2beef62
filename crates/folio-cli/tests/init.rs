//! `folio init --list` and `folio init --skill`: the template listing, and the
//! `build-folio-agent` skill (the embedded copy, and every file it shows validating clean).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{folio_bin, init_templates};
use serde_json::Value;

/// The seed's seven templates; `folio init` offers each (and `pr-reviewer`, `webhook`).
const SEED_TEMPLATES: [&str; 7] = [
    "demo",
    "code-wiki",
    "security-reviewer",
    "security-help",
    "agentic-owners",
    "pr-autofixer",
    "triage",
];

fn folio(args: &[&str], dir: Option<&Path>) -> Output {
    let mut command = Command::new(folio_bin());
    command.args(args);
    if let Some(dir) = dir {
        command.arg(dir);
    }
    command.output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The repository's copy of the skill.
fn skill_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../skills/build-folio-agent/SKILL.md")
}

#[test]
fn init_list_names_every_template_with_one_line() {
    let output = folio(&["init", "--list"], None);
    assert!(output.status.success(), "{output:?}");
    insta::assert_snapshot!("init_list", stdout(&output));

    let output = folio(&["init", "--list", "--json"], None);
    assert!(output.status.success(), "{output:?}");
    let listed: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    for entry in &listed {
        let keys: Vec<&String> = entry.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["description", "name"], "{entry}");
        let description = entry["description"].as_str().unwrap();
        assert!(
            !description.is_empty() && !description.contains('\n'),
            "{entry}"
        );
    }
    let names = init_templates();
    for seed in SEED_TEMPLATES {
        assert!(
            names.iter().any(|name| name == seed),
            "{seed} missing: {names:?}"
        );
    }
    assert_eq!(names.len(), SEED_TEMPLATES.len() + 2, "{names:?}");
}

#[test]
fn init_list_refuses_a_template_or_a_directory_flag() {
    let output = folio(&["init", "--list", "--template", "triage"], None);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(
        stderr(&output).contains("cannot be used with"),
        "{}",
        stderr(&output)
    );
    let output = folio(&["init", "--list", "my-agent"], None);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let output = folio(&["init", "--json"], None);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let output = folio(&["init", "--skill", "--skills-dir", "a", "b"], None);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
}

#[test]
fn init_skill_writes_the_repository_skill_and_keeps_a_changed_copy() {
    let repository = std::fs::read_to_string(skill_path()).unwrap();
    let project = tempfile::tempdir().unwrap();
    let target = project
        .path()
        .join(".claude/skills/build-folio-agent/SKILL.md");

    let output = folio(&["init", "--skill"], Some(project.path()));
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        stdout(&output),
        format!(
            "Wrote the build-folio-agent skill at {}\n",
            target.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), repository);

    let output = folio(&["init", "--skill"], Some(project.path()));
    assert!(output.status.success(), "{output:?}");
    assert!(
        stdout(&output).starts_with("Already up to date:"),
        "{}",
        stdout(&output)
    );

    std::fs::write(&target, "my own notes").unwrap();
    let output = folio(&["init", "--skill"], Some(project.path()));
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        stderr(&output).contains("pass --force"),
        "{}",
        stderr(&output)
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "my own notes");

    let output = folio(&["init", "--skill", "--force"], Some(project.path()));
    assert!(output.status.success(), "{output:?}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), repository);

    let elsewhere = tempfile::tempdir().unwrap();
    let skills_dir = elsewhere.path().join("skills");
    let output = folio(
        &[
            "init",
            "--skill",
            "--skills-dir",
            skills_dir.to_str().unwrap(),
        ],
        None,
    );
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        std::fs::read_to_string(skills_dir.join("build-folio-agent/SKILL.md")).unwrap(),
        repository
    );
}

/// The fenced code blocks of `markdown` annotated with `path=<file>`: (path, contents).
fn shown_files(markdown: &str) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in markdown.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => {
                let path = info
                    .split_whitespace()
                    .find_map(|word| word.strip_prefix("path="));
                open = Some((path.unwrap_or_default().to_string(), String::new()));
            }
            (Some(_), Some("")) => {
                let (path, contents) = open.take().unwrap();
                if !path.is_empty() {
                    files.push((path, contents));
                }
            }
            (Some((_, contents)), _) => {
                contents.push_str(line);
                contents.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "an unclosed code block");
    files
}

#[test]
fn every_file_the_skill_shows_validates_clean() {
    let skill = std::fs::read_to_string(skill_path()).unwrap();
    let frontmatter = skill
        .strip_prefix("---\n")
        .and_then(|rest| rest.split_once("\n---\n"))
        .map(|(frontmatter, _)| frontmatter)
        .expect("the skill opens with YAML frontmatter");
    assert!(
        frontmatter.contains("name: build-folio-agent\n"),
        "{frontmatter}"
    );
    assert!(
        frontmatter.contains("description: Use when"),
        "{frontmatter}"
    );

    let files = shown_files(&skill);
    let paths: Vec<&str> = files.iter().map(|(path, _)| path.as_str()).collect();
    for expected in [
        "folio.toml",
        "agent/agent.toml",
        "agent/instructions.md",
        "agent/tools/word_count.toml",
        "agent/tools/word_count.py",
        "agent/skills/summaries/SKILL.md",
        "agent/schedules/weekly-digest.md",
        "agent/channels/notes.toml",
        "evals/count.eval.toml",
    ] {
        assert!(
            paths.contains(&expected),
            "the skill shows no {expected}: {paths:?}"
        );
    }
    let project = tempfile::tempdir().unwrap();
    let dir = project.path().join("notes-helper");
    for (path, contents) in &files {
        let target = dir.join(path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, contents).unwrap();
    }
    let output = Command::new(folio_bin())
        .args(["validate", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(
        (output.status.code(), stdout(&output)),
        (
            Some(0),
            "ok: agent \"notes-helper\" has no problems\n".to_string()
        ),
        "{}",
        stderr(&output)
    );
    // The tool the skill shows answers as the skill says.
    let output = Command::new(folio_bin())
        .args([
            "call",
            "word_count",
            "--input",
            r#"{"text": "old pond\na frog"}"#,
            "--dir",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let called: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        called["result"],
        serde_json::json!({"words": 4, "lines": 2})
    );
}
