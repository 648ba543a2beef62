//! A Responses-API model's reasoning items survive the session log: the encrypted reasoning of
//! a step is in `reasoning.completed`, and the conversation rebuilt from the log sends it back
//! in the next step's request and in the next turn's.

mod support;

use folio_protocol::{CreateSession, EventBody};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::*;

/// The `type` of each input item of a recorded Responses request, with the reasoning item's
/// encrypted content.
fn items(body: &Value) -> Vec<String> {
    body["input"]
        .as_array()
        .unwrap_or_else(|| panic!("no input: {body}"))
        .iter()
        .map(|item| match item["type"].as_str() {
            Some("reasoning") => format!("reasoning {}", item["encrypted_content"]),
            Some("message") => format!("{} message", item["role"].as_str().unwrap_or("?")),
            other => other.unwrap_or("?").to_string(),
        })
        .collect()
}

#[tokio::test]
async fn reasoning_items_go_back_in_the_next_step_and_the_next_turn() {
    let mock = MockModelServer::start().await;
    mock.push(
        MockReply::tool_calls([("ReadTodos", json!({}))])
            .with_reasoning("Check the todos first.")
            .with_signature("gAAAA-step-1"),
    );
    mock.push(MockReply::text("No todos."));
    mock.push(MockReply::text("Still none."));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let agent = agent_on(&mock, dir.path(), "openai-responses:gpt-5-test").await;
    let manager = manager(agent, state.path()).await;
    let create = CreateSession {
        message: "any todos?".into(),
        title: None,
        workspace_files: Default::default(),
        mode: None,
        client_message_id: None,
        continuation_key: None,
    };
    let id = manager
        .sessions()
        .create("local", "http", create)
        .await
        .unwrap()
        .session_id;
    wait_turns(&manager, &id, 1).await;
    manager
        .turns()
        .send("local", &id, "and now?", None)
        .await
        .unwrap();
    let events = wait_turns(&manager, &id, 2).await;

    let signatures: Vec<Option<String>> = events
        .iter()
        .filter_map(|event| match &event.body {
            EventBody::ReasoningCompleted(done) => Some(done.signature.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        signatures,
        [Some(
            r#"[{"id":"rs_mock0","summary":[{"type":"summary_text","text":"Check the todos first."}],"encrypted_content":"gAAAA-step-1"}]"#
                .to_string()
        )]
    );

    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests
            .iter()
            .all(|request| request.path == "/v1/responses")
    );
    assert_eq!(
        requests[0].body["include"],
        json!(["reasoning.encrypted_content"])
    );
    assert_eq!(items(&requests[0].body), ["user message"]);
    let step_two = [
        "user message",
        "reasoning \"gAAAA-step-1\"",
        "function_call",
        "function_call_output",
    ];
    assert_eq!(items(&requests[1].body), step_two);
    let mut turn_two: Vec<&str> = step_two.to_vec();
    turn_two.extend(["assistant message", "user message"]);
    assert_eq!(items(&requests[2].body), turn_two);
    // The reasoning item goes back exactly as it came.
    assert_eq!(
        requests[2].body["input"][1],
        json!({"type": "reasoning", "id": "rs_mock0",
               "summary": [{"type": "summary_text", "text": "Check the todos first."}],
               "encrypted_content": "gAAAA-step-1"})
    );
}
