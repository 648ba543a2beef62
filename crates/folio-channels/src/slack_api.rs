//! The Slack side of a `slack` channel: its settings and Web API client (Slack's `429` and
//! `Retry-After` honoured), the thread a delivery is about, and the turn's message in that
//! thread as the follower drives it (`post` or `stream`). Both the receiving side (`slack`)
//! and the replying side (`follow`) use it; it uses neither.

use std::time::{Duration, Instant};

use folio_project::{SlackChannel, SlackReplyMode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Env;

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

/// Why a Slack Web API call (or a reply in a thread) did not succeed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SlackError {
    /// The bot token variable is not set.
    #[error("{token_env} is not set on the server (the bot's xoxb- token)")]
    TokenUnset {
        /// The variable (default `SLACK_BOT_TOKEN`).
        token_env: String,
    },
    /// The request failed (connection, timeout).
    #[error("{method} failed: {source}")]
    Unreachable {
        /// The Web API method.
        method: String,
        /// What failed.
        #[source]
        source: reqwest::Error,
    },
    /// Slack answered an error status or `"ok": false`.
    #[error("{method} answered {status}: {answer}")]
    Refused {
        /// The Web API method.
        method: String,
        /// The answer's status.
        status: reqwest::StatusCode,
        /// The answer's body (`null` when not JSON); its `error` says why.
        answer: Value,
    },
    /// Slack still rate-limited the call after every wait.
    #[error(
        "{method} is still rate-limited by Slack after {waits} waits (the last asked for {} s more)",
        wait.as_secs()
    )]
    RateLimited {
        /// The Web API method.
        method: String,
        /// How many times the call waited.
        waits: u32,
        /// The last `Retry-After`.
        wait: Duration,
    },
    /// A streamed update was rate-limited: it stays queued until `wait` has passed.
    #[error(
        "chat.update is rate-limited by Slack: the update waits {} s (Retry-After)",
        wait.as_secs()
    )]
    UpdateDeferred {
        /// The `Retry-After`.
        wait: Duration,
    },
    /// `chat.postMessage` answered no message `ts`.
    #[error("chat.postMessage answered no ts")]
    NoTs,
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
        let token = (self.env)(&token_env)
            .ok_or_else(|| CallError::Failed(SlackError::TokenUnset { token_env }))?;
        let url = format!("{base}/{method}");
        let answer = self
            .client
            .post(&url)
            .timeout(Duration::from_secs(15))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .map_err(|source| {
                CallError::Failed(SlackError::Unreachable {
                    method: method.to_string(),
                    source,
                })
            })?;
        let status = answer.status();
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            return Err(CallError::RateLimited(retry_after(answer.headers())));
        }
        let value: Value = answer.json().await.unwrap_or(Value::Null);
        if !status.is_success() || value["ok"] != json!(true) {
            return Err(CallError::Failed(SlackError::Refused {
                method: method.to_string(),
                status,
                answer: value,
            }));
        }
        Ok(value)
    }

    /// Calls Web API `method`, waiting out Slack's rate limit (`429` + `Retry-After`) up to
    /// [`RATE_LIMITED_RETRIES`] times; the answer, or why it failed.
    async fn call(&self, method: &str, body: &Value) -> Result<Value, SlackError> {
        let mut waits = 0;
        loop {
            match self.call_once(method, body).await {
                Ok(value) => return Ok(value),
                Err(CallError::RateLimited(wait)) if waits < RATE_LIMITED_RETRIES => {
                    waits += 1;
                    tokio::time::sleep(wait).await;
                }
                Err(CallError::RateLimited(wait)) => {
                    return Err(SlackError::RateLimited {
                        method: method.to_string(),
                        waits,
                        wait,
                    });
                }
                Err(CallError::Failed(err)) => return Err(err),
            }
        }
    }

    /// Posts `text` in the thread; the message's `ts`.
    async fn post(&self, thread: &SlackThread, text: &str) -> Result<String, SlackError> {
        let answer = self
            .call(
                "chat.postMessage",
                &json!({ "channel": thread.channel, "thread_ts": thread.thread_ts, "text": text }),
            )
            .await?;
        answer["ts"]
            .as_str()
            .map(String::from)
            .ok_or(SlackError::NoTs)
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
    Failed(SlackError),
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
    pub(crate) async fn started(&mut self, slack: &Slack) -> Result<(), SlackError> {
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
    pub(crate) async fn flush(&mut self, slack: &Slack) -> Result<(), SlackError> {
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
            Err(CallError::RateLimited(wait)) => Err(SlackError::UpdateDeferred { wait }),
            Err(CallError::Failed(err)) => {
                self.shown = text;
                Err(err)
            }
        }
    }

    /// The turn ended with `text` (the reply, or why it failed): the queued update is dropped
    /// and the message becomes `text` (once the rate limit allows).
    pub(crate) async fn ended(&mut self, slack: &Slack, text: &str) -> Result<(), SlackError> {
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
