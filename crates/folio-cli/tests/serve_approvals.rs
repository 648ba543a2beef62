//! Approvals end to end: an authored tool with `needs_approval = true` parks the model's call;
//! approve, deny, a second decision, and a parked call that survives `kill -9` and a restart.

mod serve_support;

use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use serve_support::*;

fn agent_with_deploy() -> Project {
    let dir = project("name = \"ops\"\nmodel = \"openai:gpt-test\"\n");
    std::fs::create_dir_all(dir.path().join("agent/tools")).unwrap();
    std::fs::write(
        dir.path().join("agent/tools/deploy.toml"),
        r#"description = "Deploy a service."
command = ["sh", "-c", "cat >/dev/null; echo deployed"]
needs_approval = true

[input_schema]
type = "object"
required = ["target"]
properties.target = { type = "string" }
"#,
    )
    .unwrap();
    dir
}

fn call_id(event: &Value) -> String {
    event["data"]["callId"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn approve_deny_and_a_parked_call_surviving_kill_9() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "deploy",
        json!({"target": "prod"}),
    )]));
    mock.push(MockReply::text("Deployed."));
    let dir = agent_with_deploy();
    let state = tempfile::tempdir().unwrap();
    let mut server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    let (_, created) = post(
        &format!("{url}/v1/session"),
        json!({"message": "deploy prod"}),
    )
    .await;
    let id = created["sessionId"].as_str().unwrap().to_string();
    let token = created["continuationToken"].as_str().unwrap().to_string();
    let mut stream = Stream::open(&url, &id, 0, None).await;
    let requested = stream.until("action.approval_requested").await;
    assert_eq!(requested["data"]["tool"], "deploy");
    assert_eq!(requested["data"]["input"], json!({"target": "prod"}));
    let approvals = format!("{url}/v1/session/{id}/approvals/{}", call_id(&requested));
    let (status, _) = post(&approvals, json!({"decision": "approve", "extra": 1})).await;
    assert_eq!(status, 400);
    let (status, ok) = post(&approvals, json!({"decision": "approve"})).await;
    assert_eq!((status, ok), (200, json!({"ok": true})));
    let (status, again) = post(&approvals, json!({"decision": "approve"})).await;
    assert_eq!(
        (status, again["error"].clone()),
        (409, json!("approval_resolved"))
    );
    let resolved = stream.until("action.approval_resolved").await;
    assert_eq!(resolved["data"]["decision"], "approve");
    assert_eq!(resolved["data"]["by"], "local");
    let result = stream.until("action.result").await;
    assert_eq!(result["data"]["isError"], false);
    assert!(
        result["data"]["output"].to_string().contains("deployed"),
        "{result}"
    );
    stream.until("session.waiting").await;

    // Deny with a reason.
    mock.push(MockReply::tool_calls([("deploy", json!({"target": "eu"}))]));
    mock.push(MockReply::text("Not deployed."));
    let (_, followed) = post(
        &format!("{url}/v1/session/{id}"),
        json!({"continuationToken": token, "message": "and eu"}),
    )
    .await;
    let token = followed["continuationToken"].as_str().unwrap().to_string();
    let requested = stream.until("action.approval_requested").await;
    let (status, _) = post(
        &format!("{url}/v1/session/{id}/approvals/{}", call_id(&requested)),
        json!({"decision": "deny", "reason": "freeze week"}),
    )
    .await;
    assert_eq!(status, 200);
    let result = stream.until("action.result").await;
    assert_eq!(result["data"]["error"], "denied by local: freeze week");
    assert_eq!(result["data"]["isError"], true);
    stream.until_count("session.waiting", 2).await;

    // Parked, then the server dies; after the restart the decision resumes the turn.
    mock.push(MockReply::tool_calls([("deploy", json!({"target": "us"}))]));
    mock.push(MockReply::text("Deployed after the restart."));
    post(
        &format!("{url}/v1/session/{id}"),
        json!({"continuationToken": token, "message": "and us"}),
    )
    .await;
    stream.until_count("action.approval_requested", 3).await;
    let parked = stream
        .events
        .iter()
        .rev()
        .find(|e| e["type"] == "action.approval_requested")
        .unwrap()
        .clone();
    server.child.start_kill().unwrap();
    server.child.wait().await.unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    let (_, got) = get(&format!("{url}/v1/session/{id}")).await;
    assert_eq!(got["session"]["status"], "running", "still parked");
    let next = parked["index"].as_u64().unwrap() + 1;
    let mut resumed = Stream::open(&url, &id, next, None).await;
    let (status, _) = post(
        &format!("{url}/v1/session/{id}/approvals/{}", call_id(&parked)),
        json!({"decision": "approve"}),
    )
    .await;
    assert_eq!(status, 200);
    resumed.until("session.waiting").await;
    assert_contiguous(&resumed.events, next);
    let types = resumed.types();
    assert_eq!(types[..2], ["action.approval_resolved", "action.result"]);
    assert_eq!(resumed.count("turn.failed"), 0);
    let completed = resumed
        .events
        .iter()
        .find(|e| e["type"] == "turn.completed")
        .unwrap();
    assert_eq!(completed["data"]["reply"], "Deployed after the restart.");
    assert_eq!(
        completed["turnId"], parked["turnId"],
        "the same turn resumed"
    );
}
