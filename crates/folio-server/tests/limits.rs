//! Input limits over HTTP: a create whose `workspaceFiles` is too deep, a `Write` to a path of
//! 1,500 segments, the workspace quota of `[limits]` and the message size, each refused with
//! the error naming the limit and nothing written.

mod support;

use std::path::Path;

use folio_protocol::{ActionResult, EventBody};
use folio_test_support::{MockModelServer, MockReply, all};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::*;

/// A served agent whose project has `folio_toml`; its manager, URL and state root.
async fn serve(
    mock: &MockModelServer,
    folio_toml: &str,
) -> (
    folio_session::SessionManager,
    String,
    tempfile::TempDir,
    tempfile::TempDir,
) {
    let dir = project("");
    std::fs::write(dir.path().join("folio.toml"), folio_toml).unwrap();
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(mock, dir.path()).await, state.path()).await;
    let url = http(manager.clone()).await;
    (manager, url, state, dir)
}

/// POSTs `body` to `{url}{route}`; the status and the JSON answer.
async fn post(url: &str, route: &str, body: &Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{url}{route}"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// Every directory under `root` (links not followed).
fn directories(root: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.file_type().unwrap().is_dir() {
                found.push(entry.path());
                pending.push(entry.path());
            }
        }
    }
    found
}

/// The tool results of a log: output text, or `{"error": …}`.
fn outputs(events: &[folio_protocol::Event]) -> Vec<Value> {
    all::<ActionResult>(events)
        .into_iter()
        .map(|result| match &result.error {
            Some(error) => json!({"error": error}),
            None => result.output.clone().unwrap_or_default(),
        })
        .collect()
}

#[tokio::test]
async fn a_create_with_a_3000_segment_workspace_file_is_refused_and_makes_no_folder() {
    let mock = MockModelServer::start().await;
    let (manager, url, state, _dir) = serve(&mock, "").await;
    let deep = format!("{}x.txt", "d/".repeat(2999));
    let (status, body) = post(
        &url,
        "/v1/session",
        &json!({"message": "hi", "workspaceFiles": {deep: "x"}}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "invalid_request");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with("workspaceFiles: workspace file path too deep: d/d/d/")
            && message.contains("3000 segments; a path may have at most 64"),
        "{message}"
    );
    assert!(message.len() < 400, "{message}");
    assert!(
        !directories(state.path())
            .iter()
            .any(|dir| dir.ends_with("d")),
        "a d/ folder was made"
    );
    let sessions = manager
        .sessions()
        .list("local", 10, None, None)
        .await
        .unwrap();
    assert_eq!(sessions.data.len(), 0);
    assert_eq!(mock.requests().len(), 0);
    manager.shutdown().await;
}

#[tokio::test]
async fn a_write_to_a_1500_segment_path_is_refused_with_the_tool_error() {
    let mock = MockModelServer::start().await;
    let deep = format!("{}f.txt", "d/".repeat(1499));
    mock.push(MockReply::tool_calls([
        ("Write", json!({"path": deep, "contents": "x"})),
        (
            "Write",
            json!({"path": format!("n/{}", "x".repeat(256)), "contents": "x"}),
        ),
    ]))
    .push(MockReply::text("Could not."));
    let (manager, url, _state, _dir) = serve(&mock, "").await;
    let (status, body) = post(&url, "/v1/session", &json!({"message": "write deep"})).await;
    assert_eq!(status, 201, "{body}");
    let id = body["sessionId"].as_str().unwrap().to_string();
    let log = wait_turns(&manager, &id, 1).await;
    let workspace = manager.state().workspace_dir(&id);
    let errors: Vec<String> = outputs(&log)
        .iter()
        .map(|output| output["error"].as_str().unwrap_or_default().to_string())
        .collect();
    let shown = workspace.display().to_string();
    assert!(
        errors[0].starts_with(&format!("path too deep: {}", &shown[..shown.len().min(20)]))
            && errors[0].contains("1500 segments; a path may have at most 64"),
        "{errors:?}"
    );
    assert!(
        errors[1].starts_with("path segment too long: ")
            && errors[1]
                .contains("a name of 256 bytes; a file or folder name may have at most 255"),
        "{errors:?}"
    );
    assert!(!workspace.join("d").exists());
    assert!(!workspace.join("n").exists());
    manager.shutdown().await;
}

#[tokio::test]
async fn the_workspace_quota_refuses_files_past_it() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([
        ("Write", json!({"path": "b.txt", "contents": "B"})),
        ("Write", json!({"path": "c.txt", "contents": "C"})),
    ]))
    .push(MockReply::text("Full."));
    let (manager, url, _state, _dir) = serve(
        &mock,
        "[limits]\nworkspace_files = 4\nworkspace_bytes = 1000\n",
    )
    .await;

    // More files than a workspace may hold: 413 naming the key, nothing kept.
    let five = json!({"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"});
    let (status, body) = post(
        &url,
        "/v1/session",
        &json!({"message": "hi", "workspaceFiles": five}),
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(
        body,
        json!({
            "ok": false,
            "error": "payload_too_large",
            "message": "workspaceFiles: the number of files is 5; at most 4 are allowed ([limits] workspace_files in folio.toml)"
        })
    );
    let (status, body) = post(
        &url,
        "/v1/session",
        &json!({"message": "hi", "workspaceFiles": {"big": "x".repeat(1001)}}),
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("[limits] workspace_bytes"),
        "{body}"
    );
    assert_eq!(
        manager
            .sessions()
            .list("local", 10, None, None)
            .await
            .unwrap()
            .data
            .len(),
        0
    );

    // One file sent and the two the workspace is prepared with (AGENTS.md, .folio/prepared),
    // one written by the model, the fifth refused by the Write tool.
    let (status, body) = post(
        &url,
        "/v1/session",
        &json!({"message": "fill it", "workspaceFiles": {"a.txt": "A"}}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let id = body["sessionId"].as_str().unwrap().to_string();
    let log = wait_turns(&manager, &id, 1).await;
    let workspace = manager.state().workspace_dir(&id);
    let results = outputs(&log);
    assert!(results[0].get("error").is_none(), "{results:?}");
    let refused = results[1]["error"].as_str().unwrap_or_default();
    assert!(
        refused.starts_with("workspace full: cannot write ")
            && refused.ends_with("the session workspace would hold 5 files; at most 4 are allowed ([limits] workspace_files): delete files first"),
        "{results:?}"
    );
    assert!(!workspace.join("c.txt").exists());

    // A follow-up whose files would pass the quota fails its turn before writing any.
    let token = body["continuationToken"].as_str().unwrap();
    let (status, body) = post(
        &url,
        &format!("/v1/session/{id}"),
        &json!({"continuationToken": token, "message": "more", "workspaceFiles": {"d.txt": "D"}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let log = wait_turns(&manager, &id, 2).await;
    let failed: Vec<String> = log
        .iter()
        .filter_map(|event| match &event.body {
            EventBody::TurnFailed(failed) => Some(failed.message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        failed,
        [
            "workspace files: the session workspace would hold 5 files; at most 4 are allowed ([limits] workspace_files): delete files first"
        ]
    );
    assert!(!workspace.join("d.txt").exists());
    manager.shutdown().await;
}

#[tokio::test]
async fn a_message_over_the_size_limit_is_refused_with_413() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("ok"));
    let (manager, url, _state, _dir) = serve(&mock, "[limits]\nmessage_bytes = 100\n").await;
    let (status, body) = post(&url, "/v1/session", &json!({"message": "m".repeat(101)})).await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(
        body["message"],
        "message: the text in bytes is 101; at most 100 are allowed ([limits] message_bytes in folio.toml)"
    );
    let (status, body) = post(&url, "/v1/session", &json!({"message": "m".repeat(100)})).await;
    assert_eq!(status, 201, "{body}");
    let id = body["sessionId"].as_str().unwrap().to_string();
    wait_turns(&manager, &id, 1).await;
    let token = body["continuationToken"].as_str().unwrap();
    let (status, body) = post(
        &url,
        &format!("/v1/session/{id}"),
        &json!({"continuationToken": token, "message": "é".repeat(51)}),
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["error"], "payload_too_large");
    assert_eq!(mock.requests().len(), 1);
    manager.shutdown().await;
}

#[tokio::test]
async fn a_zero_limit_is_a_diagnostic() {
    let dir = project("");
    std::fs::write(dir.path().join("folio.toml"), "[limits]\nsend_files = 0\n").unwrap();
    let found = folio_agent::discover(dir.path());
    assert!(found.definition.is_none());
    let messages: Vec<String> = found
        .diagnostics
        .iter()
        .map(|d| d.message.clone())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m == "limits.send_files: must be 1 or more (leave it out for the default)"),
        "{messages:?}"
    );
}
