//! Record a session against the mock server, then replay it without a server.

mod common;

use std::sync::Arc;

use common::{collect, config, env, open, request};
use folio_model::{
    Message, ModelError, Provider, ProviderConfig, RecordingProvider, ReplayProvider, open_provider,
};
use folio_test_support::{MockModelServer, MockReply, Usage};
use pretty_assertions::assert_eq;
use serde_json::json;

fn follow_up() -> folio_model::ModelRequest {
    let mut next = request("read it");
    next.messages.push(Message::Assistant {
        text: String::new(),
        reasoning: None,
        tool_calls: vec![folio_model::ToolCall {
            id: "call_mock0_0".into(),
            name: "Read".into(),
            input: json!({"path": "/a.txt"}),
        }],
    });
    next.messages.push(Message::ToolResult {
        call_id: "call_mock0_0".into(),
        tool: "Read".into(),
        content: vec![folio_model::ContentPart::Text {
            text: "     1\thello".into(),
        }],
        is_error: false,
    });
    next
}

#[tokio::test]
async fn record_then_replay_gives_the_same_deltas() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = dir.path().join("session.jsonl");
    let server = MockModelServer::start().await;
    server.push(
        MockReply::tool_calls([("Read", json!({"path": "/a.txt"}))]).with_usage(Usage {
            input_tokens: 10,
            output_tokens: 3,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cost_usd: None,
        }),
    );
    server.push(MockReply::text("It says hello.").with_reasoning("Easy."));

    let live = open("openai:test-model", &config(server.openai_base_url()));
    let recorder = RecordingProvider::new(live, &fixture);
    let first = collect(&recorder, &request("read it")).await.unwrap();
    let second = collect(&recorder, &follow_up()).await.unwrap();
    drop(server);

    let text = std::fs::read_to_string(&fixture).unwrap();
    assert_eq!(text.lines().count(), 2);
    let line: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        line["request"]["messages"],
        json!([{"role": "user", "text": "read it"}])
    );
    assert_eq!(line["response"][0], json!({"model": "test-model"}));
    assert_eq!(
        line["response"][1],
        json!({"toolCallStart": {"index": 0, "id": "call_mock0_0", "name": "Read"}})
    );

    let spec = format!("replay:{}", fixture.display());
    let (replay, model) = open_provider(&spec, &ProviderConfig::default(), &env).unwrap();
    assert_eq!(model, fixture.display().to_string());
    assert_eq!(
        collect(replay.as_ref(), &request("read it")).await.unwrap(),
        first
    );
    assert_eq!(
        collect(replay.as_ref(), &follow_up()).await.unwrap(),
        second
    );

    let error = collect(replay.as_ref(), &request("again"))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "replay: request 2 asked but {} holds only 2 recorded responses",
            fixture.display()
        )
    );
}

#[tokio::test]
async fn replay_mismatch_shows_a_line_diff() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = dir.path().join("f.jsonl");
    let server = MockModelServer::start().await;
    server.push(MockReply::text("hi"));
    let live = open("anthropic:test-model", &config(server.anthropic_base_url()));
    collect(&RecordingProvider::new(live, &fixture), &request("hello"))
        .await
        .unwrap();

    let replay = ReplayProvider::open(&fixture).unwrap();
    assert_eq!(replay.len(), 1);
    let error = collect(&replay, &request("goodbye")).await.unwrap_err();
    let ModelError::ReplayMismatch { index, diff, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!(*index, 0);
    assert!(diff.contains("-      \"text\": \"hello\""), "{diff}");
    assert!(diff.contains("+      \"text\": \"goodbye\""), "{diff}");
    assert!(diff.starts_with("--- recorded\n+++ request\n"), "{diff}");
    let message = error.to_string();
    assert!(
        message.starts_with(&format!(
            "replay: request 0 differs from the recording in {} (- recorded, + now):\n",
            fixture.display()
        )),
        "{message}"
    );
}

#[tokio::test]
async fn failed_exchanges_are_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = dir.path().join("f.jsonl");
    let server = MockModelServer::start().await;
    server.push(MockReply::status(400));
    let mut once = config(server.openai_base_url());
    once.retry.max_attempts = 1;
    let live: Arc<dyn Provider> = open("openai:test-model", &once);
    let recorder = RecordingProvider::new(live, &fixture);
    assert!(collect(&recorder, &request("x")).await.is_err());
    assert!(!fixture.exists());
}

#[test]
fn unreadable_fixtures_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    let error = ReplayProvider::open(&missing).err().unwrap();
    assert!(
        error
            .to_string()
            .starts_with(&format!("fixture {}: cannot read: ", missing.display()))
    );

    let broken = dir.path().join("broken.jsonl");
    std::fs::write(&broken, "\n{not json}\n").unwrap();
    let error = ReplayProvider::open(&broken).err().unwrap();
    assert!(
        error
            .to_string()
            .starts_with(&format!("fixture {}: line 2: ", broken.display())),
        "{error}"
    );
}
