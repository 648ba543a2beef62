//! Slack channels: the Events API at `POST /v1/channels/<id>/events` (signed `v0:ts:body`).
//! URL verification is answered; app mentions, DMs and posts in watched channels wake the
//! session of their thread (`slack:<team>:<channel>:<thread_ts>`, coalesce); a whole-message
//! `stop` (or `@bot stop`) stops the thread's turn and clears its queue; bot messages and edits
//! never wake it. Replies go to the thread: `post` shows a status line while working and replaces
//! it with the answer; `stream` updates one message as text arrives (at most one update per
//! second, what `chat.update` allows). Slack's `429` is honoured: a call waits its
//! `Retry-After` and tries again, and a streamed update stays queued until then.
//!
//! Slack retries an event it thinks was not acknowledged (`X-Slack-Retry-Num`,
//! `X-Slack-Retry-Reason`): the retry is noted on the recorded delivery and acknowledged
//! without a new turn; a retry whose first attempt never got recorded runs once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use folio_project::{SlackChannel, SlackReplyMode};
use folio_protocol::{Admission, DeliveryRetry, ErrorCode, UrlVerification};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::store::{Received, Work};
use crate::webhook::acknowledge;
use crate::{Channel, Env, error};

/// The Web API, when the manifest names none.
const DEFAULT_API: &str = "https://slack.com/api";
/// The status line `post` mode shows while the agent works.
pub(crate) const WORKING: &str = "_Working on it…_";
/// The shortest gap between two `chat.update`s of a streamed reply.
const STREAM_INTERVAL: Duration = Duration::from_secs(1);
/// How many times a call waits out Slack's `429` before giving up.
const RATE_LIMITED_RETRIES: u32 = 3;
/// The longest `Retry-After` obeyed (a longer one is cut to this).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// The thread a delivery is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SlackThread {
    pub(crate) channel: String,
    pub(crate) thread_ts: String,
}

/// The Slack side of a channel: settings and the Web API client.
pub(crate) struct Slack {
    pub(crate) config: SlackChannel,
    env: Env,
    client: reqwest::Client,
}

impl Slack {
    /// The client of `config`, reading its bot token from `env`.
    pub(crate) fn new(config: SlackChannel, env: Env) -> Slack {
        Slack {
            config,
            env,
            client: reqwest::Client::new(),
        }
    }

    /// Calls Web API `method` with a JSON body once; the answer, or why it failed (Slack's
    /// `429` as [`CallError::RateLimited`] with the wait its `Retry-After` asks).
    async fn call_once(&self, method: &str, body: &Value) -> Result<Value, CallError> {
        let base = self
            .config
            .api_base_url
            .as_deref()
            .unwrap_or(DEFAULT_API)
            .trim_end_matches('/');
        let token_env = self.config.env_name("SLACK_BOT_TOKEN");
        let token = (self.env)(&token_env).ok_or_else(|| {
            CallError::Failed(format!(
                "{token_env} is not set on the server (the bot's xoxb- token)"
            ))
        })?;
        let url = format!("{base}/{method}");
        let answer = self
            .client
            .post(&url)
            .timeout(Duration::from_secs(15))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .map_err(|err| CallError::Failed(format!("{method} failed: {err}")))?;
        let status = answer.status();
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            return Err(CallError::RateLimited(retry_after(answer.headers())));
        }
        let value: Value = answer.json().await.unwrap_or(Value::Null);
        if !status.is_success() || value["ok"] != json!(true) {
            return Err(CallError::Failed(format!(
                "{method} answered {status}: {value}"
            )));
        }
        Ok(value)
    }

    /// Calls Web API `method`, waiting out Slack's rate limit (`429` + `Retry-After`) up to
    /// [`RATE_LIMITED_RETRIES`] times; the answer, or why it failed.
    async fn call(&self, method: &str, body: &Value) -> Result<Value, String> {
        let mut waits = 0;
        loop {
            match self.call_once(method, body).await {
                Ok(value) => return Ok(value),
                Err(CallError::RateLimited(wait)) if waits < RATE_LIMITED_RETRIES => {
                    waits += 1;
                    tokio::time::sleep(wait).await;
                }
                Err(CallError::RateLimited(wait)) => {
                    return Err(format!(
                        "{method} is still rate-limited by Slack after {waits} waits (the last asked for {} s more)",
                        wait.as_secs()
                    ));
                }
                Err(CallError::Failed(message)) => return Err(message),
            }
        }
    }

    /// Posts `text` in the thread; the message's `ts`.
    async fn post(&self, thread: &SlackThread, text: &str) -> Result<String, String> {
        let answer = self
            .call(
                "chat.postMessage",
                &json!({ "channel": thread.channel, "thread_ts": thread.thread_ts, "text": text }),
            )
            .await?;
        answer["ts"]
            .as_str()
            .map(String::from)
            .ok_or_else(|| "chat.postMessage answered no ts".into())
    }

    fn update_body(thread: &SlackThread, ts: &str, text: &str) -> Value {
        json!({ "channel": thread.channel, "ts": ts, "text": text })
    }
}

/// Why a Web API call failed.
enum CallError {
    /// Slack answered `429`: try again after this long.
    RateLimited(Duration),
    /// Anything else: what failed.
    Failed(String),
}

/// The wait a `429`'s `Retry-After` (seconds) asks, at most [`MAX_RETRY_AFTER`]; one second
/// when it is missing or unreadable.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Duration {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(1), Duration::from_secs)
        .min(MAX_RETRY_AFTER)
}

/// One turn's message in the thread, as the follower drives it. In `stream` mode the text
/// that arrived but is not in the message yet is the queued update: it goes out when the
/// follower's timer reaches [`Reply::due_at`] (one update per [`STREAM_INTERVAL`], or later
/// when Slack's `Retry-After` asks), always as the whole text so far, so a delayed update
/// loses nothing and no text is sent twice. The turn's end drops the queued update and sends
/// the final text (the answer, or `Stopped.` after `stop`).
pub(crate) struct Reply {
    thread: SlackThread,
    ts: Option<String>,
    /// Everything the turn said so far.
    text: String,
    /// What the message shows now.
    shown: String,
    /// The earliest time the next `chat.update` may go out.
    not_before: Option<Instant>,
}

impl Reply {
    /// The reply of a turn in `thread`.
    pub(crate) fn new(thread: SlackThread) -> Reply {
        Reply {
            thread,
            ts: None,
            text: String::new(),
            shown: String::new(),
            not_before: None,
        }
    }

    /// The turn started: the status line (`post`) or the message to stream into.
    pub(crate) async fn started(&mut self, slack: &Slack) -> Result<(), String> {
        self.ts = Some(slack.post(&self.thread, WORKING).await?);
        self.shown = WORKING.to_string();
        Ok(())
    }

    /// Text arrived: in `stream` mode it is queued for the next update ([`Reply::due_at`]).
    pub(crate) fn appended(&mut self, delta: &str) {
        self.text.push_str(delta);
    }

    /// When the queued update may go out (`None`: nothing queued, or not `stream` mode).
    pub(crate) fn due_at(&self, slack: &Slack) -> Option<Instant> {
        let streaming = slack.config.reply.unwrap_or_default() == SlackReplyMode::Stream;
        let queued = self.ts.is_some() && !self.text.is_empty() && self.text != self.shown;
        (streaming && queued).then(|| self.not_before.unwrap_or_else(Instant::now))
    }

    /// Sends the queued update (the whole text so far). A `429` keeps it queued until its
    /// `Retry-After` has passed; another failure drops it (the next text or the end sends
    /// the whole text again).
    pub(crate) async fn flush(&mut self, slack: &Slack) -> Result<(), String> {
        let Some(ts) = &self.ts else { return Ok(()) };
        let text = self.text.clone();
        let result = slack
            .call_once("chat.update", &Slack::update_body(&self.thread, ts, &text))
            .await;
        let wait = match &result {
            Err(CallError::RateLimited(wait)) => *wait,
            Ok(_) | Err(CallError::Failed(_)) => STREAM_INTERVAL,
        };
        self.not_before = Some(Instant::now() + wait);
        match result {
            Ok(_) => {
                self.shown = text;
                Ok(())
            }
            Err(CallError::RateLimited(wait)) => Err(format!(
                "chat.update is rate-limited by Slack: the update waits {} s (Retry-After)",
                wait.as_secs()
            )),
            Err(CallError::Failed(message)) => {
                self.shown = text;
                Err(message)
            }
        }
    }

    /// The turn ended with `text` (the reply, or why it failed): the queued update is dropped
    /// and the message becomes `text` (once the rate limit allows).
    pub(crate) async fn ended(&mut self, slack: &Slack, text: &str) -> Result<(), String> {
        let Some(ts) = &self.ts else {
            return slack.post(&self.thread, text).await.map(drop);
        };
        if text == self.shown {
            return Ok(());
        }
        if let Some(at) = self.not_before {
            tokio::time::sleep_until(at.into()).await;
        }
        slack
            .call("chat.update", &Slack::update_body(&self.thread, ts, text))
            .await
            .map(drop)
    }
}

/// What a Slack event asks.
#[derive(Debug, Clone, PartialEq)]
enum Wake {
    Message {
        text: String,
        thread: SlackThread,
        team: String,
    },
    Stop {
        thread: SlackThread,
        team: String,
    },
}

/// Reads an `event_callback`'s event; `Err` says why it is ignored.
fn interpret(slack: &Slack, body: &Value) -> Result<Wake, String> {
    let event = &body["event"];
    let kind = event["type"].as_str().unwrap_or_default();
    if event.get("bot_id").is_some() || event.get("subtype").is_some() {
        return Err("a bot message or an edit (loop guard)".into());
    }
    let channel = event["channel"]
        .as_str()
        .ok_or("the event names no channel")?;
    let watched = slack.config.watch_channels.iter().any(|c| c == channel);
    let wakes = match kind {
        "app_mention" => true,
        "message" => event["channel_type"] == "im" || watched,
        _ => false,
    };
    if !wakes {
        return Err(format!("{kind} in {channel} is not acted on"));
    }
    let raw = event["text"].as_str().unwrap_or_default();
    let text = strip_mentions(raw);
    let ts = event["ts"].as_str().ok_or("the event has no ts")?;
    let thread = SlackThread {
        channel: channel.to_string(),
        thread_ts: event["thread_ts"].as_str().unwrap_or(ts).to_string(),
    };
    let team = body["team_id"].as_str().unwrap_or("T").to_string();
    if text.trim().eq_ignore_ascii_case("stop") {
        return Ok(Wake::Stop { thread, team });
    }
    Ok(Wake::Message { text, thread, team })
}

/// The text without leading `<@U…>` mentions.
fn strip_mentions(text: &str) -> String {
    let mut rest = text.trim_start();
    while let Some(after) = rest.strip_prefix("<@") {
        match after.find('>') {
            Some(end) => rest = after[end + 1..].trim_start(),
            None => break,
        }
    }
    rest.trim().to_string()
}

/// Handles one Events API request.
pub(crate) async fn receive(channel: Arc<Channel>, req: Request) -> Response {
    let Some(slack) = channel.slack.as_ref() else {
        return error(ErrorCode::NotFound, "not a Slack channel");
    };
    let (headers, bytes) = match crate::admitted_body(&channel, req).await {
        Ok(admitted) => admitted,
        Err(answer) => return answer,
    };
    let body: Value = match serde_json::from_slice(&bytes) {
        Ok(body) => body,
        Err(err) => return error(ErrorCode::InvalidRequest, format!("body: not JSON: {err}")),
    };
    match body["type"].as_str() {
        Some("url_verification") => {
            let challenge = body["challenge"].as_str().unwrap_or_default().to_string();
            return (StatusCode::OK, axum::Json(UrlVerification { challenge })).into_response();
        }
        Some("event_callback") => {}
        other => {
            return error(
                ErrorCode::InvalidRequest,
                format!(
                    "type: {other:?} is not an Events API request (url_verification or event_callback)"
                ),
            );
        }
    }
    // Slack's retries repeat the event_id: a retry of a recorded event is acknowledged without
    // running (and the retry noted on it); a retry of one never recorded (the first attempt was
    // lost) is new and runs once.
    let Some(id) = body["event_id"].as_str().map(String::from) else {
        return error(ErrorCode::InvalidRequest, "event_id: missing");
    };
    let retry = match announced_retry(&headers) {
        Ok(retry) => retry,
        Err(message) => return error(ErrorCode::InvalidRequest, message),
    };
    let route = body["event"]["type"]
        .as_str()
        .unwrap_or("event")
        .to_string();
    let (work, ignored) = match interpret(slack, &body) {
        Ok(Wake::Message { text, thread, team }) => (Some(work(text, &thread, &team, false)), None),
        Ok(Wake::Stop { thread, team }) => (Some(work(String::new(), &thread, &team, true)), None),
        Err(reason) => (None, Some(reason)),
    };
    acknowledge(
        channel.clone(),
        Received {
            id,
            received_at: Utc::now(),
            route,
            work,
            ignored,
            retry,
        },
    )
    .await
}

/// The retry Slack announces in `X-Slack-Retry-Num` / `X-Slack-Retry-Reason` (none on a first
/// attempt).
fn announced_retry(headers: &HeaderMap) -> Result<Option<DeliveryRetry>, String> {
    let Some(num) = headers.get("x-slack-retry-num") else {
        return Ok(None);
    };
    let num = num
        .to_str()
        .ok()
        .and_then(|n| n.trim().parse::<u32>().ok())
        .ok_or("X-Slack-Retry-Num: not a number (Slack sends 1, 2 or 3)")?;
    let reason = headers
        .get("x-slack-retry-reason")
        .and_then(|r| r.to_str().ok())
        .map(|r| r.chars().take(100).collect());
    Ok(Some(DeliveryRetry { num, reason }))
}

fn work(text: String, thread: &SlackThread, team: &str, stop: bool) -> Work {
    Work {
        message: text,
        continuation: Some(format!(
            "slack:{team}:{}:{}",
            thread.channel, thread.thread_ts
        )),
        title: None,
        admission: Admission::Coalesce,
        workspace_files: BTreeMap::new(),
        body: json!({ "slack": thread }),
        stop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_stripped() {
        assert_eq!(strip_mentions("<@U123> <@U9>  stop "), "stop");
        assert_eq!(strip_mentions("hi <@U1>"), "hi <@U1>");
        assert_eq!(strip_mentions("<@U1"), "<@U1");
    }
}
