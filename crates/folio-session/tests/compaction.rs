//! The context budget end to end: a session driven past a small window compacts once per
//! threshold crossing and its model requests stay small; the log keeps everything; a provider
//! that answers "context length exceeded" gets one compaction and a retry instead of a failed
//! turn.

mod support;

use folio_protocol::{CreateSession, Event, EventBody};
use folio_test_support::{ChatMessage, MockModelServer, MockReply, RecordedRequest};
use pretty_assertions::assert_eq;
use support::*;

/// About 100 approximate tokens (300 bytes) of text.
fn words(tag: &str) -> String {
    format!("{tag} {}", "lorem ipsum dolor ".repeat(16))
}

fn create(message: String) -> CreateSession {
    CreateSession {
        message,
        title: None,
        workspace_files: Default::default(),
        mode: None,
        client_message_id: None,
        continuation_key: None,
    }
}

fn compactions(events: &[Event]) -> Vec<(u64, String)> {
    events
        .iter()
        .filter_map(|event| match &event.body {
            EventBody::ContextCompacted(c) => Some((c.up_to_index, c.summary.clone())),
            _ => None,
        })
        .collect()
}

/// The content of every message of a recorded chat request.
fn contents(request: &RecordedRequest) -> Vec<String> {
    request.messages().iter().map(ChatMessage::text).collect()
}

#[tokio::test]
async fn a_session_past_its_window_compacts_once_per_crossing_and_keeps_its_log() {
    let mock = MockModelServer::start().await;
    // Turn 1 fits; every later turn crosses the threshold once and compacts first.
    mock.push(MockReply::text(words("reply1")));
    for turn in 2..=4 {
        mock.push(MockReply::text(format!("summary before turn {turn}")));
        mock.push(MockReply::text(words(&format!("reply{turn}"))));
    }
    let dir = project("tools = []\n[context]\nwindow = 400\ncompact_at = 0.5\nkeep_recent = 0\n");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let id = manager
        .sessions()
        .create("local", "http", create(words("ask1")))
        .await
        .unwrap()
        .session_id;
    wait_turns(&manager, &id, 1).await;
    for turn in 2..=4 {
        manager
            .turns()
            .send("local", &id, &words(&format!("ask{turn}")), None)
            .await
            .unwrap();
        wait_turns(&manager, &id, turn).await;
    }
    let events = manager.events().read("local", &id).await.unwrap();

    // One compaction per crossing, each summarizing up to the turn it keeps.
    let received: Vec<u64> = events
        .iter()
        .filter(|e| matches!(e.body, EventBody::MessageReceived(_)))
        .map(|e| e.index)
        .collect();
    assert_eq!(received.len(), 4, "the log keeps every message");
    assert_eq!(
        compactions(&events),
        (2..=4)
            .map(|turn| (received[turn - 1], format!("summary before turn {turn}")))
            .collect::<Vec<_>>()
    );
    let completed = events
        .iter()
        .filter(|e| matches!(e.body, EventBody::TurnCompleted(_)))
        .count();
    assert_eq!(completed, 4);

    // The model's requests: turn 1 plain; each later turn a summary request (over the earlier
    // conversation) then the turn's request: system, the summary, the current message.
    let requests = mock.requests();
    assert_eq!(requests.len(), 7);
    assert_eq!(contents(&requests[0])[1], words("ask1"));
    for turn in 2..=4 {
        let summary = &requests[2 * turn - 3];
        assert!(
            contents(summary)[0].starts_with("You compact conversations"),
            "{}",
            summary.body
        );
        let asked = contents(&requests[2 * turn - 2]);
        assert_eq!(asked.len(), 3, "{asked:?}");
        assert!(asked[1].ends_with(&format!("summary before turn {turn}")));
        assert_eq!(asked[2], words(&format!("ask{turn}")));
        let bytes: usize = asked.iter().map(String::len).sum();
        assert!(
            bytes < 3 * 200,
            "the request stays under the 200-token threshold: {bytes} bytes"
        );
    }
    // The second summary request carries the first summary forward.
    assert!(
        contents(&requests[3])
            .iter()
            .any(|m| m.ends_with("summary before turn 2"))
    );
}

#[tokio::test]
async fn a_context_length_error_compacts_and_retries_the_step() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("first answer"));
    mock.push(MockReply::status(400).with_message(
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
    ));
    mock.push(MockReply::text("what happened so far"));
    mock.push(MockReply::text("second answer"));
    let dir = project("tools = []\n[context]\nkeep_recent = 0\n");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let id = manager
        .sessions()
        .create("local", "http", create("one".into()))
        .await
        .unwrap()
        .session_id;
    wait_turns(&manager, &id, 1).await;
    manager
        .turns()
        .send("local", &id, "two", None)
        .await
        .unwrap();
    let events = wait_turns(&manager, &id, 2).await;
    let replies: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::TurnCompleted(done) => Some(done.reply.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(replies, ["first answer", "second answer"]);
    assert_eq!(compactions(&events).len(), 1);
    let retried = contents(&mock.requests()[3]);
    assert!(retried[1].ends_with("what happened so far"), "{retried:?}");
    assert_eq!(retried[2], "two");
}
