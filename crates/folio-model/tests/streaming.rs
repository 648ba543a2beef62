//! Streaming against the mock server: text, tool-call assembly, reasoning, usage, both formats.

mod common;

use common::{assemble, collect, config, open, request};
use folio_model::{Delta, FinishReason, ProviderConfig, Reasoning, Response, ToolCall, Usage};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::json;

const USAGE: Usage = Usage {
    input_tokens: 120,
    output_tokens: 30,
    cache_read_tokens: 1000,
    cache_write_tokens: 0,
    cost_usd: None,
};

#[tokio::test]
async fn openai_streams_text_deltas() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("Hello there world").with_usage(USAGE));
    let provider = open("openai:test-model", &config(server.openai_base_url()));
    let deltas = collect(provider.as_ref(), &request("hi")).await.unwrap();
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
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.body["stream"], json!(true));
    assert_eq!(sent.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(sent.body["model"], json!("test-model"));
    assert_eq!(
        sent.body["messages"],
        json!([{"role": "system", "content": "You are a test."}, {"role": "user", "content": "hi"}])
    );
    assert_eq!(sent.body["tools"][0]["function"]["name"], json!("Read"));
}

#[tokio::test]
async fn anthropic_streams_text_deltas() {
    let server = MockModelServer::start().await;
    let usage = Usage {
        cache_write_tokens: 64,
        ..USAGE
    };
    server.push(MockReply::text("Hello there world").with_usage(usage));
    let provider = open("anthropic:test-model", &config(server.anthropic_base_url()));
    let deltas = collect(provider.as_ref(), &request("hi")).await.unwrap();
    assert_eq!(
        deltas,
        vec![
            Delta::Model("test-model".into()),
            Delta::Text("Hello ".into()),
            Delta::Text("there ".into()),
            Delta::Text("world".into()),
            Delta::Usage(usage),
            Delta::Finish(FinishReason::Stop),
        ]
    );
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("ak-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.body["stream"], json!(true));
    assert_eq!(sent.body["max_tokens"], json!(8192));
    assert_eq!(
        sent.body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    );
    assert_eq!(
        sent.body["tools"][0]["input_schema"]["type"],
        json!("object")
    );
}

fn two_calls() -> MockReply {
    MockReply::tool_calls([
        (
            "Read",
            json!({"path": "/docs/a long file name.md", "offset": 10}),
        ),
        ("Glob", json!({"pattern": "**/*.rs"})),
    ])
    .with_text("Let me look.")
}

/// What [`two_calls`] assembles into, with the route's call-id prefix and reported usage.
fn two_calls_response(id_prefix: &str, usage: Usage) -> Response {
    Response {
        model: Some("test-model".into()),
        text: "Let me look.".into(),
        reasoning: None,
        tool_calls: vec![
            ToolCall {
                id: format!("{id_prefix}0"),
                name: "Read".into(),
                input: json!({"path": "/docs/a long file name.md", "offset": 10}),
            },
            ToolCall {
                id: format!("{id_prefix}1"),
                name: "Glob".into(),
                input: json!({"pattern": "**/*.rs"}),
            },
        ],
        usage: Some(usage),
        finish_reason: Some(FinishReason::ToolCalls),
    }
}

fn arg_fragments(deltas: &[Delta], wanted: usize) -> usize {
    deltas
        .iter()
        .filter(|delta| matches!(delta, Delta::ToolCallArgs { index, .. } if *index == wanted))
        .count()
}

#[tokio::test]
async fn openai_assembles_tool_calls_from_fragments() {
    let server = MockModelServer::start().await;
    server.push(two_calls());
    let provider = open("openai:test-model", &config(server.openai_base_url()));
    let deltas = collect(provider.as_ref(), &request("look")).await.unwrap();
    assert!(arg_fragments(&deltas, 0) >= 3, "{deltas:?}");
    assert!(arg_fragments(&deltas, 1) >= 3, "{deltas:?}");
    assert_eq!(
        assemble(&deltas),
        two_calls_response("call_mock0_", Usage::default())
    );
    assert!(deltas.contains(&Delta::ToolCallEnd { index: 0 }));
    assert!(deltas.contains(&Delta::ToolCallEnd { index: 1 }));
}

#[tokio::test]
async fn anthropic_assembles_tool_calls_from_fragments() {
    let server = MockModelServer::start().await;
    server.push(two_calls());
    let provider = open("anthropic:test-model", &config(server.anthropic_base_url()));
    let deltas = collect(provider.as_ref(), &request("look")).await.unwrap();
    // Block 0 is the text; the tool_use blocks are 1 and 2.
    assert!(arg_fragments(&deltas, 1) >= 3, "{deltas:?}");
    assert!(arg_fragments(&deltas, 2) >= 3, "{deltas:?}");
    assert_eq!(
        assemble(&deltas),
        two_calls_response("toolu_mock0_", Usage::default())
    );
}

#[tokio::test]
async fn openai_streams_reasoning_content() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("42").with_reasoning("Six times seven."));
    let provider = open("openai:test-model", &config(server.openai_base_url()));
    let deltas = collect(provider.as_ref(), &request("?")).await.unwrap();
    assert_eq!(
        deltas[..5],
        [
            Delta::Model("test-model".into()),
            Delta::Reasoning("Six ".into()),
            Delta::Reasoning("times ".into()),
            Delta::Reasoning("seven.".into()),
            Delta::Text("42".into()),
        ]
    );
    assert_eq!(
        assemble(&deltas).reasoning,
        Some(Reasoning {
            text: "Six times seven.".into(),
            signature: None
        })
    );
}

#[tokio::test]
async fn anthropic_streams_thinking_with_signature() {
    let server = MockModelServer::start().await;
    server.push(
        MockReply::text("42")
            .with_reasoning("Six times seven.")
            .with_signature("c2lnbmVk"),
    );
    let provider = open("anthropic:test-model", &config(server.anthropic_base_url()));
    let deltas = collect(provider.as_ref(), &request("?")).await.unwrap();
    assert_eq!(
        deltas[..6],
        [
            Delta::Model("test-model".into()),
            Delta::Reasoning("Six ".into()),
            Delta::Reasoning("times ".into()),
            Delta::Reasoning("seven.".into()),
            Delta::ReasoningSignature("c2lnbmVk".into()),
            Delta::Text("42".into()),
        ]
    );
    let response = assemble(&deltas);
    assert_eq!(
        response.reasoning,
        Some(Reasoning {
            text: "Six times seven.".into(),
            signature: Some("c2lnbmVk".into())
        })
    );

    // The signed thinking goes back to the API on the next request.
    server.push(MockReply::text("ok"));
    let mut next = request("?");
    next.messages.push(response.to_message());
    next.messages.push(folio_model::Message::User {
        text: "and?".into(),
    });
    collect(provider.as_ref(), &next).await.unwrap();
    assert_eq!(
        server.requests()[1].body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Six times seven.", "signature": "c2lnbmVk"},
            {"type": "text", "text": "42"}
        ]})
    );
}

#[tokio::test]
async fn usage_includes_cache_tokens_in_both_formats() {
    let server = MockModelServer::start().await;
    let usage = Usage {
        input_tokens: 5,
        output_tokens: 7,
        cache_read_tokens: 900,
        cache_write_tokens: 300,
        cost_usd: None,
    };
    server.push(MockReply::text("a").with_usage(usage));
    server.push(MockReply::text("a").with_usage(usage));
    let anthropic = open("anthropic:test-model", &config(server.anthropic_base_url()));
    let openai = open("openai:test-model", &config(server.openai_base_url()));
    let from_anthropic = assemble(&collect(anthropic.as_ref(), &request("x")).await.unwrap());
    assert_eq!(from_anthropic.usage, Some(usage));
    // OpenAI reports cached reads inside prompt_tokens and has no cache-write count: the mock
    // folds writes into prompt_tokens, so they come back as uncached input.
    let from_openai = assemble(&collect(openai.as_ref(), &request("x")).await.unwrap());
    assert_eq!(
        from_openai.usage,
        Some(Usage {
            input_tokens: 305,
            output_tokens: 7,
            cache_read_tokens: 900,
            cache_write_tokens: 0,
            cost_usd: None,
        })
    );
}

/// Some OpenAI-compatible servers (llama.cpp's) send no usage in a stream even when asked:
/// the usage is unknown, never a made-up zero.
#[tokio::test]
async fn a_stream_without_usage_reports_none() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("hi").without_usage());
    let openai = open("openai:test-model", &config(server.openai_base_url()));
    let response = assemble(&collect(openai.as_ref(), &request("x")).await.unwrap());
    assert_eq!(response.text, "hi");
    assert_eq!(response.usage, None);
}

/// `stream = false`: one whole `chat.completion` (no `stream_options`), decoded into the same
/// response as a stream, usage included.
#[tokio::test]
async fn stream_false_asks_for_one_whole_response() {
    let server = MockModelServer::start().await;
    let usage = Usage {
        input_tokens: 11,
        output_tokens: 3,
        ..Usage::default()
    };
    server.push(two_calls().with_usage(usage));
    let provider = open(
        "openai-compatible:test-model",
        &ProviderConfig {
            stream: false,
            ..config(server.openai_base_url())
        },
    );
    let response = assemble(&collect(provider.as_ref(), &request("look")).await.unwrap());
    let body = &server.requests()[0].body;
    assert_eq!(body["stream"], json!(false));
    assert_eq!(body.get("stream_options"), None);
    assert_eq!(response, two_calls_response("call_mock0_", usage));
}

#[test]
fn stream_false_is_refused_for_anthropic() {
    let Err(error) = folio_model::open_provider(
        "anthropic:claude",
        &ProviderConfig {
            stream: false,
            ..ProviderConfig::default()
        },
        &|_| Some("key".to_string()),
    ) else {
        panic!("anthropic with stream = false must be refused");
    };
    assert!(error.to_string().contains("stream = false"), "{error}");
}

#[tokio::test]
async fn openai_compatible_sends_no_key_unless_configured() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("a"));
    server.push(MockReply::text("b"));
    let plain = open("openai-compatible:llama", &config(server.openai_base_url()));
    collect(plain.as_ref(), &request("x")).await.unwrap();
    assert_eq!(server.requests()[0].header("authorization"), None);

    let mut keyed = config(server.openai_base_url());
    keyed.api_key_env = Some("OPENAI_API_KEY".into());
    let keyed = open("openai-compatible:llama", &keyed);
    collect(keyed.as_ref(), &request("x")).await.unwrap();
    assert_eq!(
        server.requests()[1].header("authorization"),
        Some("Bearer sk-test")
    );
}

#[tokio::test]
async fn params_pass_through() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("a"));
    let provider = open("anthropic:test-model", &config(server.anthropic_base_url()));
    let mut req = request("x");
    req.params.insert("max_tokens".into(), json!(1024));
    req.params.insert("temperature".into(), json!(0.5));
    collect(provider.as_ref(), &req).await.unwrap();
    let body = &server.requests()[0].body;
    assert_eq!(
        (&body["max_tokens"], &body["temperature"]),
        (&json!(1024), &json!(0.5))
    );
}

/// `ollama:` and `llama-cpp:` are OpenAI-compatible presets: the server named by `OLLAMA_HOST`
/// / `LLAMA_CPP_HOST` (as those servers spell it, scheme optional), no API key sent.
#[tokio::test]
async fn local_server_presets_find_their_server_and_send_no_key() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("from ollama"));
    server.push(MockReply::text("from llama.cpp"));
    let addr = server.addr().to_string();
    let wildcard = format!("http://0.0.0.0:{}", server.addr().port());
    for (spec, var, value) in [
        ("ollama:qwen3", "OLLAMA_HOST", addr.as_str()),
        ("llama-cpp:local", "LLAMA_CPP_HOST", wildcard.as_str()),
    ] {
        let env = |name: &str| (name == var).then(|| value.to_string());
        let config = ProviderConfig {
            base_url: None,
            ..config(String::new())
        };
        let (provider, model) = folio_model::open_provider(spec, &config, &env).unwrap();
        let deltas = collect(provider.as_ref(), &request("hi")).await.unwrap();
        assert!(!deltas.is_empty(), "{spec}");
        assert_eq!(model, spec.split_once(':').unwrap().1);
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.header("authorization"), None);
    }
}
