//! Crash recovery: `kill -9` the server during a streamed turn, tear the log's last line, and
//! restart on the same state root.

mod serve_support;

use std::io::Write;
use std::time::Duration;

use folio_protocol::{CreateSession, EventBody, FollowUp, SERVER_RESTARTED, TurnFailed};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
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
    let created = create_session(&url, &CreateSession::message("first")).await;
    let id = created.session_id;
    let mut stream = Stream::open(&url, &id, 0, None).await;
    stream.until("message.appended").await;
    let seen = stream.events.clone();
    assert_contiguous(&seen, 0);
    let last_seen = seen.last().unwrap().index;

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
    let failed = first::<TurnFailed>(&resumed.events);
    assert_eq!(
        failed.body,
        EventBody::TurnFailed(TurnFailed {
            message: SERVER_RESTARTED.into()
        })
    );
    assert_eq!(
        failed.index, stored_before,
        "the torn line is dropped, not served"
    );
    assert_eq!(failed.turn_id, seen[1].turn_id);

    // The whole log replays without the torn line and with contiguous indexes.
    let mut replay = Stream::open(&url, &id, 0, None).await;
    replay.until("session.waiting").await;
    assert_contiguous(&replay.events, 0);
    assert_eq!(replay.events[..seen.len()], seen[..]);

    // A follow-up (with the token issued before the crash) continues the conversation.
    follow_up(
        &url,
        &id,
        &FollowUp::new(&created.continuation_token, "second"),
    )
    .await;
    replay.until("turn.completed").await;
    assert_eq!(
        mock.requests().last().unwrap().user_texts(),
        ["first", "second"]
    );
    assert_eq!(session(&url, &id).await.turns, 2);
}
