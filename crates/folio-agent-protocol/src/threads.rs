//! Thread and run records, kept in the session store's key-value entries so that they survive a
//! restart and every server sharing a `--store` sees the same threads.
//!
//! Each principal's records are one namespace (scope `principal`, agent `<slug>:agent-protocol`,
//! owner the principal): another principal's threads are not found, two principals may use the
//! same thread id, and no session's host-API token can reach them (the host API's namespaces
//! carry the agent's own name). Keys: `thread/<thread_id>` for a thread and
//! `run/<thread_id>/<run_id>` for each of its runs (run ids are UUIDv7, so key order is the
//! order they started in).

use std::sync::Arc;

use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use folio_protocol::StorageScope;
use folio_store::{Condition, Namespace, StorageStore, StoreError, Written};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ApError;
use crate::runs::Run;

/// A thread record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Thread {
    pub(crate) thread_id: String,
    /// Its session, from its first run on.
    pub(crate) session_id: Option<String>,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) updated_at: DateTime<Utc>,
    pub(crate) metadata: Value,
    /// Its runs, oldest first (read with the thread; stored under their own keys).
    #[serde(skip)]
    pub(crate) runs: Vec<Run>,
}

/// The thread and run records of one agent.
pub(crate) struct Threads {
    storage: Arc<dyn StorageStore>,
    /// `<slug>:agent-protocol`: a name no agent has (slugs have no `:`).
    agent: String,
}

impl From<StoreError> for ApError {
    fn from(err: StoreError) -> ApError {
        ApError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the thread records could not be read or written ({err}); retry"),
        )
    }
}

/// A stored record that does not read as one (written by another version?).
fn unreadable(key: &str, err: &serde_json::Error) -> ApError {
    ApError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!(
            "the stored record {key} cannot be read ({err}); delete the thread and start a new one"
        ),
    )
}

impl Threads {
    /// The records of agent `slug` in `storage`.
    pub(crate) fn new(storage: Arc<dyn StorageStore>, slug: &str) -> Threads {
        Threads {
            storage,
            agent: format!("{slug}:agent-protocol"),
        }
    }

    fn namespace(&self, caller: &str) -> Namespace {
        Namespace {
            scope: StorageScope::Principal,
            agent: self.agent.clone(),
            owner: caller.to_string(),
        }
    }

    /// The caller's thread with its runs, if it has one by that id.
    pub(crate) async fn get(
        &self,
        caller: &str,
        thread_id: &str,
    ) -> Result<Option<Thread>, ApError> {
        let namespace = self.namespace(caller);
        let key = format!("thread/{thread_id}");
        let Some(entry) = self.storage.get(&namespace, &key, Utc::now()).await? else {
            return Ok(None);
        };
        let mut thread: Thread =
            serde_json::from_value(entry.value).map_err(|err| unreadable(&key, &err))?;
        thread.runs = self
            .all(&namespace, &format!("run/{thread_id}/"))
            .await?
            .into_iter()
            .map(|(key, value)| serde_json::from_value(value).map_err(|err| unreadable(&key, &err)))
            .collect::<Result<_, _>>()?;
        Ok(Some(thread))
    }

    /// Stores a new thread; `false` when the caller has one by that id already.
    pub(crate) async fn create(&self, caller: &str, thread: &Thread) -> Result<bool, ApError> {
        let written = self
            .storage
            .put(
                &self.namespace(caller),
                &format!("thread/{}", thread.thread_id),
                &record(thread),
                Condition::Absent,
                None,
                Utc::now(),
            )
            .await?;
        Ok(matches!(written, Written::Done(_)))
    }

    /// Stores a thread's session and `updated_at`, and its new run.
    pub(crate) async fn add_run(
        &self,
        caller: &str,
        thread: &Thread,
        run: &Run,
    ) -> Result<(), ApError> {
        let namespace = self.namespace(caller);
        let now = Utc::now();
        let run_value = serde_json::to_value(run).unwrap_or_default();
        let key = format!("run/{}/{}", thread.thread_id, run.run_id);
        self.storage
            .put(&namespace, &key, &run_value, Condition::Any, None, now)
            .await?;
        let key = format!("thread/{}", thread.thread_id);
        self.storage
            .put(&namespace, &key, &record(thread), Condition::Any, None, now)
            .await?;
        Ok(())
    }

    /// The caller's threads (without their runs), in no particular order.
    pub(crate) async fn list(&self, caller: &str) -> Result<Vec<Thread>, ApError> {
        self.all(&self.namespace(caller), "thread/")
            .await?
            .into_iter()
            .map(|(key, value)| serde_json::from_value(value).map_err(|err| unreadable(&key, &err)))
            .collect()
    }

    /// Removes a thread and its runs; `false` when the caller had no thread by that id.
    pub(crate) async fn delete(&self, caller: &str, thread_id: &str) -> Result<bool, ApError> {
        let namespace = self.namespace(caller);
        let now = Utc::now();
        for (key, _) in self.all(&namespace, &format!("run/{thread_id}/")).await? {
            self.storage
                .delete(&namespace, &key, Condition::Any, now)
                .await?;
        }
        let written = self
            .storage
            .delete(
                &namespace,
                &format!("thread/{thread_id}"),
                Condition::Any,
                now,
            )
            .await?;
        Ok(matches!(written, Written::Done(Some(_))))
    }

    /// Every entry under `prefix`, page by page, in key order.
    async fn all(
        &self,
        namespace: &Namespace,
        prefix: &str,
    ) -> Result<Vec<(String, Value)>, ApError> {
        let mut out = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .storage
                .list(
                    namespace,
                    prefix,
                    after.as_deref(),
                    folio_store::MAX_LIST,
                    Utc::now(),
                )
                .await?;
            out.extend(page.entries.into_iter().map(|e| (e.key, e.value)));
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(out),
            }
        }
    }
}

/// A thread as stored (its runs are stored apart).
fn record(thread: &Thread) -> Value {
    serde_json::to_value(thread).unwrap_or_default()
}
