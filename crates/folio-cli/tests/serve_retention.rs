//! Retention through the real binary (`[store] keep_sessions_days = 30`): a session one
//! `folio serve` made is still there when a server starts on a clock 10 days later, and gone,
//! with its log, when one starts 40 days later (`FOLIO_TEST_CLOCK_START`): the pass at start
//! deletes it.

mod serve_support;

use chrono::{Duration, Utc};
use folio_protocol::{CreateSession, SessionCreated};
use folio_test_support::{MockModelServer, MockReply};
use reqwest::Method;
use serve_support::*;

const AGENT: &str =
    "name = \"Test Agent\"\nmodel = \"openai:gpt-test\"\n\n[store]\nkeep_sessions_days = 30\n";

/// The status of `GET /v1/session/:id` on `url`.
async fn status_of(url: &str, id: &str) -> u16 {
    get(&format!("{url}/v1/session/{id}")).await.0
}

#[tokio::test]
async fn a_server_starting_past_the_retention_period_deletes_idle_sessions() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("Hello."));
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    let single = ["--mode", "single"];
    let served = serve(&mock.openai_base_url(), dir.path(), state.path(), &single).await;
    let (status, created) = call_as::<SessionCreated>(
        Method::POST,
        &format!("{}/v1/session", served.url),
        Some(&CreateSession::message("hi")),
        None,
    )
    .await;
    assert_eq!(status, 201);
    let id = created.session_id;
    Stream::open(&served.url, &id, 0, None)
        .await
        .until("session.waiting")
        .await;
    drop(served);

    // `folio serve` again, on a clock `days` from now.
    let days_later = async |days| {
        let start = (Utc::now() + Duration::days(days)).to_rfc3339();
        let env = [("FOLIO_TEST_CLOCK_START", start.as_str())];
        serve_with_env(
            &mock.openai_base_url(),
            dir.path(),
            state.path(),
            &single,
            &env,
        )
        .await
    };
    let served = days_later(10).await;
    assert_eq!(status_of(&served.url, &id).await, 200, "kept 10 days on");
    drop(served);

    let served = days_later(40).await;
    let mut status = status_of(&served.url, &id).await;
    // The pass runs right after the start: allow it 30 s on a loaded machine.
    for _ in 0..600 {
        if status == 404 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        status = status_of(&served.url, &id).await;
    }
    assert_eq!(status, 404, "deleted 40 days on");
    let root = folio_session::StateRoot::new(state.path());
    assert!(!root.trace_path(&id).exists(), "with its log");
}
