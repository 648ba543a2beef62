//! Slack channels: the Events API at `POST /v1/channels/<id>/events` (signed `v0:ts:body`).
//! URL verification is answered; app mentions, DMs and posts in watched channels wake the
//! session of their thread (`slack:<team>:<channel>:<thread_ts>`, coalesce); a whole-message
//! `stop` (or `@bot stop`) stops the thread's turn and clears its queue; bot messages and edits
//! never wake it. Replies go to the thread: `post` shows a status line while working and replaces
//! it with the answer; `stream` updates one message as text arrives (at most one update per
//! second, what `chat.update` allows).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use folio_project::{SlackChannel, SlackReplyMode};
use folio_protocol::{Admission, ErrorCode, UrlVerification};
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

    /// Calls Web API `method` with a JSON body; the answer, or why it failed.
    pub(crate) async fn call(&self, method: &str, body: &Value) -> Result<Value, String> {
        let base = self
            .config
            .api_base_url
            .as_deref()
            .unwrap_or(DEFAULT_API)
            .trim_end_matches('/');
        let token_env = self.config.env_name("SLACK_BOT_TOKEN");
        let token = (self.env)(&token_env).ok_or_else(|| {
            format!("{token_env} is not set on the server (the bot's xoxb- token)")
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
            .map_err(|err| format!("{method} failed: {err}"))?;
        let status = answer.status();
        let value: Value = answer.json().await.unwrap_or(Value::Null);
        if !status.is_success() || value["ok"] != json!(true) {
            return Err(format!("{method} answered {status}: {value}"));
        }
        Ok(value)
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

    async fn update(&self, thread: &SlackThread, ts: &str, text: &str) -> Result<(), String> {
        self.call(
            "chat.update",
            &json!({ "channel": thread.channel, "ts": ts, "text": text }),
        )
        .await
        .map(drop)
    }
}

/// One turn's message in the thread, as the follower drives it.
pub(crate) struct Reply {
    thread: SlackThread,
    ts: Option<String>,
    text: String,
    updated: Option<Instant>,
}

impl Reply {
    /// The reply of a turn in `thread`.
    pub(crate) fn new(thread: SlackThread) -> Reply {
        Reply {
            thread,
            ts: None,
            text: String::new(),
            updated: None,
        }
    }

    /// The turn started: the status line (`post`) or the message to stream into.
    pub(crate) async fn started(&mut self, slack: &Slack) -> Result<(), String> {
        self.ts = Some(slack.post(&self.thread, WORKING).await?);
        Ok(())
    }

    /// Text arrived: `stream` updates the message at most once per [`STREAM_INTERVAL`].
    pub(crate) async fn appended(&mut self, slack: &Slack, delta: &str) -> Result<(), String> {
        self.text.push_str(delta);
        if slack.config.reply.unwrap_or_default() != SlackReplyMode::Stream {
            return Ok(());
        }
        let due = self
            .updated
            .is_none_or(|at| at.elapsed() >= STREAM_INTERVAL);
        if let (true, Some(ts)) = (due, &self.ts) {
            self.updated = Some(Instant::now());
            slack.update(&self.thread, ts, &self.text).await?;
        }
        Ok(())
    }

    /// The turn ended with `text` (the reply, or why it failed): the message becomes it.
    pub(crate) async fn ended(&mut self, slack: &Slack, text: &str) -> Result<(), String> {
        match &self.ts {
            Some(ts) => slack.update(&self.thread, ts, text).await,
            None => slack.post(&self.thread, text).await.map(drop),
        }
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
    let (_, bytes) = match crate::admitted_body(&channel, req).await {
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
    // Slack's retries (X-Slack-Retry-Num) repeat the event_id: deduplicated like any retry.
    let Some(id) = body["event_id"].as_str().map(String::from) else {
        return error(ErrorCode::InvalidRequest, "event_id: missing");
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
        },
    )
    .await
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
