//! Many servers, one set of sessions: `folio serve --store postgres://…`.
//!
//! Every server keeps live sessions as on the disk store (events in memory, streams fed by a
//! broadcast), but reads and writes them through the shared [`SessionStore`]:
//! - **Ownership.** A session's actor runs only on the server holding the session's lease; the
//!   lease is taken when the actor starts (before anything is admitted), renewed at a third of
//!   its time to live, and released when the actor goes idle. Every flush of the log presents
//!   the lease's fencing token, so a server whose lease was taken over cannot write again: its
//!   turn ends there ([`StoreError::Fenced`]).
//! - **Followers.** A live session on any server follows the store ([`SessionStore::follow`])
//!   and takes in what the owner appended, so a stream can be opened on any server and resumed
//!   on another with `startIndex`. The server that takes the lease first reads the log's end
//!   and the metadata (token, keys), so follow-ups may alternate between servers.
//! - **Commands for another server's turn** ([`Remote`]): `stop` (and a preempting message)
//!   signal the owner ([`SessionStore::signal`]) until its lease is free, then run here; an
//!   approval decision is signalled until the log shows it; a coalesced message is relayed to
//!   the owner, which queues it into its running turn, and answered once the log shows it
//!   queued (its idempotency key, or a `relay:` key given to it, makes repeats harmless; one
//!   too large for a signal waits for the turn to end and runs here); a direct tool call
//!   answers `session_busy`.
//! - **Takeover.** Every server looks for expired leases (their owner died) every half time to
//!   live; the one that takes a lease over records the open turn as `server restarted` (a turn
//!   parked on an approval stays parked) and runs what was queued, as the disk store's restart
//!   recovery does.

use std::sync::Arc;
use std::time::Duration;

use folio_store::Lease;
use futures::StreamExt;

use crate::authorize::AUTHORIZATIONS;
use crate::command::{Admit, Command, Pending};
use crate::engine::Engine;
use crate::remote::{Owner, RELAY_SIGNAL, RESOLVE_SIGNAL, Relayed, Remote, STOP_SIGNAL};
use crate::sync::lock;

/// How long a lease lives unless renewed: a dead server's turns are taken over after this.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);

/// How often a server looks for creates whose server stopped before acknowledging them (at
/// most: every two lease lifetimes when that is shorter).
const FORGET_EVERY: Duration = Duration::from_secs(60);

/// Takes over the turns dead owners left (before the manager answers anything), then starts
/// the tasks that follow signals and take over expired leases.
pub(crate) async fn start(engine: &Arc<Engine>) {
    take_over_expired(engine).await;
    engine.life.tasks.spawn(run_signals(engine.clone()));
    engine.life.tasks.spawn(run_takeover(engine.clone()));
}

/// Follows the signals of every server and hands those about sessions whose actor runs here
/// to it; resubscribes after the store's connection drops, until shutdown.
async fn run_signals(engine: Arc<Engine>) {
    let shutdown = engine.life.shutdown.clone();
    loop {
        match engine.store.signals().await {
            Ok(mut signals) => loop {
                let signal = tokio::select! {
                    signal = signals.next() => signal,
                    () = shutdown.cancelled() => return,
                };
                let Some(signal) = signal else { break };
                on_signal(&engine, &signal.session_id, &signal.message);
            },
            Err(err) => engine.logs.warn(format!(
                "cannot follow the store's signals: {err}; retrying"
            )),
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            () = shutdown.cancelled() => return,
        }
    }
}

fn on_signal(engine: &Arc<Engine>, session_id: &str, message: &str) {
    if session_id == AUTHORIZATIONS {
        crate::approvals::on_authorization_signal(engine, message);
        return;
    }
    let Some(live) = engine.live.get(session_id) else {
        return;
    };
    if !live.has_actor() {
        return;
    }
    let command = if message == STOP_SIGNAL {
        let (reply, _) = tokio::sync::oneshot::channel();
        Command::Stop { reply }
    } else if let Some(json) = message.strip_prefix(RELAY_SIGNAL) {
        let Ok(relayed) = serde_json::from_str::<Relayed>(json) else {
            return;
        };
        let (reply, _) = tokio::sync::oneshot::channel();
        let admit = Admit {
            message: Pending {
                text: relayed.text,
                files: relayed.workspace_files,
                trace_parent: None,
                prepare: None,
            },
            admission: Some(folio_protocol::Admission::Coalesce),
            token: Some(relayed.token),
            key: Some(relayed.key),
            digest: relayed.digest,
            ticket: None,
        };
        Command::Send { admit, reply }
    } else if let Some(json) = message.strip_prefix(RESOLVE_SIGNAL) {
        let Ok(resolved) = serde_json::from_str(json) else {
            return;
        };
        let (reply, _) = tokio::sync::oneshot::channel();
        Command::Resolve { resolved, reply }
    } else {
        return;
    };
    let _ = engine.post(&live, command);
}

/// Takes over the sessions whose owner's lease expired (the owner died), every half lease
/// time to live, and removes the creates a dead server never acknowledged (every
/// [`FORGET_EVERY`] at most), until shutdown.
async fn run_takeover(engine: Arc<Engine>) {
    let shutdown = engine.life.shutdown.clone();
    let mut forgot = tokio::time::Instant::now();
    loop {
        take_over_expired(&engine).await;
        if forgot.elapsed() >= FORGET_EVERY.min(engine.lease.ttl * 2) {
            remove_unacknowledged_creates(&engine).await;
            forgot = tokio::time::Instant::now();
        }
        tokio::select! {
            () = tokio::time::sleep(engine.lease.ttl / 2) => {}
            () = shutdown.cancelled() => return,
        }
    }
}

/// Takes over every session whose owner's lease expired, waiting until each one's open turn
/// is settled (what opening a state root does before it answers anything).
async fn take_over_expired(engine: &Arc<Engine>) {
    match engine.store.expired_leases().await {
        Ok(leases) => {
            for lease in leases {
                take_over(engine, &lease).await;
            }
        }
        Err(err) => engine
            .logs
            .warn(format!("cannot look for expired leases: {err}")),
    }
}

/// Deletes the sessions whose server stopped between creating them and acknowledging the
/// create (their log stayed empty for two lease lifetimes), with their workspaces: the client
/// got no answer, and a retry with its key creates the session again.
async fn remove_unacknowledged_creates(engine: &Engine) {
    let deleted = match engine
        .store
        .delete_unacknowledged_sessions(engine.lease.ttl * 2)
        .await
    {
        Ok(deleted) => deleted,
        Err(err) => {
            engine
                .logs
                .warn(format!("cannot look for unacknowledged creates: {err}"));
            return;
        }
    };
    for meta in deleted {
        let id = &meta.session_id;
        let logs = engine.logs.about(id);
        logs.warn(format!(
            "session {id}: removed a create its server stopped before acknowledging"
        ));
        if let Ok(workspace) = engine.workspace_of(&meta)
            && let Err(err) = std::fs::remove_dir_all(&workspace)
            && err.kind() != std::io::ErrorKind::NotFound
        {
            logs.warn(format!(
                "session {id}: its workspace {} was not removed: {err}",
                workspace.display()
            ));
        }
    }
}

async fn take_over(engine: &Arc<Engine>, lease: &Lease) {
    let meta = match engine.load_meta(&lease.session_id).await {
        Ok(Some(meta)) => meta,
        _ => return,
    };
    let live = match engine.open_live(meta).await {
        Ok(live) => live,
        Err(err) => {
            engine.logs.about(&lease.session_id).error(format!(
                "cannot take over session {}: {err}",
                lease.session_id
            ));
            return;
        }
    };
    // Another server may take it first: then there is nothing to do here.
    if let Ok(Owner::Here) = engine.own(&live, &Remote::Busy).await {
        let recovered = lock(&live.recovering).take();
        if let Some(recovered) = recovered {
            let _ = recovered.await;
        }
    }
}
