//! A reader that has seen a turn's end on the stream is never told the session still runs: the
//! end is in the log a moment before the actor saves the status it leaves, so the summary and
//! the busy check settle from the log. (Before, `GET /v1/session/:id` right after
//! `session.waiting` answered `running` in most rounds, and saving the session as an eval case
//! then failed with `session_busy`; and a stream opened just past a finished task's last event
//! stayed open with keep-alives in about half the rounds.)

mod support;

use std::time::Duration;

use folio_protocol::{CreateSession, EventBody, SessionMode, SessionStatus};
use folio_test_support::{MockModelServer, MockReply};
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_seen_waiting_reads_waiting_and_saves_as_an_eval_case() {
    let mock = MockModelServer::start().await;
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    for round in 0..25 {
        mock.push(MockReply::text(format!("Answer {round}.")));
        let accepted = manager
            .sessions()
            .create("local", "test", CreateSession::message("hello"))
            .await
            .unwrap();
        let id = &accepted.session_id;
        wait_turns(&manager, id, 1).await;
        let summary = manager.sessions().get("local", id).await.unwrap();
        assert_eq!(summary.status, SessionStatus::Waiting, "round {round}");
        let listed = manager
            .sessions()
            .list("local", 1, None, None)
            .await
            .unwrap();
        assert_eq!(
            (listed.data[0].session_id.as_str(), listed.data[0].status),
            (id.as_str(), SessionStatus::Waiting),
            "round {round}: the list"
        );
        manager
            .evals()
            .save_case("local", id, &format!("round-{round}"))
            .await
            .unwrap_or_else(|err| panic!("round {round}: {err}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_opened_past_a_finished_task_ends() {
    let mock = MockModelServer::start().await;
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    for round in 0..25 {
        mock.push(MockReply::text(format!("Done {round}.")));
        let request = CreateSession {
            mode: Some(SessionMode::Task),
            ..CreateSession::message("do it")
        };
        let id = manager
            .sessions()
            .create("local", "test", request)
            .await
            .unwrap()
            .session_id;
        let mut stream = manager.events().stream("local", &id, 0).await.unwrap();
        let last = loop {
            match stream.rx.recv().await {
                Some(Some(event)) if matches!(event.body, EventBody::SessionCompleted(_)) => {
                    break event.index;
                }
                Some(_) => {}
                None => panic!("round {round}: the stream ended before session.completed"),
            }
        };
        let mut past = manager
            .events()
            .stream("local", &id, last + 1)
            .await
            .unwrap();
        let ended = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(item) = past.rx.recv().await {
                assert!(
                    item.is_none(),
                    "round {round}: an event past the end: {item:?}"
                );
            }
        })
        .await;
        assert!(
            ended.is_ok(),
            "round {round}: the stream past the end stayed open"
        );
    }
}
