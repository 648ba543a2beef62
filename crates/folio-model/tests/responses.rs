//! The OpenAI Responses API against the mock server speaking its exact SSE events: text, tool
//! calls and their outputs, reasoning items carried into later requests, usage, failures, whole
//! (non-streamed) responses, retries, and `[provider] api`.

mod common;

use common::{assemble, collect, config, open, request};
use folio_model::{
    ContentPart, Delta, FinishReason, Message, ModelError, OpenAiApi, ProviderConfig, Reasoning,
    Response, ToolCall, Usage,
};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const USAGE: Usage = Usage {
    input_tokens: 120,
    output_tokens: 30,
    cache_read_tokens: 1000,
    cache_write_tokens: 0,
    cost_usd: None,
};

fn responses(server: &MockModelServer) -> std::sync::Arc<dyn folio_model::Provider> {
    open(
        "openai-responses:test-model",
        &config(server.openai_base_url()),
    )
}

const TOOLS: &str = r#"[{"type": "function", "name": "Read", "description": "Read a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}, "strict": false}]"#;

#[tokio::test]
async fn a_text_reply_streams_and_the_request_is_a_responses_body() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("Hello there world").with_usage(USAGE));
    let deltas = collect(responses(&server).as_ref(), &request("hi"))
        .await
        .unwrap();
    assert_eq!(
        deltas,
        vec![
            Delta::Model("test-model".into()),
            Delta::Text("Hello ".into()),
            Delta::Text("there ".into()),
            Delta::Text("world".into()),
            Delta::Usage(USAGE),
            Delta::Finish(FinishReason::Stop),
        ]
    );
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/responses");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
    assert_eq!(
        sent.body,
        json!({
            "model": "test-model",
            "instructions": "You are a test.",
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
            "tools": serde_json::from_str::<Value>(TOOLS).unwrap(),
            "stream": true,
            "store": false,
        })
    );
}

#[tokio::test]
async fn a_tool_call_then_its_output_in_the_second_step() {
    let server = MockModelServer::start().await;
    server.push(
        MockReply::tool_calls([("Read", json!({"path": "/docs/a long name.md"}))])
            .with_text("Let me look."),
    );
    server.push(MockReply::text("It says hi."));
    let provider = responses(&server);
    let mut conversation = request("what does it say?");
    let deltas = collect(provider.as_ref(), &conversation).await.unwrap();
    let fragments = deltas
        .iter()
        .filter(|delta| matches!(delta, Delta::ToolCallArgs { .. }))
        .count();
    assert!(fragments >= 3, "arguments arrive in fragments: {deltas:?}");
    let first = assemble(&deltas);
    assert_eq!(
        first,
        Response {
            model: Some("test-model".into()),
            text: "Let me look.".into(),
            reasoning: None,
            tool_calls: vec![ToolCall {
                id: "call_mock0_0".into(),
                name: "Read".into(),
                input: json!({"path": "/docs/a long name.md"}),
            }],
            usage: Some(Usage::default()),
            finish_reason: Some(FinishReason::ToolCalls),
        }
    );
    conversation.messages.push(first.to_message());
    conversation.messages.push(Message::ToolResult {
        call_id: "call_mock0_0".into(),
        tool: "Read".into(),
        content: vec![ContentPart::Text { text: "hi".into() }],
        is_error: false,
    });
    let second = assemble(&collect(provider.as_ref(), &conversation).await.unwrap());
    assert_eq!(second.text, "It says hi.");
    assert_eq!(second.finish_reason, Some(FinishReason::Stop));
    assert_eq!(
        server.requests()[1].body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "what does it say?"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
            {"type": "function_call", "call_id": "call_mock0_0", "name": "Read",
             "arguments": "{\"path\":\"/docs/a long name.md\"}"},
            {"type": "function_call_output", "call_id": "call_mock0_0", "output": "hi"}
        ])
    );
}

/// The reasoning item of step 1 as the request input carries it back.
fn reasoning_input(encrypted: &str) -> Value {
    json!({"type": "reasoning", "id": "rs_mock0",
           "summary": [{"type": "summary_text", "text": "Read it first."}],
           "encrypted_content": encrypted})
}

#[tokio::test]
async fn reasoning_items_come_back_in_the_next_step_and_the_next_turn() {
    let server = MockModelServer::start().await;
    server.push(
        MockReply::tool_calls([("Read", json!({"path": "/a"}))])
            .with_reasoning("Read it first.")
            .with_signature("gAAAA-encrypted-1"),
    );
    server.push(MockReply::text("Done."));
    server.push(MockReply::text("Again."));
    let provider = open(
        "openai-responses:gpt-5-mini",
        &config(server.openai_base_url()),
    );
    let mut conversation = request("read /a");
    conversation.model = "gpt-5-mini".into();
    let deltas = collect(provider.as_ref(), &conversation).await.unwrap();
    assert_eq!(
        deltas[..4],
        [
            Delta::Model("gpt-5-mini".into()),
            Delta::Reasoning("Read ".into()),
            Delta::Reasoning("it ".into()),
            Delta::Reasoning("first.".into()),
        ]
    );
    let first = assemble(&deltas);
    let signature = r#"[{"id":"rs_mock0","summary":[{"type":"summary_text","text":"Read it first."}],"encrypted_content":"gAAAA-encrypted-1"}]"#;
    assert_eq!(
        first.reasoning,
        Some(Reasoning {
            text: "Read it first.".into(),
            signature: Some(signature.into()),
        })
    );
    // A reasoning model asks for its encrypted reasoning, so it can be sent back.
    assert_eq!(
        server.requests()[0].body["include"],
        json!(["reasoning.encrypted_content"])
    );

    // Step 2: the reasoning item precedes the call it led to.
    conversation.messages.push(first.to_message());
    conversation.messages.push(Message::ToolResult {
        call_id: "call_mock0_0".into(),
        tool: "Read".into(),
        content: vec![ContentPart::Text { text: "A".into() }],
        is_error: true,
    });
    let second = assemble(&collect(provider.as_ref(), &conversation).await.unwrap());
    let step_two = json!([
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "read /a"}]},
        reasoning_input("gAAAA-encrypted-1"),
        {"type": "function_call", "call_id": "call_mock0_0", "name": "Read", "arguments": "{\"path\":\"/a\"}"},
        {"type": "function_call_output", "call_id": "call_mock0_0", "output": "Error: A"}
    ]);
    assert_eq!(server.requests()[1].body["input"], step_two);

    // The next turn: the same reasoning item still goes back, in place.
    conversation.messages.push(second.to_message());
    conversation.messages.push(Message::User {
        text: "again".into(),
    });
    collect(provider.as_ref(), &conversation).await.unwrap();
    let mut turn_two = step_two.as_array().unwrap().clone();
    turn_two.push(json!({"type": "message", "role": "assistant",
                         "content": [{"type": "output_text", "text": "Done."}]}));
    turn_two.push(json!({"type": "message", "role": "user",
                         "content": [{"type": "input_text", "text": "again"}]}));
    assert_eq!(server.requests()[2].body["input"], Value::Array(turn_two));
}

#[tokio::test]
async fn a_signature_that_is_not_a_list_of_reasoning_items_is_not_sent() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("ok"));
    let mut conversation = request("hi");
    conversation.messages.push(Message::Assistant {
        text: "earlier".into(),
        reasoning: Some(Reasoning {
            text: "an Anthropic thought".into(),
            signature: Some("EqQBCkYIBxgCKkA=".into()),
        }),
        tool_calls: vec![],
    });
    conversation
        .messages
        .push(Message::User { text: "now".into() });
    collect(responses(&server).as_ref(), &conversation)
        .await
        .unwrap();
    let kinds: Vec<Value> = server.requests()[0].body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].clone())
        .collect();
    assert_eq!(
        kinds,
        [json!("message"), json!("message"), json!("message")]
    );
}

#[tokio::test]
async fn a_failed_response_is_an_error_naming_its_cause() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("Partial").with_stream_error("server_error", "The model crashed."));
    let error = collect(responses(&server).as_ref(), &request("hi"))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "openai: error in stream: server_error: The model crashed."
    );
    assert!(!error.is_context_overflow());

    server.push(MockReply::text("").with_stream_error(
        "context_length_exceeded",
        "Your input exceeds the context window of this model.",
    ));
    let error = collect(responses(&server).as_ref(), &request("hi"))
        .await
        .unwrap_err();
    assert!(error.is_context_overflow(), "{error}");
    assert_eq!(
        server.requests().len(),
        2,
        "never retried after the stream started"
    );
}

#[tokio::test]
async fn an_incomplete_response_finishes_with_length() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("Cut").with_finish("max_output_tokens"));
    let response = assemble(
        &collect(responses(&server).as_ref(), &request("hi"))
            .await
            .unwrap(),
    );
    assert_eq!(response.text, "Cut");
    assert_eq!(response.finish_reason, Some(FinishReason::Length));
}

#[tokio::test]
async fn stream_false_reads_one_whole_response() {
    let server = MockModelServer::start().await;
    server.push(
        MockReply::tool_calls([("Read", json!({"path": "/a"}))])
            .with_text("Looking.")
            .with_reasoning("Think.")
            .with_usage(USAGE),
    );
    let config = ProviderConfig {
        stream: false,
        ..config(server.openai_base_url())
    };
    let provider = open("openai-responses:test-model", &config);
    let response = assemble(&collect(provider.as_ref(), &request("hi")).await.unwrap());
    assert_eq!(
        response,
        Response {
            model: Some("test-model".into()),
            text: "Looking.".into(),
            reasoning: Some(Reasoning {
                text: "Think.".into(),
                signature: Some(
                    r#"[{"id":"rs_mock0","summary":[{"type":"summary_text","text":"Think."}],"encrypted_content":"mock-encrypted-0"}]"#
                        .into()
                ),
            }),
            tool_calls: vec![ToolCall {
                id: "call_mock0_0".into(),
                name: "Read".into(),
                input: json!({"path": "/a"}),
            }],
            usage: Some(USAGE),
            finish_reason: Some(FinishReason::ToolCalls),
        }
    );
    let sent = &server.requests()[0];
    assert_eq!(sent.body["stream"], json!(false));
    assert_eq!(sent.header("accept"), Some("application/json"));
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_honouring_retry_after() {
    let server = MockModelServer::start().await;
    server.push(MockReply::rate_limited(0));
    server.push(MockReply::server_error());
    server.push(MockReply::text("third time"));
    let response = assemble(
        &collect(responses(&server).as_ref(), &request("hi"))
            .await
            .unwrap(),
    );
    assert_eq!(response.text, "third time");
    assert_eq!(server.requests().len(), 3);

    server.push(MockReply::status(400).with_message("Unsupported parameter: 'foo'."));
    let error = collect(responses(&server).as_ref(), &request("hi"))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ModelError::Http { status: 400, .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "openai: HTTP 400: Unsupported parameter: 'foo'."
    );
    assert_eq!(server.requests().len(), 4, "a 400 is not retried");
}

#[tokio::test]
async fn model_params_map_to_responses_names() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("ok"));
    let mut asked = request("hi");
    for (key, value) in [
        ("max_tokens", json!(256)),
        ("temperature", json!(0.2)),
        ("reasoning_effort", json!("low")),
        ("stream", json!(false)),
    ] {
        asked.params.insert(key.into(), value);
    }
    collect(responses(&server).as_ref(), &asked).await.unwrap();
    let body = &server.requests()[0].body;
    assert_eq!(body["max_output_tokens"], json!(256));
    assert_eq!(body["temperature"], json!(0.2));
    assert_eq!(body["reasoning"], json!({"effort": "low"}));
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["stream"], json!(true), "Folio's own fields win");
    for gone in ["max_tokens", "reasoning_effort"] {
        assert!(body.get(gone).is_none(), "{gone} in {body}");
    }
}

#[tokio::test]
async fn provider_api_chooses_the_endpoint_of_an_openai_model() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("chat"));
    server.push(MockReply::text("responses"));
    server.push(MockReply::text("compatible"));
    let base = config(server.openai_base_url());
    let chat = open("openai:test-model", &base);
    assert_eq!(
        assemble(&collect(chat.as_ref(), &request("hi")).await.unwrap()).text,
        "chat"
    );
    let with_responses = ProviderConfig {
        api: Some(OpenAiApi::Responses),
        ..base.clone()
    };
    let via_api = open("openai:test-model", &with_responses);
    assert_eq!(
        assemble(&collect(via_api.as_ref(), &request("hi")).await.unwrap()).text,
        "responses"
    );
    let compatible = open("openai-compatible:test-model", &with_responses);
    assert_eq!(
        assemble(&collect(compatible.as_ref(), &request("hi")).await.unwrap()).text,
        "compatible"
    );
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        ["/v1/chat/completions", "/v1/responses", "/v1/responses"]
    );
}
