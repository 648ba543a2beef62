//! The store conformance suite catches a backend that breaks its promises: the disk store
//! behind a wrapper that breaks one (an append's order, a lease's exclusion, a create key's
//! record) fails the suite's case for it, while the faithful wrapper passes the same cases.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use folio_protocol::{ArtifactRecord, Event, Reminder};
use folio_store::{
    Appends, CreateKey, DeliveryStore, Lease, ListQuery, NewEvent, RetentionReport, SessionMeta,
    SessionStore, Signals, StoreError, suite,
};
use folio_store_disk::{DiskStore, StateRoot};

/// Which promise the wrapper breaks.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Flaw {
    /// None: every call goes to the disk store as it is.
    Faithful,
    /// An append lands at the log's end whatever index it expected (no `Conflict`).
    AppendIgnoresExpected,
    /// A live lease never refuses another owner (no `LeaseHeld`).
    LeaseNeverExcludes,
    /// A create key is recorded but never found again (every retry looks new).
    CreateKeyForgotten,
}

/// The disk store with one [`Flaw`].
struct Mutant {
    inner: DiskStore,
    flaw: Flaw,
}

#[async_trait::async_trait]
impl SessionStore for Mutant {
    fn backend(&self) -> &'static str {
        "disk (mutant)"
    }
    fn deliveries(&self) -> Arc<dyn DeliveryStore> {
        self.inner.deliveries()
    }
    fn storage(&self) -> Arc<dyn folio_store::StorageStore> {
        self.inner.storage()
    }
    fn publish_interval(&self) -> Duration {
        self.inner.publish_interval()
    }
    async fn close(&self) {
        self.inner.close().await;
    }
    async fn create_session(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        self.inner.create_session(meta).await
    }
    async fn load_session(&self, session_id: &str) -> Result<Option<SessionMeta>, StoreError> {
        self.inner.load_session(session_id).await
    }
    async fn save_session(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        self.inner.save_session(meta).await
    }
    async fn list_sessions(&self, query: &ListQuery) -> Result<Vec<SessionMeta>, StoreError> {
        self.inner.list_sessions(query).await
    }
    async fn delete_session(&self, session_id: &str) -> Result<(), StoreError> {
        self.inner.delete_session(session_id).await
    }
    async fn append(
        &self,
        session_id: &str,
        expected: u64,
        fence: Option<u64>,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Event>, StoreError> {
        let expected = match self.flaw {
            Flaw::AppendIgnoresExpected => self
                .inner
                .last_event(session_id)
                .await?
                .map_or(0, |last| last.index + 1),
            _ => expected,
        };
        self.inner.append(session_id, expected, fence, events).await
    }
    async fn commit(&self, session_id: &str, meta: Option<&SessionMeta>) -> Result<(), StoreError> {
        self.inner.commit(session_id, meta).await
    }
    async fn read_events(
        &self,
        session_id: &str,
        start_index: u64,
        limit: Option<usize>,
    ) -> Result<Vec<Event>, StoreError> {
        self.inner.read_events(session_id, start_index, limit).await
    }
    async fn last_event(&self, session_id: &str) -> Result<Option<Event>, StoreError> {
        self.inner.last_event(session_id).await
    }
    async fn follow(&self, session_id: &str) -> Result<Appends, StoreError> {
        self.inner.follow(session_id).await
    }
    async fn acquire_lease(
        &self,
        session_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError> {
        match self.inner.acquire_lease(session_id, owner, ttl).await {
            Err(StoreError::LeaseHeld { .. }) if self.flaw == Flaw::LeaseNeverExcludes => {
                Ok(Lease {
                    session_id: session_id.to_string(),
                    owner: owner.to_string(),
                    fence: u64::MAX,
                    expires_at: Utc::now() + ttl,
                    took_over: None,
                })
            }
            other => other,
        }
    }
    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        self.inner.renew_lease(lease, ttl).await
    }
    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        self.inner.release_lease(lease).await
    }
    async fn expired_leases(&self) -> Result<Vec<Lease>, StoreError> {
        self.inner.expired_leases().await
    }
    async fn record_create_key(&self, record: &CreateKey) -> Result<Option<CreateKey>, StoreError> {
        let found = self.inner.record_create_key(record).await?;
        Ok(found.filter(|_| self.flaw != Flaw::CreateKeyForgotten))
    }
    async fn claim_slot(
        &self,
        schedule: &str,
        slot: DateTime<Utc>,
        owner: &str,
    ) -> Result<bool, StoreError> {
        self.inner.claim_slot(schedule, slot, owner).await
    }
    async fn signal(&self, session_id: &str, message: &str) -> Result<(), StoreError> {
        self.inner.signal(session_id, message).await
    }
    async fn signals(&self) -> Result<Signals, StoreError> {
        self.inner.signals().await
    }
    async fn delete_expired_sessions(
        &self,
        before: DateTime<Utc>,
    ) -> Result<RetentionReport, StoreError> {
        self.inner.delete_expired_sessions(before).await
    }
    async fn put_reminder(&self, reminder: &Reminder) -> Result<(), StoreError> {
        self.inner.put_reminder(reminder).await
    }
    async fn remove_reminder(
        &self,
        session_id: &str,
        reminder_id: &str,
    ) -> Result<bool, StoreError> {
        self.inner.remove_reminder(session_id, reminder_id).await
    }
    async fn session_reminders(&self, session_id: &str) -> Result<Vec<Reminder>, StoreError> {
        self.inner.session_reminders(session_id).await
    }
    async fn due_reminders(
        &self,
        until: Option<DateTime<Utc>>,
        limit: usize,
    ) -> Result<Vec<Reminder>, StoreError> {
        self.inner.due_reminders(until, limit).await
    }
    async fn delete_unacknowledged_sessions(
        &self,
        older_than: Duration,
    ) -> Result<Vec<SessionMeta>, StoreError> {
        self.inner.delete_unacknowledged_sessions(older_than).await
    }
    async fn put_artifact(
        &self,
        record: &ArtifactRecord,
        contents: Option<&[u8]>,
        max: usize,
    ) -> Result<ArtifactRecord, StoreError> {
        self.inner.put_artifact(record, contents, max).await
    }
    async fn list_artifacts(&self) -> Result<Vec<ArtifactRecord>, StoreError> {
        self.inner.list_artifacts().await
    }
    async fn get_artifact(&self, id: &str) -> Result<Option<ArtifactRecord>, StoreError> {
        self.inner.get_artifact(id).await
    }
    async fn artifact_content(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.artifact_content(id).await
    }
    async fn mcp_credentials(
        &self,
        principal: &str,
        connection: &str,
    ) -> Result<Option<serde_json::Value>, StoreError> {
        self.inner.mcp_credentials(principal, connection).await
    }
    async fn put_mcp_credentials(
        &self,
        principal: &str,
        connection: &str,
        credentials: &serde_json::Value,
    ) -> Result<(), StoreError> {
        self.inner
            .put_mcp_credentials(principal, connection, credentials)
            .await
    }
    async fn clear_mcp_credentials(
        &self,
        principal: &str,
        connection: &str,
    ) -> Result<(), StoreError> {
        self.inner
            .clear_mcp_credentials(principal, connection)
            .await
    }
    async fn import_session(&self, meta: &SessionMeta, events: &[Event]) -> Result<(), StoreError> {
        self.inner.import_session(meta, events).await
    }
    async fn list_create_keys(
        &self,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<CreateKey>, StoreError> {
        self.inner.list_create_keys(after, limit).await
    }
    async fn copy_marker(&self) -> Result<Option<String>, StoreError> {
        self.inner.copy_marker().await
    }
    async fn set_copy_marker(&self, marker: Option<&str>) -> Result<(), StoreError> {
        self.inner.set_copy_marker(marker).await
    }
}

/// A suite case: takes a fresh store, panics when it breaks a promise.
type Case = fn(Arc<dyn SessionStore>) -> futures::future::BoxFuture<'static, ()>;

/// The suite's case for each promise, and the flaw that breaks it.
fn promises() -> [(&'static str, Case, Flaw); 3] {
    [
        (
            "append order",
            |store| Box::pin(suite::appends_are_ordered_and_read_back(store)),
            Flaw::AppendIgnoresExpected,
        ),
        (
            "lease exclusion",
            |store| Box::pin(suite::leases_exclude_and_expire(store)),
            Flaw::LeaseNeverExcludes,
        ),
        (
            "create key",
            |store| Box::pin(suite::a_create_key_is_recorded_once(store)),
            Flaw::CreateKeyForgotten,
        ),
    ]
}

/// Whether `case` passes against a fresh disk store with `flaw`.
async fn passes(case: Case, flaw: Flaw) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let inner = DiskStore::open(StateRoot::new(dir.path())).unwrap();
    let store: Arc<dyn SessionStore> = Arc::new(Mutant { inner, flaw });
    match tokio::spawn(case(store)).await {
        Ok(()) => true,
        Err(err) if err.is_panic() => false,
        Err(err) => panic!("the suite case did not run: {err}"),
    }
}

#[tokio::test]
async fn the_suite_fails_each_broken_promise_and_passes_the_faithful_store() {
    for (promise, case, flaw) in promises() {
        assert!(
            passes(case, Flaw::Faithful).await,
            "{promise}: the faithful wrapper must pass"
        );
        assert!(
            !passes(case, flaw).await,
            "{promise}: the suite let {flaw:?} through"
        );
    }
}
