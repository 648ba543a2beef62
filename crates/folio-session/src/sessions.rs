//! The [`Sessions`] handle: creating sessions (with idempotency keys), reading them, forking
//! them (time travel for the playground: a new session starting with a copy of another's
//! events before one of its messages), handing their owner a fresh continuation token,
//! deleting them. Messages to an existing session are the
//! [`Turns`](crate::Turns) handle's; its events are the [`Events`](crate::Events) handle's.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::sync::Arc;

use chrono::Utc;
use folio_agent::check_workspace_path;
use folio_project::Limits;
use folio_protocol::{
    CreateSession, Event, EventBody, ForkOrigin, ForkSession, Page, SessionMode, SessionStarted,
    SessionStatus, SessionSummary,
};
use folio_store::SessionFilter;

use crate::command::{Admit, Command, Pending};
use crate::engine::Engine;
use crate::error::{ManagerError, io_error, store_error};
use crate::fault::FaultPoint;
use crate::live::Live;
use crate::quotas::Sending;
use crate::remote::Remote;
use crate::state::{
    SessionMeta, SessionOptions, VariantChoice, new_session_id, reported_usage, valid_session_id,
};
use crate::sync::lock;
use crate::token;

/// An accepted message: the session and its (new) continuation token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// `ses_…`.
    pub session_id: String,
    /// `http:…`, rotated per accepted follow-up.
    pub continuation_token: String,
    /// The indexes of the events the session's log gained while the message was accepted
    /// (`None` when it gained none): the range its request's span covers. Not part of the
    /// answer a client sees: a retried request may append nothing.
    pub events: Option<RangeInclusive<u64>>,
}

/// What a new session starts with (see [`Sessions::open_new`]).
pub(crate) struct NewSession<'a> {
    pub(crate) session_id: &'a str,
    /// The first continuation token (only its hash is stored).
    pub(crate) token: &'a str,
    pub(crate) principal: &'a str,
    pub(crate) channel: &'a str,
    pub(crate) mode: SessionMode,
    pub(crate) title: Option<String>,
    pub(crate) forked_from: Option<ForkOrigin>,
    /// Its purpose and dry-run flag.
    pub(crate) options: SessionOptions,
    /// No other server can know its id yet (a new one, not one an idempotency key recorded
    /// first): its log needs no reading back when its first lease is taken.
    pub(crate) unseen: bool,
}

/// Creates, reads, forks and deletes sessions.
#[derive(Clone)]
pub struct Sessions {
    pub(crate) engine: Arc<Engine>,
}

impl Sessions {
    /// The session's summary.
    pub async fn get(
        &self,
        principal: &str,
        session_id: &str,
    ) -> Result<SessionSummary, ManagerError> {
        crate::queries::get(&self.engine, principal, session_id).await
    }

    /// The caller's sessions, newest first; `q` filters title or id (case-insensitive).
    pub async fn list(
        &self,
        principal: &str,
        limit: usize,
        cursor: Option<&str>,
        q: Option<&str>,
    ) -> Result<Page<SessionSummary>, ManagerError> {
        let filter = SessionFilter::default();
        crate::queries::list(&self.engine, Some(principal), limit, cursor, q, &filter).await
    }

    /// The sessions of `principal` (`None`: every principal's, for the callers allowed to see
    /// them) matching `filter`, newest first; `q` filters title or id (case-insensitive).
    /// The store's session index serves the filter: a page reads about `limit` sessions.
    pub async fn list_matching(
        &self,
        principal: Option<&str>,
        limit: usize,
        cursor: Option<&str>,
        q: Option<&str>,
        filter: &SessionFilter,
    ) -> Result<Page<SessionSummary>, ManagerError> {
        crate::queries::list(&self.engine, principal, limit, cursor, q, filter).await
    }

    /// The agent's A/B experiment and how each variant does over every principal's sessions
    /// (`GET /v1/variants`).
    pub async fn variants(&self) -> Result<folio_protocol::VariantsResponse, ManagerError> {
        crate::variants::stats(&self.engine).await
    }

    /// The host workspace of `principal`'s session `session_id` on this server.
    pub async fn workspace_dir(
        &self,
        principal: &str,
        session_id: &str,
    ) -> Result<PathBuf, ManagerError> {
        self.engine
            .workspace_of(&self.engine.owned_meta(principal, session_id).await?)
    }

    /// Creates a session for `principal` through `channel` (`http`, `mcp`, `cli`, …) and starts
    /// its first turn; returns once the message is durable. With an idempotency key
    /// (`clientMessageId`), a retry of the same request answers the session the key created
    /// (a concurrent one waits for the first), and the key with another request is refused
    /// (`idempotency_key_reused`).
    pub async fn create(
        &self,
        principal: &str,
        channel: &str,
        request: CreateSession,
    ) -> Result<Accepted, ManagerError> {
        self.create_with(principal, channel, request, SessionOptions::default())
            .await
    }

    /// [`create`](Self::create) with the session's purpose and dry-run flag, which its tools
    /// and hooks see on every turn (`folio eval` creates its cases with purpose `eval`).
    pub async fn create_with(
        &self,
        principal: &str,
        channel: &str,
        request: CreateSession,
        options: SessionOptions,
    ) -> Result<Accepted, ManagerError> {
        let mode = request.mode.unwrap_or(SessionMode::Chat);
        self.engine.life.refuse_when_closing()?;
        check_send(
            &request.message,
            &request.workspace_files,
            &self.engine.agent.get().definition.limits,
        )?;
        // Sessions an operator's tooling makes for a purpose (`eval`, `direct`) are not a
        // caller's: the server's turn bound and the principal quotas hold for the rest.
        let ticket = match options.purpose {
            None => Some(self.engine.admit_turn()?),
            Some(_) => None,
        };
        if options.purpose.is_none() {
            self.engine
                .quotas
                .admit(&self.engine, principal, Sending::Create)
                .await?;
        }
        let mut options = options;
        if let Some(key) = &request.continuation_key {
            check_continuation_key(key)?;
            options.continuation_key = Some(key.clone());
        }
        let key = request.client_message_id.clone();
        let (record, digest) = match &key {
            Some(key) => {
                token::check_key(key)?;
                let name = token::create_record_name(principal, key);
                let digest = token::request_digest(&CreateSession {
                    client_message_id: None,
                    ..request.clone()
                })?;
                (Some(name), Some(digest))
            }
            None => (None, None),
        };
        // Keyed creates run one at a time per key: a concurrent retry waits here, then finds
        // the first one's record.
        let _creating = match &record {
            Some(name) => Some(self.engine.creating.lock(name).await),
            None => None,
        };
        let message = Pending {
            text: request.message,
            files: request.workspace_files,
            trace_parent: folio_telemetry::incoming_traceparent(),
            prepare: options.prepare.take(),
        };
        let mut session_id = new_session_id();
        if let (Some(key), Some(digest)) = (&key, &digest) {
            // Durable before the session exists, so a retry after a crash finds it.
            let before = self
                .engine
                .store
                .record_create_key(&folio_store::CreateKey {
                    principal: principal.to_string(),
                    key: key.clone(),
                    session_id: session_id.clone(),
                    digest: digest.clone(),
                })
                .await
                .map_err(|e| store_error("cannot record the idempotency key", e))?
                .map(|kept| (kept.session_id, Some(kept.digest)));
            if let Some((first, recorded)) = before {
                if let Some(accepted) = self
                    .created_before(
                        principal,
                        (&first, recorded.as_deref()),
                        key,
                        digest,
                        &message,
                    )
                    .await?
                {
                    self.engine.fault(FaultPoint::BeforeReply);
                    return Ok(accepted);
                }
                // Recorded, but the session was never made (a crash between the two) or was
                // deleted since: the store keeps the first record, so its id is made now.
                if valid_session_id(&first) {
                    session_id = first;
                }
            }
        }
        let token = match &key {
            Some(key) => token::derived_token(&session_id, key),
            None => token::new_token(),
        };
        let live = self
            .open_new(
                NewSession {
                    session_id: &session_id,
                    token: &token,
                    principal,
                    channel,
                    mode,
                    title: request.title,
                    forked_from: None,
                    options,
                    unseen: key.is_none(),
                },
                &[],
            )
            .await?;
        let admit = Admit {
            message,
            admission: None,
            token: None,
            key,
            digest,
            ticket,
        };
        self.engine
            .command(&live, &Remote::Busy, |reply| Command::Send { admit, reply })
            .await??;
        self.engine.fault(FaultPoint::BeforeReply);
        Ok(Accepted {
            session_id,
            continuation_token: token,
            events: live.appended_since(None),
        })
    }

    /// Creates a session in the store (metadata, workspace, log with `session.started` and the
    /// `copied` events of a fork after it) and makes it live. Nothing is durable yet: the
    /// caller admits the first message, whose commit makes the session (on disk: its files and
    /// directories) and the message durable in one round before anything is acknowledged.
    async fn open_new(
        &self,
        new: NewSession<'_>,
        copied: &[Event],
    ) -> Result<Arc<Live>, ManagerError> {
        let NewSession {
            session_id,
            token,
            principal,
            channel,
            mode,
            title,
            forked_from,
            options,
            unseen,
        } = new;
        let now = Utc::now();
        let turns = copied
            .iter()
            .filter(|e| matches!(e.body, EventBody::MessageReceived(_)))
            .count() as u32;
        let agent = self.engine.agent();
        let assigned = crate::variants::assign(
            &agent.definition,
            &crate::variants::NewSessionKey {
                session_id,
                continuation_key: options.continuation_key.as_deref(),
                principal,
                choice: &options.variant,
            },
        )?;
        let meta = SessionMeta {
            session_id: session_id.to_string(),
            mode,
            status: SessionStatus::Running,
            channel: channel.to_string(),
            principal: principal.to_string(),
            title: title.clone(),
            created_at: now,
            updated_at: now,
            token_hash: Some(token::hash_token(token)),
            // The first message starts the next turn: written now, so its end need not rewrite
            // this.
            turns: turns + 1,
            last_index: 0,
            usage: reported_usage(copied),
            accepted_keys: Vec::new(),
            purpose: options.purpose,
            dry_run: options.dry_run,
            peer_depth: options.peer_depth,
            continuation_key: options.continuation_key,
            workspace_root: self
                .engine
                .settings
                .workspace_root()
                .map(|root| root.id().to_string()),
            variant: assigned.as_ref().map(|a| a.variant.clone()),
        };
        self.engine
            .store
            .create_session(&meta)
            .await
            .map_err(|e| store_error("cannot create the session", e))?;
        let workspace = self.engine.workspace_of(&meta)?;
        std::fs::create_dir_all(&workspace).map_err(|e| io_error("cannot create workspace", e))?;
        self.engine.fault(FaultPoint::SessionCreated);
        let live = self.engine.open_created(meta, unseen).await?;
        let variant = assigned.as_ref().map(|a| a.variant.as_str());
        folio_telemetry::metrics::session(agent.harness_for(variant).who(), channel);
        live.bind_hooks(
            &self.engine.agent().hooks,
            Some(crate::host::broker(&self.engine)),
        );
        live.append(
            None,
            EventBody::SessionStarted(SessionStarted {
                mode,
                channel: channel.to_string(),
                title,
                principal: principal.to_string(),
                forked_from,
            }),
        )?;
        for event in copied {
            live.append(event.turn_id.as_deref(), event.body.clone())?;
        }
        // Recorded before the first turn (a fork records its own: it copies none).
        if let Some(assigned) = assigned {
            live.append(None, EventBody::AbAssigned(assigned.event))?;
        }
        self.engine
            .logs
            .about(session_id)
            .info(format!("session {session_id} created by {principal}"));
        Ok(live)
    }

    /// The answer to a create retried with `key`: the session the key's `record` names (its
    /// first line; the request's `digest` is the second), after admitting `message` to it when
    /// the first attempt died before recording it; `idempotency_key_reused` when the first
    /// request differs. `None` when no such session exists (never created, or deleted since).
    async fn created_before(
        &self,
        principal: &str,
        (session_id, recorded): (&str, Option<&str>),
        key: &str,
        digest: &str,
        message: &Pending,
    ) -> Result<Option<Accepted>, ManagerError> {
        if !valid_session_id(session_id) {
            return Ok(None);
        }
        token::check_same_request(key, recorded, Some(digest))?;
        let session_id = session_id.to_string();
        let live = match self.engine.owned(principal, &session_id).await {
            Ok(live) => live,
            Err(ManagerError::NotFound(_)) => return Ok(None),
            Err(err) => return Err(err),
        };
        let admit = Admit {
            message: Pending {
                text: message.text.clone(),
                files: message.files.clone(),
                trace_parent: message.trace_parent.clone(),
                prepare: message.prepare.clone(),
            },
            admission: None,
            token: None,
            key: Some(key.to_string()),
            digest: Some(digest.to_string()),
            // The first attempt may have died before its create was synced.
            ticket: None,
        };
        let before = live.last_index();
        // The first attempt's turn may run on another server: waited for, never preempted.
        self.engine
            .command(&live, &Remote::Wait, |reply| Command::Send { admit, reply })
            .await??;
        Ok(Some(Accepted {
            continuation_token: token::derived_token(&session_id, key),
            session_id,
            events: live.appended_since(before),
        }))
    }

    /// Forks `session_id` (owner only): a new session of `principal` whose log starts with a
    /// copy of the original's events before `atIndex` (a `message.received`), records
    /// `forkedFrom` on its `session.started`, and runs `message` as its next turn. Messages
    /// the original queued (coalesce) before that point are not copied: the message at
    /// `atIndex` drained them, and the fork replaces it. The workspace starts empty.
    pub async fn fork(
        &self,
        principal: &str,
        session_id: &str,
        request: ForkSession,
    ) -> Result<Accepted, ManagerError> {
        let original = self.engine.owned_meta(principal, session_id).await?;
        let ticket = self.engine.admit_turn()?;
        let events = crate::events::read(&self.engine, principal, session_id).await?;
        let at = request.at_index;
        match events.get(at as usize).map(|e| &e.body) {
            Some(EventBody::MessageReceived(_)) => {}
            Some(other) => {
                return Err(ManagerError::Invalid(format!(
                    "atIndex {at} is a {} event: fork at the index of a message.received event",
                    other.event_type()
                )));
            }
            None => {
                return Err(ManagerError::Invalid(format!(
                    "atIndex {at} is past the end of session {session_id} ({} events)",
                    events.len()
                )));
            }
        }
        let (mode, title) = match events.first().map(|e| &e.body) {
            Some(EventBody::SessionStarted(started)) => (started.mode, started.title.clone()),
            _ => (SessionMode::Chat, None),
        };
        let copied: Vec<_> = events[..at as usize]
            .iter()
            .skip(1)
            .filter(|e| {
                !matches!(
                    e.body,
                    EventBody::MessageQueued(_) | EventBody::AbAssigned(_)
                )
            })
            .cloned()
            .collect();
        let fork_id = new_session_id();
        let token = token::new_token();
        let live = self
            .open_new(
                NewSession {
                    session_id: &fork_id,
                    token: &token,
                    principal,
                    channel: "http",
                    mode,
                    title: request.title.or(title),
                    forked_from: Some(ForkOrigin {
                        session_id: session_id.to_string(),
                        at_index: at,
                    }),
                    // An eval case's or a dry run's fork stays one.
                    options: SessionOptions {
                        purpose: original.purpose,
                        dry_run: original.dry_run,
                        peer_depth: original.peer_depth,
                        continuation_key: original.continuation_key,
                        prepare: None,
                        // The fork runs with its original's variant while it is defined.
                        variant: match original.variant {
                            Some(name) if self.engine.agent().variants.contains_key(&name) => {
                                VariantChoice::Chosen(name)
                            }
                            _ => VariantChoice::Assign,
                        },
                    },
                    unseen: true,
                },
                &copied,
            )
            .await?;
        let admit = Admit {
            message: Pending {
                text: request.message,
                files: BTreeMap::new(),
                trace_parent: folio_telemetry::incoming_traceparent(),
                prepare: None,
            },
            admission: None,
            token: None,
            key: None,
            digest: None,
            ticket: Some(ticket),
        };
        self.engine
            .command(&live, &Remote::Busy, |reply| Command::Send { admit, reply })
            .await??;
        Ok(Accepted {
            session_id: fork_id,
            continuation_token: token,
            events: live.appended_since(None),
        })
    }

    /// A new continuation token for the owner of a chat session (`POST /v1/session/:id/token`):
    /// only hashes are stored, so a page reopening a past run cannot read the current token;
    /// its owner gets a fresh one instead, and the token handed out before goes stale.
    pub async fn issue_token(
        &self,
        principal: &str,
        session_id: &str,
    ) -> Result<Accepted, ManagerError> {
        let live = self.engine.owned(principal, session_id).await?;
        if lock(&live.meta).mode == SessionMode::Task {
            return Err(ManagerError::NotFollowable(session_id.to_string()));
        }
        let token = token::new_token();
        let hash = token::hash_token(&token);
        // The session's actor changes its metadata (on a shared store: the owner's, after any
        // turn running elsewhere ended, so no later write of the owner undoes this one).
        self.engine
            .command(&live, &Remote::Wait, |reply| Command::IssueToken {
                hash,
                reply,
            })
            .await??;
        Ok(Accepted {
            session_id: session_id.to_string(),
            continuation_token: token,
            events: None,
        })
    }

    /// Stops the session's turn and removes the session from disk.
    pub async fn delete(&self, principal: &str, session_id: &str) -> Result<(), ManagerError> {
        let live = self.engine.owned(principal, session_id).await?;
        self.engine
            .command(&live, &Remote::stop(), |reply| Command::Close {
                delete: true,
                reply,
            })
            .await?;
        self.engine.live.remove(session_id);
        self.engine
            .logs
            .about(session_id)
            .info(format!("session {session_id} deleted by {principal}"));
        Ok(())
    }
}

/// The smaller of two limits, with its key.
fn tighter(a: (u64, &'static str), b: (u64, &'static str)) -> (u64, &'static str) {
    if b.0 < a.0 { b } else { a }
}

/// The most characters a continuation key set through `POST /v1/session` may have.
const MAX_CONTINUATION_KEY_CHARS: usize = 256;

/// Checks a continuation key a caller sets: 1 to 256 characters, none of them a control
/// character (it is shown in logs and read by live root factories and tools).
fn check_continuation_key(key: &str) -> Result<(), ManagerError> {
    let chars = key.chars().count();
    if chars == 0 || chars > MAX_CONTINUATION_KEY_CHARS || key.chars().any(char::is_control) {
        return Err(ManagerError::Invalid(format!(
            "continuationKey: must be 1 to {MAX_CONTINUATION_KEY_CHARS} characters with no control characters (e.g. \"acme:ticket-7\")"
        )));
    }
    Ok(())
}

/// Checks a send against `limits` before anything of it is kept or written: the message's
/// size, the number and bytes of its `workspaceFiles` (`413`; never more than a whole workspace
/// may hold), and every file's path (`400`).
pub(crate) fn check_send(
    text: &str,
    files: &BTreeMap<String, String>,
    limits: &Limits,
) -> Result<(), ManagerError> {
    let too_large = |what: &str, size: u64, limit: u64, key: &str| {
        ManagerError::TooLarge(format!(
            "{what} is {size}; at most {limit} are allowed ([limits] {key} in folio.toml)"
        ))
    };
    let text_bytes = text.len() as u64;
    if text_bytes > limits.message_bytes {
        return Err(too_large(
            "message: the text in bytes",
            text_bytes,
            limits.message_bytes,
            "message_bytes",
        ));
    }
    let (file_limit, file_key) = tighter(
        (limits.send_files, "send_files"),
        (limits.workspace_files, "workspace_files"),
    );
    let count = files.len() as u64;
    if count > file_limit {
        return Err(too_large(
            "workspaceFiles: the number of files",
            count,
            file_limit,
            file_key,
        ));
    }
    let (byte_limit, byte_key) = tighter(
        (limits.send_bytes, "send_bytes"),
        (limits.workspace_bytes, "workspace_bytes"),
    );
    let bytes: u64 = files.values().map(|c| c.len() as u64).sum();
    if bytes > byte_limit {
        return Err(too_large(
            "workspaceFiles: the contents in bytes",
            bytes,
            byte_limit,
            byte_key,
        ));
    }
    for path in files.keys() {
        check_workspace_path(path)
            .map_err(|err| ManagerError::Invalid(format!("workspaceFiles: {err}")))?;
    }
    Ok(())
}
