//! `[deliver]`: each reply of a session a webhook delivery reached is POSTed to the rendered
//! URL, retried with backoff on 5xx, 429, timeouts and connection errors, and given up after
//! `max_attempts`; what happened is recorded in the channel's delivery record (and the server
//! log), once per turn, so a restart never posts a reply twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use folio_project::{DeliverConfig, expand_template};
use folio_protocol::EventBody;
use serde_json::Value;

use crate::{Channel, Env};

/// Attempts of one reply when the manifest says nothing.
const DEFAULT_ATTEMPTS: u32 = 5;
/// How long one POST may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// The first retry's delay; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// A session being followed: bumped by every new delivery, with the latest delivery's body.
struct Follower {
    generation: u64,
    state: Value,
}

/// Posts the replies of one webhook channel.
pub(crate) struct Replier {
    config: DeliverConfig,
    env: Env,
    client: reqwest::Client,
    followers: Mutex<HashMap<String, Follower>>,
}

impl Replier {
    /// A replier for `config`, reading `${NAME}` header values from `env`.
    pub(crate) fn new(config: DeliverConfig, env: Env) -> Replier {
        Replier {
            config,
            env,
            client: reqwest::Client::new(),
            followers: Mutex::new(HashMap::new()),
        }
    }

    fn followers(&self) -> std::sync::MutexGuard<'_, HashMap<String, Follower>> {
        self.followers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes sure `session` is followed from the message of delivery `id` until it is idle.
    pub(crate) fn follow(&self, channel: Arc<Channel>, session: String, id: String, state: Value) {
        let mut followers = self.followers();
        match followers.get_mut(&session) {
            Some(follower) => {
                follower.generation += 1;
                follower.state = state;
            }
            None => {
                followers.insert(
                    session.clone(),
                    Follower {
                        generation: 0,
                        state,
                    },
                );
                tokio::spawn(follow_session(channel, session, id));
            }
        }
    }

    /// POSTs `reply` with retries; the error says why it was given up.
    async fn post(&self, channel: &Channel, session: &str, reply: &str) -> Result<(), String> {
        let state = self
            .followers()
            .get(session)
            .map_or(Value::Null, |f| f.state.clone());
        let context = serde_json::json!({ "reply": reply, "state": state, "session_id": session });
        let url = channel.templates.render("deliver.url", &context)?;
        let body = channel.templates.render("deliver.body", &context)?;
        let mut headers = Vec::new();
        for (name, value) in &self.config.headers {
            let value = expand_template(value, &|var| (self.env)(var))
                .map_err(|err| format!("deliver.headers.{name}: {err}"))?;
            headers.push((name.clone(), value));
        }
        let attempts = self.config.max_attempts.unwrap_or(DEFAULT_ATTEMPTS).max(1);
        let mut delay = FIRST_BACKOFF;
        let mut last = String::new();
        for attempt in 1..=attempts {
            let mut request = self
                .client
                .post(&url)
                .timeout(ATTEMPT_TIMEOUT)
                .header("content-type", "application/json")
                .body(body.clone());
            for (name, value) in &headers {
                request = request.header(name.as_str(), value.as_str());
            }
            match request.send().await {
                Ok(answer) if answer.status().is_success() => return Ok(()),
                Ok(answer)
                    if answer.status().is_server_error() || answer.status().as_u16() == 429 =>
                {
                    last = format!("{url} answered {}", answer.status());
                }
                Ok(answer) => {
                    return Err(format!(
                        "{url} answered {} (a client error is not retried)",
                        answer.status()
                    ));
                }
                Err(err) => last = format!("POST {url} failed: {err}"),
            }
            if attempt < attempts {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(MAX_BACKOFF);
            }
        }
        Err(format!("gave up after {attempts} attempts: {last}"))
    }
}

/// Follows `session` from the message of delivery `id`: posts each completed turn's reply
/// once, and stops when the session is idle and no newer delivery reached it.
async fn follow_session(channel: Arc<Channel>, session: String, id: String) {
    let Some(replier) = channel.replier.as_ref() else {
        return;
    };
    let principal = channel.principal();
    let manager = &channel.manager;
    let start = manager
        .events(&principal, &session)
        .ok()
        .and_then(|events| {
            events.iter().rev().find_map(|event| match &event.body {
                EventBody::MessageReceived(m) if m.client_message_id.as_deref() == Some(&id) => {
                    Some(event.index)
                }
                EventBody::MessageQueued(m) if m.client_message_id.as_deref() == Some(&id) => {
                    Some(event.index)
                }
                _ => None,
            })
        })
        .unwrap_or(0);
    let mut stream = match manager.stream(&principal, &session, start) {
        Ok(stream) => stream,
        Err(err) => {
            manager.logs().about(&session).error(format!(
                "channel {}: cannot follow session {session} to deliver its replies: {err}",
                channel.id
            ));
            replier.followers().remove(&session);
            return;
        }
    };
    let mut seen = 0;
    while let Some(item) = stream.rx.recv().await {
        let Some(event) = item else { continue };
        match &event.body {
            EventBody::TurnCompleted(done) => {
                let turn = event.turn_id.clone().unwrap_or_default();
                if channel.store.replied(&session, &turn) {
                    continue;
                }
                let outcome = replier.post(&channel, &session, &done.reply).await;
                let logs = manager.logs().about(&session);
                match &outcome {
                    Ok(()) => logs.info(format!(
                        "channel {}: delivered the reply of {turn}",
                        channel.id
                    )),
                    Err(reason) => logs.error(format!(
                        "channel {}: the reply of {turn} was not delivered: {reason}",
                        channel.id
                    )),
                }
                let store = channel.store.clone();
                let (session_id, turn_id) = (session.clone(), turn.clone());
                let recorded = tokio::task::spawn_blocking(move || {
                    store.record_reply(&session_id, &turn_id, outcome.err())
                })
                .await;
                if !matches!(recorded, Ok(Ok(()))) {
                    logs.error(format!(
                        "channel {}: the delivery of the reply of {turn} was not recorded",
                        channel.id
                    ));
                }
            }
            EventBody::SessionWaiting(_) => {
                let mut followers = replier.followers();
                let generation = followers.get(&session).map_or(seen, |f| f.generation);
                if generation == seen {
                    followers.remove(&session);
                    return;
                }
                seen = generation;
            }
            _ => {}
        }
    }
    replier.followers().remove(&session);
}
