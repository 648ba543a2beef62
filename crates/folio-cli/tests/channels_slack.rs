//! Slack channels through the real `folio serve`, with Events API requests signed by
//! `slack_sdk`, against a recording fake Slack Web API: URL verification, one thread = one
//! session, a status line replaced by the answer, Slack's retries run once, a whole-message
//! `stop` stops the turn, and bot messages never wake the agent.

mod channels_support;
mod serve_support;

use std::time::Duration;

use channels_support::*;
use folio_test_support::{ApiCall, FakeApi, MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use serve_support::*;

const AGENT: &str = "name = \"triage\"\nmodel = \"openai:gpt-test\"\n";

fn mention(event_id: &str, ts: &str, thread_ts: Option<&str>, text: &str) -> Value {
    let mut event = json!({
        "type": "app_mention",
        "user": "U0HUMAN",
        "text": text,
        "ts": ts,
        "channel": "C0BUGS",
        "event_ts": ts,
    });
    if let Some(thread_ts) = thread_ts {
        event["thread_ts"] = json!(thread_ts);
    }
    json!({
        "token": "unused",
        "team_id": "T0TEAM",
        "api_app_id": "A0APP",
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": 1_700_000_000,
    })
}

fn calls_of(calls: &[ApiCall]) -> Vec<(String, Value)> {
    calls
        .iter()
        .map(|c| (c.path.clone(), c.body.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thread_is_one_session_with_a_status_line_retries_run_once_and_stop_stops() {
    let mock = MockModelServer::start().await;
    let slack = FakeApi::start().await;
    let project = project(AGENT);
    let manifest = format!(
        "kind = \"slack\"\nenvPrefix = \"TRIAGE\"\napi_base_url = \"{}\"\n",
        slack.url()
    );
    write_files(project.path(), &[("agent/channels/triage.toml", &manifest)]);
    let state = tempfile::tempdir().unwrap();
    let server = serve_with_env(
        &mock.openai_base_url(),
        project.path(),
        state.path(),
        &[],
        &[
            ("TRIAGE_SLACK_SIGNING_SECRET", SECRET),
            ("TRIAGE_SLACK_BOT_TOKEN", "xoxb-test"),
        ],
    )
    .await;
    let events = format!("{}/v1/channels/triage/events", server.url);

    let challenge = json!({"token": "unused", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"});
    assert_eq!(
        slack_event(&events, &challenge, None).await,
        (
            200,
            json!({"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"})
        )
    );
    let unsigned = deliver(&events, &mention("Ev0", "1.0", None, "hi").to_string(), &[]).await;
    assert_eq!(unsigned.0, 401);

    let first = mention(
        "Ev1",
        "1700000000.000100",
        None,
        "<@U0BOT> the export is broken",
    );
    mock.push(MockReply::text("Looking into it: which browser?"));
    assert_eq!(slack_event(&events, &first, None).await.0, 202);
    // Slack retries the same event when the first answer was slow: acknowledged, not run.
    let (status, retried) = slack_event(&events, &first, Some(1)).await;
    assert_eq!((status, retried["duplicate"].clone()), (202, json!(true)));
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
    let reply = mention(
        "Ev2",
        "1700000001.000200",
        Some("1700000000.000100"),
        "<@U0BOT> Firefox 140",
    );
    assert_eq!(slack_event(&events, &reply, None).await.0, 202);
    slack.wait_for(3, Duration::from_secs(30)).await;
    let stop = mention(
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

    // A bot's message never wakes the agent.
    let mut bot = mention("Ev4", "1700000003.000400", None, "<@U0BOT> echo");
    bot["event"]["bot_id"] = json!("B0OTHER");
    assert_eq!(slack_event(&events, &bot, None).await.0, 202);
    let deliveries = settled(&server.url, "triage").await;
    let summary: Vec<(String, String, u64)> = deliveries
        .iter()
        .map(|d| {
            (
                d["id"].as_str().unwrap().to_string(),
                d["status"].as_str().unwrap().to_string(),
                d["duplicates"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("Ev4".into(), "ignored".into(), 0),
            ("Ev3".into(), "accepted".into(), 0),
            ("Ev2".into(), "accepted".into(), 0),
            ("Ev1".into(), "accepted".into(), 1),
        ]
    );
    let sessions: Vec<&str> = deliveries[1..]
        .iter()
        .map(|d| d["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(sessions[0], sessions[1]);
    assert_eq!(sessions[1], sessions[2]);
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(slack.calls().len(), 4);
}
