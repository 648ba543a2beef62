//! Following a session a delivery reached, to answer the provider: from the delivery's message
//! until the session is idle (and no newer delivery reached it), each turn's end is reported
//! once — `[deliver]` POSTs the reply; GitHub moves the turn's check run through
//! in_progress → completed and posts the reply as a PR comment. Reported turns are recorded in
//! the channel's delivery record, so a restart never reports one twice. A restart follows
//! every session deliveries reached again ([`Followers::resume`]), so a turn that ended while no
//! one followed it (one a crash cut short, recorded as failed by the restart) is still reported.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use folio_protocol::{ChannelDelivery, ChannelDeliveryOutcome, EventBody};
use serde_json::{Value, json};

use crate::Channel;
use crate::github::PrRef;
use crate::slack::{Reply, SlackThread};

/// A followed session: bumped by every new delivery, with the latest delivery's context and
/// the check run waiting for the next turn (GitHub).
struct Follower {
    generation: u64,
    context: Value,
    queued_check: Option<u64>,
}

/// The sessions a channel follows.
#[derive(Default)]
pub(crate) struct Followers {
    map: Mutex<HashMap<String, Follower>>,
}

impl Followers {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Follower>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes sure `session` is followed from the message of delivery `id`; `context` is the
    /// delivery's body (templates' `state`, GitHub's PR), `queued_check` a check run created
    /// for the next turn.
    pub(crate) fn follow(
        &self,
        channel: Arc<Channel>,
        session: String,
        id: String,
        context: Value,
        queued_check: Option<u64>,
    ) {
        let mut map = self.lock();
        match map.get_mut(&session) {
            Some(follower) => {
                follower.generation += 1;
                follower.context = context;
                if queued_check.is_some() {
                    follower.queued_check = queued_check;
                }
            }
            None => {
                map.insert(
                    session.clone(),
                    Follower {
                        generation: 0,
                        context,
                        queued_check,
                    },
                );
                tokio::spawn(follow_session(channel, session, id, false));
            }
        }
    }

    /// After a restart, follows `session` from delivery `id`'s message through the events it
    /// already has (turns already reported are skipped) and on until it is idle; `context` is
    /// the latest delivery's body. A session already followed is left as it is.
    pub(crate) fn resume(
        &self,
        channel: Arc<Channel>,
        session: String,
        id: String,
        context: Value,
    ) {
        let mut map = self.lock();
        if map.contains_key(&session) {
            return;
        }
        map.insert(
            session.clone(),
            Follower {
                generation: 0,
                context,
                queued_check: None,
            },
        );
        tokio::spawn(follow_session(channel, session, id, true));
    }

    fn context(&self, session: &str) -> Value {
        self.lock()
            .get(session)
            .map_or(Value::Null, |f| f.context.clone())
    }

    fn take_queued_check(&self, session: &str) -> Option<u64> {
        self.lock()
            .get_mut(session)
            .and_then(|f| f.queued_check.take())
    }
}

/// The index of the message delivery `id` added to `session` (0 when not found), and the
/// index of the session's last event.
async fn start_index(channel: &Channel, session: &str, id: &str) -> (u64, u64) {
    let events = channel
        .manager
        .events(&channel.principal(), session)
        .await
        .unwrap_or_default();
    let last = events.last().map_or(0, |event| event.index);
    let start = events
        .iter()
        .rev()
        .find_map(|event| match &event.body {
            EventBody::MessageReceived(m) if m.client_message_id.as_deref() == Some(id) => {
                Some(event.index)
            }
            EventBody::MessageQueued(m) if m.client_message_id.as_deref() == Some(id) => {
                Some(event.index)
            }
            _ => None,
        })
        .unwrap_or(0);
    (start, last)
}

/// Reports each turn of `session` from delivery `id`'s message on until the session is idle
/// with no newer delivery; `resumed` (after a restart): not before the end of the events the
/// session already had.
async fn follow_session(channel: Arc<Channel>, session: String, id: String, resumed: bool) {
    let manager = &channel.manager;
    let (start, last) = start_index(&channel, &session, &id).await;
    let replay_until = if resumed { last } else { 0 };
    let mut stream = match manager.stream(&channel.principal(), &session, start).await {
        Ok(stream) => stream,
        Err(err) => {
            manager.logs().about(&session).error(format!(
                "channel {}: cannot follow session {session} to answer the provider: {err}",
                channel.id
            ));
            channel.followers.lock().remove(&session);
            return;
        }
    };
    let mut seen = 0;
    let mut turn_state = TurnState::default();
    loop {
        // A streamed Slack reply's queued update goes out when due (at once, one interval
        // after the last, or when Slack's Retry-After has passed), even with no new event.
        let due = match (&channel.slack, &turn_state.slack) {
            (Some(slack), Some(reply)) => reply.due_at(slack),
            _ => None,
        };
        let item = match due {
            Some(at) => tokio::select! {
                item = stream.rx.recv() => item,
                () = tokio::time::sleep_until(at.into()) => {
                    if let (Some(slack), Some(reply)) = (&channel.slack, &mut turn_state.slack)
                        && let Err(err) = reply.flush(slack).await
                    {
                        manager.logs().about(&session).warn(format!(
                            "channel {}: the streamed reply was not updated: {err}",
                            channel.id
                        ));
                    }
                    continue;
                }
            },
            None => stream.rx.recv().await,
        };
        let Some(item) = item else { break };
        let Some(event) = item else { continue };
        let turn = event.turn_id.clone().unwrap_or_default();
        match &event.body {
            EventBody::TurnStarted(_) => {
                if channel.store.replied(&session, &turn) {
                    continue;
                }
                turn_state = TurnState {
                    check: start_check(&channel, &session).await,
                    slack: start_slack(&channel, &session).await,
                };
            }
            EventBody::MessageAppended(appended) => {
                if let Some(reply) = &mut turn_state.slack {
                    reply.appended(&appended.delta);
                }
            }
            EventBody::TurnCompleted(done) => {
                let outcome = Ok(done.reply.as_str());
                report(
                    &channel,
                    &session,
                    &turn,
                    outcome,
                    std::mem::take(&mut turn_state),
                )
                .await;
            }
            EventBody::TurnFailed(failed) => {
                let outcome = Err(failed.message.as_str());
                report(
                    &channel,
                    &session,
                    &turn,
                    outcome,
                    std::mem::take(&mut turn_state),
                )
                .await;
            }
            EventBody::SessionWaiting(_) if event.index >= replay_until => {
                let mut map = channel.followers.lock();
                let generation = map.get(&session).map_or(seen, |f| f.generation);
                if generation == seen {
                    map.remove(&session);
                    return;
                }
                seen = generation;
            }
            _ => {}
        }
    }
    channel.followers.lock().remove(&session);
}

/// What the follower started for the running turn.
#[derive(Default)]
struct TurnState {
    /// The turn's check run (GitHub).
    check: Option<u64>,
    /// The turn's message in the thread (Slack).
    slack: Option<Reply>,
}

/// Posts the turn's first message in its Slack thread (status line or stream target).
async fn start_slack(channel: &Channel, session: &str) -> Option<Reply> {
    let slack = channel.slack.as_ref()?;
    let thread: SlackThread =
        serde_json::from_value(channel.followers.context(session)["slack"].clone()).ok()?;
    let mut reply = Reply::new(thread);
    if let Err(err) = reply.started(slack).await {
        channel.manager.logs().about(session).warn(format!(
            "channel {}: no status message in the thread: {err}",
            channel.id
        ));
    }
    Some(reply)
}

/// Reports the end of `turn` once: the reply (webhook `[deliver]`, GitHub comment, Slack
/// thread message) and the turn's check run; records it.
async fn report(
    channel: &Channel,
    session: &str,
    turn: &str,
    outcome: Result<&str, &str>,
    state: TurnState,
) {
    if channel.store.replied(session, turn) {
        return;
    }
    let context = channel.followers.context(session);
    let mut failures = Vec::new();
    // Whether anything went back to the provider (a channel may have nothing to send).
    let mut answered = false;
    let check = state.check;
    if let (Some(slack), Some(mut reply)) = (&channel.slack, state.slack) {
        answered = true;
        let text = match outcome {
            Ok(reply) => reply.to_string(),
            Err(folio_protocol::TURN_INTERRUPTED) => "Stopped.".to_string(),
            Err(reason) => format!("Sorry, this turn failed: {reason}"),
        };
        if let Err(err) = reply.ended(slack, &text).await {
            failures.push(err);
        }
    }
    if let (Some(replier), Ok(reply)) = (&channel.replier, outcome) {
        answered = true;
        if let Err(err) = replier.post(channel, session, reply, &context).await {
            failures.push(err);
        }
    }
    if let Some(github) = &channel.github
        && let Ok(pr) = serde_json::from_value::<PrRef>(context["pr"].clone())
    {
        if let Some(check) = check {
            answered = true;
            let conclusion = if outcome.is_ok() {
                "success"
            } else {
                "failure"
            };
            let text = match outcome {
                Ok(reply) | Err(reply) => reply,
            };
            let name = check_name(channel);
            let body = json!({
                "status": "completed",
                "conclusion": conclusion,
                "output": {
                    "title": name,
                    "summary": format!("[View agent]({})\n\n{text}", channel.session_url(session)),
                },
            });
            let path = format!("/repos/{}/check-runs/{check}", pr.repo);
            if let Err(err) = github
                .call(&pr, reqwest::Method::PATCH, &path, Some(&body), JSON)
                .await
            {
                failures.push(err);
            }
        }
        if let Ok(reply) = outcome
            && github.config.deliver_replies.unwrap_or(true)
        {
            answered = true;
            let path = format!("/repos/{}/issues/{}/comments", pr.repo, pr.number);
            let body = json!({ "body": reply });
            if let Err(err) = github
                .call(&pr, reqwest::Method::POST, &path, Some(&body), JSON)
                .await
            {
                failures.push(err);
            }
        }
    }
    let logs = channel.manager.logs();
    let logs = logs.about(session);
    let failed = (!failures.is_empty()).then(|| failures.join("; "));
    match &failed {
        None => logs.info(format!("channel {}: answered {turn}", channel.id)),
        Some(reason) => logs.error(format!(
            "channel {}: the answer of {turn} was not delivered: {reason}",
            channel.id
        )),
    }
    if answered {
        let event = ChannelDelivery {
            channel: channel.id.clone(),
            outcome: match failed {
                None => ChannelDeliveryOutcome::Replied,
                Some(_) => ChannelDeliveryOutcome::ReplyFailed,
            },
            delivery_id: None,
            route: None,
            message: failed.clone(),
        };
        if let Err(err) = channel
            .manager
            .record_channel_delivery(&channel.principal(), session, Some(turn), event)
            .await
        {
            logs.warn(format!(
                "channel {}: channel.delivery of {turn} not recorded: {err}",
                channel.id
            ));
        }
    }
    let store = channel.store.clone();
    let (session_id, turn_id) = (session.to_string(), turn.to_string());
    let recorded =
        tokio::task::spawn_blocking(move || store.record_reply(&session_id, &turn_id, failed))
            .await;
    if !matches!(recorded, Ok(Ok(()))) {
        logs.error(format!(
            "channel {}: the answer of {turn} was not recorded",
            channel.id
        ));
    }
}

/// GitHub's JSON media type.
pub(crate) const JSON: &str = "application/vnd.github+json";

/// The check run's name (and output title): the bot's name, else `folio`.
pub(crate) fn check_name(channel: &Channel) -> String {
    channel
        .github
        .as_ref()
        .and_then(|g| g.config.bot_name.clone())
        .unwrap_or_else(|| "folio".to_string())
}

/// Marks the turn's check run in progress: the queued one, else a new one when the PR's head
/// SHA is known. `None` without check runs.
async fn start_check(channel: &Channel, session: &str) -> Option<u64> {
    let github = channel.github.as_ref()?;
    if !github.config.check_runs.unwrap_or(false) {
        return None;
    }
    let pr: PrRef =
        serde_json::from_value(channel.followers.context(session)["pr"].clone()).ok()?;
    let logs = channel.manager.logs();
    let result = match channel.followers.take_queued_check(session) {
        Some(id) => {
            let path = format!("/repos/{}/check-runs/{id}", pr.repo);
            let body = json!({ "status": "in_progress" });
            github
                .call(&pr, reqwest::Method::PATCH, &path, Some(&body), JSON)
                .await
                .map(|_| id)
        }
        None => create_check(channel, &pr, "in_progress", session).await,
    };
    result
        .map_err(|err| {
            logs.about(session).error(format!(
                "channel {}: the check run was not started: {err}",
                channel.id
            ))
        })
        .ok()
}

/// Creates a check run on the PR's head SHA with `status`; its id.
pub(crate) async fn create_check(
    channel: &Channel,
    pr: &PrRef,
    status: &str,
    session: &str,
) -> Result<u64, String> {
    let github = channel.github.as_ref().ok_or("not a GitHub channel")?;
    let sha = pr
        .head_sha
        .as_deref()
        .ok_or("no head SHA yet (a comment-only wake): the check waits for a PR or CI event")?;
    let body = json!({
        "name": check_name(channel),
        "head_sha": sha,
        "status": status,
        "details_url": channel.session_url(session),
    });
    let path = format!("/repos/{}/check-runs", pr.repo);
    let answer = github
        .call(pr, reqwest::Method::POST, &path, Some(&body), JSON)
        .await?;
    serde_json::from_str::<Value>(&answer)
        .ok()
        .and_then(|v| v["id"].as_u64())
        .ok_or_else(|| format!("POST {path} answered no check run id"))
}
