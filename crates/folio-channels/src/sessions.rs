//! The background work of a delivery: its continuation key picks the session (same key → same
//! session; a new key or none → a new chat session), the delivery id is the message's
//! idempotency key (so a re-run after a restart never admits it twice), and the outcome is
//! recorded. A GitHub delivery first writes `pr/` into the workspace and checks out the PR's
//! head in `repo/` (`checkout`, before the turn), then reacts 👀 and queues a check run (or,
//! on a session's first wake with no head SHA, posts the banner); sessions that answer a
//! provider are followed (`follow`).

use std::sync::Arc;

use folio_protocol::{
    ChannelDelivery, ChannelDeliveryOutcome, CreateSession, DeliveryStatus, EventBody,
};
use folio_session::{ChannelMessage, FaultPoint, ManagerError, SessionOptions, WorkspacePrep};
use folio_store::Continuation;
use serde_json::json;

use crate::Channel;
use crate::checkout::Checkout;
use crate::follow::{check_context, create_check};
use crate::github_api::{JSON, PrRef};
use crate::store::{Received, Work};

/// Runs a recorded delivery's work and records its outcome. `resumed`: a restart re-runs it
/// (its outcome was never recorded), so its message and its `channel.delivery` event may
/// already be on the session: neither is recorded twice.
pub(crate) async fn run(channel: Arc<Channel>, received: Received, resumed: bool) {
    let Received {
        id,
        work,
        ignored,
        route,
        ..
    } = received;
    let (status, session_id, message) = match &work {
        None => (DeliveryStatus::Ignored, None, ignored),
        Some(work) => {
            let (work, prepare) = with_pr_files(&channel, work).await;
            match to_session(&channel, &id, &work, prepare).await {
                Ok(session) => (DeliveryStatus::Accepted, Some(session), None),
                Err(err) => (DeliveryStatus::Failed, None, Some(err.to_string())),
            }
        }
    };
    let (session_id, opened) = match session_id {
        Some(Opened { id, new }) => (Some(id), new),
        None => (None, false),
    };
    let logs = channel.manager.logs();
    match (&session_id, &message, status) {
        (Some(session), _, _) => {
            logs.about(session).info(format!(
                "channel {}: delivery {id} reached session {session}",
                channel.id
            ));
            let event = ChannelDelivery {
                channel: channel.id.clone(),
                outcome: ChannelDeliveryOutcome::Received,
                delivery_id: Some(id.clone()),
                route: Some(route),
                message: None,
            };
            let recorded = resumed && reached(&channel, session, &id).await;
            if !recorded
                && let Err(err) = channel
                    .manager
                    .channels()
                    .record_delivery(&channel.principal(), session, None, event)
                    .await
            {
                logs.about(session).warn(format!(
                    "channel {}: channel.delivery of {id} not recorded: {err}",
                    channel.id
                ));
            }
            channel.manager.fault(FaultPoint::ChannelDeliveryRecorded);
        }
        (None, Some(reason), DeliveryStatus::Failed) => logs.warn(format!(
            "channel {}: delivery {id} failed: {reason}",
            channel.id
        )),
        _ => {}
    }
    // Followed before the outcome is recorded: a crash in between runs the delivery again
    // (and finds the session followed), never leaves it unfollowed.
    if let (Some(session), Some(work)) = (&session_id, &work)
        && !work.stop
        && (channel.replier.is_some() || channel.slack.is_some() || channel.github.is_some())
    {
        let queued = match channel.github {
            Some(_) => github_accepted(&channel, session, work, opened).await,
            None => None,
        };
        channel
            .followers
            .follow(&channel, session, &id, &work.body, queued)
            .await;
    }
    if let Err(err) = channel.store.finish(&id, status, session_id, message).await {
        logs.error(format!(
            "channel {}: the outcome of delivery {id} was not recorded ({err}); it runs again after a restart and is not admitted twice",
            channel.id
        ));
    }
}

/// Whether `session` already records that delivery `id` reached it (a run before a crash got
/// that far).
async fn reached(channel: &Channel, session: &str, id: &str) -> bool {
    let events = channel
        .manager
        .events()
        .read(&channel.principal(), session)
        .await
        .unwrap_or_default();
    events.iter().any(|event| {
        matches!(&event.body, EventBody::ChannelDelivery(delivery)
            if delivery.outcome == ChannelDeliveryOutcome::Received
                && delivery.delivery_id.as_deref() == Some(id))
    })
}

/// A GitHub delivery's work with `pr/diff.patch` and `pr/meta.json` to write before the turn,
/// and the checkout of the PR's head to make before it (`checkout`, unless turned off or the
/// payload names no clone URL).
async fn with_pr_files(channel: &Channel, work: &Work) -> (Work, Option<WorkspacePrep>) {
    let mut work = work.clone();
    let (Some(github), Ok(pr)) = (
        &channel.github,
        serde_json::from_value::<PrRef>(work.body["pr"].clone()),
    ) else {
        return (work, None);
    };
    work.workspace_files = github.pr_files(&pr, &work.body["meta"]).await;
    let prepare = match (&pr.clone_url, github.config.checkout.unwrap_or(true)) {
        (Some(clone_url), true) => Some(
            Checkout {
                cache: channel.manager.state().github_dir(),
                installation: pr.installation.or(github
                    .config
                    .app
                    .as_ref()
                    .and_then(|app| app.installation_id)),
                repo: pr.repo.clone(),
                number: pr.number,
                head_sha: pr.head_sha.clone(),
                clone_url: clone_url.clone(),
                // Without a token (none set, or none bought) a public repository still clones.
                token: github.token(&pr).await.ok(),
                channel: channel.id.clone(),
                logs: channel.manager.logs().clone(),
            }
            .into_prep(),
        ),
        _ => None,
    };
    (work, prepare)
}

/// The session a delivery reached, and whether the delivery opened it.
struct Opened {
    id: String,
    new: bool,
}

/// What a GitHub channel does once a delivery reached its session: the 👀 reaction, and a
/// queued check run for the coming turn (its id); when the delivery `opened` the session and
/// names no head SHA (a comment), the banner instead.
async fn github_accepted(
    channel: &Channel,
    session: &str,
    work: &Work,
    opened: bool,
) -> Option<u64> {
    let github = channel.github.as_ref()?;
    let pr: PrRef = serde_json::from_value(work.body["pr"].clone()).ok()?;
    let logs = channel.manager.logs();
    let logs = logs.about(session);
    if github.config.reactions.unwrap_or(true) {
        let body = json!({ "content": "eyes" });
        if let Err(err) = github
            .call(
                &pr,
                reqwest::Method::POST,
                &pr.react_path,
                Some(&body),
                JSON,
            )
            .await
        {
            logs.warn(format!("channel {}: no 👀 reaction: {err}", channel.id));
        }
    }
    let check_runs = github.config.check_runs.unwrap_or(false);
    let banner = github
        .config
        .banner
        .as_ref()
        .and_then(|banner| banner.enabled)
        .unwrap_or(check_runs);
    if opened && banner && pr.head_sha.is_none() {
        let posted = match channel
            .templates
            .render("banner.body", &check_context(channel, session, &pr))
        {
            Ok(text) => {
                let path = format!("/repos/{}/issues/{}/comments", pr.repo, pr.number);
                github
                    .call(
                        &pr,
                        reqwest::Method::POST,
                        &path,
                        Some(&json!({ "body": text })),
                        JSON,
                    )
                    .await
                    .map(|_| ())
            }
            Err(err) => Err(err.into()),
        };
        if let Err(err) = posted {
            logs.warn(format!("channel {}: no banner posted: {err}", channel.id));
        }
    }
    if !check_runs || pr.head_sha.is_none() {
        return None;
    }
    create_check(channel, &pr, "queued", session)
        .await
        .map_err(|err| {
            logs.warn(format!(
                "channel {}: no check run queued: {err}",
                channel.id
            ))
        })
        .ok()
}

/// Admits the work's message to its session, creating the session when the key names none;
/// `prepare` runs in the session's workspace before the message's turn.
async fn to_session(
    channel: &Channel,
    id: &str,
    work: &Work,
    prepare: Option<WorkspacePrep>,
) -> Result<Opened, ManagerError> {
    let principal = channel.principal();
    let manager = &channel.manager;
    // One lookup-or-create at a time on this server (and a reserved key across servers), so
    // two deliveries with a new key open one session.
    let _one_at_a_time = channel.sessions.lock().await;
    if work.stop {
        let key = work.continuation.as_deref();
        let session = match key {
            Some(key) => channel.store.session_for(key).await.map_err(store_error)?,
            None => None,
        }
        .ok_or_else(|| ManagerError::NotFound("no session in this thread to stop".into()))?;
        manager.turns().stop(&principal, &session).await?;
        return Ok(Opened {
            id: session,
            new: false,
        });
    }
    if let Some(key) = &work.continuation
        && let Some(session_id) = bound_session(channel, id, key, work, prepare.clone()).await?
    {
        return Ok(Opened {
            id: session_id,
            new: false,
        });
    }
    let request = CreateSession {
        message: work.message.clone(),
        title: work.title.clone(),
        workspace_files: work.workspace_files.clone(),
        mode: None,
        client_message_id: Some(id.to_string()),
        continuation_key: None,
    };
    let kind = match (&channel.github, &channel.slack) {
        (Some(_), _) => "github",
        (_, Some(_)) => "slack",
        _ => "webhook",
    };
    // The session knows its key: its tools and a live root see it.
    let options = SessionOptions {
        continuation_key: work.continuation.clone(),
        prepare,
        ..SessionOptions::default()
    };
    let accepted = manager
        .sessions()
        .create_with(&principal, kind, request, options)
        .await?;
    if let Some(key) = &work.continuation {
        channel
            .store
            .bind(key, &accepted.session_id)
            .await
            .map_err(store_error)?;
    }
    Ok(Opened {
        id: accepted.session_id,
        new: true,
    })
}

/// Sends the work's message to the session `key` names: that session, or `None` once the key
/// is reserved for this server to open one (it names none, or a session that is gone). Waits
/// while another server opens the key's session, for up to two claim lifetimes.
async fn bound_session(
    channel: &Channel,
    id: &str,
    key: &str,
    work: &Work,
    prepare: Option<WorkspacePrep>,
) -> Result<Option<String>, ManagerError> {
    let deadline = tokio::time::Instant::now() + channel.store.ttl() * 2;
    let mut stale: Option<String> = None;
    loop {
        let reserved = channel
            .store
            .reserve(key, stale.as_deref())
            .await
            .map_err(store_error)?;
        let session_id = match reserved {
            Continuation::Reserved => return Ok(None),
            Continuation::Bound(session_id) => session_id,
            Continuation::Busy if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
            Continuation::Busy => {
                return Err(ManagerError::Busy(format!(
                    "another server held continuation key {key} for over {:?} without opening its session, so this delivery was not run; check that server's log",
                    channel.store.ttl() * 2
                )));
            }
        };
        let message = ChannelMessage {
            text: work.message.clone(),
            workspace_files: work.workspace_files.clone(),
            admission: Some(work.admission),
            key: Some(id.to_string()),
            prepare: prepare.clone(),
        };
        match channel
            .manager
            .turns()
            .send_message(&channel.principal(), &session_id, message)
            .await
        {
            Ok(()) => return Ok(Some(session_id)),
            // Deleted (or not followable): the key opens a new session.
            Err(ManagerError::NotFound(_) | ManagerError::NotFollowable(_)) => {
                stale = Some(session_id);
            }
            Err(err) => return Err(err),
        }
    }
}

/// A store error of the channel's deliveries, as the session manager reports errors.
fn store_error(err: folio_store::StoreError) -> ManagerError {
    ManagerError::internal_from("the channel's deliveries", err)
}
