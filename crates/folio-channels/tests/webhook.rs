//! Webhook channels served in-process (the channels' router on a real listener), with requests
//! signed by the providers' own libraries (`@octokit/webhooks-methods`, Python `slack_sdk` and
//! `standardwebhooks`, installed by `scripts/install-test-deps`): bad signatures refused before
//! anything is recorded or run, duplicates (concurrent and after a restart) run once, a
//! `kill -9` after the `202` runs the work after the restart (those tests serve from a child
//! process, `support::spawn_server`), and `[deliver]` posts the reply with retries to a
//! recording fake. That `folio serve` puts its browser guard in front of the channels is
//! folio-cli's `channels_serve.rs`.

mod support;

use std::path::Path;
use std::time::Duration;

use folio_protocol::{
    ChannelDelivery, ChannelDeliveryOutcome, DeliveryStatus, ErrorBody, ErrorCode,
};
use folio_test_support::{FakeApi, MockModelServer, MockReply, all, read_wire};
use pretty_assertions::assert_eq;
use serde_json::json;
use support::*;

const AGENT: &str = "name = \"hooks\"\nmodel = \"openai:gpt-test\"\n";
fn route(auth: &str) -> String {
    format!(
        "kind = \"webhook\"\nauth = [{auth}]\n[[routes]]\npath = \"/ticket\"\nmessage = \"{{{{ body.message }}}}\"\ncontinuation = \"{{{{ body.ticketId }}}}\"\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn every_auth_scheme_refuses_bad_signatures_and_admits_its_providers_signature() {
    let mock = MockModelServer::start().await;
    let project = project(AGENT);
    let channels: [(&str, String); 5] = [
        (
            "agent/channels/gh.toml",
            route("{ hmac = { secret_env = \"HOOK_SECRET\", provider = \"github\" } }"),
        ),
        (
            "agent/channels/slack.toml",
            route("{ hmac = { secret_env = \"HOOK_SECRET\", provider = \"slack\" } }"),
        ),
        (
            "agent/channels/std.toml",
            route("{ hmac = { secret_env = \"HOOK_WHSEC\", provider = \"standard-webhooks\" } }"),
        ),
        (
            "agent/channels/generic.toml",
            route(
                "{ hmac = { secret_env = \"HOOK_SECRET\", header = \"X-Signature-256\", scheme = \"sha256=\" } }",
            ),
        ),
        (
            "agent/channels/bearer.toml",
            route("{ bearer = { token_env = \"HOOK_TOKEN\" } }"),
        ),
    ];
    let files: Vec<(&str, &str)> = channels.iter().map(|(p, c)| (*p, c.as_str())).collect();
    write_files(project.path(), &files);
    let state = tempfile::tempdir().unwrap();
    let server = serve_with_env(
        &mock.openai_base_url(),
        project.path(),
        state.path(),
        &[
            ("HOOK_SECRET", SECRET),
            ("HOOK_WHSEC", WHSEC),
            ("HOOK_TOKEN", "t0k3n"),
        ],
    )
    .await;
    let url = &server.url;
    let body = r#"{"ticketId":7,"message":"The export button does nothing"}"#;
    let ts = now();
    let stale = (ts - 600).to_string();
    let bad: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("gh", vec![]),
        ("gh", vec![("x-hub-signature-256", github_signature("{}"))]),
        ("slack", vec![]),
        (
            "slack",
            vec![
                ("x-slack-request-timestamp", stale.clone()),
                ("x-slack-signature", slack_signature(&stale, body)),
            ],
        ),
        (
            "std",
            vec![
                ("webhook-id", "msg_stale".into()),
                ("webhook-timestamp", (ts - 600).to_string()),
                (
                    "webhook-signature",
                    standard_signature("msg_stale", ts - 600, body),
                ),
            ],
        ),
        (
            "std",
            vec![
                ("webhook-id", "msg_other".into()),
                ("webhook-timestamp", ts.to_string()),
                ("webhook-signature", standard_signature("msg_1", ts, body)),
            ],
        ),
        ("generic", vec![("x-signature-256", "sha256=00".into())]),
        ("bearer", vec![("authorization", "Bearer nope".into())]),
    ];
    for (channel, headers) in &bad {
        let (status, answer) = deliver(
            &format!("{url}/v1/channels/{channel}/ticket"),
            body,
            headers,
        )
        .await;
        assert_eq!(status, 401, "{channel}: {answer}");
        let refused: ErrorBody = read_wire(&answer);
        assert_eq!(refused.error, ErrorCode::Unauthorized, "{channel}");
    }
    for channel in ["gh", "slack", "std", "generic", "bearer"] {
        assert_eq!(settled(url, channel).await, [], "{channel}");
    }
    assert_eq!(
        mock.requests().len(),
        0,
        "a refused delivery reached the model"
    );

    let ts_text = ts.to_string();
    let good: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("gh", vec![("x-hub-signature-256", github_signature(body))]),
        (
            "slack",
            vec![
                ("x-slack-request-timestamp", ts_text.clone()),
                ("x-slack-signature", slack_signature(&ts_text, body)),
            ],
        ),
        (
            "std",
            vec![
                ("webhook-id", "msg_1".into()),
                ("webhook-timestamp", ts_text.clone()),
                ("webhook-signature", standard_signature("msg_1", ts, body)),
            ],
        ),
        (
            "generic",
            vec![(
                "x-signature-256",
                format!(
                    "sha256={}",
                    folio_channels::sign_hex(SECRET.as_bytes(), &[body.as_bytes()])
                ),
            )],
        ),
        ("bearer", vec![("authorization", "Bearer t0k3n".into())]),
    ];
    for _ in &good {
        mock.push(MockReply::text("Try clearing the cache."));
    }
    for (channel, headers) in &good {
        let (status, answer) = deliver(
            &format!("{url}/v1/channels/{channel}/ticket"),
            body,
            headers,
        )
        .await;
        assert_eq!(status, 202, "{channel}: {answer}");
        assert!(!duplicate(&answer), "{channel}");
    }
    model_requests(&mock, good.len()).await;
    for (channel, _) in &good {
        let deliveries = settled(url, channel).await;
        assert_eq!(deliveries.len(), 1, "{channel}");
        assert_eq!(
            (deliveries[0].status, deliveries[0].route.as_str()),
            (DeliveryStatus::Accepted, "/ticket"),
            "{channel}: {deliveries:#?}"
        );
        let session = session_of(&deliveries[0]);
        assert_eq!(
            event_types(state.path(), &session)[..2],
            [
                "session.started".to_string(),
                "message.received".to_string()
            ]
        );
    }
    let texts: Vec<String> = mock.requests().iter().map(|r| r.body.to_string()).collect();
    assert!(
        texts
            .iter()
            .all(|t| t.contains("The export button does nothing")),
        "{texts:#?}"
    );
}

/// The `tickets` project served in a process of its own (the tests below kill it), with the
/// crash-test `fault` point armed.
async fn serve_tickets(
    mock: &MockModelServer,
    project: &Project,
    state: &Path,
    fault: Option<&str>,
) -> Served {
    let env = [("HOOK_WHSEC", WHSEC), ("TICKETS_TOKEN", "tk-1")];
    spawn_server(
        &mock.openai_base_url(),
        project.path(),
        state,
        &Store::Disk,
        &env,
        fault,
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn duplicates_run_once_a_key_keeps_its_session_and_replies_are_delivered_with_retries() {
    let mock = MockModelServer::start().await;
    let target = FakeApi::start().await;
    target.answer([503]);
    let project = ticket_project(AGENT, &target.url());
    let state = tempfile::tempdir().unwrap();
    let server = serve_tickets(&mock, &project, state.path(), None).await;
    let url = server.url.clone();

    let (status, answer) = deliver(
        &format!("{url}/v1/channels/tickets/ticket"),
        r#"{"message":"no id"}"#,
        &{
            let body = r#"{"message":"no id"}"#;
            let ts = now();
            [
                ("webhook-id", "msg_bad".to_string()),
                ("webhook-timestamp", ts.to_string()),
                ("webhook-signature", standard_signature("msg_bad", ts, body)),
            ]
        },
    )
    .await;
    let refused: ErrorBody = read_wire(&answer);
    assert_eq!(
        (status, refused.message.as_str()),
        (
            400,
            "body: \"ticketId\" is a required property (the route's body_schema)"
        )
    );

    mock.push(MockReply::text("First answer."));
    mock.push(MockReply::text("Second answer."));
    // The same delivery five times at once: acknowledged five times, run once.
    let sends = (0..5).map(|_| ticket(&url, "msg_dup", 42, "It broke"));
    let answers = futures::future::join_all(sends).await;
    assert!(
        answers.iter().all(|(status, _)| *status == 202),
        "{answers:?}"
    );
    let fresh = answers.iter().filter(|(_, a)| !duplicate(a)).count();
    assert_eq!(fresh, 1, "{answers:?}");
    model_requests(&mock, 1).await;
    let calls = target.wait_for(2, Duration::from_secs(30)).await;
    assert_eq!(calls.len(), 2, "one 503, then the retry: {calls:#?}");
    for call in &calls {
        assert_eq!(
            (call.method.as_str(), call.path.as_str()),
            ("POST", "/api/42/comments")
        );
        assert_eq!(call.headers["authorization"], "Bearer tk-1");
        assert_eq!(call.body, json!({"text": "First answer."}));
    }
    let first = settled(&url, "tickets").await;
    let session = session_of(&first[0]);
    assert_eq!(first[0].duplicates, 4);

    // After a restart the id is still known; a new id with the same ticket reaches the session.
    kill(server).await;
    let server = serve_tickets(&mock, &project, state.path(), None).await;
    let url = server.url.clone();
    let (status, answer) = ticket(&url, "msg_dup", 42, "It broke").await;
    assert_eq!((status, duplicate(&answer)), (202, true));
    let (status, _) = ticket(&url, "msg_next", 42, "Still broken").await;
    assert_eq!(status, 202);
    model_requests(&mock, 2).await;
    let calls = target.wait_for(3, Duration::from_secs(30)).await;
    assert_eq!(calls[2].body, json!({"text": "Second answer."}));
    let deliveries = settled(&url, "tickets").await;
    let sessions: Vec<String> = deliveries.iter().map(session_of).collect();
    assert_eq!(sessions, [session.clone(), session.clone()]);
    let types = event_types(state.path(), &session);
    assert_eq!(types.iter().filter(|t| *t == "turn.completed").count(), 2);
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kill_after_the_202_runs_the_work_once_after_the_restart() {
    let mock = MockModelServer::start().await;
    let target = FakeApi::start().await;
    let project = ticket_project(AGENT, &target.url());
    let state = tempfile::tempdir().unwrap();
    let server = serve_tickets(&mock, &project, state.path(), Some("channel-acknowledged")).await;
    let (status, answer) = ticket(&server.url, "msg_crash", 9, "Lost?").await;
    assert_eq!((status, duplicate(&answer)), (202, false));
    kill(server).await;
    assert_eq!(mock.requests().len(), 0);

    mock.push(MockReply::text("Recovered."));
    let server = serve_tickets(&mock, &project, state.path(), None).await;
    model_requests(&mock, 1).await;
    let deliveries = settled(&server.url, "tickets").await;
    assert_eq!(deliveries[0].status, DeliveryStatus::Accepted);
    let calls = target.wait_for(1, Duration::from_secs(30)).await;
    assert_eq!(calls[0].body, json!({"text": "Recovered."}));
    kill(server).await;

    // A second restart finds the work done: nothing runs again.
    let server = serve_tickets(&mock, &project, state.path(), None).await;
    let deliveries = settled(&server.url, "tickets").await;
    assert_eq!(deliveries.len(), 1);
    assert_eq!(mock.requests().len(), 1);
    assert_eq!(target.calls().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_that_keeps_failing_is_given_up_after_its_bound_and_recorded_on_the_session() {
    let mock = MockModelServer::start().await;
    let target = FakeApi::start().await;
    target.answer([503, 503, 503]);
    let project = ticket_project(AGENT, &target.url());
    let state = tempfile::tempdir().unwrap();
    let server = serve_tickets(&mock, &project, state.path(), None).await;
    mock.push(MockReply::text("Nobody hears this."));
    let (status, _) = ticket(&server.url, "msg_lost", 5, "Hello?").await;
    assert_eq!(status, 202);
    let deliveries = settled(&server.url, "tickets").await;
    let session = session_of(&deliveries[0]);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let reported = loop {
        let events = session_events(state.path(), &session);
        let reported: Vec<ChannelDelivery> = all::<ChannelDelivery>(&events)
            .into_iter()
            .cloned()
            .collect();
        if reported.len() == 2 || tokio::time::Instant::now() > deadline {
            break reported;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let url = format!("{}/api/5/comments", target.url());
    assert_eq!(
        reported,
        [
            ChannelDelivery {
                channel: "tickets".into(),
                outcome: ChannelDeliveryOutcome::Received,
                delivery_id: Some("msg_lost".into()),
                route: Some("/ticket".into()),
                message: None,
            },
            ChannelDelivery {
                channel: "tickets".into(),
                outcome: ChannelDeliveryOutcome::ReplyFailed,
                delivery_id: None,
                route: None,
                message: Some(format!(
                    "gave up after 3 attempts: {url} answered 503 Service Unavailable"
                )),
            },
        ]
    );
    // Exactly the bound: three attempts, no fourth.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(target.calls().len(), 3);
}
