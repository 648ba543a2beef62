//! Crashes and provider redeliveries on every channel kind (webhook, GitHub, Slack), through
//! a server process of this test binary (`support::spawn_server`: the channels' router on a
//! real listener, killed with `SIGKILL` or aborted at a `FaultPoint`) and the providers' own
//! signing libraries: a `kill -9` right after the `202` runs the work after the restart, once;
//! the provider's redeliveries after the restart (the same `webhook-id`, `X-GitHub-Delivery`,
//! or Slack `event_id` with `X-Slack-Retry-Num`) are acknowledged and run nothing; a crash
//! after a delivery reached its session but before its outcome was recorded re-runs it without
//! a second message or a second `channel.delivery` on the session; a body changed after signing
//! is refused (`401`, nothing recorded or run). One test runs every step over the three kinds.
//! Each test runs on both stores: the state root's files, and PostgreSQL
//! (`SessionManager::open_on_store`, where the restarted server takes the dead one's claims
//! over once they expire).

mod support;

use std::path::Path;
use std::time::Duration;

use folio_protocol::{
    ChannelDelivery, ChannelDeliveryOutcome, DeliveryStatus, Event, MessageReceived, TurnCompleted,
    TurnFailed,
};
use folio_test_support::{FakeApi, MockModelServer, MockReply, all};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::*;

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
    let gh = format!("kind = \"github\"\ncheckout = false\napi_base_url = \"{api}\"\n");
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
    store: &Store,
    mock: &MockModelServer,
    project: &Project,
    state: &Path,
    fault: Option<&str>,
) -> Served {
    let env = [
        ("HOOK_WHSEC", WHSEC),
        ("GITHUB_WEBHOOK_SECRET", SECRET),
        ("GITHUB_TOKEN", "ghp_test"),
        ("SLACK_SIGNING_SECRET", SECRET),
        ("SLACK_BOT_TOKEN", "xoxb-test"),
    ];
    spawn_server(
        &mock.openai_base_url(),
        project.path(),
        state,
        store,
        &env,
        fault,
    )
    .await
}

/// The stored events of `session`.
async fn events_in(store: &Store, state: &Path, session: &str) -> Vec<Event> {
    match store {
        Store::Disk => session_events(state, session),
        Store::Postgres(url) => {
            let pg = postgres(url).await;
            folio_store::SessionStore::read_events(&pg, session, 0, None)
                .await
                .unwrap_or_default()
        }
    }
}

async fn postgres(url: &str) -> folio_store_postgres::PgStore {
    folio_store_postgres::PgStore::connect(url, Default::default())
        .await
        .unwrap()
}

/// How many turn ends the channels recorded as reported.
async fn replies_in(store: &Store, state: &Path) -> usize {
    match store {
        Store::Disk => {
            let entries = |dir: &Path| -> Vec<std::path::PathBuf> {
                std::fs::read_dir(dir)
                    .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
                    .unwrap_or_default()
            };
            entries(&state.join("channels"))
                .iter()
                .filter_map(|channel| {
                    std::fs::read_to_string(channel.join("deliveries.ndjson")).ok()
                })
                .map(|text| text.matches("\"record\":\"reply\"").count())
                .sum()
        }
        Store::Postgres(url) => {
            let pg = postgres(url).await;
            let count: i64 = sqlx::query_scalar("SELECT count(*) FROM folio_channel_replies")
                .fetch_one(pg.pool())
                .await
                .unwrap();
            usize::try_from(count).unwrap()
        }
    }
}

/// Whether the store holds no session at all.
async fn no_sessions(store: &Store, state: &Path) -> bool {
    match store {
        Store::Disk => {
            std::fs::read_dir(state.join("sessions")).map_or(true, |mut dir| dir.next().is_none())
        }
        Store::Postgres(url) => {
            let query = folio_store::ListQuery {
                principal: None,
                before: None,
                limit: 1,
                ..Default::default()
            };
            let pg = postgres(url).await;
            folio_store::SessionStore::list_sessions(&pg, &query)
                .await
                .unwrap()
                .is_empty()
        }
    }
}

/// How many times `session` records delivery `id`: its message, and its `channel.delivery`
/// `received`.
async fn recorded(store: &Store, state: &Path, session: &str, id: &str) -> (usize, usize) {
    let events = events_in(store, state, session).await;
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

/// Polls `check` every 50 ms until it gives a value; fails naming `what` after 30 s.
async fn within_30s<T>(what: impl Fn() -> String, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} within 30 s",
            what()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the channels recorded `count` reported turn ends.
async fn replies_recorded(store: &Store, state: &Path, count: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let recorded = replies_in(store, state).await;
        if recorded >= count {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{recorded} of {count} replies recorded within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `session` ended a turn (completed, or closed by the restart's recovery).
async fn turn_ended(store: &Store, state: &Path, session: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let events = events_in(store, state, session).await;
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

on_both_stores!(
    every_channel_kind_runs_a_delivery_once_across_kill_9_restarts_and_redeliveries,
    a_turn_cut_short_by_kill_9_is_reported_to_the_provider_after_the_restart,
);

async fn every_channel_kind_runs_a_delivery_once_across_kill_9_restarts_and_redeliveries(
    store: Store,
) {
    let mock = MockModelServer::start().await;
    let api = FakeApi::start().await;
    let project = crash_project(&api.url());
    let state = tempfile::tempdir().unwrap();
    let first = |kind: Kind| (format!("{kind:?}-1"), format!("first {kind:?} marker"));

    // `kill -9` right after each 202: the work was recorded, nothing ran yet. Before that, a
    // delivery whose body was changed after signing is refused on every kind: 401, nothing
    // recorded, no session, no model or API call.
    let server = serve_kinds(
        &store,
        &mock,
        &project,
        state.path(),
        Some("channel-acknowledged"),
    )
    .await;
    for (n, kind) in (1..).zip(KINDS) {
        let (url, body, headers) = kind.request(&server.url, "forged", n, "forged", None);
        let (status, answer) = deliver(&url, &body.replace("forged", "f0rged"), &headers).await;
        assert_eq!(status, 401, "{kind:?}: {answer}");
        assert_eq!(settled(&server.url, kind.channel()).await, [], "{kind:?}");
    }
    assert!(
        no_sessions(&store, state.path()).await,
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
    let server = serve_kinds(&store, &mock, &project, state.path(), None).await;
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
        turn_ended(&store, state.path(), &session).await;
        assert_eq!(
            recorded(&store, state.path(), &session, &id).await,
            (1, 1),
            "{kind:?}"
        );
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
            &store,
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
        let exit = tokio::time::timeout(Duration::from_secs(30), server.child().wait())
            .await
            .expect("the server reaches the fault point within 30 s")
            .unwrap();
        assert!(
            !exit.success(),
            "{kind:?}: the server did not abort: {exit}"
        );

        let server = serve_kinds(&store, &mock, &project, state.path(), None).await;
        let deliveries = settled(&server.url, kind.channel()).await;
        let delivery = deliveries.iter().find(|d| d.id == id).unwrap();
        assert_eq!(delivery.status, DeliveryStatus::Accepted, "{kind:?}");
        let session = session_of(delivery);
        turn_ended(&store, state.path(), &session).await;
        assert_eq!(
            recorded(&store, state.path(), &session, &id).await,
            (1, 1),
            "{kind:?}"
        );
        assert!(requests_with(&mock, &marker) <= 1, "{kind:?}");
        kill(server).await;
    }
}

/// The calls to the fake provider API whose body mentions `text`.
fn calls_mentioning(api: &FakeApi, text: &str) -> Vec<(String, String, Value)> {
    api.calls()
        .into_iter()
        .filter(|call| call.body.to_string().contains(text))
        .map(|call| (call.method, call.path, call.body))
        .collect()
}

/// The check runs completed as a failure because the server restarted.
fn reported_failures(api: &FakeApi) -> Vec<(String, String, Value)> {
    calls_mentioning(api, folio_protocol::SERVER_RESTARTED)
        .into_iter()
        .filter(|(method, path, body)| {
            method == "PATCH" && path.contains("/check-runs/") && body["conclusion"] == "failure"
        })
        .collect()
}

/// Waits until some call to the fake provider API mentions `text`.
async fn reported(api: &FakeApi, text: &str) -> Vec<(String, String, Value)> {
    within_30s(
        || {
            format!(
                "no call to the provider mentioned {text:?}: {:#?}",
                api.calls()
            )
        },
        || Some(calls_mentioning(api, text)).filter(|calls| !calls.is_empty()),
    )
    .await
}

async fn a_turn_cut_short_by_kill_9_is_reported_to_the_provider_after_the_restart(store: Store) {
    let mock = MockModelServer::start().await;
    let api = FakeApi::start().await;
    let project = crash_project(&api.url());
    let gh = format!(
        "kind = \"github\"\ncheckout = false\napi_base_url = \"{}\"\ncheck_runs = true\n",
        api.url()
    );
    write_files(project.path(), &[("agent/channels/gh.toml", &gh)]);
    let state = tempfile::tempdir().unwrap();
    let kinds = [Kind::Github, Kind::Slack];

    // Each delivery's turn is running (its model call never answers) when the server dies.
    let server = serve_kinds(&store, &mock, &project, state.path(), None).await;
    for (n, kind) in (1..).zip(kinds) {
        mock.push(MockReply::text("never sent").first_byte_delay(Duration::from_secs(300)));
        let (status, answer) = kind
            .deliver(&server.url, &format!("{kind:?}-cut"), n, "cut short", None)
            .await;
        assert_eq!(status, 202, "{kind:?}: {answer}");
    }
    model_requests(&mock, kinds.len()).await;
    kill(server).await;
    assert_eq!(calls_mentioning(&api, folio_protocol::SERVER_RESTARTED), []);

    // The restart records those turns as failed and tells each provider so: Slack in the
    // thread, GitHub by completing the turn's check run as a failure.
    let server = serve_kinds(&store, &mock, &project, state.path(), None).await;
    let slack = reported(&api, "Sorry, this turn failed: server restarted").await;
    assert!(
        slack.iter().all(|(_, path, _)| path.starts_with("/chat.")),
        "{slack:#?}"
    );
    let check = within_30s(
        || format!("no check run completed as a failure: {:#?}", api.calls()),
        || Some(reported_failures(&api)).filter(|failed| !failed.is_empty()),
    )
    .await;
    assert_eq!(check.len(), 1, "{check:#?}");
    assert_eq!(
        mock.requests().len(),
        kinds.len(),
        "a cut-short turn ran again"
    );
    // A report is recorded once the provider answered it (replies are at least once): the
    // kill waits for both records.
    replies_recorded(&store, state.path(), kinds.len()).await;
    kill(server).await;

    // Reported turns are recorded: a later restart reports nothing again. A new delivery's
    // answer shows that restart has followed its sessions again.
    let before = calls_mentioning(&api, folio_protocol::SERVER_RESTARTED).len();
    mock.push(MockReply::text("Fresh answer."));
    let server = serve_kinds(&store, &mock, &project, state.path(), None).await;
    let (status, answer) = Kind::Slack
        .deliver(&server.url, "Slack-fresh", 7, "fresh", None)
        .await;
    assert_eq!(status, 202, "{answer}");
    reported(&api, "Fresh answer.").await;
    assert_eq!(
        calls_mentioning(&api, folio_protocol::SERVER_RESTARTED).len(),
        before
    );
    kill(server).await;
}
