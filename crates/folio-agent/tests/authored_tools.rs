//! The authored-tool subprocess contract (docs/tools.md "Authored tools"): stdin `{input, context}`,
//! stdout as JSON, envelope or text, non-zero exit with the stderr tail, timeout and cancel
//! killing the whole process group, dry runs, and schema validation.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use folio_agent::discover;
use folio_agent::tools::{AuthoredTool, ScratchMode, TodoList, ToolContext, ToolError, ToolOutput};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (path, contents) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
}

/// A project whose `agent/tools/<name>.toml` runs `bash script.sh` with `script` as the body.
fn make_tool(
    name: &str,
    manifest_extra: &str,
    script: &str,
) -> (tempfile::TempDir, Arc<AuthoredTool>) {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("agent/instructions.md", "Test agent.\n"),
            (
                &format!("agent/tools/{name}.toml"),
                &format!(
                    "description = \"A test tool for the subprocess contract.\"\ncommand = [\"bash\", \"{name}.sh\"]\n{manifest_extra}"
                ),
            ),
            (&format!("agent/tools/{name}.sh"), script),
        ],
    );
    let discovery = discover(dir.path());
    assert!(!discovery.has_errors(), "{:?}", discovery.diagnostics);
    let definition = discovery.definition.unwrap();
    let tool = AuthoredTool::new(&definition.tools[0]).unwrap();
    (dir, Arc::new(tool))
}

fn context(workspace: &Path) -> ToolContext {
    ToolContext {
        fs: folio_fs::local_fs(workspace),
        workspace: workspace.to_path_buf(),
        scratch: ScratchMode::Host,
        cancel: CancellationToken::new(),
        todos: TodoList::default(),
        session_id: "ses_test".into(),
        call_id: "call_7".into(),
        dry_run: false,
        purpose: Some("eval".into()),
        continuation_key: Some("ticket:42".into()),
        principal: "local".into(),
        peer_depth: 0,
        turn_id: None,
        host: None,
    }
}

async fn run(
    tool: &AuthoredTool,
    input: Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    tool.call_direct(input, ctx).await
}

#[tokio::test]
async fn stdin_carries_input_and_context_and_json_stdout_is_the_result() {
    let (dir, tool) = make_tool("echo", "effect = \"read\"", "cat\n");
    let ctx = context(dir.path());
    let output = run(&tool, json!({"q": "hi"}), &ctx).await.unwrap();
    assert_eq!(
        output,
        ToolOutput::Json(json!({
            "input": {"q": "hi"},
            "context": {
                "sessionId": "ses_test",
                "toolCallId": "call_7",
                "purpose": "eval",
                "dryRun": false,
                "continuationKey": "ticket:42",
                "agent": dir.path().canonicalize().unwrap().file_name().unwrap().to_string_lossy(),
            }
        }))
    );
}

#[tokio::test]
async fn envelope_and_text_stdout() {
    let (dir, tool) = make_tool(
        "env",
        "",
        "echo '{\"content\":[{\"type\":\"text\",\"text\":\"line one\"},{\"type\":\"text\",\"text\":\"line two\"}],\"isError\":false}'\n",
    );
    let ctx = context(dir.path());
    assert_eq!(
        run(&tool, json!({}), &ctx).await,
        Ok(ToolOutput::Text("line one\nline two".into()))
    );
    let (dir, tool) = make_tool(
        "enverr",
        "",
        "echo '{\"content\":[{\"type\":\"text\",\"text\":\"quota exceeded\"}],\"isError\":true}'\n",
    );
    let ctx = context(dir.path());
    assert_eq!(
        run(&tool, json!({}), &ctx).await,
        Err(ToolError("quota exceeded".into()))
    );
    let (dir, tool) = make_tool("text", "", "printf 'plain words\\nsecond line\\n'\n");
    let ctx = context(dir.path());
    assert_eq!(
        run(&tool, json!({}), &ctx).await,
        Ok(ToolOutput::Text("plain words\nsecond line".into()))
    );
}

#[tokio::test]
async fn non_zero_exit_is_a_tool_error_with_the_stderr_tail() {
    let script = "for i in $(seq 1 30); do echo \"log $i\" >&2; done\necho partial\nexit 3\n";
    let (dir, tool) = make_tool("fails", "", script);
    let ctx = context(dir.path());
    let err = run(&tool, json!({}), &ctx).await.unwrap_err();
    let tail: Vec<String> = (11..=30).map(|i| format!("log {i}")).collect();
    assert_eq!(
        err.0,
        format!("fails exited with code 3; stderr:\n{}", tail.join("\n"))
    );
}

/// Whether a process with this pid is still alive.
fn alive(pid: i32) -> bool {
    // A reaped process has no /proc entry; a zombie (killed, not yet reaped) counts as dead.
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    !status.is_empty() && !status.contains("State:\tZ")
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let (dir, tool) = make_tool(
        "slow",
        "timeout_secs = 1",
        "sleep 30 &\necho $! > grandchild.pid\nsleep 30\n",
    );
    let ctx = context(dir.path());
    let started = Instant::now();
    let err = run(&tool, json!({}), &ctx).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(err.0, "slow timed out after 1 s and was killed");
    let pid: i32 = std::fs::read_to_string(dir.path().join("agent/tools/grandchild.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !alive(pid),
        "the background grandchild {pid} survived the timeout"
    );
}

#[tokio::test]
async fn cancel_kills_the_process_group() {
    let (dir, tool) = make_tool("long", "", "sleep 30\n");
    let ctx = context(dir.path());
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let err = run(&tool, json!({}), &ctx).await.unwrap_err();
    assert_eq!(err.0, "long cancelled: the turn was stopped");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn dry_run_returns_dry_run_result_for_write_tools_only() {
    let (dir, tool) = make_tool(
        "post",
        "dry_run_result = { note = \"dry run: nothing posted\" }",
        "touch posted\necho done\n",
    );
    let mut ctx = context(dir.path());
    ctx.dry_run = true;
    assert_eq!(
        run(&tool, json!({}), &ctx).await,
        Ok(ToolOutput::Json(json!({"note": "dry run: nothing posted"})))
    );
    assert!(!dir.path().join("agent/tools/posted").exists());
    let (dir, tool) = make_tool("look", "effect = \"read\"", "echo looked\n");
    let mut ctx = context(dir.path());
    ctx.dry_run = true;
    assert_eq!(
        run(&tool, json!({}), &ctx).await,
        Ok(ToolOutput::Text("looked".into()))
    );
}

#[tokio::test]
async fn schema_validation_names_the_failing_field() {
    let schema = r#"
[input_schema]
type = "object"
required = ["prUrl"]
additionalProperties = false
properties.prUrl = { type = "string", pattern = "^https://" }
properties.limit = { type = "integer", minimum = 1 }
properties.options = { type = "object", properties.depth = { type = "integer" } }
"#;
    let (dir, tool) = make_tool("inspect", schema, "echo ran\n");
    let ctx = context(dir.path());
    let cases = [
        (json!({}), "invalid input: prUrl: required field is missing"),
        (
            json!({"prUrl": 5}),
            "invalid input: prUrl: 5 is not of type \"string\"",
        ),
        (
            json!({"prUrl": "ftp://x"}),
            "invalid input: prUrl: \"ftp://x\" does not match \"^https://\"",
        ),
        (
            json!({"prUrl": "https://x", "limit": 0}),
            "invalid input: limit: 0 is less than the minimum of 1",
        ),
        (
            json!({"prUrl": "https://x", "options": {"depth": "deep"}}),
            "invalid input: options.depth: \"deep\" is not of type \"integer\"",
        ),
        (
            json!({"prUrl": "https://x", "extra": true}),
            "invalid input: extra: unknown field (not in the input schema)",
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(
            run(&tool, input.clone(), &ctx).await,
            Err(ToolError(expected.into())),
            "{input}"
        );
    }
    assert_eq!(
        run(&tool, json!({"prUrl": "https://x"}), &ctx).await,
        Ok(ToolOutput::Text("ran".into()))
    );
}

#[tokio::test]
async fn schema_from_a_file_and_remote_refs_are_never_fetched() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("agent/instructions.md", "Test agent.\n"),
            (
                "agent/tools/a.toml",
                "description = \"A tool whose schema lives in a file.\"\ncommand = [\"true\"]\ninput_schema_file = \"a.schema.json\"\n",
            ),
            (
                "agent/tools/a.schema.json",
                r#"{"type": "object", "required": ["n"], "properties": {"n": {"type": "number"}}}"#,
            ),
            (
                "agent/tools/b.toml",
                "description = \"A tool whose schema points at the network.\"\ncommand = [\"true\"]\n[input_schema]\ntype = \"object\"\nproperties.x = { \"$ref\" = \"https://example.invalid/schema.json\" }\n",
            ),
        ],
    );
    let discovery = discover(dir.path());
    let lines: Vec<String> = discovery
        .diagnostics
        .iter()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("error: agent/tools/b.toml: input_schema: not a valid JSON Schema"),
        "{lines:?}"
    );
    let dir2 = tempfile::tempdir().unwrap();
    std::fs::remove_file(dir.path().join("agent/tools/b.toml")).unwrap();
    let definition = discover(dir.path()).definition.unwrap();
    let ctx = context(dir2.path());
    assert_eq!(
        AuthoredTool::new(&definition.tools[0])
            .unwrap()
            .call_direct(json!({"n": "x"}), &ctx)
            .await,
        Err(ToolError(
            "invalid input: n: \"x\" is not of type \"number\"".into()
        ))
    );
}
