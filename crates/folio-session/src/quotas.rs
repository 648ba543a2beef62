//! Quotas and rate limits per principal (`[limits]` of `folio.toml`, with each principal's own
//! quotas from the tokens file over them): sessions held, turns running at once, messages per
//! minute and the bytes of its session workspaces. A refusal is `429` naming the limit, with
//! `Retry-After` when waiting helps.
//!
//! What is counted lives in the session store, so servers sharing one (PostgreSQL) enforce one
//! limit together: sessions and running turns are counted from the store's session list, and
//! the message bucket is a principal-scope storage entry updated with compare-and-set. Storage
//! bytes are measured on this server's disk (workspaces are per server) at each create.

use std::collections::BTreeMap;
use std::sync::RwLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use folio_project::{Limits, PrincipalLimits};
use folio_protocol::{LimitUsage, LimitValues, SessionStatus, StorageScope};
use folio_store::{Condition, ListQuery, Namespace, SessionFilter, Written};
use serde::{Deserialize, Serialize};

use crate::engine::Engine; // layering: the engine holds the quotas' state; checking them reads its store and agent
use crate::error::{ManagerError, store_error};
use crate::state::SessionMeta;

/// How often a bucket update that met another server's is tried again before giving up.
const BUCKET_TRIES: usize = 8;

/// The storage key of a principal's message bucket.
const BUCKET_KEY: &str = "messages";

/// The principals' own quotas.
#[derive(Default)]
pub(crate) struct Quotas {
    own: RwLock<BTreeMap<String, PrincipalLimits>>,
}

/// A message bucket as stored: whole and partial messages left, as of `at`.
#[derive(Debug, Serialize, Deserialize)]
struct Bucket {
    tokens: f64,
    at: DateTime<Utc>,
}

/// What [`Quotas::admit`] checks besides the message bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sending<'a> {
    /// A create: sessions held, running turns, storage.
    Create,
    /// A message to `session`: running turns of the principal's other sessions.
    FollowUp(&'a str),
}

impl Quotas {
    /// Replaces every principal's own quotas.
    pub(crate) fn set_own(&self, own: BTreeMap<String, PrincipalLimits>) {
        *self
            .own
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = own;
    }

    /// `principal`'s limits: the agent's `[limits]` with its own quotas over them.
    pub(crate) fn limits_of(&self, engine: &Engine, principal: &str) -> Limits {
        let limits = engine.agent.get().definition.limits;
        match self
            .own
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(principal)
        {
            Some(own) => limits.with(own),
            None => limits,
        }
    }

    /// Admits one message of `principal` (a create or a follow-up), or refuses it with `429`
    /// naming the limit; counted in the `folio.limits.refused` metric.
    pub(crate) async fn admit(
        &self,
        engine: &Engine,
        principal: &str,
        send: Sending<'_>,
    ) -> Result<(), ManagerError> {
        let limits = self.limits_of(engine, principal);
        let result = self.check(engine, principal, send, &limits).await;
        if let Err(ManagerError::Limited { message, .. }) = &result {
            let limit = message.split(':').next().unwrap_or_default();
            folio_telemetry::metrics::limit_refused(&engine.agent().definition.name, limit);
        }
        result
    }

    async fn check(
        &self,
        engine: &Engine,
        principal: &str,
        send: Sending<'_>,
        limits: &Limits,
    ) -> Result<(), ManagerError> {
        let create = send == Sending::Create;
        // Each limit reads only the sessions it counts, from the store's session index.
        if let Some(most) = limits.running_turns {
            let wanted = usize::try_from(most.saturating_add(1)).unwrap_or(usize::MAX);
            let running = sessions_of(engine, principal, Some(SessionStatus::Running), wanted)
                .await?
                .iter()
                .filter(|meta| send != Sending::FollowUp(meta.session_id.as_str()))
                .count() as u64;
            if running >= most {
                return Err(ManagerError::Limited {
                    message: format!(
                        "running_turns: {running} of your turns are running; at most {most} may run at once ([limits] running_turns): wait for one to end"
                    ),
                    retry_after: Some(Duration::from_secs(1)),
                });
            }
        }
        let held = if create && (limits.sessions.is_some() || limits.storage_bytes.is_some()) {
            held_sessions(engine, principal, limits).await?
        } else {
            Vec::new()
        };
        if let (true, Some(most)) = (create, limits.sessions) {
            let count = held.len() as u64;
            if count >= most {
                return Err(ManagerError::Limited {
                    message: format!(
                        "sessions: you hold {count} sessions; at most {most} are allowed ([limits] sessions): delete sessions first"
                    ),
                    retry_after: None,
                });
            }
        }
        if let (true, Some(most)) = (create, limits.storage_bytes) {
            let stored = Self::storage_bytes(engine, &held)?;
            if stored >= most {
                return Err(ManagerError::Limited {
                    message: format!(
                        "storage_bytes: your session workspaces hold {stored} bytes; at most {most} are allowed ([limits] storage_bytes): delete sessions first"
                    ),
                    retry_after: None,
                });
            }
        }
        match limits.messages_per_minute {
            Some(per_minute) => take_message(engine, principal, per_minute).await,
            None => Ok(()),
        }
    }

    /// `principal`'s limits and usage, for `GET /v1/limits`.
    pub(crate) async fn report(
        &self,
        engine: &Engine,
        principal: &str,
    ) -> Result<(LimitValues, LimitUsage), ManagerError> {
        let limits = self.limits_of(engine, principal);
        let held = held_sessions(engine, principal, &limits).await?;
        let running = sessions_of(engine, principal, Some(SessionStatus::Running), usize::MAX)
            .await?
            .len() as u64;
        let storage_bytes = Self::storage_bytes(engine, &held)?;
        let messages_available = match limits.messages_per_minute {
            Some(per_minute) => {
                let (bucket, _) = read_bucket(engine, principal, per_minute, Utc::now()).await?;
                Some(bucket.tokens.floor() as u64)
            }
            None => None,
        };
        Ok((
            values(&limits),
            LimitUsage {
                sessions: held.len() as u64,
                running_turns: running,
                messages_available,
                storage_bytes,
            },
        ))
    }

    /// The bytes of `held`'s workspaces on this server (walked each time: the cost grows with
    /// the principal's files).
    fn storage_bytes(engine: &Engine, held: &[SessionMeta]) -> Result<u64, ManagerError> {
        let mut bytes = 0;
        for meta in held {
            // A session whose workspace is elsewhere or gone holds nothing here.
            let Ok(dir) = engine.workspace_of(meta) else {
                continue;
            };
            if dir.is_dir() {
                bytes += folio_fs::usage_of(&dir)
                    .map_err(|err| ManagerError::internal_from("cannot measure a workspace", err))?
                    .bytes;
            }
        }
        Ok(bytes)
    }
}

/// The `[limits]` values on the wire.
fn values(limits: &Limits) -> LimitValues {
    let Limits {
        workspace_files,
        workspace_bytes,
        message_bytes,
        send_files,
        send_bytes,
        sessions,
        running_turns,
        messages_per_minute,
        tool_calls_per_turn,
        storage_bytes,
    } = *limits;
    LimitValues {
        workspace_files,
        workspace_bytes,
        message_bytes,
        send_files,
        send_bytes,
        sessions,
        running_turns,
        messages_per_minute,
        tool_calls_per_turn,
        storage_bytes,
    }
}

/// `principal`'s sessions in the store: up to its session limit plus one, else all (what the
/// storage limit walks).
async fn held_sessions(
    engine: &Engine,
    principal: &str,
    limits: &Limits,
) -> Result<Vec<SessionMeta>, ManagerError> {
    let most = match (limits.sessions, limits.storage_bytes) {
        (Some(most), None) => usize::try_from(most.saturating_add(1)).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    sessions_of(engine, principal, None, most).await
}

/// Up to `limit` of `principal`'s sessions (in `status`, when given), newest first.
async fn sessions_of(
    engine: &Engine,
    principal: &str,
    status: Option<SessionStatus>,
    limit: usize,
) -> Result<Vec<SessionMeta>, ManagerError> {
    let query = ListQuery {
        principal: Some(principal.to_string()),
        before: None,
        limit,
        filter: SessionFilter {
            status,
            ..Default::default()
        },
    };
    engine
        .store
        .list_sessions(&query)
        .await
        .map_err(|err| store_error("cannot count the sessions", err))
}

/// The namespace of `principal`'s counters: principal scope under an agent name no agent can
/// have (empty), so no tool's storage meets it.
fn namespace(principal: &str) -> Namespace {
    Namespace {
        scope: StorageScope::Principal,
        agent: String::new(),
        owner: principal.to_string(),
    }
}

/// The bucket as of `now` (refilled) and the condition a write of it must meet.
async fn read_bucket(
    engine: &Engine,
    principal: &str,
    per_minute: u64,
    now: DateTime<Utc>,
) -> Result<(Bucket, Condition), ManagerError> {
    let capacity = per_minute as f64;
    let entry = engine
        .store
        .storage()
        .get(&namespace(principal), BUCKET_KEY, now)
        .await
        .map_err(|err| store_error("cannot read the message bucket", err))?;
    let Some(entry) = entry else {
        return Ok((
            Bucket {
                tokens: capacity,
                at: now,
            },
            Condition::Absent,
        ));
    };
    let stored: Bucket = serde_json::from_value(entry.value).unwrap_or(Bucket {
        tokens: capacity,
        at: now,
    });
    let elapsed = (now - stored.at).to_std().unwrap_or_default().as_secs_f64();
    let tokens = (stored.tokens + elapsed * capacity / 60.0).min(capacity);
    Ok((
        Bucket { tokens, at: now },
        Condition::Version(entry.version),
    ))
}

/// Takes one message from `principal`'s bucket of `per_minute`, or says how long to wait.
async fn take_message(
    engine: &Engine,
    principal: &str,
    per_minute: u64,
) -> Result<(), ManagerError> {
    for _ in 0..BUCKET_TRIES {
        let now = Utc::now();
        let (bucket, condition) = read_bucket(engine, principal, per_minute, now).await?;
        if bucket.tokens < 1.0 {
            let wait = (1.0 - bucket.tokens) * 60.0 / per_minute as f64;
            return Err(ManagerError::Limited {
                message: format!(
                    "messages_per_minute: you sent more than {per_minute} messages in the last minute ([limits] messages_per_minute): wait and send again"
                ),
                retry_after: Some(Duration::from_secs_f64(wait.max(0.001))),
            });
        }
        let taken = Bucket {
            tokens: bucket.tokens - 1.0,
            at: now,
        };
        let value = serde_json::to_value(&taken)
            .map_err(|err| ManagerError::internal_from("cannot write the message bucket", err))?;
        // A full bucket is no different from none: the entry expires once it would be full.
        let expires = now + chrono::Duration::seconds(61);
        match engine
            .store
            .storage()
            .put(
                &namespace(principal),
                BUCKET_KEY,
                &value,
                condition,
                Some(expires),
                now,
            )
            .await
            .map_err(|err| store_error("cannot write the message bucket", err))?
        {
            Written::Done(_) => return Ok(()),
            Written::Conflict(_) => continue,
        }
    }
    Err(ManagerError::Limited {
        message: "messages_per_minute: too many messages at once; send again".to_string(),
        retry_after: Some(Duration::from_secs(1)),
    })
}
