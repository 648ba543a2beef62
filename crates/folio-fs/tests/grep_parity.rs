//! `host_dir(..).grep(..)` finds exactly the `(path, line)` matches ripgrep finds, on real source
//! trees (crates from the local cargo registry), for a dozen patterns.
//!
//! Needs `rg` (Debian's ripgrep): run `scripts/install-test-deps`. A missing `rg` fails the test.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use folio_fs::{GrepQuery, host_dir};
use futures::TryStreamExt;

/// Crate directories (newest version of each name) from the cargo registry sources.
fn source_trees() -> Vec<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")));
    let Some(cargo_home) = cargo_home else {
        return Vec::new();
    };
    let Ok(registries) = std::fs::read_dir(cargo_home.join("registry/src")) else {
        return Vec::new();
    };
    let mut crate_dirs: Vec<PathBuf> = registries
        .flatten()
        .filter_map(|registry| std::fs::read_dir(registry.path()).ok())
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .collect();
    crate_dirs.sort();
    let mut chosen = Vec::new();
    for name in ["regex-syntax-", "serde-1", "tokio-1", "globset-"] {
        if let Some(dir) = crate_dirs.iter().rev().find(|dir| {
            dir.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(name))
        }) {
            chosen.push(dir.clone());
        }
    }
    chosen
}

type Matches = BTreeSet<(String, u64)>;

/// ripgrep's `(path, line)` matches under `dir`, paths as `/relative`.
fn ripgrep(dir: &Path, query: &GrepQuery) -> Matches {
    let mut command = Command::new("rg");
    command
        .current_dir(dir)
        .args([
            "--line-number",
            "--no-heading",
            "--no-ignore",
            "--hidden",
            "--no-follow",
            "--no-config",
            "--null",
            "--color=never",
            "-j1",
        ])
        .stdin(std::process::Stdio::null());
    if query.case_insensitive {
        command.arg("-i");
    }
    if let Some(glob) = &query.glob {
        command.args(["--glob", glob]);
    }
    command.arg("-e").arg(&query.pattern);
    let scope = query.path.as_deref().unwrap_or("/").trim_start_matches('/');
    command.arg(if scope.is_empty() { "." } else { scope });
    let output = match command.output() {
        Ok(output) => output,
        Err(err) => panic!(
            "cannot run `rg` ({err}): ripgrep is required by this test; run scripts/install-test-deps"
        ),
    };
    assert!(
        output.status.code().is_some_and(|code| code <= 1),
        "rg failed for {query:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut matches = Matches::new();
    for line in output
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
    {
        let nul = line.iter().position(|&b| b == 0).expect("rg --null output");
        let path = String::from_utf8_lossy(&line[..nul]);
        let path = format!("/{}", path.trim_start_matches("./"));
        let rest = &line[nul + 1..];
        let colon = rest.iter().position(|&b| b == b':').expect("line number");
        let number: u64 = std::str::from_utf8(&rest[..colon])
            .unwrap()
            .parse()
            .unwrap();
        matches.insert((path, number));
    }
    matches
}

async fn folio(dir: &Path, query: &GrepQuery) -> (Matches, Vec<(String, u64)>) {
    let fs = host_dir(dir, true).unwrap();
    let hits: Vec<_> = fs.grep(query.clone()).try_collect().await.unwrap();
    let ordered: Vec<(String, u64)> = hits.into_iter().map(|h| (h.path, h.line_number)).collect();
    (ordered.iter().cloned().collect(), ordered)
}

fn queries() -> Vec<GrepQuery> {
    let q = |pattern: &str| GrepQuery::new(pattern);
    let mut list = vec![
        q("unsafe"),
        q("Error"),
        q(r"impl\s+\w+\s+for"),
        q("^use "),
        q(r"\}$"),
        q("[A-Z][a-z]+Error"),
        q(r"\d{3,}"),
        q(r"^\s*//!"),
        q(r"pub(\(crate\))? fn"),
        q(r"\bSelf\b"),
        q(r#""[^"]*\\n""#),
        q("é|ü|→"),
        q("this_string_is_in_no_file_anywhere_42"),
    ];
    let mut insensitive = q("todo");
    insensitive.case_insensitive = true;
    list.push(insensitive);
    let mut rs_only = q("async fn");
    rs_only.glob = Some("*.rs".into());
    list.push(rs_only);
    let mut md_only = q("the");
    md_only.glob = Some("*.md".into());
    md_only.case_insensitive = true;
    list.push(md_only);
    let mut scoped = q("fn ");
    scoped.path = Some("/src".into());
    list.push(scoped);
    list
}

#[tokio::test]
async fn grep_matches_ripgrep_on_real_sources() {
    if Command::new("rg").arg("--version").output().is_err() {
        panic!("`rg` (ripgrep) is not installed; run scripts/install-test-deps");
    }
    let trees = source_trees();
    if trees.is_empty() {
        eprintln!(
            "SKIPPED grep parity: no crate sources under $CARGO_HOME/registry/src (run a cargo build first)"
        );
        return;
    }
    let mut compared = 0usize;
    for dir in &trees {
        for query in queries() {
            let expected = ripgrep(dir, &query);
            let (found, ordered) = folio(dir, &query).await;
            let missing: Vec<_> = expected.difference(&found).take(5).collect();
            let extra: Vec<_> = found.difference(&expected).take(5).collect();
            assert!(
                missing.is_empty() && extra.is_empty(),
                "{} {query:?}: rg {} vs folio {}; missing {missing:?}; extra {extra:?}",
                dir.display(),
                expected.len(),
                found.len()
            );
            // Stream order is by path (byte order) then line number, with no duplicates.
            let mut sorted = ordered.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(ordered, sorted, "{} {query:?}: order", dir.display());
            compared += expected.len();
        }
    }
    assert!(
        compared > 1000,
        "too few matches compared ({compared}) to mean anything"
    );
}

#[tokio::test]
async fn max_results_stops_early_and_keeps_order() {
    let Some(dir) = source_trees().into_iter().next() else {
        eprintln!("SKIPPED: no crate sources under $CARGO_HOME/registry/src");
        return;
    };
    let mut query = GrepQuery::new("fn");
    let (_, all) = folio(&dir, &query).await;
    query.max_results = Some(7);
    let (_, first) = folio(&dir, &query).await;
    assert_eq!(first.len(), 7.min(all.len()));
    assert_eq!(first[..], all[..first.len()]);
}
