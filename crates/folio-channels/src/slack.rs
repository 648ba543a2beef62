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

use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use folio_protocol::{Admission, DeliveryRetry, ErrorCode, UrlVerification};
use serde_json::{Value, json};

use crate::acknowledge::acknowledge;
use crate::slack_api::{Slack, SlackThread};
use crate::store::{Received, Work};
use crate::{Channel, error};

/// What a Slack event asks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Wake {
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

/// Why a Slack event is recorded as ignored (and wakes no session).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Ignored {
    /// A bot's message (the bot's own, too) or an edit.
    #[error("a bot message or an edit (loop guard)")]
    BotOrEdit,
    /// The event names no channel.
    #[error("the event names no channel")]
    NoChannel,
    /// An event that wakes nothing (not a mention, DM or post in a watched channel).
    #[error("{kind} in {channel} is not acted on")]
    NotActedOn {
        /// The event's type.
        kind: String,
        /// The Slack channel.
        channel: String,
    },
    /// The event has no `ts`.
    #[error("the event has no ts")]
    NoTs,
}

/// `X-Slack-Retry-Num` is not a number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("X-Slack-Retry-Num: not a number (Slack sends 1, 2 or 3)")]
pub(crate) struct BadRetryNum;

/// Reads an `event_callback`'s event; `Err` says why it is ignored.
pub(crate) fn interpret(slack: &Slack, body: &Value) -> Result<Wake, Ignored> {
    let event = &body["event"];
    let kind = event["type"].as_str().unwrap_or_default();
    if event.get("bot_id").is_some() || event.get("subtype").is_some() {
        return Err(Ignored::BotOrEdit);
    }
    let channel = event["channel"].as_str().ok_or(Ignored::NoChannel)?;
    let watched = slack.config.watch_channels.iter().any(|c| c == channel);
    let wakes = match kind {
        "app_mention" => true,
        "message" => event["channel_type"] == "im" || watched,
        _ => false,
    };
    if !wakes {
        return Err(Ignored::NotActedOn {
            kind: kind.to_string(),
            channel: channel.to_string(),
        });
    }
    let raw = event["text"].as_str().unwrap_or_default();
    let text = strip_mentions(raw);
    let ts = event["ts"].as_str().ok_or(Ignored::NoTs)?;
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
        Err(err) => return error(ErrorCode::InvalidRequest, err.to_string()),
    };
    let route = body["event"]["type"]
        .as_str()
        .unwrap_or("event")
        .to_string();
    let (work, ignored) = match interpret(slack, &body) {
        Ok(Wake::Message { text, thread, team }) => (Some(work(text, &thread, &team, false)), None),
        Ok(Wake::Stop { thread, team }) => (Some(work(String::new(), &thread, &team, true)), None),
        Err(reason) => (None, Some(reason.to_string())),
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
pub(crate) fn announced_retry(headers: &HeaderMap) -> Result<Option<DeliveryRetry>, BadRetryNum> {
    let Some(num) = headers.get("x-slack-retry-num") else {
        return Ok(None);
    };
    let num = num
        .to_str()
        .ok()
        .and_then(|n| n.trim().parse::<u32>().ok())
        .ok_or(BadRetryNum)?;
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
