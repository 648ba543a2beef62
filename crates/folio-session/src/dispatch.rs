//! How a request reaches a session: the session opened live on this server (following the
//! store's appends), the ownership check, the session's lease taken (its actor spawned here
//! under it) or, while another server owns the turn, what [`Remote`] says; then a [`Command`]
//! to the actor and its answer. Every handle of the manager goes through here.

use std::sync::Arc;

use folio_protocol::EventBody;
use folio_store::StoreError;
use futures::StreamExt;
use tokio::sync::{mpsc, oneshot};

use crate::actor::Actor;
use crate::command::{Command, Done};
use crate::engine::Engine;
use crate::error::{ManagerError, store_error};
use crate::live::Live;
use crate::remote::{Owner, REMOTE_PATIENCE, REMOTE_POLL, Remote};
use crate::state::{SessionMeta, valid_session_id};
use crate::sync::lock;

impl Engine {
    /// `principal`'s session `session_id` as stored: `NotFound` when there is none,
    /// `Forbidden` when it is another principal's.
    pub(crate) async fn owned_meta(
        &self,
        principal: &str,
        session_id: &str,
    ) -> Result<SessionMeta, ManagerError> {
        let not_found = || ManagerError::NotFound(format!("no session {session_id}"));
        if !valid_session_id(session_id) {
            return Err(not_found());
        }
        let meta = self.load_meta(session_id).await?.ok_or_else(not_found)?;
        if meta.principal != principal {
            return Err(ManagerError::Forbidden(session_id.to_string()));
        }
        Ok(meta)
    }

    /// The live session of `session_id`, opening it when idle, after the ownership check.
    pub(crate) async fn owned(
        self: &Arc<Self>,
        principal: &str,
        session_id: &str,
    ) -> Result<Arc<Live>, ManagerError> {
        // A session open here answers from its copy, without reading the store, where every
        // delete closes the copy: its principal never changes.
        if self.store.deletes_end_followers()
            && let Some(live) = self.live.get(session_id)
            && !live.closed.is_cancelled()
        {
            if lock(&live.meta).principal != principal {
                return Err(ManagerError::Forbidden(session_id.to_string()));
            }
            return Ok(live);
        }
        let meta = self.owned_meta(principal, session_id).await?;
        self.open_live(meta).await
    }

    /// The live session `meta` describes: the one open, or opened now (it starts following
    /// the store's appends before its log is read).
    pub(crate) async fn open_live(
        self: &Arc<Self>,
        meta: SessionMeta,
    ) -> Result<Arc<Live>, ManagerError> {
        self.open(meta, None).await
    }

    /// The live session of `meta`, which this server just created, so its log is empty:
    /// nothing is read back, nor, when no other server can know its id yet (`unseen`), when
    /// its first lease is taken ([`Live::take_fresh`]).
    pub(crate) async fn open_created(
        self: &Arc<Self>,
        meta: SessionMeta,
        unseen: bool,
    ) -> Result<Arc<Live>, ManagerError> {
        self.open(meta, Some(unseen)).await
    }

    /// Opens the live session of `meta`; `created`: this server just created it (and whether
    /// no other server can know it yet).
    async fn open(
        self: &Arc<Self>,
        meta: SessionMeta,
        created: Option<bool>,
    ) -> Result<Arc<Live>, ManagerError> {
        let id = meta.session_id.clone();
        if let Some(live) = self.live.get(&id) {
            return Ok(live);
        }
        let what = format!("cannot read session {id}");
        let appends = if created.is_some() {
            self.store.follow_created(&id).await
        } else {
            self.store.follow(&id).await
        }
        .map_err(|err| store_error(&what, err))?;
        let events = if created.is_some() {
            Vec::new()
        } else {
            self.store
                .read_events(&id, 0, None)
                .await
                .map_err(|err| store_error(&what, err))?
        };
        let live = Arc::new(Live::new(
            self.store.clone(),
            meta,
            events,
            created == Some(true),
        ));
        live.bind_hooks(&self.agent().hooks, Some(crate::host::broker(self)));
        let kept = self.live.keep(live.clone());
        if Arc::ptr_eq(&kept, &live) {
            self.life
                .tasks
                .spawn(follow(self.clone(), Arc::downgrade(&live), appends));
        }
        Ok(kept)
    }

    /// Sends a command to the session's actor and waits for its answer. When the session is
    /// idle, this server first takes the session's lease and spawns its actor, doing what
    /// `remote` says while another server owns its turn.
    pub(crate) async fn command<T>(
        self: &Arc<Self>,
        live: &Arc<Live>,
        remote: &Remote,
        make: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, ManagerError> {
        if let Owner::Done = self.own(live, remote).await? {
            return Err(ManagerError::internal(
                "the server running the turn did it already",
            ));
        }
        let (reply, answer) = oneshot::channel();
        self.post(live, make(reply))?;
        answer
            .await
            .map_err(|_| ManagerError::internal("the session's actor stopped"))
    }

    /// Appends one event to the session outside a turn, unless `unless` holds for its log,
    /// through the owner's actor (only the owner writes the log), which commits it.
    pub(crate) async fn record_event(
        self: &Arc<Self>,
        live: &Arc<Live>,
        turn_id: Option<String>,
        body: EventBody,
        unless: Option<Done>,
    ) -> Result<(), ManagerError> {
        self.command(live, &Remote::Wait, |reply| Command::Record {
            turn_id,
            body,
            unless,
            reply,
        })
        .await?
    }

    /// Records `body` for a host API call: through the session's actor, or, for a call made
    /// from inside the actor (a direct tool call, which the actor awaits), appended and
    /// committed here, as the actor would (it writes nothing while it waits on that call).
    pub(crate) async fn record_for(
        self: &Arc<Self>,
        live: &Arc<Live>,
        turn_id: Option<String>,
        body: EventBody,
        inside_actor: bool,
    ) -> Result<(), ManagerError> {
        if !inside_actor {
            return self.record_event(live, turn_id, body, None).await;
        }
        live.append(turn_id.as_deref(), body)?;
        live.commit().await.map_err(ManagerError::from)
    }

    /// Puts a command in the mailbox of the session's actor (only [`Engine::own`] spawns
    /// one, under the session's lease).
    pub(crate) fn post(&self, live: &Arc<Live>, command: Command) -> Result<(), ManagerError> {
        let sender = match lock(&live.mailbox).as_ref() {
            Some(sender) if !sender.is_closed() => sender.clone(),
            _ => {
                return Err(ManagerError::internal(format!(
                    "session {}: this server no longer owns the session's turn; try again",
                    live.id
                )));
            }
        };
        sender
            .send(command)
            .map_err(|_| ManagerError::internal("the session's actor stopped"))
    }

    /// Makes this server the owner of `live`'s session (its actor running here under the
    /// session's lease), or does what `remote` says while another server owns it.
    pub(crate) async fn own(
        self: &Arc<Self>,
        live: &Arc<Live>,
        remote: &Remote,
    ) -> Result<Owner, ManagerError> {
        let deadline = tokio::time::Instant::now() + REMOTE_PATIENCE;
        loop {
            {
                // One acquisition per session at a time on this server: a second one would
                // issue a new fencing token and fence the first actor.
                let _owning = self.lease.owning.lock(&live.id).await;
                if live.has_actor() {
                    return Ok(Owner::Here);
                }
                let fresh = live.take_fresh();
                match self
                    .store
                    .acquire_lease(&live.id, &self.lease.server, self.lease.ttl)
                    .await
                {
                    Ok(lease) => {
                        let took_over = lease.took_over.clone();
                        // Nobody else wrote a session this server just created and nobody
                        // held: there is nothing to read back.
                        let read_back = !fresh || took_over.is_some();
                        if read_back && let Err(err) = self.catch_up(live).await {
                            let _ = self.store.release_lease(&lease).await;
                            return Err(err);
                        }
                        self.spawn_actor(live, lease);
                        if let Some(owner) = took_over {
                            self.logs.about(&live.id).warn(format!(
                                "session {}: took over the turn of server {owner}, whose lease expired",
                                live.id
                            ));
                            let (reply, recovered) = oneshot::channel();
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
                return Err(ManagerError::internal(format!(
                    "session {}: the server running its turn did not finish or answer within {} s; try again",
                    live.id,
                    REMOTE_PATIENCE.as_secs()
                )));
            }
            tokio::select! {
                () = tokio::time::sleep(REMOTE_POLL) => {}
                () = self.life.shutdown.cancelled() => {
                    return Err(ManagerError::internal("the server is shutting down"));
                }
            }
        }
    }

    /// Signals `message` about `session_id` to every server sharing the store.
    pub(crate) async fn signal(&self, session_id: &str, message: &str) -> Result<(), ManagerError> {
        self.store
            .signal(session_id, message)
            .await
            .map_err(|err| store_error("cannot reach the server running the turn", err))
    }

    /// Reads what other servers appended and committed since `live` last looked (events, the
    /// metadata: token, keys, counts): done before this server admits anything to it.
    async fn catch_up(&self, live: &Live) -> Result<(), ManagerError> {
        let (stored, events) = self
            .store
            .read_back(&live.id, live.log.next_index())
            .await
            .map_err(|err| store_error("cannot read the session back", err))?
            .ok_or_else(|| ManagerError::NotFound(format!("no session {}", live.id)))?;
        live.ingest(events);
        live.reload_meta(stored);
        Ok(())
    }

    /// Spawns the session's actor, holding `lease`.
    fn spawn_actor(self: &Arc<Self>, live: &Arc<Live>, lease: folio_store::Lease) {
        let (sender, rx) = mpsc::unbounded_channel();
        *lock(&live.mailbox) = Some(sender);
        live.log.set_fence(Some(lease.fence));
        let actor = Actor::new(self.clone(), live.clone(), rx, Some(lease));
        self.life.tasks.spawn(actor.run());
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

/// Follows the store's appends to `live`'s session and takes them in, while the session is
/// live on this server; ends its streams when the session is deleted.
async fn follow(
    engine: Arc<Engine>,
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
            () = engine.life.shutdown.cancelled() => return,
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
            Err(err) => engine.logs.about(&live.id).warn(format!(
                "session {}: cannot read new events: {err}",
                live.id
            )),
        }
    }
}
