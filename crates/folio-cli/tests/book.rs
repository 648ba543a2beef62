//! The book in `docs/` (mdBook): it builds; every internal link and anchor of the built HTML
//! resolves; every agent file a page shows validates with `folio validate`; every JSON example
//! parses; every `folio …` command line names real commands and flags. The mdBook build needs
//! `target/test-deps/bin/mdbook` (`scripts/install-test-deps`): without it that test is skipped,
//! saying so, unless `FOLIO_TEST_DEPS_REQUIRED=1`, where it fails.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::folio_bin;
use folio_protocol::CommandHelp;
use folio_test_support::{test_deps, workspace_root};

fn docs() -> PathBuf {
    workspace_root().join("docs")
}

/// The markdown pages SUMMARY.md links, relative to docs/.
fn pages() -> Vec<String> {
    let summary = std::fs::read_to_string(docs().join("SUMMARY.md")).expect("docs/SUMMARY.md");
    let link = regex::Regex::new(r"\]\(([^)#]+\.md)\)").unwrap();
    let mut pages: Vec<String> = link
        .captures_iter(&summary)
        .map(|found| found[1].to_string())
        .collect();
    pages.dedup();
    assert!(pages.len() > 10, "SUMMARY.md links only {pages:?}");
    pages
}

/// One fenced code block: its info string (`toml`, `sh`, …), its first line number, its text.
struct Block {
    lang: String,
    line: usize,
    text: String,
}

fn blocks(markdown: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (number, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        match &mut open {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    open = Some(Block {
                        lang: info.split([' ', ',']).next().unwrap_or("").to_string(),
                        line: number + 2,
                        text: String::new(),
                    });
                }
            }
            Some(block) => {
                if trimmed.starts_with("```") {
                    blocks.push(open.take().unwrap());
                } else {
                    block.text.push_str(line);
                    block.text.push('\n');
                }
            }
        }
    }
    blocks
}

#[test]
fn every_json_example_parses() {
    let mut failures = Vec::new();
    for page in pages() {
        let markdown = std::fs::read_to_string(docs().join(&page)).unwrap();
        for block in blocks(&markdown).into_iter().filter(|b| b.lang == "json") {
            if let Err(err) = serde_json::from_str::<serde_json::Value>(&block.text) {
                failures.push(format!("docs/{page}:{}: {err}", block.line));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "JSON examples that do not parse (use ```jsonc or ```text for partial ones):\n{}",
        failures.join("\n")
    );
}

#[test]
fn every_agent_folder_a_page_shows_validates() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let markdown = std::fs::read_to_string(docs().join(&page)).unwrap();
        // The files the page's TOML blocks name in their first line (`# agent/tools/x.toml`).
        let mut files: BTreeMap<String, String> = BTreeMap::new();
        for block in blocks(&markdown).into_iter().filter(|b| b.lang == "toml") {
            let first = block.text.lines().next().unwrap_or("");
            let Some(path) = first.strip_prefix("# ").map(str::trim) else {
                continue;
            };
            let agent_file = (path.starts_with("agent/") || path.starts_with("evals/"))
                && path.ends_with(".toml")
                || path == "folio.toml";
            if agent_file && !path.contains("..") && !path.contains(' ') {
                files.insert(path.to_string(), block.text);
            }
        }
        if files.is_empty() {
            continue;
        }
        let project = tempfile::tempdir().unwrap();
        files
            .entry("agent/agent.toml".to_string())
            .or_insert_with(|| "model = \"openai:gpt-4.1-mini\"\n".to_string());
        for (path, text) in &files {
            let file = project.path().join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        // Authored tools and prompts a page shows only as TOML get an instructions file.
        let instructions = project.path().join("agent/instructions.md");
        if !instructions.exists() {
            std::fs::write(instructions, "You help.\n").unwrap();
        }
        let output = Command::new(folio_bin())
            .args(["validate", "--dir"])
            .arg(project.path())
            .output()
            .unwrap();
        checked += 1;
        if !output.status.success() {
            failures.push(format!(
                "docs/{page} ({} files): {}{}",
                files.len(),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    assert!(checked > 0, "no page shows an agent file with its path");
    assert!(
        failures.is_empty(),
        "agent files in the book that do not validate:\n{}",
        failures.join("\n")
    );
}

/// The whole CLI as `folio help --json` describes it.
fn cli() -> CommandHelp {
    let output = Command::new(folio_bin())
        .args(["help", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Why `words` (after `folio`) is not a command line clap would parse for its flags, if it is
/// not: an unknown command or an unknown `--flag`.
fn check_command(cli: &CommandHelp, words: &[&str]) -> Option<String> {
    let mut command = cli;
    let mut rest = words;
    while let Some((first, tail)) = rest.split_first() {
        match command.subcommands.iter().find(|sub| sub.name == *first) {
            Some(sub) => {
                command = sub;
                rest = tail;
            }
            None => break,
        }
    }
    if command.name == "folio" && !matches!(words, ["--version" | "--help" | "-V" | "-h"]) {
        return Some(format!("no command `{}`", words.first().unwrap_or(&"")));
    }
    let known: BTreeSet<&str> = command
        .args
        .iter()
        .chain(&cli.args)
        .filter_map(|arg| arg.long.as_deref())
        .chain(["--help", "--version"])
        .collect();
    rest.iter()
        .filter(|word| word.starts_with("--"))
        .map(|word| word.split('=').next().unwrap_or(word))
        .find(|flag| !known.contains(flag))
        .map(|flag| format!("`folio {}` has no flag {flag}", command.name))
}

#[test]
fn every_folio_command_line_names_real_commands_and_flags() {
    let cli = cli();
    let mut failures = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let markdown = std::fs::read_to_string(docs().join(&page)).unwrap();
        for block in blocks(&markdown)
            .into_iter()
            .filter(|b| matches!(b.lang.as_str(), "sh" | "bash" | "console" | "shell"))
        {
            // In a `console` block only `$ ` lines are commands; the rest is their output.
            let console = block.lang == "console";
            for (offset, line) in block.text.lines().enumerate() {
                let line = line.trim();
                let line = match line.strip_prefix("$ ") {
                    Some(command) => command,
                    None if console => continue,
                    None => line,
                };
                let Some(args) = line.strip_prefix("folio ") else {
                    continue;
                };
                // The command ends at a comment, a pipe or a redirection.
                let args = args.split([' ']).take_while(|word| {
                    !word.starts_with('#') && !matches!(*word, "|" | ">" | ">>" | "&&" | "\\")
                });
                let words: Vec<&str> = args.filter(|word| !word.is_empty()).collect();
                checked += 1;
                if let Some(problem) = check_command(&cli, &words) {
                    failures.push(format!("docs/{page}:{}: {problem}", block.line + offset));
                }
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} folio command lines in the book"
    );
    assert!(
        failures.is_empty(),
        "command lines in the book that folio would refuse:\n{}",
        failures.join("\n")
    );
}

/// Every `href` and `id` of the built HTML files under `dir`, by file.
fn html_files(dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            html_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "html") {
            out.insert(path.clone(), std::fs::read_to_string(&path).unwrap());
        }
    }
}

#[test]
fn the_book_builds_and_every_internal_link_and_anchor_resolves() {
    let mdbook = test_deps().join("bin/mdbook");
    if !mdbook.exists() {
        assert!(
            std::env::var("FOLIO_TEST_DEPS_REQUIRED").as_deref() != Ok("1"),
            "{} is missing: run scripts/install-test-deps",
            mdbook.display()
        );
        eprintln!(
            "skipped: {} is missing (scripts/install-test-deps installs it)",
            mdbook.display()
        );
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let build = Command::new(&mdbook)
        .arg("build")
        .arg(docs())
        .arg("--dest-dir")
        .arg(out.path())
        .output()
        .unwrap();
    assert!(build.status.success(), "mdbook build failed: {build:?}");
    let stderr = String::from_utf8_lossy(&build.stderr);
    assert!(
        !stderr.contains("[WARN]") && !stderr.contains("[ERROR]"),
        "mdbook warned:\n{stderr}"
    );

    let mut html = BTreeMap::new();
    html_files(out.path(), &mut html);
    let href = regex::Regex::new(r#"href="([^"]*)""#).unwrap();
    let id = regex::Regex::new(r#"id="([^"]*)""#).unwrap();
    let ids: BTreeMap<&PathBuf, BTreeSet<&str>> = html
        .iter()
        .map(|(path, text)| {
            let found = id
                .captures_iter(text)
                .map(|c| c.get(1).unwrap().as_str())
                .collect();
            (path, found)
        })
        .collect();
    let mut broken = Vec::new();
    for (path, text) in &html {
        // mdBook's own pages (print, 404, toc) link its chrome; the pages are what we wrote.
        let name = path.file_name().unwrap().to_string_lossy();
        if matches!(name.as_ref(), "print.html" | "404.html" | "toc.html") {
            continue;
        }
        for found in href.captures_iter(text) {
            let link = &found[1];
            if link.is_empty()
                || link.contains("://")
                || link.starts_with("mailto:")
                || link.starts_with("javascript:")
            {
                continue;
            }
            let (file, anchor) = link.split_once('#').unwrap_or((link, ""));
            let target = if file.is_empty() {
                path.clone()
            } else {
                path.parent().unwrap().join(file)
            };
            let target = normalize(&target);
            if !target.starts_with(out.path()) {
                broken.push(format!("{}: {link} leaves the book", rel(out.path(), path)));
                continue;
            }
            if !target.exists() {
                broken.push(format!("{}: {link} (no such file)", rel(out.path(), path)));
                continue;
            }
            if !anchor.is_empty()
                && ids
                    .get(&target)
                    .is_some_and(|found| !found.contains(anchor))
            {
                broken.push(format!(
                    "{}: {link} (no such anchor)",
                    rel(out.path(), path)
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "broken links in the book:\n{}",
        broken.join("\n")
    );
}

/// `path` with `.` and `..` resolved without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}
