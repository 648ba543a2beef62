//! A reader that has seen a turn's end on the stream is never told the session still runs: the
//! end is in the log a moment before the actor saves the status it leaves, so the summary and
//! the busy check settle from the log. (Before, `GET /v1/session/:id` right after
//! `session.waiting` answered `running` in most rounds, and saving the session as an eval case
//! then failed with `session_busy`.)

mod support;

use folio_protocol::{CreateSession, SessionStatus};
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
