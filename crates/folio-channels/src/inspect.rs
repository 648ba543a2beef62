//! The steps of a delivery that read only its headers and body — the auth chain, the GitHub and
//! Slack readings, a webhook route's schema and templates — for the fuzz targets
//! (`folio-fuzz`). Each calls the function the routes call; nothing is recorded or sent.

use axum::http::HeaderMap;
use folio_project::{AuthRule, GithubChannel, SlackChannel, WebhookChannel};
use serde_json::Value;

use crate::github_api::Github;
use crate::slack_api::Slack;
use crate::templates::Templates;
use crate::{ChannelError, Env, auth, github, slack, webhook};

/// Runs `chain` over a request with `headers` and `body` at Unix second `now`, as every channel
/// route does before reading the body.
pub fn admit(
    chain: &[AuthRule],
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
    env: &Env,
) -> Result<(), impl std::error::Error + use<>> {
    let presented = auth::Presented {
        headers,
        body,
        peer: std::net::SocketAddr::from(([0, 0, 0, 0], 0)),
        now,
    };
    auth::admit(chain, &presented, env)
}

/// A GitHub channel's reading of events.
pub struct GithubReader(Github);

impl GithubReader {
    /// The reader of `config`.
    pub fn new(config: GithubChannel, env: Env) -> GithubReader {
        GithubReader(Github::new(config, env))
    }

    /// What event `event` with payload `body` asks: the session's message, or why it is ignored.
    pub fn read(&self, event: &str, body: &Value) -> String {
        match github::interpret(&self.0, event, body) {
            Ok(wake) => wake.message,
            Err(ignored) => ignored.to_string(),
        }
    }
}

/// A Slack channel's reading of Events API requests.
pub struct SlackReader(Slack);

impl SlackReader {
    /// The reader of `config`.
    pub fn new(config: SlackChannel, env: Env) -> SlackReader {
        SlackReader(Slack::new(config, env))
    }

    /// What an `event_callback` with `headers` and `body` asks: the message (empty for `stop`)
    /// or why it is ignored, and the retry Slack announces.
    pub fn read(&self, headers: &HeaderMap, body: &Value) -> (String, Option<u32>) {
        let retry = slack::announced_retry(headers)
            .ok()
            .flatten()
            .map(|retry| retry.num);
        let read = match slack::interpret(&self.0, body) {
            Ok(slack::Wake::Message { text, .. }) => text,
            Ok(slack::Wake::Stop { .. }) => String::new(),
            Err(ignored) => ignored.to_string(),
        };
        (read, retry)
    }
}

/// A webhook channel's routes, compiled.
pub struct WebhookReader(Templates);

impl WebhookReader {
    /// Compiles the templates and schemas of `webhook` (channel `id`).
    pub fn new(id: &str, webhook: &WebhookChannel) -> Result<WebhookReader, ChannelError> {
        Templates::compile(id, webhook).map(WebhookReader)
    }

    /// The message route `route` renders from `headers` and `body`, or why the body is refused.
    pub fn read(&self, route: usize, headers: &HeaderMap, body: &Value) -> String {
        match webhook::read(&self.0, route, headers, body) {
            Ok(rendered) => rendered.message,
            Err(unreadable) => unreadable.to_string(),
        }
    }
}
