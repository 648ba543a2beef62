//! The actor of one live session: it owns the running turn, the coalesce queue and the
//! execution lock, so admission is sequential code and a session never runs two turns at once.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use folio_agent::tools::{ScratchMode, SessionContext, TodoList, ToolContext};
use folio_agent::{Agent, Turn, TurnOutcome, TurnSession, TurnTrace, context_start};
use folio_agent::{workspace_quota, write_workspace_files};
use folio_protocol::{
    ActionApprovalResolved, Admission, ApprovalDecision, Elicitation, Event, EventBody,
    MessageQueued, MessageReceived, OkTrue, SessionCompleted, SessionFailed, SessionMode,
    SessionStatus, SessionWaiting, TURN_INTERRUPTED, ToolCallResult, TurnFailed, TurnQueued,
};
use serde_json::Value;
use subtle::ConstantTimeEq;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::command::{Admit, Command, Pending, queued_messages};
use crate::engine::Engine;
use crate::error::ManagerError;
use crate::fault::FaultPoint;
use crate::live::{Live, LiveSink};
use crate::prepare::WorkspacePrep;
use crate::recovery::{Restart, open_turn};
use crate::state::{SessionMeta, new_turn_id, reported_usage};
use crate::sync::lock;
use crate::token;
use crate::turn_slots::TurnTicket;
use folio_protocol::SERVER_RESTARTED;
use folio_store::Lease;

/// How an admitted message starts its turn ([`Actor::start_turn`]).
struct Admitted<'a> {
    admission: Option<Admission>,
    /// How many queued messages it joins (`message.received {coalesced}`).
    coalesced: Option<u32>,
    /// Its idempotency key and request digest.
    keyed: Option<(String, Option<String>)>,
    /// The continuation token it rotates to.
    rotated: Option<&'a str>,
    /// Its place among the admitted turns (`None`: one that runs whatever the load).
    ticket: Option<TurnTicket>,
}

impl Admitted<'_> {
    /// The messages `coalesce` queued, joined (`count` of them) into one turn.
    fn drained(count: u32) -> Self {
        Admitted {
            admission: Some(Admission::Coalesce),
            coalesced: Some(count),
            keyed: None,
            rotated: None,
            ticket: None,
        }
    }
}

/// The turn a session is running.
struct Running {
    cancel: CancellationToken,
    task: JoinHandle<TurnOutcome>,
}

/// The task that owns one live session while it has work.
pub(crate) struct Actor {
    engine: Arc<Engine>,
    live: Arc<Live>,
    rx: mpsc::UnboundedReceiver<Command>,
    running: Option<Running>,
    queue: Vec<Pending>,
    /// The session's lease on a shared store, renewed while the actor runs and released when
    /// it ends (`None` on the disk store).
    lease: Option<Lease>,
    /// Whether a command was handled: an actor waits for its first one (posted right after
    /// it is spawned) before it may leave idle.
    started: bool,
}

impl Actor {
    /// An actor for `live`, reading its mailbox `rx` (run it with [`Actor::run`]).
    pub(crate) fn new(
        engine: Arc<Engine>,
        live: Arc<Live>,
        rx: mpsc::UnboundedReceiver<Command>,
        lease: Option<Lease>,
    ) -> Self {
        // Messages acknowledged while a turn ran that no turn drained yet (a turn parked
        // across a restart, or a restart before the drain).
        let queue = live.with_events(queued_messages);
        Actor {
            engine,
            live,
            rx,
            running: None,
            queue,
            lease,
            started: false,
        }
    }

    pub(crate) async fn run(mut self) {
        self.serve().await;
        if self.lease.is_some() && self.unsettled() {
            // Work is left that this server will not do (it is shutting down with messages
            // queued, or a turn it could not end): the lease expires, and the server that takes
            // it over does it.
            self.engine.logs.about(&self.live.id).info(format!(
                "session {}: left to the next server to take it over",
                self.live.id
            ));
            return;
        }
        if let Some(lease) = self.lease.take() {
            self.live.log.clear_fence(lease.fence);
            if let Err(err) = self.engine.store.release_lease(&lease).await {
                self.engine.logs.about(&self.live.id).warn(format!(
                    "session {}: cannot release its lease ({err}); it expires by itself",
                    self.live.id
                ));
            }
        }
    }

    async fn serve(&mut self) {
        let every = self.engine.lease.ttl / 3;
        let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        // While a turn runs, its events reach the store (and so the streams) as they are
        // appended, gathered for the store's publish interval, besides the durable points
        // that wait for them.
        let gather = self.engine.store.publish_interval();
        let live = self.live.clone();
        loop {
            let published = async {
                live.log.appended.notified().await;
                if !gather.is_zero() {
                    tokio::time::sleep(gather).await;
                }
            };
            let renewal = renew.tick();
            let command = match &mut self.running {
                Some(running) => tokio::select! {
                    command = self.rx.recv() => command,
                    outcome = &mut running.task => {
                        self.running = None;
                        self.after_turn(outcome_of(outcome)).await;
                        continue;
                    }
                    _ = renewal => {
                        if self.renew().await {
                            return;
                        }
                        continue;
                    }
                    () = published => {
                        if let Err(err) = self.live.publish().await {
                            self.engine.logs.about(&self.live.id).warn(format!(
                                "session {}: cannot publish the turn's events yet: {err}",
                                self.live.id
                            ));
                        }
                        continue;
                    }
                },
                None if !self.started => tokio::select! {
                    command = self.rx.recv() => command,
                    _ = renewal => {
                        if self.renew().await {
                            return;
                        }
                        continue;
                    }
                },
                None => {
                    // Idle: leave only when the mailbox is empty, under its lock.
                    let mut mailbox = lock(&self.live.mailbox);
                    match self.rx.try_recv() {
                        Ok(command) => Some(command),
                        Err(_) => {
                            *mailbox = None;
                            return;
                        }
                    }
                }
            };
            let Some(command) = command else { return };
            self.started = true;
            if self.handle(command).await {
                return;
            }
        }
    }

    /// Renews the session's lease; true when it was taken over (this server's lease expired
    /// and another server owns the session now): the turn here ends, unrecorded (the new
    /// owner records it), and the session's streams here end (clients reconnect).
    async fn renew(&mut self) -> bool {
        let Some(lease) = &self.lease else {
            return false;
        };
        match self
            .engine
            .store
            .renew_lease(lease, self.engine.lease.ttl)
            .await
        {
            Ok(renewed) => {
                self.lease = Some(renewed);
                false
            }
            Err(folio_store::StoreError::Fenced { .. }) => {
                self.engine.logs.about(&self.live.id).error(format!(
                    "session {}: another server took its turn over (this server's lease expired); stopping the turn here",
                    self.live.id
                ));
                if let Some(running) = self.running.take() {
                    running.cancel.cancel();
                    running.task.abort();
                }
                self.lease = None;
                *lock(&self.live.mailbox) = None;
                self.engine.live.remove_if(&self.live);
                self.live.closed.cancel();
                true
            }
            Err(err) => {
                self.engine.logs.about(&self.live.id).warn(format!(
                    "session {}: cannot renew its lease ({err}); retrying",
                    self.live.id
                ));
                false
            }
        }
    }

    /// Whether the session has work no turn is doing: queued messages, an open turn that does
    /// not wait for an approval (or waits for one with a deadline), or a last turn whose end is
    /// not recorded.
    fn unsettled(&self) -> bool {
        if self.running.is_some() {
            return false;
        }
        !self.queue.is_empty()
            || self
                .live
                .with_events(|events| match crate::recovery::restart_of(events) {
                    Restart::Parked => false,
                    // Its deadline must be kept: the next server resumes it.
                    Restart::Failed(_) | Restart::Answer(..) | Restart::Expiring(_) => true,
                    Restart::Closed(_) => !crate::recovery::turn_ended(events),
                })
    }

    /// Takes over the turn of an owner that died ([`Command::Recover`]).
    async fn recover(&mut self) -> Result<(), ManagerError> {
        if self.running.is_some() {
            return Ok(());
        }
        match self.live.with_events(crate::recovery::restart_of) {
            Restart::Parked => {}
            Restart::Expiring(turn_id) => self.spawn_turn(turn_id, true, Before::default(), None),
            Restart::Answer(turn_id, answers) => {
                for answer in answers {
                    self.live.append(Some(&turn_id), answer)?;
                }
                self.live.commit().await?;
                self.spawn_turn(turn_id, true, Before::default(), None);
            }
            Restart::Failed(turn_id) => {
                let message = SERVER_RESTARTED.to_string();
                self.live.append(
                    Some(&turn_id),
                    EventBody::TurnFailed(TurnFailed {
                        message: message.clone(),
                    }),
                )?;
                self.after_turn(TurnOutcome::Failed { message }).await;
            }
            Restart::Closed(outcome) => {
                let ended = self.live.with_events(crate::recovery::turn_ended);
                if !self.queue.is_empty() || !ended {
                    let outcome = outcome.unwrap_or(TurnOutcome::Failed {
                        message: SERVER_RESTARTED.to_string(),
                    });
                    self.after_turn(outcome).await;
                } else {
                    // The end of the turn is in the log; only the stored metadata missed it
                    // (and the token totals, which the live session summed from the log).
                    self.live.repair_meta(|_| {}).await?;
                }
            }
        }
        Ok(())
    }

    /// Handles one command; true when the actor must end.
    async fn handle(&mut self, command: Command) -> bool {
        match command {
            Command::Send { admit, reply } => {
                let result = self.admit(admit).await;
                let _ = reply.send(result);
                false
            }
            Command::Recover { reply } => {
                if let Err(err) = self.recover().await {
                    self.engine
                        .logs
                        .about(&self.live.id)
                        .error(format!("session {}: {err}", self.live.id));
                }
                let _ = reply.send(());
                false
            }
            Command::Record {
                turn_id,
                body,
                unless,
                reply,
            } => {
                if unless.is_some_and(|unless| self.live.with_events(|events| unless(events))) {
                    let _ = reply.send(Ok(()));
                    return false;
                }
                let appended = self.live.append(turn_id.as_deref(), body);
                let result = match appended {
                    Ok(_) => self.live.commit().await.map_err(ManagerError::from),
                    Err(err) => Err(err.into()),
                };
                let _ = reply.send(result);
                false
            }
            Command::IssueToken { hash, reply } => {
                let result = self
                    .live
                    .update_meta(|meta| meta.token_hash = Some(hash))
                    .await;
                let _ = reply.send(result);
                false
            }
            Command::Stop { reply } => {
                self.queue.clear();
                if self.running.is_some() {
                    let outcome = self.interrupt().await;
                    self.after_turn(outcome).await;
                } else if let Some(outcome) = self.interrupt_parked() {
                    self.after_turn(outcome).await;
                }
                let _ = reply.send(());
                false
            }
            Command::Tool {
                name,
                input,
                trace_parent,
                reply,
            } => {
                // A turn parked across a restart holds the lock too.
                let parked = || self.live.with_events(|events| open_turn(events).is_some());
                if self.running.is_some() || parked() {
                    let _ = reply.send(Err(ManagerError::Busy(self.live.id.clone())));
                    return false;
                }
                let agent = self.engine.agent();
                let seen = self.engine.workspace_of(&lock(&self.live.meta));
                let workspace = match seen {
                    Ok(workspace) => workspace,
                    Err(err) => {
                        let _ = reply.send(Err(err));
                        return false;
                    }
                };
                let todos = self.live.with_events(TodoList::from_events);
                let context = crate::state::session_context(&lock(&self.live.meta));
                let variant = lock(&self.live.meta).variant.clone();
                let call = direct_call(
                    &agent,
                    &name,
                    input,
                    &workspace,
                    (&self.live.id, context),
                    DirectRun {
                        todos,
                        cancel: self.engine.life.shutdown.child_token(),
                        host: Some(crate::host::broker(&self.engine)),
                        variant,
                    },
                );
                let result = folio_telemetry::with_incoming(trace_parent, call).await;
                let _ = reply.send(result);
                false
            }
            Command::Resolve { resolved, reply } => {
                let result = self.resolve(resolved);
                let _ = reply.send(result);
                false
            }
            Command::Close { delete, reply } => {
                let parked = lock(&self.live.approvals).is_parked();
                if self.running.is_some() && (delete || !parked) {
                    let outcome = self.interrupt().await;
                    // Queued messages were acknowledged: they stay in the log (no end of turn
                    // recorded after them) and the next start runs them.
                    if !delete && self.queue.is_empty() {
                        self.after_turn(outcome).await;
                    }
                    self.queue.clear();
                } else if let Some(running) = self.running.take() {
                    // Parked on an approval: it stays parked in the log and resumes after
                    // the restart, when the decision arrives.
                    running.task.abort();
                }
                if delete {
                    self.remove_from_disk().await;
                }
                let _ = self.live.commit().await;
                *lock(&self.live.mailbox) = None;
                let _ = reply.send(());
                true
            }
        }
    }

    /// Ends the session's streams and removes its metadata, workspace and log from the store.
    async fn remove_from_disk(&self) {
        self.live.closed.cancel();
        let seen = self.engine.workspace_of(&lock(&self.live.meta));
        if let Ok(workspace) = seen {
            let _ = std::fs::remove_dir_all(workspace);
        }
        if let Err(err) = self.engine.store.delete_session(&self.live.id).await {
            self.engine.logs.about(&self.live.id).error(format!(
                "session {}: cannot delete it from the store: {err}",
                self.live.id
            ));
        }
    }

    fn resolve(&mut self, mut resolved: ActionApprovalResolved) -> Result<(), ManagerError> {
        let call_id = resolved.call_id.clone();
        let (requested, recorded, open) = self.live.with_events(|events| {
            let requested = events.iter().find_map(|e| match &e.body {
                EventBody::ActionApprovalRequested(r) if r.call_id == call_id => e
                    .turn_id
                    .clone()
                    .map(|turn_id| (turn_id, r.elicitation.clone())),
                _ => None,
            });
            let recorded = events.iter().any(
                |e| matches!(&e.body, EventBody::ActionApprovalResolved(r) if r.call_id == call_id),
            );
            (requested, recorded, open_turn(events))
        });
        let Some((turn_id, elicitation)) = requested else {
            return Err(ManagerError::NotFound(format!(
                "no approval {call_id} in session {}",
                self.live.id
            )));
        };
        resolved.content = answer(&call_id, elicitation.as_ref(), &resolved)?;
        let mut approvals = lock(&self.live.approvals);
        if recorded || approvals.decided.contains(&call_id) {
            return Err(ManagerError::ApprovalResolved(call_id));
        }
        if open.as_deref() != Some(turn_id.as_str()) {
            return Err(ManagerError::ApprovalResolved(call_id));
        }
        approvals.deliver(resolved);
        drop(approvals);
        if self.running.is_none() {
            // Parked across a restart: the turn resumes from the log.
            self.spawn_turn(turn_id, true, Before::default(), None);
        }
        Ok(())
    }

    /// Checks the presented token and the idempotency key (a recorded key answers the first
    /// answer, or `idempotency_key_reused` when the request differs), then records the message
    /// durably (queued when coalesced into a running turn, else received with its turn started)
    /// before the token rotates; answers the rotated token when one was presented.
    async fn admit(&mut self, admit: Admit) -> Result<Option<String>, ManagerError> {
        let Admit {
            message,
            admission,
            token,
            key,
            digest,
            ticket,
        } = admit;
        let recorded = match key.as_deref() {
            Some(key) => match self.live.with_events(|events| token::recorded(events, key)) {
                Some(first) => {
                    token::check_same_request(key, first.as_deref(), digest.as_deref())?;
                    true
                }
                None => false,
            },
            None => false,
        };
        let rotated = match (token.as_deref(), key.as_deref()) {
            (None, _) if recorded => return Ok(None),
            (None, _) => None,
            (Some(presented), key) => {
                let current = {
                    let meta = lock(&self.live.meta);
                    let current = meta.token_hash.as_deref().unwrap_or("");
                    let presented = token::hash_token(presented);
                    bool::from(current.as_bytes().ct_eq(presented.as_bytes()))
                };
                match key {
                    Some(key) if recorded => {
                        let answer = token::derived_token(presented, key);
                        if current {
                            // Recorded, but the process died before the token rotated.
                            self.live
                                .update_meta(|meta| {
                                    rotate(meta, Some(&answer), Some(key));
                                })
                                .await?;
                            return Ok(Some(answer));
                        }
                        if token::answered_with(&lock(&self.live.meta), key, &answer) {
                            return Ok(Some(answer));
                        }
                        return Err(ManagerError::StaleToken);
                    }
                    _ if !current => return Err(ManagerError::StaleToken),
                    Some(key) => Some(token::derived_token(presented, key)),
                    None => Some(token::new_token()),
                }
            }
        };
        if self.running.is_some() {
            match admission.unwrap_or(Admission::Preempt) {
                Admission::Coalesce => {
                    self.live.append(
                        None,
                        EventBody::MessageQueued(MessageQueued {
                            text: message.text.clone(),
                            workspace_files: message.files.clone(),
                            client_message_id: key.clone(),
                            request_digest: digest.clone(),
                        }),
                    )?;
                    let rotate = |meta: &mut SessionMeta| {
                        rotate(meta, rotated.as_deref(), key.as_deref());
                    };
                    self.record(rotated.is_some(), rotate).await?;
                    self.queue.push(message);
                    return Ok(rotated);
                }
                Admission::Preempt => {
                    self.interrupt().await;
                }
            }
        }
        if self.running.is_none() {
            // A turn parked on an approval across a restart is preempted like a live one.
            self.interrupt_parked();
        }
        // Messages queued by coalesce go first, so nothing overtakes them.
        let (message, coalesced) = if self.queue.is_empty() {
            (message, None)
        } else {
            let mut messages = std::mem::take(&mut self.queue);
            messages.push(message);
            let (joined, count) = Pending::join(messages);
            (joined, Some(count))
        };
        let keyed = key.map(|key| (key, digest));
        let new = Admitted {
            admission,
            coalesced,
            keyed,
            rotated: rotated.as_deref(),
            ticket,
        };
        self.start_turn(message, new).await?;
        Ok(rotated)
    }

    /// Records the message (with its idempotency key and request digest, when keyed), syncs
    /// the log, sets status `running` with the turn count (`session.json` rewritten durably
    /// when that count or the token changes, [`Actor::record`]), and starts the turn.
    async fn start_turn(
        &mut self,
        message: Pending,
        new: Admitted<'_>,
    ) -> Result<(), ManagerError> {
        let Admitted {
            admission,
            coalesced,
            keyed,
            rotated,
            ticket,
        } = new;
        let turn_id = new_turn_id();
        let (key, request_digest) = keyed.unzip();
        self.live.append(
            Some(&turn_id),
            EventBody::MessageReceived(MessageReceived {
                text: message.text,
                admission,
                coalesced,
                client_message_id: key.clone(),
                request_digest: request_digest.flatten(),
            }),
        )?;
        let turns = self.live.with_events(|events| {
            events
                .iter()
                .filter(|e| matches!(e.body, EventBody::MessageReceived(_)))
                .count() as u32
        });
        let running = |meta: &mut SessionMeta| {
            meta.status = SessionStatus::Running;
            meta.turns = turns;
            rotate(meta, rotated, key.as_deref());
        };
        // The turn count is written before the turn starts, so no end of a turn reaches the log
        // before `session.json` counts it (recovery skips a log that ends a turn). A create
        // wrote it up front.
        let rewrite = rotated.is_some() || turns != self.live.saved_turns();
        self.record(rewrite, running).await?;
        self.spawn_turn(
            turn_id,
            false,
            Before {
                files: message.files,
                prepare: message.prepare,
                ticket,
            },
            message.trace_parent,
        );
        Ok(())
    }

    /// Makes the message just appended durable before anything acknowledges it: commits the
    /// log and, when `rewrite`, the metadata changed by `change` in the same round (on disk:
    /// one group commit syncing the log with the staged `session.json`, then renaming it into
    /// place), so the token rotates only after the message is durable. Without `rewrite`,
    /// `change` applies in memory only (status, turn count: the log settles them).
    async fn record(
        &self,
        rewrite: bool,
        change: impl Fn(&mut SessionMeta),
    ) -> Result<(), ManagerError> {
        if rewrite {
            self.live.update_meta(&change).await?;
        } else {
            self.live.commit().await?;
            self.live.change_meta(change);
        }
        self.engine.fault(FaultPoint::MessageSynced);
        Ok(())
    }

    fn spawn_turn(
        &mut self,
        turn_id: String,
        resume: bool,
        before: Before,
        trace_parent: Option<String>,
    ) {
        // Not a child of the shutdown token: on shutdown the actor decides (a turn parked on an
        // approval stays parked).
        let cancel = CancellationToken::new();
        let task = tokio::spawn(run_turn(
            self.engine.clone(),
            self.live.clone(),
            turn_id,
            resume,
            before,
            trace_parent,
            cancel.clone(),
        ));
        self.running = Some(Running { cancel, task });
    }

    /// Records `turn interrupted` for a turn left open in the log without a task (parked on an
    /// approval when the server restarted); returns its outcome when there was one.
    fn interrupt_parked(&mut self) -> Option<TurnOutcome> {
        let turn_id = self.live.with_events(open_turn)?;
        let message = TURN_INTERRUPTED.to_string();
        if let Err(err) = self.live.append(
            Some(&turn_id),
            EventBody::TurnFailed(TurnFailed {
                message: message.clone(),
            }),
        ) {
            self.engine
                .logs
                .about(&self.live.id)
                .error(format!("session {}: {err}", self.live.id));
        }
        Some(TurnOutcome::Failed { message })
    }

    /// Cancels the running turn and waits for it to settle.
    async fn interrupt(&mut self) -> TurnOutcome {
        let Some(running) = self.running.take() else {
            return TurnOutcome::Failed {
                message: TURN_INTERRUPTED.to_string(),
            };
        };
        running.cancel.cancel();
        outcome_of(running.task.await)
    }

    /// After a turn: drain coalesced messages into one turn, or park / end the session.
    async fn after_turn(&mut self, outcome: TurnOutcome) {
        if let Err(err) = crate::reminder_store::record_requested(&self.engine, &self.live).await {
            self.engine
                .logs
                .about(&self.live.id)
                .error(format!("session {}: set_reminder: {err}", self.live.id));
        }
        let mode = lock(&self.live.meta).mode;
        if !self.queue.is_empty() && mode == SessionMode::Chat {
            let (message, count) = Pending::join(std::mem::take(&mut self.queue));
            if let Err(err) = self.start_turn(message, Admitted::drained(count)).await {
                self.engine
                    .logs
                    .about(&self.live.id)
                    .error(format!("session {}: {err}", self.live.id));
            }
            return;
        }
        if let Err(err) = finish_session(&self.live, Some(&outcome), &self.engine).await {
            self.engine
                .logs
                .about(&self.live.id)
                .error(format!("session {}: {err}", self.live.id));
        }
    }
}

/// What a turn does to the host workspace before it runs: a channel's preparation, then the
/// message's workspace files.
#[derive(Default)]
struct Before {
    files: BTreeMap<String, String>,
    prepare: Option<WorkspacePrep>,
    /// The turn's place among the admitted turns (`None`: it takes one never refused).
    ticket: Option<TurnTicket>,
}

/// Runs (or resumes) one turn: waits for a slot under the agent's cap, binds the FileSystem,
/// and hands the turn to the harness with the live session as its sink.
async fn run_turn(
    engine: Arc<Engine>,
    live: Arc<Live>,
    turn_id: String,
    resume: bool,
    before: Before,
    trace_parent: Option<String>,
    cancel: CancellationToken,
) -> TurnOutcome {
    let Before {
        files,
        prepare,
        ticket,
    } = before;
    let _ticket = ticket.unwrap_or_else(|| engine.turns.ticket());
    let interrupted = || TurnOutcome::Failed {
        message: TURN_INTERRUPTED.to_string(),
    };
    let failed = |live: &Live, message: String| {
        let _ = live.append(
            Some(&turn_id),
            EventBody::TurnFailed(TurnFailed {
                message: message.clone(),
            }),
        );
        TurnOutcome::Failed { message }
    };
    let _permit = match &engine.turns.slots {
        None => None,
        Some(slots) => match slots.clone().try_acquire_owned() {
            Ok(permit) => Some(permit),
            Err(_) => {
                use std::sync::atomic::Ordering;
                let position = engine.turns.queued.fetch_add(1, Ordering::SeqCst) + 1;
                let agent = engine.agent();
                let variant = lock(&live.meta).variant.clone();
                let queued = folio_telemetry::metrics::turn_queued(
                    agent.harness_for(variant.as_deref()).who(),
                );
                let _ = live.append(
                    Some(&turn_id),
                    EventBody::TurnQueued(TurnQueued { position }),
                );
                let acquired = tokio::select! {
                    permit = slots.clone().acquire_owned() => permit.ok(),
                    () = cancel.cancelled() => None,
                };
                engine.turns.queued.fetch_sub(1, Ordering::SeqCst);
                drop(queued);
                match acquired {
                    Some(permit) => Some(permit),
                    None => {
                        let _ = failed(&live, TURN_INTERRUPTED.to_string());
                        return interrupted();
                    }
                }
            }
        },
    };
    let agent = engine.agent();
    let variant = lock(&live.meta).variant.clone();
    let harness = agent.harness_for(variant.as_deref());
    let _running = folio_telemetry::metrics::turn_running(harness.who());
    // An agent with a root keeps its files there: only a host-default turn needs to see the
    // session's own workspace.
    let seen = engine.workspace_of(&lock(&live.meta));
    let workspace = match seen {
        Ok(workspace) => workspace,
        Err(err) if agent.root.is_none() => return failed(&live, err.to_string()),
        Err(_) => engine.state.workspace_dir(&live.id),
    };
    let session = {
        let meta = lock(&live.meta);
        (
            meta.session_id.clone(),
            meta.continuation_key.clone(),
            meta.principal.clone(),
        )
    };
    let bound = match agent
        .bind_turn_fs(
            &workspace,
            &TurnSession {
                session_id: &session.0,
                continuation_key: session.1.as_deref(),
                principal: &session.2,
                variant: variant.as_deref(),
            },
        )
        .await
    {
        Ok(bound) => bound,
        Err(err) => return failed(&live, err.to_string()),
    };
    // The host workspace is prepared at its first need: these files, a channel's preparation,
    // or the first tool call.
    if let (true, Some(lazy)) = (!files.is_empty() || prepare.is_some(), &bound.prepare)
        && let Err(err) = lazy.ready().await
    {
        return failed(&live, err.to_string());
    }
    let host_workspace = (bound.scratch == ScratchMode::Host).then_some(workspace.as_path());
    if let Some(prepare) = &prepare {
        match host_workspace {
            // A stop or a preempting message does not wait for it (dropped, its work ends).
            Some(host) => tokio::select! {
                () = prepare.0.prepare(&live.id, host) => {}
                () = cancel.cancelled() => {
                    let _ = failed(&live, TURN_INTERRUPTED.to_string());
                    return interrupted();
                }
            },
            None => engine.logs.about(&live.id).warn(format!(
                "session {}: the agent keeps its files under its root: the channel's workspace preparation (a checkout) is skipped",
                live.id
            )),
        }
    }
    let quota = workspace_quota(&engine.agent.get().definition.limits);
    if let Err(err) = write_workspace_files(bound.fs.as_ref(), host_workspace, &files, quota).await
    {
        return failed(&live, err.to_string());
    }
    // The log from where the turn's context can start (a long session's turns copy a bounded
    // tail, not the whole log); its todos from the whole log, read in place.
    let (events, todos) = live.with_events(|all| {
        let first = all.partition_point(|event| event.index < context_start(all));
        (all[first..].to_vec(), TodoList::from_events(all))
    });
    // Its own statement: the meta lock is released before the trace below takes it again.
    let mut context = crate::state::session_context(&lock(&live.meta));
    context.tool_calls_per_turn = Some(
        engine
            .quotas
            .limits_of(&engine, &context.principal)
            .tool_calls_per_turn,
    );
    let turn = Turn {
        session_id: live.id.clone(),
        turn_id: turn_id.clone(),
        events,
        fs: bound.fs,
        workspace,
        scratch: bound.scratch,
        prepare: bound.prepare,
        cancel,
        todos,
        context,
        trace: {
            let meta = lock(&live.meta);
            TurnTrace {
                parent: trace_parent,
                channel: Some(meta.channel.clone()),
                session_mode: Some(meta.mode),
            }
        },
        host: Some(crate::host::broker(&engine)),
    };
    let sink = LiveSink(live.clone());
    let started = std::time::Instant::now();
    let outcome = if resume {
        harness.resume_turn(turn, &sink).await
    } else {
        harness.run_turn(turn, &sink).await
    };
    engine.turns.ran(started.elapsed());
    outcome
}

/// Stores a rotated token (and the key it answers) in the metadata.
fn rotate(meta: &mut SessionMeta, rotated: Option<&str>, key: Option<&str>) {
    let Some(rotated) = rotated else { return };
    let hash = token::hash_token(rotated);
    if let Some(key) = key {
        token::remember_key(meta, key, &hash);
    }
    meta.token_hash = Some(hash);
}

/// Records the end of a turn: `session.waiting` (chat) or `session.completed`/`failed` (task),
/// synced (group commit); then `session.json` takes the turn's end (status, last index, the
/// session's token totals, turn count), rewritten without a sync: lists read the totals from
/// it and never the whole log. A crash before that rewrite leaves the log ahead of it, and
/// recovery repairs it from the log at the next start. Where the store writes metadata with a
/// durable point at no extra cost (PostgreSQL), the end and the metadata are one point.
pub(crate) async fn finish_session(
    live: &Live,
    outcome: Option<&TurnOutcome>,
    engine: &Engine,
) -> Result<(), ManagerError> {
    let (event, status) = record_end(live, outcome)?;
    let usage = live.with_events(reported_usage);
    let settle = move |meta: &mut SessionMeta| {
        meta.status = status;
        meta.last_index = event.index;
        meta.usage = usage;
    };
    if live.log.store.metadata_rides_durable_points() {
        live.commit_meta(settle).await?;
        engine.fault(FaultPoint::BoundarySynced);
        return Ok(());
    }
    live.commit().await?;
    engine.fault(FaultPoint::BoundarySynced);
    live.repair_meta(settle).await
}

/// Appends the event that ends a turn for the session's mode and outcome (not synced yet);
/// returns it with the status it leaves the session in.
pub(crate) fn record_end(
    live: &Live,
    outcome: Option<&TurnOutcome>,
) -> Result<(Event, SessionStatus), ManagerError> {
    let mode = lock(&live.meta).mode;
    let (body, status) = match (mode, outcome) {
        (SessionMode::Chat, _) => (
            EventBody::SessionWaiting(SessionWaiting {}),
            SessionStatus::Waiting,
        ),
        (SessionMode::Task, Some(TurnOutcome::Completed { .. }) | None) => (
            EventBody::SessionCompleted(SessionCompleted {}),
            SessionStatus::Completed,
        ),
        (SessionMode::Task, Some(TurnOutcome::Failed { message })) => (
            EventBody::SessionFailed(SessionFailed {
                message: message.clone(),
            }),
            SessionStatus::Failed,
        ),
    };
    Ok((live.append(None, body)?, status))
}

/// Prepares and runs a tool directly (no approval gate), in a synthetic turn's span joined to
/// the incoming request's `traceparent` ([`folio_telemetry::with_incoming`]).
/// What a direct tool call runs with besides its input: the session's todo list, the
/// cancellation of the server's shutdown, and the host API's broker (`None` outside a session).
pub(crate) struct DirectRun {
    /// The session's todo list.
    pub(crate) todos: TodoList,
    /// Fires when the server shuts down.
    pub(crate) cancel: CancellationToken,
    /// Issues the call's host API token.
    pub(crate) host: Option<Arc<dyn folio_agent::HostBroker>>,
    /// The session's A/B variant, whose tools it offers.
    pub(crate) variant: Option<String>,
}

pub(crate) async fn direct_call(
    agent: &Agent,
    name: &str,
    input: Value,
    workspace: &Path,
    (session_id, context): (&str, SessionContext),
    run: DirectRun,
) -> Result<ToolCallResult, ManagerError> {
    let DirectRun {
        todos,
        cancel,
        host,
        variant,
    } = run;
    let harness = agent.harness_for(variant.as_deref());
    let Some(tool) = harness.tools.get(name) else {
        return Err(ManagerError::NotFound(format!("no tool {name}")));
    };
    let input = tool
        .prepare(input)
        .map_err(|err| ManagerError::Invalid(format!("input: {err}")))?;
    let bound = agent
        .bind_turn_fs(
            workspace,
            &TurnSession {
                session_id,
                continuation_key: context.continuation_key.as_deref(),
                principal: &context.principal,
                variant: variant.as_deref(),
            },
        )
        .await
        .map_err(|err| ManagerError::internal_from("cannot bind the tool to the session", err))?;
    if let Some(prepare) = &bound.prepare {
        prepare.ready().await.map_err(|err| {
            ManagerError::internal_from("cannot prepare the session's tools", err)
        })?;
    }
    let call_id = format!("direct_{}", ulid::Ulid::generate());
    let ctx = ToolContext {
        fs: bound.fs,
        workspace: workspace.to_path_buf(),
        scratch: bound.scratch,
        cancel,
        todos,
        session_id: session_id.to_string(),
        call_id: call_id.clone(),
        dry_run: context.dry_run,
        purpose: context.purpose,
        continuation_key: context.continuation_key,
        principal: context.principal,
        peer_depth: context.peer_depth,
        turn_id: None,
        host,
    };
    let traceparent = folio_telemetry::incoming_traceparent();
    let traced = folio_agent::trace_direct_call(
        harness.who(),
        session_id,
        &call_id,
        name,
        &input,
        traceparent.as_deref(),
        tool.call(input.clone(), &ctx),
    );
    Ok(match traced.await {
        Ok(output) => ToolCallResult {
            ok: OkTrue,
            result: output.to_event_value(),
            is_error: false,
        },
        Err(err) => ToolCallResult {
            ok: OkTrue,
            result: Value::String(err.0),
            is_error: true,
        },
    })
}

fn outcome_of(joined: Result<TurnOutcome, tokio::task::JoinError>) -> TurnOutcome {
    joined.unwrap_or_else(|err| TurnOutcome::Failed {
        message: format!("the turn task failed: {err}"),
    })
}

/// Checks a decision against what is parked — `approve`/`deny` for a call; `accept` (with
/// content), `decline` or `cancel` for an elicitation — and returns the content to record: an
/// accepted elicitation's, with the schema's defaults applied and checked against it.
fn answer(
    call_id: &str,
    elicitation: Option<&Elicitation>,
    resolved: &ActionApprovalResolved,
) -> Result<Option<Value>, ManagerError> {
    match (elicitation, resolved.decision) {
        (None, ApprovalDecision::Approve | ApprovalDecision::Deny)
            if resolved.content.is_none() =>
        {
            Ok(None)
        }
        (None, ApprovalDecision::Approve | ApprovalDecision::Deny) => {
            Err(ManagerError::Invalid(format!(
                "approval {call_id} is a tool call: send {{\"decision\": \"approve\"|\"deny\"}} without content"
            )))
        }
        (None, _) => Err(ManagerError::Invalid(format!(
            "approval {call_id} is a tool call: decide with \"approve\" or \"deny\""
        ))),
        (Some(elicitation), ApprovalDecision::Accept) => folio_agent::mcp::elicitation_content(
            &elicitation.requested_schema,
            resolved.content.clone(),
        )
        .map(Some)
        .map_err(|err| ManagerError::Invalid(err.to_string())),
        (Some(_), ApprovalDecision::Decline | ApprovalDecision::Cancel)
            if resolved.content.is_none() =>
        {
            Ok(None)
        }
        (Some(_), ApprovalDecision::Decline | ApprovalDecision::Cancel) => {
            Err(ManagerError::Invalid(format!(
                "{call_id} is declined or cancelled: send content only with \"accept\""
            )))
        }
        (Some(elicitation), ApprovalDecision::Approve | ApprovalDecision::Deny) => {
            Err(ManagerError::Invalid(format!(
                "{call_id} is a question from MCP server \"{}\": answer with \"accept\" (and content), \"decline\" or \"cancel\"",
                elicitation.server
            )))
        }
    }
}
