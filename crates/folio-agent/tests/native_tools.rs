//! The non-file built-in tools: WebFetch (HTML → Markdown, spill to `agent-tools/` on the host
//! and to `/tmp` under a root), Shell output spill, and the todo list.

use std::path::Path;
use std::sync::Arc;

use folio_agent::tools::{
    FileTool, ScratchMode, ShellTool, TodoList, TodosTool, ToolContext, ToolError, ToolOutput,
    ToolRegistry, WebFetchTool,
};
use folio_fs::{FileSystem, local_fs, temp_fs, union_fs};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn registry() -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry
        .register(Arc::new(WebFetchTool::new().unwrap()))
        .unwrap();
    registry.register(Arc::new(ShellTool::default())).unwrap();
    registry.register(Arc::new(TodosTool::Update)).unwrap();
    registry.register(Arc::new(TodosTool::Read)).unwrap();
    registry.register(Arc::new(FileTool::Read)).unwrap();
    registry
        .register(Arc::new(FileTool::SemanticSearch))
        .unwrap();
    registry
}

fn context(fs: Arc<dyn FileSystem>, workspace: &Path, scratch: ScratchMode) -> ToolContext {
    ToolContext {
        fs,
        workspace: workspace.to_path_buf(),
        scratch,
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
    }
}

fn text(result: Result<ToolOutput, ToolError>) -> String {
    match result {
        Ok(ToolOutput::Text(text)) => text,
        other => panic!("expected text, got {other:?}"),
    }
}

/// Serves `/page` (small HTML), `/big` (large text) and `/missing` (404) on loopback.
async fn web_server() -> String {
    use axum::{Router, http::StatusCode, response::Html, routing::get};
    let big = "line of a very large document\n".repeat(2_000);
    let app = Router::new()
        .route(
            "/page",
            get(|| async {
                Html("<html><body><h1>Title</h1><p>Some <b>bold</b> text.</p></body></html>")
            }),
        )
        .route("/big", get(move || async move { big }))
        .route(
            "/missing",
            get(|| async { (StatusCode::NOT_FOUND, "no such page") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn spill_files(workspace: &Path) -> Vec<String> {
    std::fs::read_dir(workspace.join("agent-tools"))
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn web_fetch_converts_html_and_reports_http_errors() {
    let base = web_server().await;
    let workspace = tempfile::tempdir().unwrap();
    let ctx = context(
        local_fs(workspace.path()),
        workspace.path(),
        ScratchMode::Host,
    );
    let page = text(
        registry()
            .call("WebFetch", json!({"url": format!("{base}/page")}), &ctx)
            .await,
    );
    assert_eq!(page, "# Title\n\nSome **bold** text.");
    let err = registry()
        .call("WebFetch", json!({"url": format!("{base}/missing")}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(
        err.0,
        format!("GET {base}/missing answered 404 Not Found: no such page")
    );
    let err = registry()
        .call("WebFetch", json!({"url": "file:///etc/passwd"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.0, "argument \"url\" must be http or https, got file");
}

#[tokio::test]
async fn large_web_output_spills_to_the_host_workspace_by_default() {
    let base = web_server().await;
    let workspace = tempfile::tempdir().unwrap();
    let ctx = context(
        local_fs(workspace.path()),
        workspace.path(),
        ScratchMode::Host,
    );
    let out = text(
        registry()
            .call("WebFetch", json!({"url": format!("{base}/big")}), &ctx)
            .await,
    );
    let files = spill_files(workspace.path());
    assert_eq!(files.len(), 1);
    let host_path = workspace.path().join("agent-tools").join(&files[0]);
    assert!(
        out.contains(&format!("the full output is in {}", host_path.display())),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&host_path).unwrap().len(), 60_000);
}

#[tokio::test]
async fn large_web_output_moves_to_tmp_under_an_authored_root() {
    let base = web_server().await;
    let workspace = tempfile::tempdir().unwrap();
    let root = union_fs([
        ("/", temp_fs([("/notes.md", "n")])),
        ("/tmp", temp_fs(Vec::<(String, String)>::new())),
    ]);
    let ctx = context(root.clone(), workspace.path(), ScratchMode::Rooted);
    let out = text(
        registry()
            .call("WebFetch", json!({"url": format!("{base}/big")}), &ctx)
            .await,
    );
    // The host file is gone; the model is pointed at /tmp/{uuid}.txt with the same uuid.
    assert!(spill_files(workspace.path()).is_empty());
    let start = out.find("/tmp/").expect("a /tmp path in the result");
    let tmp_path: String = out[start..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '.')
        .collect();
    let tmp_path = format!("{tmp_path}.txt");
    assert_eq!(tmp_path.len(), "/tmp/".len() + 36 + ".txt".len(), "{out}");
    let read = text(
        registry()
            .call("Read", json!({"path": tmp_path, "limit": 1}), &ctx)
            .await,
    );
    assert!(
        read.starts_with("     1\tline of a very large document"),
        "{read}"
    );
}

#[tokio::test]
async fn shell_output_is_capped_and_spilled() {
    let workspace = tempfile::tempdir().unwrap();
    let ctx = context(
        local_fs(workspace.path()),
        workspace.path(),
        ScratchMode::Host,
    );
    let out = text(
        registry()
            .call("Shell", json!({"command": "seq 1 20000"}), &ctx)
            .await,
    );
    assert!(out.starts_with("1\n2\n3\n"));
    assert!(out.contains("[output truncated:"), "{out}");
    assert_eq!(spill_files(workspace.path()).len(), 1);
    let small = text(
        registry()
            .call("Shell", json!({"command": "echo hi; echo oops >&2"}), &ctx)
            .await,
    );
    assert_eq!(small, "hi\n--- stderr ---\noops\n[exit code: 0]");
    let timed_out = registry()
        .call(
            "Shell",
            json!({"command": "echo started; sleep 5", "timeoutSecs": 1}),
            &ctx,
        )
        .await
        .unwrap_err();
    assert_eq!(
        timed_out.0,
        "command timed out after 1 s and was killed; output so far:\nstarted\n"
    );
}

#[tokio::test]
async fn todos_are_replaced_and_read_back() {
    let workspace = tempfile::tempdir().unwrap();
    let ctx = context(
        local_fs(workspace.path()),
        workspace.path(),
        ScratchMode::Host,
    );
    assert_eq!(
        text(registry().call("ReadTodos", Value::Null, &ctx).await),
        "No todos"
    );
    let todos = json!({"todos": [
        {"id": "1", "content": "read the spec", "status": "completed"},
        {"id": "2", "content": "write code", "status": "in_progress"},
        {"id": "3", "content": "ship", "status": "pending"}
    ]});
    let shown = "[x] 1: read the spec\n[~] 2: write code\n[ ] 3: ship";
    assert_eq!(
        text(registry().call("UpdateTodos", todos, &ctx).await),
        shown
    );
    assert_eq!(
        text(registry().call("ReadTodos", json!({}), &ctx).await),
        shown
    );
    let bad = registry()
        .call(
            "UpdateTodos",
            json!({"todos": [{"id": "1", "content": "x", "status": "done"}]}),
            &ctx,
        )
        .await
        .unwrap_err();
    assert!(
        bad.0
            .starts_with("argument \"todos\" must be an array of {id, content, status}"),
        "{}",
        bad.0
    );
}

#[tokio::test]
async fn semantic_search_on_the_host_default_sees_the_workspace_as_it_is_now() {
    let workspace = tempfile::tempdir().unwrap();
    let ctx = context(
        local_fs(workspace.path()),
        workspace.path(),
        ScratchMode::Host,
    );
    let empty = text(
        registry()
            .call("SemanticSearch", json!({"query": "lighthouse"}), &ctx)
            .await,
    );
    assert_eq!(empty, "");
    // Written by a process, not through the tree: the search still finds it.
    let shell = json!({"command": "printf 'notes\\nthe lighthouse keeper\\n' > log.md"});
    text(registry().call("Shell", shell, &ctx).await);
    let found = text(
        registry()
            .call("SemanticSearch", json!({"query": "lighthouse"}), &ctx)
            .await,
    );
    let path = workspace.path().join("log.md");
    assert!(
        found.starts_with(&format!("{}:2-2 (score ", path.display())),
        "{found}"
    );
    assert!(found.ends_with("the lighthouse keeper"), "{found}");
}

#[tokio::test]
async fn a_sandboxed_shell_writes_only_in_its_workspace_and_scratch() {
    let workspace = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let ctx = context(
        local_fs(workspace.path()),
        workspace.path(),
        ScratchMode::Host,
    );
    let mut registry = ToolRegistry::new();
    registry
        .register(Arc::new(ShellTool::new(Some(
            folio_agent::tools::SandboxPolicy::default(),
        ))))
        .unwrap();
    let inside = registry
        .call(
            "Shell",
            json!({"command": "echo a > in.txt && echo b > \"$TMPDIR/t\" && cat \"$TMPDIR/t\""}),
            &ctx,
        )
        .await;
    match inside {
        Ok(ToolOutput::Text(out)) => assert_eq!(out, "b\n[exit code: 0]"),
        // The only acceptable failure: a kernel that cannot enforce it, said in one line.
        Err(ToolError(message)) => {
            assert!(
                message.starts_with(
                    "Shell is sandboxed ([local] sandbox = true) but this kernel cannot enforce it"
                ),
                "{message}"
            );
            return;
        }
        other => panic!("{other:?}"),
    }
    let target = outside.path().join("x");
    let refused = registry
        .call(
            "Shell",
            json!({"command": format!("echo owned > {}", target.display())}),
            &ctx,
        )
        .await
        .unwrap_err();
    assert!(refused.0.contains("Permission denied"), "{}", refused.0);
    assert!(!target.exists());
}

#[tokio::test]
async fn spills_never_follow_a_planted_link() {
    let workspace = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), workspace.path().join("agent-tools")).unwrap();
    let ctx = context(
        local_fs(workspace.path()),
        workspace.path(),
        ScratchMode::Host,
    );
    let err = registry()
        .call("Shell", json!({"command": "seq 1 20000"}), &ctx)
        .await
        .unwrap_err();
    assert!(
        err.0.starts_with("could not save large output to"),
        "{}",
        err.0
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}
