//! `[deliver]`: a reply of a session a webhook delivery reached is POSTed to the rendered URL,
//! retried with backoff on 5xx, 429, timeouts and connection errors, and given up after
//! `max_attempts` (the follower in `follow` records the outcome once per turn).

use std::time::Duration;

use folio_project::{DeliverConfig, UnsetVariable, expand_template};
use serde_json::Value;

use crate::templates::RenderError;
use crate::{Channel, Env};

/// Attempts of one reply when the manifest says nothing.
const DEFAULT_ATTEMPTS: u32 = 5;
/// How long one POST may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// The first retry's delay; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// Why a reply was not delivered.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DeliverError {
    /// `deliver.url` or `deliver.body` did not render over the reply.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// A `deliver.headers` value names a variable that is not set.
    #[error("deliver.headers.{name}: {source}")]
    Header {
        /// The header.
        name: String,
        /// The variable that is not set.
        #[source]
        source: UnsetVariable,
    },
    /// The receiver answered a client error (not retried).
    #[error("{url} answered {status} (a client error is not retried)")]
    Refused {
        /// The rendered URL.
        url: String,
        /// The answer's status.
        status: reqwest::StatusCode,
    },
    /// Every attempt failed; the last one's failure.
    #[error("gave up after {attempts} attempts: {last}")]
    GaveUp {
        /// How many attempts were made.
        attempts: u32,
        /// How the last one failed.
        #[source]
        last: AttemptError,
    },
}

/// How one attempt of a reply failed (it is retried).
#[derive(Debug, thiserror::Error)]
pub(crate) enum AttemptError {
    /// The receiver answered 5xx or 429.
    #[error("{url} answered {status}")]
    Status {
        /// The rendered URL.
        url: String,
        /// The answer's status.
        status: reqwest::StatusCode,
    },
    /// The POST failed (connection, timeout).
    #[error("POST {url} failed: {source}")]
    Unreachable {
        /// The rendered URL.
        url: String,
        /// What failed.
        #[source]
        source: reqwest::Error,
    },
}

/// Posts the replies of one webhook channel.
pub(crate) struct Replier {
    config: DeliverConfig,
    env: Env,
    client: reqwest::Client,
}

impl Replier {
    /// A replier for `config`, reading `${NAME}` header values from `env`.
    pub(crate) fn new(config: DeliverConfig, env: Env) -> Replier {
        Replier {
            config,
            env,
            client: reqwest::Client::new(),
        }
    }

    /// POSTs `reply` (`state`: the latest delivery's body) with retries; the error says why it
    /// was given up.
    pub(crate) async fn post(
        &self,
        channel: &Channel,
        session: &str,
        reply: &str,
        state: &Value,
    ) -> Result<(), DeliverError> {
        let context = serde_json::json!({ "reply": reply, "state": state, "session_id": session });
        let url = channel.templates.render("deliver.url", &context)?;
        let body = channel.templates.render("deliver.body", &context)?;
        let mut headers = Vec::new();
        for (name, value) in &self.config.headers {
            let value = expand_template(value, &|var| (self.env)(var)).map_err(|source| {
                DeliverError::Header {
                    name: name.clone(),
                    source,
                }
            })?;
            headers.push((name.clone(), value));
        }
        let attempts = self.config.max_attempts.unwrap_or(DEFAULT_ATTEMPTS).max(1);
        let mut delay = FIRST_BACKOFF;
        let mut attempt = 1;
        loop {
            let mut request = self
                .client
                .post(&url)
                .timeout(ATTEMPT_TIMEOUT)
                .header("content-type", "application/json")
                .body(body.clone());
            for (name, value) in &headers {
                request = request.header(name.as_str(), value.as_str());
            }
            let last = match request.send().await {
                Ok(answer) if answer.status().is_success() => return Ok(()),
                Ok(answer)
                    if answer.status().is_server_error() || answer.status().as_u16() == 429 =>
                {
                    AttemptError::Status {
                        url: url.clone(),
                        status: answer.status(),
                    }
                }
                Ok(answer) => {
                    return Err(DeliverError::Refused {
                        url,
                        status: answer.status(),
                    });
                }
                Err(source) => AttemptError::Unreachable {
                    url: url.clone(),
                    source,
                },
            };
            if attempt == attempts {
                return Err(DeliverError::GaveUp { attempts, last });
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(MAX_BACKOFF);
            attempt += 1;
        }
    }
}
