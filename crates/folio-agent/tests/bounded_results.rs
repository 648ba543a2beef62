//! Listing tools return a page and say how to get the next one: a Grep with a million hits is a
//! bounded result, and paging through it with `offset` returns every hit exactly once.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use folio_agent::tools::{FileTool, ScratchMode, TodoList, ToolContext, ToolOutput, ToolRegistry};
use folio_fs::{FileSystem, host_dir};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const FILES: usize = 100;
const LINES: usize = 10_000;

async fn call(fs: &Arc<dyn FileSystem>, tool: &str, input: Value) -> String {
    let mut registry = ToolRegistry::new();
    for tool in FileTool::ALL {
        registry.register(Arc::new(tool)).unwrap();
    }
    let ctx = ToolContext {
        fs: fs.clone(),
        workspace: PathBuf::from("/nonexistent-workspace"),
        scratch: ScratchMode::Rooted,
        cancel: CancellationToken::new(),
        todos: TodoList::default(),
        session_id: "ses_test".into(),
        call_id: "call_1".into(),
        dry_run: false,
        purpose: None,
        continuation_key: None,
        principal: "local".into(),
        peer_depth: 0,
        turn_id: None,
        host: None,
    };
    match registry.call(tool, input, &ctx).await {
        Ok(ToolOutput::Text(text)) => text,
        other => panic!("expected text, got {other:?}"),
    }
}

/// 100 files of 10,000 matching lines each: a million hits.
fn million_hits() -> (tempfile::TempDir, Arc<dyn FileSystem>) {
    let dir = tempfile::tempdir().unwrap();
    for file in 0..FILES {
        let text: String = (0..LINES)
            .map(|line| format!("hit {file}.{line}\n"))
            .collect();
        std::fs::write(dir.path().join(format!("f{file:03}.txt")), text).unwrap();
    }
    let fs = host_dir(dir.path(), true).unwrap();
    (dir, fs)
}

#[tokio::test]
async fn a_million_grep_hits_come_in_pages_that_cover_every_hit_once() {
    let (_dir, fs) = million_hits();
    let first = call(&fs, "Grep", json!({"pattern": "hit"})).await;
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(lines.len(), 201, "200 hits and the note");
    assert_eq!(lines[0], "/f000.txt:1:hit 0.0");
    assert_eq!(
        lines[200],
        "… showing lines 1–200 of 1000000; call Grep with offset=200 for the next page, or narrow the pattern"
    );

    let page = 250_000;
    let mut seen = HashSet::new();
    for offset in (0..FILES * LINES).step_by(page) {
        let text = call(
            &fs,
            "Grep",
            json!({"pattern": "hit", "offset": offset, "head_limit": page}),
        )
        .await;
        for line in text.lines().filter(|line| !line.starts_with('…')) {
            assert!(seen.insert(line.to_string()), "{line} came twice");
        }
    }
    assert_eq!(seen.len(), FILES * LINES);
    let past = call(&fs, "Grep", json!({"pattern": "hit", "offset": 1_000_000})).await;
    assert_eq!(past, "No lines at offset 1000000 (1000000 in all)");

    let files = call(
        &fs,
        "Grep",
        json!({"pattern": "hit", "outputMode": "count", "headLimit": 2, "offset": 98}),
    )
    .await;
    assert_eq!(files, "/f098.txt:10000\n/f099.txt:10000");
}

#[tokio::test]
async fn glob_and_ls_page_too() {
    let dir = tempfile::tempdir().unwrap();
    for n in 0..250 {
        std::fs::write(dir.path().join(format!("n{n:03}.md")), "x").unwrap();
    }
    let fs = host_dir(dir.path(), true).unwrap();
    let ls = call(&fs, "LS", json!({"path": "/"})).await;
    assert_eq!(ls.lines().count(), 201);
    assert!(ls.ends_with(
        "… showing entries 1–200 of 250; call LS with offset=200 for the next page, or narrow the pattern"
    ));
    let rest = call(&fs, "LS", json!({"path": "/", "offset": 200})).await;
    assert_eq!(rest.lines().count(), 50);
    assert!(rest.starts_with("/n200.md"));
    let glob = call(
        &fs,
        "Glob",
        json!({"pattern": "*.md", "headLimit": 100, "offset": 200}),
    )
    .await;
    assert_eq!(glob.lines().count(), 50);
    assert_eq!(glob.lines().last(), Some("/n249.md"));
}
