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

use folio_protocol::{Event, EventBody};
use folio_store::{Lease, StoreError};
use futures::StreamExt;

use crate::command::Command;
use crate::error::{ManagerError, store_error};
use crate::live::{Live, lock};
use crate::manager::SessionManager;
use crate::shared::Inner;

/// How long a lease lives unless renewed: a dead server's turns are taken over after this.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);

/// How long a command for another server's turn waits for that server (the stop to land, the
/// turn to end) before it fails, saying so.
const REMOTE_PATIENCE: Duration = Duration::from_secs(120);

/// How often a command for another server's turn checks the lease again.
const REMOTE_POLL: Duration = Duration::from_millis(50);

/// The signal asking the owner to stop the session's turn.
pub(crate) const STOP_SIGNAL: &str = "stop";
/// The prefix of the signal carrying an approval decision (JSON after the prefix).
const RESOLVE_SIGNAL: &str = "resolve ";
/// The prefix of the signal relaying a coalesced message to the owner (JSON after it).
const RELAY_SIGNAL: &str = "relay ";
/// The longest message a signal carries (PostgreSQL's `NOTIFY` payloads stay under 8,000
/// bytes); a coalesced message too large to relay waits for the owner's turn to end instead.
const MAX_SIGNAL: usize = 7_000;

/// How often a server looks for creates whose server stopped before acknowledging them (at
/// most: every two lease lifetimes when that is shorter).
const FORGET_EVERY: Duration = Duration::from_secs(60);

/// The session id the signals carrying MCP authorization redirects use: not a session's (ids
/// are `ses_…`), heard by every server.
const AUTHORIZATIONS: &str = "mcp-auth";
/// The prefix of the signal passing an authorization redirect to whichever server has the turn
/// waiting for it ([`Authorize`] as JSON after the prefix).
const AUTHORIZE_SIGNAL: &str = "authorize ";
/// The prefix of that server's answers to the server the redirect reached ([`Authorized`]).
const AUTHORIZED_SIGNAL: &str = "authorized ";
/// How long the server a redirect reached waits for another to say it has the waiting turn.
const AUTHORIZE_CLAIM: Duration = Duration::from_secs(5);
/// How long it then waits for that server to complete the authorization.
const AUTHORIZE_DONE: Duration = Duration::from_secs(120);

/// An authorization redirect that reached a server whose turns do not wait for it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Authorize {
    /// The relay's id, named in the answers.
    id: String,
    /// The server the redirect reached, which answers the browser.
    from: String,
    /// The redirect's `state`: which authorization it completes.
    state: String,
    /// The redirect's whole query string.
    query: String,
}

/// An answer to an [`Authorize`], from the server with the waiting turn.
#[derive(serde::Serialize, serde::Deserialize)]
struct Authorized {
    id: String,
    to: String,
    step: AuthorizeStep,
}

/// Where a relayed authorization stands.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum AuthorizeStep {
    /// The server with the waiting turn took the redirect.
    Claimed,
    /// It completed (`None`) or failed (why).
    Done(Option<String>),
}

/// A coalesced follow-up relayed to the server running the session's turn, which queues it
/// into that turn as if it had arrived there.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Relayed {
    pub(crate) text: String,
    pub(crate) workspace_files: std::collections::BTreeMap<String, String>,
    /// The continuation token presented.
    pub(crate) token: String,
    /// The idempotency key: the client's, or `relay:<ULID>` (how the sender sees it recorded).
    pub(crate) key: String,
    pub(crate) digest: Option<String>,
}

/// What a command does when another server owns the session's turn.
pub(crate) enum Remote {
    /// Answers `session_busy`.
    Busy,
    /// Waits for the owner's turn to end, then runs here.
    Wait,
    /// Signals `message` to the owner until its lease is free, then runs here.
    Ask(String),
    /// Signals `message` to the owner until `done` holds for the log: then the command is
    /// done (on the owner).
    AskUntil(String, Done),
}

/// What shows in a session's log once the owner did what it was asked.
pub(crate) type Done = Box<dyn Fn(&[Event]) -> bool + Send + Sync>;

impl Remote {
    /// Stop the owner's turn first.
    pub(crate) fn stop() -> Self {
        Remote::Ask(STOP_SIGNAL.to_string())
    }

    /// Queue a coalesced message into the owner's running turn; `None` when it is too large
    /// for a signal.
    pub(crate) fn relay(message: &Relayed) -> Option<Self> {
        let json = serde_json::to_string(message).ok()?;
        if json.len() > MAX_SIGNAL {
            return None;
        }
        let key = message.key.clone();
        Some(Remote::AskUntil(
            format!("{RELAY_SIGNAL}{json}"),
            Box::new(move |events| crate::token::recorded(events, &key).is_some()),
        ))
    }

    /// Hand an approval decision to the owner's parked turn.
    pub(crate) fn resolve(
        resolved: &folio_protocol::ActionApprovalResolved,
    ) -> Result<Self, ManagerError> {
        let json = serde_json::to_string(resolved)
            .map_err(|err| ManagerError::Internal(format!("cannot encode the decision: {err}")))?;
        let call_id = resolved.call_id.clone();
        Ok(Remote::AskUntil(
            format!("{RESOLVE_SIGNAL}{json}"),
            Box::new(move |events| {
                events.iter().any(|event| {
                    matches!(&event.body, EventBody::ActionApprovalResolved(r) if r.call_id == call_id)
                })
            }),
        ))
    }
}

/// Where a command runs.
pub(crate) enum Owner {
    /// This server owns the session: its actor runs here.
    Here,
    /// The owner did it ([`Remote::AskUntil`]).
    Done,
}

impl SessionManager {
    /// Makes this server the owner of `live`'s session (its actor running here under the
    /// session's lease), or does what `remote` says while another server owns it.
    pub(crate) async fn own(
        &self,
        live: &Arc<Live>,
        remote: &Remote,
    ) -> Result<Owner, ManagerError> {
        let deadline = tokio::time::Instant::now() + REMOTE_PATIENCE;
        loop {
            {
                // One acquisition per session at a time on this server: a second one would
                // issue a new fencing token and fence the first actor.
                let _owning = self.inner.owning.lock(&live.id).await;
                if live.has_actor() {
                    return Ok(Owner::Here);
                }
                match self
                    .inner
                    .store
                    .acquire_lease(&live.id, &self.inner.server, self.inner.ttl)
                    .await
                {
                    Ok(lease) => {
                        let took_over = lease.took_over.clone();
                        if let Err(err) = self.catch_up(live).await {
                            let _ = self.inner.store.release_lease(&lease).await;
                            return Err(err);
                        }
                        self.spawn_actor(live, lease);
                        if let Some(owner) = took_over {
                            self.inner.logs.about(&live.id).warn(format!(
                                "session {}: took over the turn of server {owner}, whose lease expired",
                                live.id
                            ));
                            let (reply, recovered) = tokio::sync::oneshot::channel();
                            *lock(&live.recovering) = Some(recovered);
                            self.post(live, Command::Recover { reply })?;
                        }
                        return Ok(Owner::Here);
                    }
                    Err(StoreError::LeaseHeld { .. }) => {}
                    Err(err) => return Err(store_error("cannot take the session's lease", err)),
                }
            }
            match remote {
                Remote::Busy => return Err(ManagerError::Busy(live.id.clone())),
                Remote::Wait => {}
                Remote::Ask(message) => self.signal(&live.id, message).await?,
                Remote::AskUntil(message, done) => {
                    if live.with_events(|events| done(events)) {
                        return Ok(Owner::Done);
                    }
                    self.signal(&live.id, message).await?;
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ManagerError::Internal(format!(
                    "session {}: the server running its turn did not finish or answer within {} s; try again",
                    live.id,
                    REMOTE_PATIENCE.as_secs()
                )));
            }
            tokio::select! {
                () = tokio::time::sleep(REMOTE_POLL) => {}
                () = self.inner.shutdown.cancelled() => {
                    return Err(ManagerError::Internal("the server is shutting down".into()));
                }
            }
        }
    }

    async fn signal(&self, session_id: &str, message: &str) -> Result<(), ManagerError> {
        self.inner
            .store
            .signal(session_id, message)
            .await
            .map_err(|err| store_error("cannot reach the server running the turn", err))
    }

    /// Reads what other servers appended and committed since `live` last looked (events, the
    /// metadata: token, keys, counts): done before this server admits anything to it.
    async fn catch_up(&self, live: &Live) -> Result<(), ManagerError> {
        let log = &live.log;
        // Read back only when the log grew: its end is cheap to read, the whole log is not.
        let last = log
            .store
            .last_event(&live.id)
            .await
            .map_err(|err| store_error("cannot read the session's log", err))?;
        if last.is_some_and(|last| last.index >= log.next_index()) {
            let events = log
                .store
                .read_events(&live.id, log.next_index(), None)
                .await
                .map_err(|err| store_error("cannot read the session's log", err))?;
            live.ingest(events);
        }
        let stored = log
            .store
            .load_session(&live.id)
            .await
            .map_err(|err| store_error("cannot read the session", err))?
            .ok_or_else(|| ManagerError::NotFound(format!("no session {}", live.id)))?;
        live.reload_meta(stored);
        Ok(())
    }

    /// Follows the signals of every server and hands those about sessions whose actor runs
    /// here to it; resubscribes after the store's connection drops, until shutdown.
    pub(crate) async fn run_signals(self) {
        let shutdown = self.inner.shutdown.clone();
        loop {
            match self.inner.store.signals().await {
                Ok(mut signals) => loop {
                    let signal = tokio::select! {
                        signal = signals.next() => signal,
                        () = shutdown.cancelled() => return,
                    };
                    let Some(signal) = signal else { break };
                    self.on_signal(&signal.session_id, &signal.message);
                },
                Err(err) => self.inner.logs.warn(format!(
                    "cannot follow the store's signals: {err}; retrying"
                )),
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
                () = shutdown.cancelled() => return,
            }
        }
    }

    fn on_signal(&self, session_id: &str, message: &str) {
        if session_id == AUTHORIZATIONS {
            self.on_authorization_signal(message);
            return;
        }
        let Some(live) = self.inner.live(session_id) else {
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
            let admit = crate::command::Admit {
                message: crate::command::Pending {
                    text: relayed.text,
                    files: relayed.workspace_files,
                    trace_parent: None,
                },
                admission: Some(folio_protocol::Admission::Coalesce),
                token: Some(relayed.token),
                key: Some(relayed.key),
                digest: relayed.digest,
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
        let _ = self.post(&live, command);
    }

    /// Completes a relayed authorization redirect when a turn of this server waits for it,
    /// answering the server it reached; or hands an answer to this server's relay.
    fn on_authorization_signal(&self, message: &str) {
        if let Some(json) = message.strip_prefix(AUTHORIZE_SIGNAL) {
            let Ok(ask) = serde_json::from_str::<Authorize>(json) else {
                return;
            };
            let Some(waiter) = self.take_authorization(&ask.state) else {
                return;
            };
            let manager = self.clone();
            self.inner.tasks.spawn(async move {
                manager.answer(&ask, AuthorizeStep::Claimed).await;
                let done = Self::complete_authorization(waiter, &ask.query).await;
                let step = AuthorizeStep::Done(done.err().map(|err| err.to_string()));
                manager.answer(&ask, step).await;
            });
        } else if let Some(json) = message.strip_prefix(AUTHORIZED_SIGNAL) {
            let Ok(answer) = serde_json::from_str::<Authorized>(json) else {
                return;
            };
            if let Some(relay) = lock(&self.inner.authorizing).get(&answer.id) {
                let _ = relay.send(answer.step);
            }
        }
    }

    /// Tells the server `ask` came from where its authorization stands.
    async fn answer(&self, ask: &Authorize, step: AuthorizeStep) {
        let answer = Authorized {
            id: ask.id.clone(),
            to: ask.from.clone(),
            step,
        };
        let message = format!(
            "{AUTHORIZED_SIGNAL}{}",
            serde_json::to_string(&answer).unwrap_or_default()
        );
        if let Err(err) = self.inner.store.signal(AUTHORIZATIONS, &message).await {
            self.inner.logs.warn(format!(
                "the server a redirect of an MCP authorization reached was not told how it went: {err}"
            ));
        }
    }

    /// Passes an authorization redirect that no turn of this server waits for to the server
    /// whose turn does, and waits for it to complete there.
    pub(crate) async fn relay_authorization(
        &self,
        state: &str,
        query: &str,
    ) -> Result<(), ManagerError> {
        // A `state` an authorization of this agent can have issued (a random URL-safe token):
        // anything else is answered here, without asking every server.
        let plausible = (8..=256).contains(&state.len())
            && state
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~'));
        if !plausible {
            return Err(not_waiting());
        }
        let ask = Authorize {
            id: ulid::Ulid::generate().to_string(),
            from: self.inner.server.clone(),
            state: state.to_string(),
            query: query.to_string(),
        };
        let message = format!(
            "{AUTHORIZE_SIGNAL}{}",
            serde_json::to_string(&ask).unwrap_or_default()
        );
        if message.len() > MAX_SIGNAL {
            return Err(ManagerError::Invalid(
                "the authorization redirect is too long to pass to the server running the turn"
                    .into(),
            ));
        }
        let (relay, mut steps) = tokio::sync::mpsc::unbounded_channel();
        lock(&self.inner.authorizing).insert(ask.id.clone(), relay);
        let relayed = async {
            self.inner
                .store
                .signal(AUTHORIZATIONS, &message)
                .await
                .map_err(|err| store_error("cannot pass the authorization on", err))?;
            match tokio::time::timeout(AUTHORIZE_CLAIM, steps.recv()).await {
                Ok(Some(AuthorizeStep::Claimed)) => {}
                Ok(Some(AuthorizeStep::Done(failed))) => return done(failed),
                _ => return Err(not_waiting()),
            }
            match tokio::time::timeout(AUTHORIZE_DONE, steps.recv()).await {
                Ok(Some(AuthorizeStep::Done(failed))) => done(failed),
                _ => Err(ManagerError::Internal(
                    "the server running the turn did not say whether the authorization completed; the session shows whether the turn went on".into(),
                )),
            }
        };
        let outcome = relayed.await;
        lock(&self.inner.authorizing).remove(&ask.id);
        outcome
    }

    /// Takes over the sessions whose owner's lease expired (the owner died), every half
    /// lease time to live, and removes the creates a dead server never acknowledged (every
    /// [`FORGET_EVERY`] at most), until shutdown.
    pub(crate) async fn run_takeover(self) {
        let shutdown = self.inner.shutdown.clone();
        let mut forgot = tokio::time::Instant::now();
        loop {
            self.take_over_expired().await;
            if forgot.elapsed() >= FORGET_EVERY.min(self.inner.ttl * 2) {
                self.remove_unacknowledged_creates().await;
                forgot = tokio::time::Instant::now();
            }
            tokio::select! {
                () = tokio::time::sleep(self.inner.ttl / 2) => {}
                () = shutdown.cancelled() => return,
            }
        }
    }

    /// Deletes the sessions whose server stopped between creating them and acknowledging the
    /// create (their log stayed empty for two lease lifetimes), with their workspaces: the
    /// client got no answer, and a retry with its key creates the session again.
    /// Takes over every session whose owner's lease expired, waiting until each one's open
    /// turn is settled (what opening a state root does before it answers anything).
    pub(crate) async fn take_over_expired(&self) {
        match self.inner.store.expired_leases().await {
            Ok(leases) => {
                for lease in leases {
                    self.take_over(&lease).await;
                }
            }
            Err(err) => self
                .inner
                .logs
                .warn(format!("cannot look for expired leases: {err}")),
        }
    }

    async fn remove_unacknowledged_creates(&self) {
        let deleted = match self
            .inner
            .store
            .delete_unacknowledged_sessions(self.inner.ttl * 2)
            .await
        {
            Ok(deleted) => deleted,
            Err(err) => {
                self.inner
                    .logs
                    .warn(format!("cannot look for unacknowledged creates: {err}"));
                return;
            }
        };
        for meta in deleted {
            let id = &meta.session_id;
            let logs = self.inner.logs.about(id);
            logs.warn(format!(
                "session {id}: removed a create its server stopped before acknowledging"
            ));
            if let Ok(workspace) = self.inner.workspace_of(&meta)
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

    async fn take_over(&self, lease: &Lease) {
        let meta = match self.inner.load_meta(&lease.session_id).await {
            Ok(Some(meta)) => meta,
            _ => return,
        };
        let live = match self.open_live(meta).await {
            Ok(live) => live,
            Err(err) => {
                self.inner.logs.about(&lease.session_id).error(format!(
                    "cannot take over session {}: {err}",
                    lease.session_id
                ));
                return;
            }
        };
        // Another server may take it first: then there is nothing to do here.
        if let Ok(Owner::Here) = self.own(&live, &Remote::Busy).await {
            let recovered = lock(&live.recovering).take();
            if let Some(recovered) = recovered {
                let _ = recovered.await;
            }
        }
    }
}

impl Live {
    /// Whether the session's actor runs on this server.
    pub(crate) fn has_actor(&self) -> bool {
        lock(&self.mailbox)
            .as_ref()
            .is_some_and(|sender| !sender.is_closed())
    }
}

/// The id of a new server process as a lease owner.
pub(crate) fn new_server_id() -> String {
    format!("srv_{}", ulid::Ulid::generate())
}

/// Follows the store's appends to `live`'s session and takes them in, while the session is
/// live on this server; ends its streams when the session is deleted.
pub(crate) async fn follow(
    inner: Arc<Inner>,
    live: std::sync::Weak<Live>,
    mut appends: folio_store::Appends,
) {
    let Some(dropped) = live.upgrade().map(|live| live.dropped.clone()) else {
        return;
    };
    loop {
        let newest = tokio::select! {
            newest = appends.next() => newest,
            () = dropped.cancelled() => return,
            () = inner.shutdown.cancelled() => return,
        };
        let Some(live) = live.upgrade() else { return };
        let log = &live.log;
        let Some(newest) = newest else {
            // The session was deleted.
            live.closed.cancel();
            return;
        };
        if newest < log.next_index() {
            continue;
        }
        match log
            .store
            .read_events(&live.id, log.next_index(), None)
            .await
        {
            Ok(events) => live.ingest(events),
            Err(StoreError::NotFound(_)) => {
                live.closed.cancel();
                return;
            }
            Err(err) => inner.logs.about(&live.id).warn(format!(
                "session {}: cannot read new events: {err}",
                live.id
            )),
        }
    }
}

/// The error of a redirect no turn waits for.
pub(crate) fn not_waiting() -> ManagerError {
    ManagerError::NotFound(
        "no turn waits for this authorization: it was completed already, or the server restarted (the turn then asks again with a new URL)".into(),
    )
}

/// A relayed authorization's outcome as the server that completed it told it.
fn done(failed: Option<String>) -> Result<(), ManagerError> {
    match failed {
        None => Ok(()),
        Some(why) => Err(ManagerError::Invalid(why)),
    }
}
