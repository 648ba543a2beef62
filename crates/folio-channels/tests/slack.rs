//! Slack channels served in-process (the channels' router on a real listener), with Events API
//! requests signed by `slack_sdk`, against a recording fake Slack Web API: URL verification, one thread = one
//! session, a status line replaced by the answer, Slack's retries run once (and are noted on
//! the delivery; a retry of an event never recorded runs once), a whole-message `stop` stops
//! the turn, bot messages never wake the agent, and `stream` mode waits out Slack's `429`
//! (`Retry-After`) without losing or repeating text, its queued update dropped by `stop`.

mod support;

use std::time::Duration;

use folio_protocol::{DeliveryRetry, DeliveryStatus, UrlVerification};
use folio_test_support::{ApiCall, FakeApi, MockModelServer, MockReply, read_wire};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::*;

const AGENT: &str = "name = \"triage\"\nmodel = \"openai:gpt-test\"\n";

fn calls_of(calls: &[ApiCall]) -> Vec<(String, Value)> {
    calls
        .iter()
        .map(|c| (c.path.clone(), c.body.clone()))
        .collect()
}

/// A server with one Slack channel `channel` (manifest `settings` plus the fake Slack
/// API's base URL), its signing secret and bot token (`xoxb-test`) under `env_prefix`.
struct SlackServe {
    mock: MockModelServer,
    slack: FakeApi,
    server: Served,
    /// `POST` target of the channel's Events API.
    events: String,
    state: tempfile::TempDir,
    _project: Project,
}

async fn serve_slack(channel: &str, settings: &str, env_prefix: &str) -> SlackServe {
    let mock = MockModelServer::start().await;
    let slack = FakeApi::start().await;
    let project = project(AGENT);
    let manifest = format!(
        "kind = \"slack\"\n{settings}api_base_url = \"{}\"\n",
        slack.url()
    );
    let file = format!("agent/channels/{channel}.toml");
    write_files(project.path(), &[(file.as_str(), manifest.as_str())]);
    let state = tempfile::tempdir().unwrap();
    let secret = format!("{env_prefix}SLACK_SIGNING_SECRET");
    let token = format!("{env_prefix}SLACK_BOT_TOKEN");
    let server = serve_with_env(
        &mock.openai_base_url(),
        project.path(),
        state.path(),
        &[(secret.as_str(), SECRET), (token.as_str(), "xoxb-test")],
    )
    .await;
    let events = format!("{}/v1/channels/{channel}/events", server.url);
    SlackServe {
        mock,
        slack,
        server,
        events,
        state,
        _project: project,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thread_is_one_session_with_a_status_line_retries_run_once_and_stop_stops() {
    let SlackServe {
        mock,
        slack,
        server,
        events,
        ..
    } = serve_slack("triage", "envPrefix = \"TRIAGE\"\n", "TRIAGE_").await;

    let challenge = json!({"token": "unused", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"});
    let (status, answer) = slack_event(&events, &challenge, None).await;
    assert_eq!(
        (status, read_wire::<UrlVerification>(&answer)),
        (
            200,
            UrlVerification {
                challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P".into()
            }
        )
    );
    let unsigned = deliver(
        &events,
        &slack_mention("Ev0", "1.0", None, "hi").to_string(),
        &[],
    )
    .await;
    assert_eq!(unsigned.0, 401);

    let first = slack_mention(
        "Ev1",
        "1700000000.000100",
        None,
        "<@U0BOT> the export is broken",
    );
    mock.push(MockReply::text("Looking into it: which browser?"));
    assert_eq!(slack_event(&events, &first, None).await.0, 202);
    // Slack retries the same event when the first answer was slow: acknowledged, not run.
    // Slack's retries (X-Slack-Retry-Num 1..=4 here), all at once: acknowledged, none run.
    let retries = (1..=4).map(|n| slack_event(&events, &first, Some(n)));
    for (status, retried) in futures::future::join_all(retries).await {
        assert_eq!((status, duplicate(&retried)), (202, true));
    }
    let calls = slack.wait_for(2, Duration::from_secs(30)).await;
    assert_eq!(
        calls_of(&calls),
        [
            (
                "/chat.postMessage".into(),
                json!({"channel": "C0BUGS", "thread_ts": "1700000000.000100", "text": "_Working on it…_"})
            ),
            (
                "/chat.update".into(),
                json!({"channel": "C0BUGS", "ts": "1", "text": "Looking into it: which browser?"})
            ),
        ]
    );
    assert_eq!(calls[0].headers["authorization"], "Bearer xoxb-test");
    assert!(
        mock.requests()[0]
            .body
            .to_string()
            .contains("the export is broken")
    );
    assert!(!mock.requests()[0].body.to_string().contains("<@U0BOT>"));

    // A reply in the thread reaches the same session; `@bot stop` interrupts its turn.
    mock.push(MockReply::text("never sent").first_byte_delay(Duration::from_secs(60)));
    let reply = slack_mention(
        "Ev2",
        "1700000001.000200",
        Some("1700000000.000100"),
        "<@U0BOT> Firefox 140",
    );
    assert_eq!(slack_event(&events, &reply, None).await.0, 202);
    slack.wait_for(3, Duration::from_secs(30)).await;
    let stop = slack_mention(
        "Ev3",
        "1700000002.000300",
        Some("1700000000.000100"),
        "<@U0BOT> stop",
    );
    assert_eq!(slack_event(&events, &stop, None).await.0, 202);
    let calls = slack.wait_for(4, Duration::from_secs(30)).await;
    assert_eq!(
        calls_of(&calls[2..]),
        [
            (
                "/chat.postMessage".into(),
                json!({"channel": "C0BUGS", "thread_ts": "1700000000.000100", "text": "_Working on it…_"})
            ),
            (
                "/chat.update".into(),
                json!({"channel": "C0BUGS", "ts": "3", "text": "Stopped."})
            ),
        ]
    );

    // A retry whose first attempt was lost before it was recorded is new: it runs once, and
    // Slack's next retry of it is acknowledged without running.
    mock.push(MockReply::text("The runbook is in the wiki."));
    let lost = slack_mention(
        "Ev5",
        "1700000004.000500",
        None,
        "<@U0BOT> where is the runbook?",
    );
    let (status, answer) = slack_event(&events, &lost, Some(2)).await;
    assert_eq!((status, duplicate(&answer)), (202, false));
    let (status, answer) = slack_event(&events, &lost, Some(3)).await;
    assert_eq!((status, duplicate(&answer)), (202, true));
    let calls = slack.wait_for(6, Duration::from_secs(30)).await;
    assert_eq!(
        calls_of(&calls[4..]),
        [
            (
                "/chat.postMessage".into(),
                json!({"channel": "C0BUGS", "thread_ts": "1700000004.000500", "text": "_Working on it…_"})
            ),
            (
                "/chat.update".into(),
                json!({"channel": "C0BUGS", "ts": "5", "text": "The runbook is in the wiki."})
            ),
        ]
    );

    // A bot's message never wakes the agent.
    let mut bot = slack_mention("Ev4", "1700000003.000400", None, "<@U0BOT> echo");
    bot["event"]["bot_id"] = json!("B0OTHER");
    assert_eq!(slack_event(&events, &bot, None).await.0, 202);
    let deliveries = settled(&server.url, "triage").await;
    let summary: Vec<(String, DeliveryStatus, u32)> = deliveries
        .iter()
        .map(|d| (d.id.clone(), d.status, d.duplicates))
        .collect();
    assert_eq!(
        summary,
        [
            ("Ev4".into(), DeliveryStatus::Ignored, 0),
            ("Ev5".into(), DeliveryStatus::Accepted, 1),
            ("Ev3".into(), DeliveryStatus::Accepted, 0),
            ("Ev2".into(), DeliveryStatus::Accepted, 0),
            ("Ev1".into(), DeliveryStatus::Accepted, 4),
        ]
    );
    // Every retry Slack announced is on its delivery (the four of Ev1 arrived at once).
    let retries = |id: &str| {
        let delivery = deliveries.iter().find(|d| d.id == id).unwrap();
        let mut retries = delivery.retries.clone();
        retries.sort_by_key(|r| r.num);
        retries
    };
    let timeout = |num| DeliveryRetry {
        num,
        reason: Some("http_timeout".into()),
    };
    assert_eq!(retries("Ev1"), (1..=4).map(timeout).collect::<Vec<_>>());
    assert_eq!(retries("Ev5"), [timeout(2), timeout(3)]);
    assert_eq!(retries("Ev3"), []);
    let sessions: Vec<String> = deliveries[2..].iter().map(session_of).collect();
    assert_eq!(sessions[0], sessions[1]);
    assert_eq!(sessions[1], sessions[2]);
    assert_ne!(session_of(&deliveries[1]), sessions[0]);
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(slack.calls().len(), 6);
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_mode_updates_at_most_once_a_second_and_dms_and_watched_channels_wake() {
    let SlackServe {
        mock,
        slack,
        server,
        events,
        state,
        ..
    } = serve_slack(
        "ops",
        "reply = \"stream\"\nwatch_channels = [\"C0WATCHED\"]\n",
        "",
    )
    .await;
    let message = |id: &str, channel: &str, channel_type: &str, text: &str| {
        json!({
            "team_id": "T0TEAM",
            "type": "event_callback",
            "event_id": id,
            "event": {
                "type": "message",
                "channel_type": channel_type,
                "user": "U0HUMAN",
                "text": text,
                "ts": format!("17000000{}.000100", id.len()),
                "channel": channel,
            },
        })
    };

    // A post in a channel nobody watches is recorded and ignored.
    let ignored = message("Ev10", "C0ELSEWHERE", "channel", "anyone there?");
    assert_eq!(slack_event(&events, &ignored, None).await.0, 202);

    // A DM wakes the agent; the answer streams into one message, updated at most once a second.
    let answer = "one two three four five six seven";
    mock.push(MockReply::text(answer).chunk_delay(Duration::from_millis(400)));
    let dm = message("Ev11", "D0DIRECT", "im", "how is the deploy going?");
    assert_eq!(slack_event(&events, &dm, None).await.0, 202);
    // The turn's answer is reported on the session once its last update went out.
    let deliveries = settled(&server.url, "ops").await;
    let session = session_of(&deliveries[0]);
    answered(state.path(), &session, 1).await;
    let calls = slack.calls();
    assert_eq!(
        calls_of(&calls[..1]),
        [(
            "/chat.postMessage".into(),
            json!({"channel": "D0DIRECT", "thread_ts": "170000004.000100", "text": "_Working on it…_"})
        )]
    );
    let updates = update_texts(&calls[1..], "D0DIRECT", "1");
    let (last, streamed) = updates.split_last().unwrap();
    assert_eq!(last, answer);
    // Seven pieces over ~2.8 s: at most one update per second, each a growing prefix.
    assert!(
        (1..=3).contains(&streamed.len()),
        "{} streamed updates: {streamed:?}",
        streamed.len()
    );
    assert!(
        streamed
            .windows(2)
            .all(|w| w[1].len() > w[0].len() && w[1].starts_with(w[0].as_str())),
        "{streamed:?}"
    );
    assert!(
        streamed.iter().all(|s| answer.starts_with(s.as_str())),
        "{streamed:?}"
    );

    // A post in a watched channel wakes it too.
    mock.push(MockReply::text("Deploy is green."));
    let watched = message("Ev012", "C0WATCHED", "channel", "deploy status?");
    assert_eq!(slack_event(&events, &watched, None).await.0, 202);
    let before = calls.len();
    let calls = slack.wait_for(before + 2, Duration::from_secs(30)).await;
    assert_eq!(calls[before].body["channel"], "C0WATCHED");
    let deliveries = settled(&server.url, "ops").await;
    let statuses: Vec<(String, DeliveryStatus)> = deliveries
        .iter()
        .map(|d| (d.id.clone(), d.status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("Ev012".into(), DeliveryStatus::Accepted),
            ("Ev11".into(), DeliveryStatus::Accepted),
            ("Ev10".into(), DeliveryStatus::Ignored),
        ]
    );
    assert_eq!(mock.requests().len(), 2);
}

/// The `chat.update` texts of `calls`, checking each updates message `ts` in `channel`.
fn update_texts(calls: &[ApiCall], channel: &str, ts: &str) -> Vec<String> {
    calls
        .iter()
        .map(|c| {
            assert_eq!(
                (c.path.as_str(), &c.body["channel"], &c.body["ts"]),
                ("/chat.update", &json!(channel), &json!(ts))
            );
            c.body["text"].as_str().unwrap().to_string()
        })
        .collect()
}

/// How long after `earlier` the fake received `later`.
fn gap(earlier: &ApiCall, later: &ApiCall) -> Duration {
    later.received_at.duration_since(earlier.received_at)
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_mode_waits_out_slacks_429_and_stop_drops_the_queued_update() {
    let SlackServe {
        mock,
        slack,
        server,
        events,
        state,
        ..
    } = serve_slack("ops", "reply = \"stream\"\n", "").await;

    // Slack refuses the first streamed update (429, Retry-After: 1 s). It goes out again once
    // the second has passed, carrying what arrived meanwhile; nothing is lost or sent twice.
    slack.answer([200]);
    slack.rate_limit(1);
    let answer = "one two three four five six seven eight";
    mock.push(MockReply::text(answer).chunk_delay(Duration::from_millis(400)));
    let asked = slack_mention("Ev1", "1700000000.000100", None, "<@U0BOT> status?");
    assert_eq!(slack_event(&events, &asked, None).await.0, 202);
    let deliveries = settled(&server.url, "ops").await;
    let session = session_of(&deliveries[0]);
    answered(state.path(), &session, 1).await;
    let calls = slack.calls();
    assert_eq!(
        calls_of(&calls[..1]),
        [(
            "/chat.postMessage".into(),
            json!({"channel": "C0BUGS", "thread_ts": "1700000000.000100", "text": "_Working on it…_"})
        )]
    );
    let updates = update_texts(&calls[1..], "C0BUGS", "1");
    let (refused, sent) = updates.split_first().unwrap();
    assert!(
        gap(&calls[1], &calls[2]) >= Duration::from_secs(1),
        "the refused update was retried {:?} later, before its Retry-After",
        gap(&calls[1], &calls[2])
    );
    assert!(sent[0].starts_with(refused.as_str()), "{updates:?}");
    assert_eq!(sent.last().map(String::as_str), Some(answer));
    assert!(
        sent.windows(2)
            .all(|w| w[1].len() > w[0].len() && w[1].starts_with(w[0].as_str())),
        "{updates:?}"
    );
    assert!(
        calls[2..]
            .windows(2)
            .all(|w| gap(&w[0], &w[1]) >= Duration::from_secs(1)),
        "more than one update a second"
    );

    // While a refused update waits out its Retry-After (3 s), `stop` drops it: the message
    // becomes `Stopped.` once Slack allows, and the queued text never goes out.
    let before = slack.calls().len();
    slack.answer([200]);
    slack.rate_limit(3);
    let long = "word ".repeat(40);
    mock.push(MockReply::text(long.trim()).chunk_delay(Duration::from_millis(300)));
    // Signed beforehand, so it goes out the moment the update is refused.
    let stop = slack_mention(
        "Ev3",
        "1700000001.000300",
        Some("1700000001.000200"),
        "<@U0BOT> stop",
    );
    let (stop_body, stop_headers) = slack_request(&stop, None);
    let work = slack_mention(
        "Ev2",
        "1700000001.000200",
        None,
        "<@U0BOT> write the report",
    );
    assert_eq!(slack_event(&events, &work, None).await.0, 202);
    let calls = slack.wait_for(before + 2, Duration::from_secs(30)).await;
    let message_ts = (before + 1).to_string();
    assert_eq!(calls[before].path, "/chat.postMessage");
    let refused = update_texts(&calls[before + 1..before + 2], "C0BUGS", &message_ts);
    assert!(long.starts_with(refused[0].as_str()), "{refused:?}");
    assert_eq!(deliver(&events, &stop_body, &stop_headers).await.0, 202);
    let deliveries = settled(&server.url, "ops").await;
    let session = session_of(&deliveries[0]);
    answered(state.path(), &session, 1).await;
    let calls = slack.calls();
    assert_eq!(
        calls_of(&calls[before + 2..]),
        [(
            "/chat.update".into(),
            json!({"channel": "C0BUGS", "ts": message_ts, "text": "Stopped."})
        )]
    );
    assert!(
        gap(&calls[before + 1], &calls[before + 2]) >= Duration::from_secs(3),
        "`Stopped.` went out {:?} after the 429, before its Retry-After",
        gap(&calls[before + 1], &calls[before + 2])
    );
    assert_eq!(mock.requests().len(), 2);
}
