//! `folio run` end to end against the mock model server: every synthesized tool on the host
//! workspace and on an authored root, outputs and errors byte for byte, and `trajectory`.

mod common;

use common::*;
use folio_test_support::{ChatMessage, MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

#[tokio::test]
async fn host_workspace_turn_uses_every_file_tool() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([
        (
            "Write",
            json!({"path": "notes.txt", "contents": "alpha\nbeta\n"}),
        ),
        ("Read", json!({"path": "notes.txt"})),
        (
            "StrReplace",
            json!({"path": "notes.txt", "old_string": "alpha", "new_string": "gamma"}),
        ),
        ("Grep", json!({"pattern": "^g", "path": "."})),
        ("Glob", json!({"pattern": "*.txt"})),
        ("LS", json!({})),
        ("Delete", json!({"path": "notes.txt"})),
        ("Read", json!({"path": "notes.txt"})),
        ("Shell", json!({"command": "echo from-shell; exit 3"})),
    ]));
    mock.push(MockReply::text("All done."));
    let dir = project("model = \"openai:gpt-test\"\n");
    let output = run_json(&mock.openai_base_url(), dir.path(), "exercise the tools").await;
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result = result_of(&output);
    let workspace = dir
        .path()
        .join(".folio/state/sessions")
        .join(&result.session_id)
        .join("workspace")
        .canonicalize()
        .unwrap();
    let ws = workspace.display().to_string();
    assert_eq!(result.reply, "All done.");
    assert_eq!(
        tool_outputs(&result),
        vec![
            ("Write".into(), false, json!("Wrote contents to notes.txt")),
            ("Read".into(), false, json!("     1\talpha\n     2\tbeta")),
            (
                "StrReplace".into(),
                false,
                json!({"occurrencesModified": 1})
            ),
            (
                "Grep".into(),
                false,
                json!(format!("{ws}/notes.txt:1:gamma"))
            ),
            ("Glob".into(), false, json!(format!("{ws}/notes.txt"))),
            (
                "LS".into(),
                false,
                // The prepared workspace holds AGENTS.md, .folio/ and the memory/ link
                // (docs/agent-folder.md); walks do not follow the link.
                json!(format!(
                    "{ws}/.folio/\n{ws}/AGENTS.md\n{ws}/memory/\n{ws}/notes.txt"
                ))
            ),
            ("Delete".into(), false, json!("Deleted notes.txt")),
            (
                "Read".into(),
                true,
                json!(format!("not found: {ws}/notes.txt"))
            ),
            ("Shell".into(), true, json!("from-shell\n[exit code: 3]")),
        ]
    );
    // The second model request carries every tool result, rebuilt from the event log.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let tool_messages: Vec<ChatMessage> = requests[1]
        .messages()
        .into_iter()
        .filter(|message| message.role == "tool")
        .collect();
    assert_eq!(tool_messages.len(), 9);
    assert_eq!(tool_messages[0].text(), "Wrote contents to notes.txt");
}

#[tokio::test]
async fn authored_root_turn_uses_temp_and_host_mounts() {
    let mock = MockModelServer::start().await;
    let dir = project(
        r#"model = "openai:gpt-test"

[root]
"/notes" = { temp = { "/a.md" = "hello notes\n" } }
"/repo" = { host = "../repo", read_only = true, index = true }
"#,
    );
    write_files(
        dir.path(),
        &[
            ("repo/src/lib.rs", "pub fn hello() {}\n// TODO: more\n"),
            (
                "repo/README.md",
                "A repository about parsing hello worlds.\n",
            ),
        ],
    );
    mock.push(MockReply::tool_calls([
        ("LS", json!({"path": "/"})),
        ("Read", json!({"path": "/notes/a.md"})),
        ("Write", json!({"path": "/notes/b.md", "fileText": "new"})),
        ("Glob", json!({"pattern": "**/*.md"})),
        (
            "Grep",
            json!({"pattern": "hello", "outputMode": "files_with_matches"}),
        ),
        ("Write", json!({"path": "/repo/x.rs", "contents": "no"})),
        ("Read", json!({"path": "/elsewhere/x"})),
        (
            "StrReplace",
            json!({"path": "/notes/a.md", "oldText": "", "newText": "x"}),
        ),
        (
            "StrReplace",
            json!({"path": "/notes/a.md", "oldText": "x", "newText": "x"}),
        ),
        (
            "StrReplace",
            json!({"path": "/notes/a.md", "oldText": "zzz", "newText": "x"}),
        ),
        (
            "StrReplace",
            json!({"path": "/notes/a.md", "oldText": "l", "newText": "L"}),
        ),
        ("Delete", json!({"path": "/notes/b.md"})),
        (
            "SemanticSearch",
            json!({"query": "parsing", "numResults": 1}),
        ),
        (
            "Write",
            json!({"path": "/tmp/scratch.txt", "contents": "s"}),
        ),
    ]));
    mock.push(MockReply::text("Root done."));
    let output = run_json(&mock.openai_base_url(), dir.path(), "exercise the root").await;
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result = result_of(&output);
    let shown: Vec<Value> = result.tool_calls.iter().map(|c| c.output.clone()).collect();
    let errors = result.tool_calls.iter().filter(|c| c.is_error).count();
    assert_eq!(errors, 6);
    assert_eq!(
        shown[..12].to_vec(),
        vec![
            json!("/notes/\n/repo/\n/tmp/"),
            json!("     1\thello notes"),
            json!("Wrote contents to /notes/b.md"),
            json!("/notes/a.md\n/notes/b.md\n/repo/README.md"),
            json!("/notes/a.md\n/repo/README.md\n/repo/src/lib.rs"),
            json!("read-only mount: /repo/x.rs"),
            json!("no mount for path: /elsewhere/x"),
            json!("oldText is empty"),
            json!("oldText and newText are exactly the same"),
            json!("The string to replace was not found in the file"),
            json!(
                "The string to replace was found multiple times in the file. Use replace_all to replace all occurrences, or include more context to only edit one occurrence."
            ),
            json!("Deleted /notes/b.md"),
        ]
    );
    let search = shown[12].as_str().unwrap();
    assert!(
        search.starts_with("/repo/README.md:1-1 (score "),
        "{search}"
    );
    assert!(search.contains("parsing"), "{search}");
    assert_eq!(shown[13], json!("Wrote contents to /tmp/scratch.txt"));
    // The model sees the eight file tools and the rest of the rooted default set, no Shell.
    assert_eq!(
        mock.requests()[0].tool_names(),
        [
            "Delete",
            "Glob",
            "Grep",
            "LS",
            "Read",
            "ReadTodos",
            "SemanticSearch",
            "StrReplace",
            "UpdateTodos",
            "WebFetch",
            "Write"
        ]
    );
    // The system prompt says where the workspace is.
    let system = &mock.requests()[0].messages()[0];
    assert_eq!(system.role, "system");
    assert!(system.text().ends_with("Workspace Path: /"), "{system:?}");
}

#[tokio::test]
async fn run_json_equals_trajectory_json() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([("LS", json!({}))]));
    mock.push(MockReply::text("Listed."));
    let dir = project("model = \"openai:gpt-test\"\n");
    let output = run_json(&mock.openai_base_url(), dir.path(), "list").await;
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result = result_of(&output);
    let log = dir
        .path()
        .join(".folio/state/traces")
        .join(format!("{}.ndjson", result.session_id));
    let trajectory = folio(&mock.openai_base_url())
        .args(["trajectory", "--json", "--events"])
        .arg(&log)
        .output()
        .await
        .unwrap();
    assert!(trajectory.status.success());
    assert_eq!(
        String::from_utf8(trajectory.stdout).unwrap(),
        String::from_utf8(output.stdout).unwrap()
    );
    // The human form streams tool calls and the reply to stderr.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("→ LS {}"), "{stderr}");
    assert!(stderr.contains("Listed."), "{stderr}");
}
