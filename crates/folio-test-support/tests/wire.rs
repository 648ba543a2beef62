//! The mock server's raw wire output, read over a plain TCP socket.

use folio_test_support::{MockModelServer, MockReply, Usage};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn raw_post(server: &MockModelServer, path: &str, body: &serde_json::Value) -> String {
    let mut socket = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\nx-test: yes\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        server.addr(),
        body.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    socket.read_to_string(&mut response).await.unwrap();
    response
}

#[tokio::test]
async fn openai_route_streams_chunks_usage_and_done() {
    let server = MockModelServer::start().await;
    server.push(
        MockReply::tool_calls([("Read", json!({"path": "/a"}))]).with_usage(Usage {
            input_tokens: 3,
            output_tokens: 4,
            cache_read_tokens: 5,
            cache_write_tokens: 0,
            cost_usd: None,
        }),
    );
    let body = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}, "messages": []});
    let response = raw_post(&server, "/v1/chat/completions", &body).await;
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(
        response.contains("content-type: text/event-stream"),
        "{response}"
    );
    assert!(response.contains(r#""tool_calls":[{"function":{"arguments":"","name":"Read"},"id":"call_mock0_0","index":0,"type":"function"}]"#), "{response}");
    assert!(
        response.contains(r#""finish_reason":"tool_calls""#),
        "{response}"
    );
    assert!(response.contains(r#""prompt_tokens":8"#), "{response}");
    assert!(
        response.contains(r#""prompt_tokens_details":{"audio_tokens":0,"cached_tokens":5}"#),
        "{response}"
    );
    assert!(response.contains("data: [DONE]\n\n"), "{response}");

    let recorded = &server.requests()[0];
    assert_eq!(recorded.path, "/v1/chat/completions");
    assert_eq!(recorded.header("X-Test"), Some("yes"));
    assert_eq!(recorded.body, body);
}

#[tokio::test]
async fn openai_route_omits_usage_unless_asked() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("hi"));
    let response = raw_post(
        &server,
        "/v1/chat/completions",
        &json!({"model": "m", "stream": true}),
    )
    .await;
    assert!(!response.contains("prompt_tokens"), "{response}");
    assert!(!response.contains(r#""usage""#), "{response}");
    assert!(response.contains("data: [DONE]"), "{response}");
}

#[tokio::test]
async fn anthropic_route_streams_named_events() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("hi").with_reasoning("hmm"));
    let response = raw_post(
        &server,
        "/v1/messages",
        &json!({"model": "claude", "stream": true}),
    )
    .await;
    let order = [
        "event: message_start\n",
        "event: ping\n",
        "event: content_block_start\ndata: {\"content_block\":{\"signature\":\"\",\"thinking\":\"\",\"type\":\"thinking\"}",
        "\"delta\":{\"thinking\":\"hmm\",\"type\":\"thinking_delta\"}",
        "\"delta\":{\"signature\":\"mock-signature\",\"type\":\"signature_delta\"}",
        "\"delta\":{\"text\":\"hi\",\"type\":\"text_delta\"}",
        "event: message_delta\ndata: {\"delta\":{\"stop_reason\":\"end_turn\"",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    ];
    assert_in_order(&response, &order);
}

/// Finds each needle after the previous one in `response`.
fn assert_in_order(response: &str, order: &[&str]) {
    let mut from = 0;
    for needle in order {
        let found = response[from..]
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} after {from} in {response}"));
        from += found + needle.len();
    }
}

#[tokio::test]
async fn responses_route_streams_output_items_and_completes() {
    let server = MockModelServer::start().await;
    server.push(
        MockReply::tool_calls([("Read", json!({"path": "/a"}))])
            .with_text("ok")
            .with_reasoning("hmm"),
    );
    let response = raw_post(
        &server,
        "/v1/responses",
        &json!({"model": "gpt-5", "stream": true, "input": []}),
    )
    .await;
    assert_in_order(
        &response,
        &[
            "event: response.created\n",
            "event: response.in_progress\n",
            "\"item\":{\"id\":\"rs_mock0\",\"summary\":[],\"type\":\"reasoning\"}",
            "event: response.reasoning_summary_text.delta\n",
            "\"encrypted_content\":\"mock-encrypted-0\"",
            "event: response.output_text.delta\ndata: {\"content_index\":0,\"delta\":\"ok\"",
            "\"call_id\":\"call_mock0_0\"",
            "event: response.function_call_arguments.delta\n",
            "event: response.output_item.done\n",
            "event: response.completed\n",
        ],
    );

    server.push(MockReply::text("partial").with_stream_error("server_error", "boom"));
    let response = raw_post(&server, "/v1/responses", &json!({"stream": true})).await;
    assert!(response.contains("event: response.failed\n"), "{response}");
    assert!(
        response.contains(r#""error":{"code":"server_error","message":"boom"}"#),
        "{response}"
    );
    assert!(!response.contains("response.completed"), "{response}");
}

#[tokio::test]
async fn error_replies_carry_retry_after_and_route_format() {
    let server = MockModelServer::start().await;
    server.push(MockReply::rate_limited(7));
    server.push(MockReply::status(529).with_message("busy"));
    let openai = raw_post(&server, "/v1/chat/completions", &json!({})).await;
    assert!(
        openai.starts_with("HTTP/1.1 429 Too Many Requests\r\n"),
        "{openai}"
    );
    assert!(openai.contains("retry-after: 7\r\n"), "{openai}");
    assert!(
        openai.contains(r#""type":"rate_limit_exceeded""#),
        "{openai}"
    );
    let anthropic = raw_post(&server, "/v1/messages", &json!({})).await;
    assert!(anthropic.starts_with("HTTP/1.1 529 "), "{anthropic}");
    assert!(
        anthropic
            .contains(r#"{"error":{"message":"busy","type":"overloaded_error"},"type":"error"}"#),
        "{anthropic}"
    );
    let empty = raw_post(&server, "/v1/messages", &json!({})).await;
    assert!(empty.starts_with("HTTP/1.1 500 "), "{empty}");
    assert!(
        empty.contains("no scripted reply left for request #2"),
        "{empty}"
    );
}
