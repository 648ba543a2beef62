//! Crashes and provider redeliveries on every channel kind (webhook, GitHub, Slack), through
//! the real `folio serve` and the providers' own signing libraries: a `kill -9` right after
//! the `202` runs the work after the restart, once; the provider's redeliveries after the
//! restart (the same `webhook-id`, `X-GitHub-Delivery`, or Slack `event_id` with
//! `X-Slack-Retry-Num`) are acknowledged and run nothing; a crash after a delivery reached its
//! session but before its outcome was recorded re-runs it without a second message or a second
//! `channel.delivery` on the session; a body changed after signing is refused (`401`, nothing
//! recorded or run). One test runs every step over the three kinds.

mod channels_support;
mod serve_support;

use std::path::Path;
use std::time::Duration;

use channels_support::*;
use folio_protocol::{
    ChannelDelivery, ChannelDeliveryOutcome, DeliveryStatus, MessageReceived, TurnCompleted,
    TurnFailed,
};
use folio_test_support::{FakeApi, MockModelServer, MockReply, all};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use serve_support::*;

const AGENT: &str = "name = \"crashy\"\nmodel = \"openai:gpt-test\"\n";

/// A channel kind, as its provider names, signs and retries a delivery.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Webhook,
    Github,
    Slack,
}

const KINDS: [Kind; 3] = [Kind::Webhook, Kind::Github, Kind::Slack];

impl Kind {
    /// The channel's id in the project.
    fn channel(self) -> &'static str {
        match self {
            Kind::Webhook => "hooks",
            Kind::Github => "gh",
            Kind::Slack => "chat",
        }
    }

    /// Delivery `id` about thing `n` (its own ticket, PR or Slack thread, so its own session)
    /// with `marker` in its message, signed by the provider's library: its URL, body and
    /// headers. `retry`: Slack's announced retry number (GitHub and Standard Webhooks
    /// redeliver with the same id and no such header).
    fn request(
        self,
        base: &str,
        id: &str,
        n: u64,
        marker: &str,
        retry: Option<u32>,
    ) -> (String, String, Vec<(&'static str, String)>) {
        match self {
            Kind::Webhook => {
                let body = json!({"ticketId": n, "message": marker}).to_string();
                let ts = now();
                let headers = vec![
                    ("webhook-id", id.to_string()),
                    ("webhook-timestamp", ts.to_string()),
                    ("webhook-signature", standard_signature(id, ts, &body)),
                ];
                (format!("{base}/v1/channels/hooks/ticket"), body, headers)
            }
            Kind::Github => {
                let mut opened = github_examples("pull_request")
                    .into_iter()
                    .find(|p| p["action"] == "opened")
                    .unwrap();
                opened["number"] = json!(n);
                opened["pull_request"]["number"] = json!(n);
                opened["pull_request"]["title"] = json!(marker);
                let body = opened.to_string();
                let headers = vec![
                    ("x-github-event", "pull_request".to_string()),
                    ("x-github-delivery", id.to_string()),
                    ("x-hub-signature-256", github_signature(&body)),
                ];
                (format!("{base}/v1/channels/gh"), body, headers)
            }
            Kind::Slack => {
                let ts = format!("1700000{n:03}.000100");
                let event = slack_mention(id, &ts, None, &format!("<@U0BOT> {marker}"));
                let (body, headers) = slack_request(&event, retry);
                (format!("{base}/v1/channels/chat/events"), body, headers)
            }
        }
    }

    /// Sends [`Kind::request`]; the status and answer.
    async fn deliver(
        self,
        base: &str,
        id: &str,
        n: u64,
        marker: &str,
        retry: Option<u32>,
    ) -> (u16, Value) {
        let (url, body, headers) = self.request(base, id, n, marker, retry);
        deliver(&url, &body, &headers).await
    }
}

/// One channel of each kind; GitHub and Slack talk to `api`.
fn crash_project(api: &str) -> Project {
    let project = project(AGENT);
    let hooks = "kind = \"webhook\"\nauth = [{ hmac = { secret_env = \"HOOK_WHSEC\", provider = \"standard-webhooks\" } }]\n[[routes]]\npath = \"/ticket\"\nmessage = \"{{ body.message }}\"\ncontinuation = \"{{ body.ticketId }}\"\n";
    let gh = format!("kind = \"github\"\napi_base_url = \"{api}\"\n");
    let chat = format!("kind = \"slack\"\napi_base_url = \"{api}\"\n");
    write_files(
        project.path(),
        &[
            ("agent/channels/hooks.toml", hooks),
            ("agent/channels/gh.toml", &gh),
            ("agent/channels/chat.toml", &chat),
        ],
    );
    project
}

async fn serve_kinds(
    mock: &MockModelServer,
    project: &Project,
    state: &Path,
    fault: Option<&str>,
) -> Served {
    let mut env = vec![
        ("HOOK_WHSEC", WHSEC),
        ("GITHUB_WEBHOOK_SECRET", SECRET),
        ("GITHUB_TOKEN", "ghp_test"),
        ("SLACK_SIGNING_SECRET", SECRET),
        ("SLACK_BOT_TOKEN", "xoxb-test"),
    ];
    if let Some(fault) = fault {
        env.push(("FOLIO_FAULT", fault));
    }
    serve_with_env(&mock.openai_base_url(), project.path(), state, &[], &env).await
}

/// How many times `session` records delivery `id`: its message, and its `channel.delivery`
/// `received`.
fn recorded(state: &Path, session: &str, id: &str) -> (usize, usize) {
    let events = session_events(state, session);
    let messages = all::<MessageReceived>(&events)
        .iter()
        .filter(|m| m.client_message_id.as_deref() == Some(id))
        .count();
    let received = all::<ChannelDelivery>(&events)
        .iter()
        .filter(|d| {
            d.outcome == ChannelDeliveryOutcome::Received && d.delivery_id.as_deref() == Some(id)
        })
        .count();
    (messages, received)
}

/// The model requests that carry `marker` (each delivery has its own session, so its own).
fn requests_with(mock: &MockModelServer, marker: &str) -> usize {
    mock.requests()
        .iter()
        .filter(|r| r.body.to_string().contains(marker))
        .count()
}

/// Waits until `session` ended a turn (completed, or closed by the restart's recovery).
async fn turn_ended(state: &Path, session: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let events = session_events(state, session);
        if !all::<TurnCompleted>(&events).is_empty() || !all::<TurnFailed>(&events).is_empty() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "session {session} ended no turn within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_channel_kind_runs_a_delivery_once_across_kill_9_restarts_and_redeliveries() {
    let mock = MockModelServer::start().await;
    let api = FakeApi::start().await;
    let project = crash_project(&api.url());
    let state = tempfile::tempdir().unwrap();
    let first = |kind: Kind| (format!("{kind:?}-1"), format!("first {kind:?} marker"));

    // `kill -9` right after each 202: the work was recorded, nothing ran yet. Before that, a
    // delivery whose body was changed after signing is refused on every kind: 401, nothing
    // recorded, no session, no model or API call.
    let server = serve_kinds(&mock, &project, state.path(), Some("channel-acknowledged")).await;
    for (n, kind) in (1..).zip(KINDS) {
        let (url, body, headers) = kind.request(&server.url, "forged", n, "forged", None);
        let (status, answer) = deliver(&url, &body.replace("forged", "f0rged"), &headers).await;
        assert_eq!(status, 401, "{kind:?}: {answer}");
        assert_eq!(settled(&server.url, kind.channel()).await, [], "{kind:?}");
    }
    assert!(
        std::fs::read_dir(state.path().join("test-agent/sessions"))
            .map_or(true, |mut dir| dir.next().is_none()),
        "a refused delivery opened a session"
    );
    for (n, kind) in (1..).zip(KINDS) {
        let (id, marker) = first(kind);
        let (status, answer) = kind.deliver(&server.url, &id, n, &marker, None).await;
        assert_eq!(
            (status, duplicate(&answer)),
            (202, false),
            "{kind:?}: {answer}"
        );
    }
    kill(server).await;
    assert_eq!(mock.requests().len(), 0);
    assert_eq!(api.calls().len(), 0);

    // The restart runs each once; the providers' redeliveries after it (five at once) are
    // acknowledged as duplicates and run nothing.
    for _ in KINDS {
        mock.push(MockReply::text("Done."));
    }
    let server = serve_kinds(&mock, &project, state.path(), None).await;
    model_requests(&mock, KINDS.len()).await;
    for (n, kind) in (1..).zip(KINDS) {
        let (id, marker) = first(kind);
        let retries = (1..=5).map(|retry| kind.deliver(&server.url, &id, n, &marker, Some(retry)));
        for (status, answer) in futures::future::join_all(retries).await {
            assert_eq!(
                (status, duplicate(&answer)),
                (202, true),
                "{kind:?}: {answer}"
            );
        }
    }
    for kind in KINDS {
        let (id, marker) = first(kind);
        let deliveries = settled(&server.url, kind.channel()).await;
        let summary: Vec<(String, DeliveryStatus, u32)> = deliveries
            .iter()
            .map(|d| (d.id.clone(), d.status, d.duplicates))
            .collect();
        assert_eq!(
            summary,
            [(id.clone(), DeliveryStatus::Accepted, 5)],
            "{kind:?}"
        );
        let session = session_of(&deliveries[0]);
        turn_ended(state.path(), &session).await;
        assert_eq!(recorded(state.path(), &session, &id), (1, 1), "{kind:?}");
        assert_eq!(requests_with(&mock, &marker), 1, "{kind:?}");
    }
    assert_eq!(mock.requests().len(), KINDS.len());
    kill(server).await;

    // A crash after the delivery reached its session (message admitted, `channel.delivery`
    // recorded there) but before its outcome was recorded: the restart re-runs it, and the
    // session still records it once; its turn ran at most once.
    for (n, kind) in (10..).zip(KINDS) {
        let (id, marker) = (format!("{kind:?}-2"), format!("second {kind:?} marker"));
        mock.push(MockReply::text("Done again."));
        let mut server = serve_kinds(
            &mock,
            &project,
            state.path(),
            Some("channel-delivery-recorded"),
        )
        .await;
        let (status, answer) = kind.deliver(&server.url, &id, n, &marker, None).await;
        assert_eq!(
            (status, duplicate(&answer)),
            (202, false),
            "{kind:?}: {answer}"
        );
        let exit = tokio::time::timeout(Duration::from_secs(30), server.child.wait())
            .await
            .expect("the server reaches the fault point within 30 s")
            .unwrap();
        assert!(
            !exit.success(),
            "{kind:?}: the server did not abort: {exit}"
        );

        let server = serve_kinds(&mock, &project, state.path(), None).await;
        let deliveries = settled(&server.url, kind.channel()).await;
        let delivery = deliveries.iter().find(|d| d.id == id).unwrap();
        assert_eq!(delivery.status, DeliveryStatus::Accepted, "{kind:?}");
        let session = session_of(delivery);
        turn_ended(state.path(), &session).await;
        assert_eq!(recorded(state.path(), &session, &id), (1, 1), "{kind:?}");
        assert!(requests_with(&mock, &marker) <= 1, "{kind:?}");
        kill(server).await;
    }
}
