//! Crash recovery: `kill -9` the server during a streamed turn, tear the log's last line, and
//! restart on the same state root.

mod serve_support;

use std::io::Write;
use std::time::Duration;

use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::json;
use serve_support::*;

#[tokio::test]
async fn kill_9_mid_turn_then_restart_resumes_the_stream_and_the_conversation() {
    let mock = MockModelServer::start().await;
    mock.push(
        MockReply::text("one two three four five six seven eight nine ten eleven twelve")
            .chunk_delay(Duration::from_millis(400)),
    );
    let dir = project("name = \"crashy\"\nmodel = \"openai:gpt-test\"\n");
    let state = tempfile::tempdir().unwrap();
    let mut server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    let (status, created) = post(&format!("{url}/v1/session"), json!({"message": "first"})).await;
    assert_eq!(status, 201);
    let id = created["sessionId"].as_str().unwrap().to_string();
    let token = created["continuationToken"].as_str().unwrap().to_string();
    let mut stream = Stream::open(&url, &id, 0, None).await;
    stream.until("message.appended").await;
    let seen = stream.events.clone();
    assert_contiguous(&seen, 0);
    let last_seen = seen.last().unwrap()["index"].as_u64().unwrap();

    server.child.start_kill().unwrap();
    server.child.wait().await.unwrap();
    drop(stream);

    // A crash mid-append leaves half a line.
    let trace = state
        .path()
        .join("test-agent/traces")
        .join(format!("{id}.ndjson"));
    let stored_before = std::fs::read_to_string(&trace).unwrap().lines().count() as u64;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&trace)
        .unwrap();
    file.write_all(br#"{"type":"message.appended","index":"#)
        .unwrap();
    drop(file);

    mock.push(MockReply::text("continued after the restart"));
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();

    // Resume from the next index: no gap, no duplicate, the index sequence continues.
    let mut resumed = Stream::open(&url, &id, last_seen + 1, None).await;
    resumed.until("session.waiting").await;
    assert_contiguous(&resumed.events, last_seen + 1);
    let failed = resumed
        .events
        .iter()
        .find(|e| e["type"] == "turn.failed")
        .unwrap();
    assert_eq!(failed["data"]["message"], "server restarted");
    assert_eq!(
        failed["index"], stored_before,
        "the torn line is dropped, not served"
    );
    assert_eq!(failed["turnId"], seen[1]["turnId"]);

    // The whole log replays without the torn line and with contiguous indexes.
    let mut replay = Stream::open(&url, &id, 0, None).await;
    replay.until("session.waiting").await;
    assert_contiguous(&replay.events, 0);
    assert_eq!(replay.events[..seen.len()], seen[..]);

    // A follow-up (with the token issued before the crash) continues the conversation.
    let (status, followed) = post(
        &format!("{url}/v1/session/{id}"),
        json!({"continuationToken": token, "message": "second"}),
    )
    .await;
    assert_eq!(status, 200, "{followed}");
    replay.until("turn.completed").await;
    let requests = mock.requests();
    let last = requests.last().unwrap();
    let users: Vec<&str> = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["first", "second"]);
    let (_, got) = get(&format!("{url}/v1/session/{id}")).await;
    assert_eq!(got["session"]["turns"], 2);
}
