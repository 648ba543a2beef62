//! Record a session against the mock server, then replay it without a server.

mod common;

use std::sync::Arc;

use common::{collect, config, env, open, request};
use folio_model::{
    Message, ModelError, Provider, ProviderConfig, RecordingProvider, ReplayProvider,
    SessionRecordingProvider, for_session, open_provider,
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

#[tokio::test]
async fn a_shared_provider_records_each_session_into_its_own_fixture() {
    use std::os::unix::fs::PermissionsExt as _;

    let dir = tempfile::tempdir().unwrap();
    let server = MockModelServer::start().await;
    for text in ["one", "two", "three", "four"] {
        server.push(MockReply::text(text));
    }
    let live = open("openai:test-model", &config(server.openai_base_url()));
    let root = dir.path().to_path_buf();
    let recorder = SessionRecordingProvider::new(
        live,
        Arc::new(move |id: &str| {
            id.starts_with("ses_")
                .then(|| root.join(format!("{id}.jsonl")))
        }),
    );

    for_session("ses_a", collect(&recorder, &request("first")))
        .await
        .unwrap();
    for_session("ses_b", collect(&recorder, &request("other")))
        .await
        .unwrap();
    for_session("ses_a", collect(&recorder, &follow_up()))
        .await
        .unwrap();
    // Outside any session: answered, recorded nowhere.
    collect(&recorder, &request("loose")).await.unwrap();

    let lines = |id: &str| -> Vec<serde_json::Value> {
        std::fs::read_to_string(dir.path().join(format!("{id}.jsonl")))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    let texts = |id: &str| -> Vec<serde_json::Value> {
        lines(id)
            .iter()
            .map(|line| line["request"]["messages"][0]["text"].clone())
            .collect()
    };
    assert_eq!(texts("ses_a"), [json!("first"), json!("read it")]);
    assert_eq!(texts("ses_b"), [json!("other")]);
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["ses_a.jsonl", "ses_b.jsonl"]);
    let mode = std::fs::metadata(dir.path().join("ses_a.jsonl"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // The recording replays the session.
    let replay = ReplayProvider::open(dir.path().join("ses_a.jsonl")).unwrap();
    assert_eq!(replay.len(), 2);
    collect(&replay, &request("first")).await.unwrap();
    collect(&replay, &follow_up()).await.unwrap();
}

#[tokio::test]
async fn a_session_first_seen_mid_conversation_or_unnamable_is_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockModelServer::start().await;
    server.push(MockReply::text("answered"));
    let live = open("openai:test-model", &config(server.openai_base_url()));
    let root = dir.path().join("agent");
    std::fs::create_dir(&root).unwrap();
    let recorder = SessionRecordingProvider::new(
        live,
        Arc::new(move |id: &str| {
            (!id.contains('/') && !id.contains("..")).then(|| root.join(format!("{id}.jsonl")))
        }),
    );

    // Begun before recording: a fixture of its later calls could not replay it.
    for_session("ses_old", collect(&recorder, &follow_up()))
        .await
        .unwrap();
    assert!(!dir.path().join("agent/ses_old.jsonl").exists());

    // An id that cannot name a file fails the call before it reaches the model.
    let error = for_session("../../escape", collect(&recorder, &request("x")))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "fixture ../../escape: cannot record: session id \"../../escape\" cannot name a fixture file"
    );
    assert_eq!(server.requests().len(), 1);
    let entries: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(entries, ["agent"]);
    assert_eq!(
        std::fs::read_dir(dir.path().join("agent")).unwrap().count(),
        0
    );
}

#[tokio::test]
async fn a_line_torn_by_a_crash_is_cut_before_the_next_exchange() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = dir.path().join("f.jsonl");
    let server = MockModelServer::start().await;
    server.push(MockReply::text("one"));
    server.push(MockReply::text("two"));
    let live = open("openai:test-model", &config(server.openai_base_url()));
    let recorder = RecordingProvider::new(live, &fixture);
    collect(&recorder, &request("first")).await.unwrap();
    let whole = std::fs::read_to_string(&fixture).unwrap();
    // A crash in the middle of writing the next line.
    std::fs::write(&fixture, format!("{whole}{{\"request\":{{\"mod")).unwrap();
    // Replay leaves the torn line out...
    assert_eq!(ReplayProvider::open(&fixture).unwrap().len(), 1);
    // ...but not a whole last line that lacks only its newline (a hand-edited fixture).
    std::fs::write(dir.path().join("edited.jsonl"), whole.trim_end()).unwrap();
    assert_eq!(
        ReplayProvider::open(dir.path().join("edited.jsonl"))
            .unwrap()
            .len(),
        1
    );
    // A line that is not an exchange anywhere else still fails the fixture.
    std::fs::write(dir.path().join("broken.jsonl"), format!("{{}}\n{whole}")).unwrap();
    assert!(ReplayProvider::open(dir.path().join("broken.jsonl")).is_err());

    collect(&recorder, &follow_up()).await.unwrap();
    let text = std::fs::read_to_string(&fixture).unwrap();
    assert!(text.starts_with(&whole), "{text}");
    assert_eq!(text.lines().count(), 2, "{text}");
    let replay = ReplayProvider::open(&fixture).unwrap();
    collect(&replay, &request("first")).await.unwrap();
    collect(&replay, &follow_up()).await.unwrap();
}
