//! Following a session a delivery reached, to answer the provider: from the delivery's message
//! until the session is idle (and no newer delivery reached it), each turn's end is reported
//! once — `[deliver]` POSTs the reply; GitHub moves the turn's check run through
//! in_progress → completed and posts the reply as a PR comment. Reported turns are recorded in
//! the store, so a restart never reports one twice.
//!
//! One server follows a session at a time: the follow is a claim in the store, renewed while
//! it runs; a delivery reaching a session another follower has only tells it (a newer context
//! and generation). A follow nobody renews any more (a restart, a dead server) is claimed and
//! followed again ([`Followers::resume`]), so a turn that ended while no one followed it (one a
//! crash cut short, recorded as failed by the takeover) is still reported.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use folio_protocol::{ChannelDelivery, ChannelDeliveryOutcome, EventBody};
use folio_store::{Follow, Followed};
use serde_json::{Value, json};

use crate::Channel;
use crate::github_api::{GithubError, JSON, PrRef};
use crate::slack_api::{Reply, SlackThread};

/// The sessions this server follows for a channel.
#[derive(Default)]
pub(crate) struct Followers {
    running: Mutex<HashSet<String>>,
}

impl Followers {
    fn lock(&self) -> MutexGuard<'_, HashSet<String>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Delivery `id` reached `session`: follows it from the delivery's message unless a
    /// follower (here or on another server) runs, which is told instead; `context` is the
    /// delivery's body (templates' `state`, GitHub's PR), `queued_check` a check run created
    /// for the next turn.
    pub(crate) async fn follow(
        &self,
        channel: &Arc<Channel>,
        session: &str,
        id: &str,
        context: &Value,
        queued_check: Option<u64>,
    ) {
        match channel
            .store
            .follow(session, id, context, queued_check)
            .await
        {
            Ok(Followed::Started(follow)) => self.spawn(channel.clone(), follow, false),
            Ok(Followed::Running) => {}
            Err(err) => channel.manager.logs().about(session).error(format!(
                "channel {}: session {session} is not followed, its replies are not sent: {err}",
                channel.id
            )),
        }
    }

    /// Follows a session whose follow this server claimed after its follower stopped (a
    /// restart, a dead server): through the events it already has (turns already reported
    /// are skipped) and on until it is idle.
    pub(crate) fn resume(&self, channel: Arc<Channel>, follow: Follow) {
        self.spawn(channel, follow, true);
    }

    fn spawn(&self, channel: Arc<Channel>, follow: Follow, resumed: bool) {
        // A follower of this server still runs (its claim lapsed while it was slow): it
        // renews the claim again.
        if !self.lock().insert(follow.session_id.clone()) {
            return;
        }
        tokio::spawn(async move {
            let session = follow.session_id.clone();
            follow_session(&channel, follow, resumed).await;
            channel.followers.lock().remove(&session);
        });
    }
}

/// The index of the message delivery `id` added to `session` (0 when not found), and the
/// index of the session's last event.
async fn start_index(channel: &Channel, session: &str, id: &str) -> (u64, u64) {
    let events = channel
        .manager
        .events()
        .read(&channel.principal(), session)
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

/// Reports each turn of the followed session from its delivery's message on until the
/// session is idle with no newer delivery; `resumed` (a claimed follow): not before the end of
/// the events the session already had. Renews the follow while it runs and stops once another
/// server took it over.
async fn follow_session(channel: &Arc<Channel>, mut follow: Follow, resumed: bool) {
    let manager = &channel.manager;
    let session = follow.session_id.clone();
    let logs = manager.logs().about(&session);
    let (start, last) = start_index(channel, &session, &follow.delivery_id).await;
    let replay_until = if resumed { last } else { 0 };
    let mut stream = match manager
        .events()
        .stream(&channel.principal(), &session, start)
        .await
    {
        Ok(stream) => stream,
        Err(err) => {
            logs.error(format!(
                "channel {}: cannot follow session {session} to answer the provider: {err}",
                channel.id
            ));
            // A session that is gone is followed no more; another error leaves the follow
            // to be claimed again once it lapses.
            if matches!(err, folio_session::ManagerError::NotFound(_)) {
                let _ = channel.store.end_follow(&session, follow.generation).await;
            }
            return;
        }
    };
    let mut seen = follow.generation;
    let mut turn_state = TurnState::default();
    let mut renew = tokio::time::interval(channel.store.ttl() / 3);
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    renew.tick().await;
    loop {
        // A streamed Slack reply's queued update goes out when due (at once, one interval
        // after the last, or when Slack's Retry-After has passed), even with no new event.
        let due = match (&channel.slack, &turn_state.slack) {
            (Some(slack), Some(reply)) => reply.due_at(slack),
            _ => None,
        };
        let flush_due = async {
            match due {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        let item = tokio::select! {
            item = stream.rx.recv() => item,
            () = flush_due => {
                if let (Some(slack), Some(reply)) = (&channel.slack, &mut turn_state.slack)
                    && let Err(err) = reply.flush(slack).await
                {
                    logs.warn(format!(
                        "channel {}: the streamed reply was not updated: {err}",
                        channel.id
                    ));
                }
                continue;
            }
            _ = renew.tick() => {
                if !refresh(channel, &mut follow).await {
                    return;
                }
                continue;
            }
        };
        let Some(item) = item else { break };
        let Some(event) = item else { continue };
        let turn = event.turn_id.clone().unwrap_or_default();
        match &event.body {
            EventBody::TurnStarted(_) => {
                if !refresh(channel, &mut follow).await {
                    return;
                }
                if replied(channel, &session, &turn).await {
                    continue;
                }
                turn_state = TurnState {
                    check: start_check(channel, &session, &follow.context).await,
                    slack: start_slack(channel, &session, &follow.context).await,
                };
            }
            EventBody::MessageAppended(appended) => {
                if let Some(reply) = &mut turn_state.slack {
                    reply.appended(&appended.delta);
                }
            }
            EventBody::TurnCompleted(_) | EventBody::TurnFailed(_) => {
                if !refresh(channel, &mut follow).await {
                    return;
                }
                let outcome = match &event.body {
                    EventBody::TurnFailed(failed) => Err(failed.message.as_str()),
                    EventBody::TurnCompleted(done) => Ok(done.reply.as_str()),
                    _ => continue,
                };
                let mut state = std::mem::take(&mut turn_state);
                // The turn's start never reached the log (its server died before writing it
                // out): what the start would have opened is opened now, to report the end.
                if state.is_empty() && !replied(channel, &session, &turn).await {
                    state = TurnState {
                        check: start_check(channel, &session, &follow.context).await,
                        slack: start_slack(channel, &session, &follow.context).await,
                    };
                }
                report(channel, &session, &turn, outcome, state, &follow.context).await;
            }
            EventBody::SessionWaiting(_) if event.index >= replay_until => {
                match channel.store.end_follow(&session, seen).await {
                    Ok(true) => return,
                    // A newer delivery reached the session: follow on to its turn.
                    Ok(false) if refresh(channel, &mut follow).await => seen = follow.generation,
                    Ok(false) => return,
                    Err(err) => logs.warn(format!(
                        "channel {}: the follow of {session} did not end: {err}",
                        channel.id
                    )),
                }
            }
            _ => {}
        }
    }
}

/// Renews the follow and takes in its latest state; `false` once another server took it
/// over (this follower stops). A store error keeps the state it had.
async fn refresh(channel: &Channel, follow: &mut Follow) -> bool {
    match channel.store.renew_follow(&follow.session_id).await {
        Ok(Some(current)) => {
            *follow = current;
            true
        }
        Ok(None) => {
            channel
                .manager
                .logs()
                .about(&follow.session_id)
                .info(format!(
                    "channel {}: another server follows {} now",
                    channel.id, follow.session_id
                ));
            false
        }
        Err(err) => {
            channel
                .manager
                .logs()
                .about(&follow.session_id)
                .warn(format!(
                    "channel {}: the follow of {} was not renewed: {err}",
                    channel.id, follow.session_id
                ));
            true
        }
    }
}

/// Whether the end of `turn` was already reported (a store error counts as not yet).
async fn replied(channel: &Channel, session: &str, turn: &str) -> bool {
    channel
        .store
        .replied(session, turn)
        .await
        .unwrap_or_default()
}

/// What the follower started for the running turn.
#[derive(Default)]
struct TurnState {
    /// The turn's check run (GitHub).
    check: Option<u64>,
    /// The turn's message in the thread (Slack).
    slack: Option<Reply>,
}

impl TurnState {
    /// Nothing was started for the turn.
    fn is_empty(&self) -> bool {
        self.check.is_none() && self.slack.is_none()
    }
}

/// Posts the turn's first message in its Slack thread (status line or stream target).
async fn start_slack(channel: &Channel, session: &str, context: &Value) -> Option<Reply> {
    let slack = channel.slack.as_ref()?;
    let thread: SlackThread = serde_json::from_value(context["slack"].clone()).ok()?;
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
    context: &Value,
) {
    if replied(channel, session, turn).await {
        return;
    }
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
            failures.push(err.to_string());
        }
    }
    if let (Some(replier), Ok(reply)) = (&channel.replier, outcome) {
        answered = true;
        if let Err(err) = replier.post(channel, session, reply, context).await {
            failures.push(err.to_string());
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
            let mut context = check_context(channel, session, &pr);
            context["reply"] = json!(text);
            context["conclusion"] = json!(conclusion);
            let completed = async {
                let title = channel.templates.render("check.title", &context)?;
                let summary = channel.templates.render("check.summary", &context)?;
                let body = json!({
                    "status": "completed",
                    "conclusion": conclusion,
                    "output": { "title": title, "summary": summary },
                });
                let path = format!("/repos/{}/check-runs/{check}", pr.repo);
                github
                    .call(&pr, reqwest::Method::PATCH, &path, Some(&body), JSON)
                    .await
            };
            if let Err(err) = completed.await {
                failures.push(err.to_string());
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
                failures.push(err.to_string());
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
            .channels()
            .record_delivery(&channel.principal(), session, Some(turn), event)
            .await
        {
            logs.warn(format!(
                "channel {}: channel.delivery of {turn} not recorded: {err}",
                channel.id
            ));
        }
    }
    let recorded = channel
        .store
        .record_reply(session, turn, failed.as_deref())
        .await;
    if let Err(err) = recorded {
        logs.error(format!(
            "channel {}: the answer of {turn} was not recorded: {err}",
            channel.id
        ));
    }
}

/// What the `[check]` and `[banner]` templates of `session` on `pr` see: `session_id`,
/// `session_url`, `base_url` (the agent's served URL), `channel`, `repo`, `number`, `head_sha` (empty when unknown), `bot_name`
/// (the bot, else `folio`) and `name` (the rendered check name; the bot name when it does not
/// render, which the check run's creation reports).
pub(crate) fn check_context(channel: &Channel, session: &str, pr: &PrRef) -> Value {
    let bot_name = channel
        .github
        .as_ref()
        .and_then(|g| g.config.bot_name.clone())
        .unwrap_or_else(|| "folio".to_string());
    let mut context = json!({
        "session_id": session,
        "session_url": channel.session_url(session),
        "base_url": channel.base_url.trim_end_matches('/'),
        "channel": channel.id,
        "repo": pr.repo,
        "number": pr.number,
        "head_sha": pr.head_sha.as_deref().unwrap_or_default(),
        "bot_name": bot_name,
    });
    context["name"] = json!(
        channel
            .templates
            .render("check.name", &context)
            .unwrap_or(bot_name)
    );
    context
}

/// Marks the turn's check run in progress: the queued one, else a new one when the PR's head
/// SHA is known. `None` without check runs.
async fn start_check(channel: &Channel, session: &str, context: &Value) -> Option<u64> {
    let github = channel.github.as_ref()?;
    if !github.config.check_runs.unwrap_or(false) {
        return None;
    }
    let pr: PrRef = serde_json::from_value(context["pr"].clone()).ok()?;
    let logs = channel.manager.logs();
    let queued = channel
        .store
        .take_queued_check(session)
        .await
        .unwrap_or_default();
    let result = match queued {
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
) -> Result<u64, GithubError> {
    let github = channel.github.as_ref().ok_or(GithubError::NotGithub)?;
    let sha = pr.head_sha.as_deref().ok_or(GithubError::NoHeadSha)?;
    let context = check_context(channel, session, pr);
    let body = json!({
        "name": channel.templates.render("check.name", &context)?,
        "head_sha": sha,
        "status": status,
        "details_url": channel.templates.render("check.details_url", &context)?,
    });
    let path = format!("/repos/{}/check-runs", pr.repo);
    let answer = github
        .call(pr, reqwest::Method::POST, &path, Some(&body), JSON)
        .await?;
    serde_json::from_str::<Value>(&answer)
        .ok()
        .and_then(|v| v["id"].as_u64())
        .ok_or(GithubError::NoCheckRunId { path })
}
