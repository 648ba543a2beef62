//! The synthesized file tools on an authored tree: every output format and every error text,
//! byte for byte (docs/tools.md).

use std::path::PathBuf;
use std::sync::Arc;

use folio_agent::tools::{
    FileTool, ScratchMode, TodoList, ToolContext, ToolError, ToolOutput, ToolRegistry,
};
use folio_fs::{FileSystem, empty_fs, temp_fs, union_fs};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn registry() -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for tool in FileTool::ALL {
        registry.register(Arc::new(tool)).unwrap();
    }
    registry
}

fn context(fs: Arc<dyn FileSystem>) -> ToolContext {
    ToolContext {
        fs,
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
    }
}

fn tree() -> Arc<dyn FileSystem> {
    temp_fs([
        ("/src/a.rs", "fn main() {\n    println!(\"Hello\");\n}\n"),
        ("/src/nested/c.rs", "// hello again\nlet x = 1;\n"),
        ("/notes.md", "one\ntwo\nthree\n"),
        ("/agent-tools/x.txt", "x\n"),
    ])
}

async fn call(fs: &Arc<dyn FileSystem>, tool: &str, input: Value) -> Result<ToolOutput, ToolError> {
    registry().call(tool, input, &context(fs.clone())).await
}

fn text(result: Result<ToolOutput, ToolError>) -> String {
    match result {
        Ok(ToolOutput::Text(text)) => text,
        other => panic!("expected text output, got {other:?}"),
    }
}

fn error(result: Result<ToolOutput, ToolError>) -> String {
    match result {
        Err(ToolError(message)) => message,
        other => panic!("expected a tool error, got {other:?}"),
    }
}

#[tokio::test]
async fn read_numbers_lines_pages_and_reports_missing_files() {
    let fs = tree();
    assert_eq!(
        text(call(&fs, "Read", json!({"path": "/notes.md"})).await),
        "     1\tone\n     2\ttwo\n     3\tthree"
    );
    assert_eq!(
        text(
            call(
                &fs,
                "Read",
                json!({"path": "/notes.md", "offset": 2, "limit": 1})
            )
            .await
        ),
        "     2\ttwo\n… 1 more lines; call Read with offset=3"
    );
    assert_eq!(
        error(call(&fs, "Read", json!({"path": "/nope.md"})).await),
        "not found: /nope.md"
    );
    assert_eq!(
        error(call(&fs, "Read", json!({"path": "/src/../notes.md", "lines": 3})).await),
        "unknown argument \"lines\"; expected one of: path, offset, limit"
    );
    assert_eq!(
        error(call(&fs, "Read", json!({})).await),
        "missing required argument \"path\""
    );
}

#[tokio::test]
async fn read_returns_images_as_image_parts() {
    let png: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    let fs: Arc<dyn FileSystem> = temp_fs([("/img.png", png)]);
    let output = call(&fs, "Read", json!({"path": "/img.png"}))
        .await
        .unwrap();
    assert_eq!(
        output.to_event_value(),
        json!([{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgoAAAANSUhEUg=="}])
    );
}

#[tokio::test]
async fn ls_lists_directories_with_slashes_and_files_as_themselves() {
    let fs = tree();
    assert_eq!(
        text(call(&fs, "LS", json!({})).await),
        "/agent-tools/\n/notes.md\n/src/"
    );
    assert_eq!(
        text(call(&fs, "LS", json!({"path": "/src"})).await),
        "/src/a.rs\n/src/nested/"
    );
    assert_eq!(
        text(call(&fs, "LS", json!({"path": "/notes.md"})).await),
        "/notes.md"
    );
    assert_eq!(
        error(call(&fs, "LS", json!({"path": "/missing"})).await),
        "not found: /missing"
    );
}

#[tokio::test]
async fn grep_has_three_output_modes_and_pagination() {
    let fs = tree();
    assert_eq!(
        text(call(&fs, "Grep", json!({"pattern": "hello", "-i": true})).await),
        "/src/a.rs:2:    println!(\"Hello\");\n/src/nested/c.rs:1:// hello again"
    );
    assert_eq!(
        text(
            call(
                &fs,
                "Grep",
                json!({"pattern": "e", "output_mode": "files_with_matches"})
            )
            .await
        ),
        "/notes.md\n/src/a.rs\n/src/nested/c.rs"
    );
    assert_eq!(
        text(
            call(
                &fs,
                "Grep",
                json!({"pattern": "e", "outputMode": "count", "path": "/notes.md"})
            )
            .await
        ),
        "/notes.md:2"
    );
    assert_eq!(
        text(
            call(
                &fs,
                "Grep",
                json!({"pattern": "o", "glob": "*.md", "head_limit": 1, "offset": 1})
            )
            .await
        ),
        "/notes.md:2:two"
    );
    assert_eq!(
        text(call(&fs, "Grep", json!({"pattern": "zzz"})).await),
        "No matches found"
    );
    assert_eq!(
        error(call(&fs, "Grep", json!({"pattern": "a("})).await),
        "invalid grep pattern: a("
    );
}

#[tokio::test]
async fn glob_is_relative_to_its_directory() {
    let fs = tree();
    assert_eq!(
        text(call(&fs, "Glob", json!({"pattern": "*.rs", "path": "/src"})).await),
        "/src/a.rs"
    );
    assert_eq!(
        text(call(&fs, "Glob", json!({"pattern": "**/*.rs"})).await),
        "/src/a.rs\n/src/nested/c.rs"
    );
    assert_eq!(
        text(call(&fs, "Glob", json!({"pattern": "*.py"})).await),
        "No files found"
    );
}

#[tokio::test]
async fn write_and_delete_report_their_paths() {
    let fs = tree();
    assert_eq!(
        text(call(&fs, "Write", json!({"path": "/new.txt", "file_text": "hi"})).await),
        "Wrote contents to /new.txt"
    );
    assert_eq!(
        text(call(&fs, "Read", json!({"path": "/new.txt"})).await),
        "     1\thi"
    );
    assert_eq!(
        text(call(&fs, "Delete", json!({"path": "/new.txt"})).await),
        "Deleted /new.txt"
    );
    assert_eq!(
        error(call(&fs, "Delete", json!({"path": "/new.txt"})).await),
        "not found: /new.txt"
    );
}

#[tokio::test]
async fn str_replace_has_exactly_four_failure_messages() {
    let fs: Arc<dyn FileSystem> = temp_fs([("/f.txt", "a b a $1")]);
    let edit = |old: &str, new: &str| json!({"path": "/f.txt", "oldText": old, "newText": new});
    assert_eq!(
        error(call(&fs, "StrReplace", edit("", "x")).await),
        "oldText is empty"
    );
    assert_eq!(
        error(call(&fs, "StrReplace", edit("a", "a")).await),
        "oldText and newText are exactly the same"
    );
    assert_eq!(
        error(call(&fs, "StrReplace", edit("zz", "x")).await),
        "The string to replace was not found in the file"
    );
    assert_eq!(
        error(call(&fs, "StrReplace", edit("a", "x")).await),
        "The string to replace was found multiple times in the file. Use replace_all to replace all occurrences, or include more context to only edit one occurrence."
    );
    assert_eq!(
        call(&fs, "StrReplace", edit("$1", "$0")).await.unwrap(),
        ToolOutput::Json(json!({"occurrencesModified": 1}))
    );
    assert_eq!(
        call(
            &fs,
            "StrReplace",
            json!({"path": "/f.txt", "old_string": "a", "new_string": "c", "replace_all": true})
        )
        .await
        .unwrap(),
        ToolOutput::Json(json!({"occurrencesModified": 2}))
    );
    assert_eq!(
        text(call(&fs, "Read", json!({"path": "/f.txt"})).await),
        "     1\tc b c $0"
    );
}

#[tokio::test]
async fn filesystem_errors_reach_the_model_verbatim() {
    let fs = union_fs([("/ro", empty_fs())]);
    assert_eq!(
        error(call(&fs, "Write", json!({"path": "/ro/x", "contents": "y"})).await),
        "read-only mount: /ro/x"
    );
    assert_eq!(
        error(
            call(
                &fs,
                "Write",
                json!({"path": "/elsewhere/x", "contents": "y"})
            )
            .await
        ),
        "no mount for path: /elsewhere/x"
    );
    assert_eq!(
        text(call(&fs, "SemanticSearch", json!({"query": "hello"})).await),
        ""
    );
}

#[tokio::test]
async fn spill_paths_held_by_the_model_are_read_from_tmp_under_a_root() {
    let fs = union_fs([
        ("/", tree()),
        ("/tmp", temp_fs([("/abc.txt", "spilled\n")])),
    ]);
    let host_path = "/nonexistent-workspace/agent-tools/abc.txt";
    assert_eq!(
        text(call(&fs, "Read", json!({"path": host_path})).await),
        "     1\tspilled"
    );
}
