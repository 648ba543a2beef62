//! SessionManager in process: keep-alive lines, a session whose directory is deleted, replay
//! from any start index during a live turn, workspace files, token totals kept at turn ends.

mod support;

use std::time::Duration;

use folio_protocol::{CreateSession, EventBody, SessionStatus, Usage};
use folio_session::ManagerError;
use folio_test_support::{MockModelServer, MockReply};
use futures::StreamExt;
use pretty_assertions::assert_eq;
use support::*;

fn create(message: &str) -> CreateSession {
    CreateSession {
        message: message.into(),
        title: Some("t".into()),
        workspace_files: [("notes/a.txt".to_string(), "alpha".to_string())].into(),
        mode: None,
        client_message_id: None,
        continuation_key: None,
    }
}

#[tokio::test]
async fn idle_streams_send_keep_alive_lines() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("hi"));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    manager.set_keepalive(Duration::from_millis(100));
    let url = http(manager.clone()).await;
    let id = manager
        .sessions()
        .create("local", "http", create("hello"))
        .await
        .unwrap()
        .session_id;
    let response = reqwest::get(format!("{url}/v1/session/{id}/stream"))
        .await
        .unwrap();
    let mut body = response.bytes_stream();
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !text.contains("session.waiting") || !text.ends_with("\n\n") {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .expect("a keep-alive line after the last event")
            .unwrap()
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    // Workspace files were written before the turn.
    let ws = state
        .path()
        .join("sessions")
        .join(&id)
        .join("workspace/notes/a.txt");
    assert_eq!(std::fs::read_to_string(ws).unwrap(), "alpha");
}

#[tokio::test]
async fn deleting_a_session_directory_removes_the_session() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("hi"));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let id = manager
        .sessions()
        .create("local", "http", create("hello"))
        .await
        .unwrap()
        .session_id;
    let mut stream = manager.events().stream("local", &id, 0).await.unwrap();
    while let Some(event) = stream.rx.recv().await {
        if matches!(
            event.as_deref().map(|e| &e.body),
            Some(EventBody::SessionWaiting(_))
        ) {
            break;
        }
    }
    assert_eq!(
        manager
            .sessions()
            .list("local", 10, None, None)
            .await
            .unwrap()
            .data
            .len(),
        1
    );
    std::fs::remove_dir_all(state.path().join("sessions").join(&id)).unwrap();
    assert!(matches!(
        manager.sessions().get("local", &id).await,
        Err(ManagerError::NotFound(_))
    ));
    assert!(matches!(
        manager.events().stream("local", &id, 0).await,
        Err(ManagerError::NotFound(_))
    ));
    assert!(matches!(
        manager.turns().send("local", &id, "more", None).await,
        Err(ManagerError::NotFound(_))
    ));
    assert!(
        manager
            .sessions()
            .list("local", 10, None, None)
            .await
            .unwrap()
            .data
            .is_empty()
    );
}

#[tokio::test]
async fn streams_from_any_start_index_during_a_live_turn_have_no_gap_and_no_duplicate() {
    let mock = MockModelServer::start().await;
    mock.push(
        MockReply::text("a b c d e f g h i j k l m n o p q r s t u v w x y z")
            .chunk_delay(Duration::from_millis(15)),
    );
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let id = manager
        .sessions()
        .create("local", "http", create("stream me"))
        .await
        .unwrap()
        .session_id;
    // Open streams at staggered moments and start indexes while the turn appends.
    let mut readers = Vec::new();
    for n in 0..12u64 {
        tokio::time::sleep(Duration::from_millis(12)).await;
        let start = n % 4;
        let mut stream = manager.events().stream("local", &id, start).await.unwrap();
        readers.push(tokio::spawn(async move {
            let mut indexes = Vec::new();
            while let Some(event) = stream.rx.recv().await {
                let Some(event) = event else { continue };
                indexes.push(event.index);
                if matches!(event.body, EventBody::SessionWaiting(_)) {
                    break;
                }
            }
            (start, indexes)
        }));
    }
    let all = manager.events().read("local", &id).await.unwrap();
    for reader in readers {
        let (start, indexes) = reader.await.unwrap();
        let expected: Vec<u64> = (start..start + indexes.len() as u64).collect();
        assert_eq!(indexes, expected);
        assert!(indexes.len() as u64 + start >= 10);
    }
    let final_events = manager.events().read("local", &id).await.unwrap();
    assert!(final_events.len() >= all.len());
}

/// The todo list is derived from the session's log: a later turn, a session-scoped direct
/// call and a restarted manager all see what `UpdateTodos` last set.
#[tokio::test]
async fn todos_outlive_turns_and_restarts() {
    let mock = MockModelServer::start().await;
    let todos = serde_json::json!({"todos": [
        {"id": "1", "content": "write the plan", "status": "completed"},
        {"id": "2", "content": "ship it", "status": "in_progress"},
    ]});
    mock.push(MockReply::tool_calls([("UpdateTodos", todos)]));
    mock.push(MockReply::text("planned"));
    mock.push(MockReply::tool_calls([(
        "ReadTodos",
        serde_json::json!({}),
    )]));
    mock.push(MockReply::text("read"));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let agent = agent(&mock, dir.path()).await;
    let manager = manager(agent.clone(), state.path()).await;
    let id = manager
        .sessions()
        .create("local", "http", create("plan"))
        .await
        .unwrap()
        .session_id;
    wait_turns(&manager, &id, 1).await;
    manager
        .turns()
        .send("local", &id, "where are we?", None)
        .await
        .unwrap();
    wait_turns(&manager, &id, 2).await;
    let expected = "[x] 1: write the plan\n[~] 2: ship it";
    let read = manager
        .events()
        .read("local", &id)
        .await
        .unwrap()
        .into_iter()
        .find_map(|event| match event.body {
            EventBody::ActionResult(result) if result.tool == "ReadTodos" => result.output,
            _ => None,
        });
    assert_eq!(read, Some(serde_json::json!(expected)));
    manager.shutdown().await;
    drop(manager);

    let reopened = support::manager(agent, state.path()).await;
    let direct = reopened
        .tools()
        .call("local", Some(&id), "ReadTodos", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(direct.result, serde_json::json!(expected));
}

#[tokio::test]
async fn a_live_session_serves_the_events_of_its_log_from_memory() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("one"));
    mock.push(MockReply::text("two"));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let id = manager
        .sessions()
        .create("local", "http", create("hello"))
        .await
        .unwrap()
        .session_id;
    // The stream holds the live session open across both turns.
    let mut stream = manager.events().stream("local", &id, 0).await.unwrap();
    let mut waiting = 0;
    while waiting < 2 {
        let Some(event) = stream.rx.recv().await else {
            panic!("the stream ended early");
        };
        if matches!(
            event.as_deref().map(|e| &e.body),
            Some(EventBody::SessionWaiting(_))
        ) {
            waiting += 1;
            if waiting == 1 {
                manager
                    .turns()
                    .send("local", &id, "again", None)
                    .await
                    .unwrap();
            }
        }
    }
    let trace = state.path().join("traces").join(format!("{id}.ndjson"));
    let on_disk = folio_store_disk::read_events(&trace).unwrap();
    assert_eq!(manager.events().read("local", &id).await.unwrap(), on_disk);
    let summary = manager.sessions().get("local", &id).await.unwrap();
    assert_eq!(summary.last_index, on_disk.last().unwrap().index);
    assert_eq!(summary.turns, 2);
}

/// The tokens the `turn.completed` events of a session's log report, summed.
fn log_usage(state: &std::path::Path, id: &str) -> Usage {
    let trace = state.join("traces").join(format!("{id}.ndjson"));
    folio_store_disk::read_events(&trace)
        .unwrap()
        .iter()
        .filter_map(|event| match &event.body {
            EventBody::TurnCompleted(completed) => completed.usage,
            _ => None,
        })
        .sum()
}

/// A reply reporting `input` uncached prompt tokens, `cached` cache reads and `output` tokens.
fn reply(text: &str, input: u64, cached: u64, output: u64) -> MockReply {
    MockReply::text(text).with_usage(Usage {
        input_tokens: input,
        cache_read_tokens: cached,
        output_tokens: output,
        ..Usage::default()
    })
}

#[tokio::test]
async fn a_turn_end_stores_the_token_totals_in_session_json_and_lists_read_them_there() {
    let mock = MockModelServer::start().await;
    for (n, text) in ["one", "two", "three", "four", "five"].iter().enumerate() {
        let n = n as u64 + 1;
        mock.push(reply(text, 100 * n, 10 * n, n));
    }
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let agent = agent(&mock, dir.path()).await;
    let manager = manager(agent.clone(), state.path()).await;
    // An HTTP create (its token and turn count written up front), then an in-process send
    // (no token: its turn count is written before its turn starts).
    let http = manager
        .sessions()
        .create("local", "http", create("hello"))
        .await
        .unwrap()
        .session_id;
    wait_turns(&manager, &http, 1).await;
    let sent = manager
        .sessions()
        .create("local", "http", create("first"))
        .await
        .unwrap()
        .session_id;
    wait_turns(&manager, &sent, 1).await;
    for (turns, text) in [(2, "second"), (3, "third"), (4, "fourth")] {
        manager
            .turns()
            .send("local", &sent, text, None)
            .await
            .unwrap();
        wait_turns(&manager, &sent, turns).await;
    }
    manager.shutdown().await;
    drop(manager);
    let root = folio_session::StateRoot::new(state.path());
    let stored = |id: &str| {
        let meta = folio_session::load_meta(&root, id).unwrap().unwrap();
        (meta.status, meta.turns, meta.last_index, meta.usage)
    };
    let last = |id: &str| {
        let trace = state.path().join("traces").join(format!("{id}.ndjson"));
        folio_store_disk::read_events(&trace)
            .unwrap()
            .last()
            .unwrap()
            .index
    };
    let expected = |id: &str, turns: u32| {
        (
            SessionStatus::Waiting,
            turns,
            last(id),
            log_usage(state.path(), id),
        )
    };
    // session.json holds each turn's end: status, last index and the log's token totals.
    assert_eq!(
        (stored(&http), stored(&sent)),
        (expected(&http, 1), expected(&sent, 4))
    );
    assert_eq!(
        log_usage(state.path(), &sent),
        Usage {
            input_tokens: 200 + 300 + 400 + 500,
            cache_read_tokens: 20 + 30 + 40 + 50,
            output_tokens: 2 + 3 + 4 + 5,
            ..Usage::default()
        }
    );

    // A crash between syncing the last turn's end and rewriting session.json leaves it behind:
    // the restart repairs it from the log (no turn is recorded as failed).
    let path = state
        .path()
        .join("sessions")
        .join(&sent)
        .join("session.json");
    let mut behind = folio_session::load_meta(&root, &sent).unwrap().unwrap();
    behind.status = SessionStatus::Running;
    behind.last_index -= 3;
    behind.usage = Usage::default();
    std::fs::write(&path, serde_json::to_vec(&behind).unwrap()).unwrap();
    // After a real crash there, the session index marks the session active (its log moved
    // past its session.json), so the start settles it; an edit by hand leaves the index saying
    // idle, so the index goes too: the start rebuilds it and settles every session.
    std::fs::remove_file(state.path().join("sessions.index")).unwrap();
    let reopened = support::manager(agent, state.path()).await;
    assert_eq!(stored(&sent), expected(&sent, 4));
    let listed = reopened
        .sessions()
        .list("local", 50, None, None)
        .await
        .unwrap()
        .data;
    let mut summaries: Vec<_> = listed
        .iter()
        .map(|s| {
            (
                s.session_id.clone(),
                s.status,
                s.turns,
                s.last_index,
                s.usage,
            )
        })
        .collect();
    summaries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut wanted = vec![
        (
            http.clone(),
            SessionStatus::Waiting,
            1,
            last(&http),
            log_usage(state.path(), &http),
        ),
        (
            sent.clone(),
            SessionStatus::Waiting,
            4,
            last(&sent),
            log_usage(state.path(), &sent),
        ),
    ];
    wanted.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(summaries, wanted);
    let events = reopened.events().read("local", &sent).await.unwrap();
    assert!(
        !events
            .iter()
            .any(|e| matches!(&e.body, EventBody::TurnFailed(_))),
        "{events:#?}"
    );
}

/// A power loss can keep the end of a turn in the log without what was written after it, and
/// recovery leaves a log that ends a turn alone: so a send without a token (in-process channels,
/// schedules, evals) writes its turn count to `session.json`, durably, before it returns and
/// before its turn can end.
#[tokio::test]
async fn an_in_process_send_counts_its_turn_in_session_json_before_it_returns() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("one"));
    // The second turn asks to deploy and waits for an approval: nothing ends it.
    mock.push(MockReply::tool_calls([(
        "Deploy",
        serde_json::json!({"target": "eu"}),
    )]));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let id = manager
        .sessions()
        .create("local", "http", create("hello"))
        .await
        .unwrap()
        .session_id;
    wait_turns(&manager, &id, 1).await;
    manager
        .turns()
        .send("local", &id, "deploy", None)
        .await
        .unwrap();
    let stored = folio_session::load_meta(&folio_session::StateRoot::new(state.path()), &id)
        .unwrap()
        .unwrap();
    assert_eq!((stored.status, stored.turns), (SessionStatus::Running, 2));
    manager.shutdown().await;
}

/// A create is acknowledged only after its `session.json` is synced with its first message,
/// so one a crash left unwritten (empty, or zero-filled after a power loss) was never
/// acknowledged: a restart removes that session and its log, and a retry with the same
/// idempotency key creates the session anew.
#[tokio::test]
async fn a_create_a_crash_left_unwritten_is_removed_on_restart_and_its_retry_creates_anew() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("one"));
    mock.push(MockReply::text("two"));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let agent = agent(&mock, dir.path()).await;
    let keyed = CreateSession {
        client_message_id: Some("create-1".into()),
        ..create("hello")
    };
    let manager = manager(agent.clone(), state.path()).await;
    let first = manager
        .sessions()
        .create("local", "http", keyed.clone())
        .await
        .unwrap()
        .session_id;
    wait_turns(&manager, &first, 1).await;
    manager.shutdown().await;
    drop(manager);
    // What a power loss before the create's sync round can leave: the file, without its data.
    let root = folio_session::StateRoot::new(state.path());
    let meta = root.meta_path(&first);
    let size = std::fs::metadata(&meta).unwrap().len() as usize;
    std::fs::write(&meta, vec![0u8; size]).unwrap();
    // That power loss also leaves the session index's record of the create marked active, or
    // not there at all (then `sessions/` holds a folder the index lacks): either way the start
    // looks at the session. Here the session had finished its turn, so the index goes too.
    std::fs::remove_file(state.path().join("sessions.index")).unwrap();

    let manager = support::manager(agent, state.path()).await;
    assert!(!root.session_dir(&first).exists());
    assert!(!root.trace_path(&first).exists());
    assert!(
        manager
            .sessions()
            .list("local", 50, None, None)
            .await
            .unwrap()
            .data
            .is_empty()
    );
    let retried = manager
        .sessions()
        .create("local", "http", keyed)
        .await
        .unwrap()
        .session_id;
    // The key's record outlived the session it named, so the retry makes the session anew
    // under that id (as on every store): what matters is that it starts afresh.
    assert_eq!(retried, first);
    let events = wait_turns(&manager, &retried, 1).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.body, EventBody::MessageReceived(m) if m.text == "hello")),
        "{events:#?}"
    );
}
