//! [`SessionStore`] for PostgreSQL: each method is one of the store's operations, its error
//! mapped onto [`StoreError`].

use std::time::Duration;

use chrono::{DateTime, Utc};
use folio_protocol::{ArtifactRecord, Event, Reminder};
use folio_store::{
    Appends, CreateKey, DeliveryStore, Lease, ListQuery, NewEvent, RetentionReport, SessionMeta,
    SessionStore, Signal, Signals, StorageStore, StoreError,
};

use tokio::sync::broadcast;

use crate::{Notice, PgStore};

#[async_trait::async_trait]
impl SessionStore for PgStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    /// Appends are round trips: a running turn's events are gathered for 20 ms (measured in
    /// bench/RESULTS.md, "Session stores": one 24-event append 0.74 ms, 24 single ones 11.8 ms).
    fn publish_interval(&self) -> Duration {
        Duration::from_millis(20)
    }

    fn deliveries(&self) -> std::sync::Arc<dyn DeliveryStore> {
        std::sync::Arc::new(self.clone())
    }

    fn storage(&self) -> std::sync::Arc<dyn StorageStore> {
        std::sync::Arc::new(self.clone())
    }

    async fn create_session(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        Ok(self.create(meta).await?)
    }

    async fn load_session(&self, session_id: &str) -> Result<Option<SessionMeta>, StoreError> {
        Ok(self.load(session_id).await?)
    }

    async fn save_session(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        Ok(self.save(meta).await?)
    }

    async fn list_sessions(&self, query: &ListQuery) -> Result<Vec<SessionMeta>, StoreError> {
        Ok(self.list(query).await?)
    }

    async fn delete_session(&self, session_id: &str) -> Result<(), StoreError> {
        Ok(self.delete(session_id).await?)
    }

    async fn append(
        &self,
        session_id: &str,
        expected: u64,
        fence: Option<u64>,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Event>, StoreError> {
        Ok(self
            .append_events(session_id, expected, fence, events, None)
            .await?)
    }

    /// Every append is durable when it returns (its own transaction, gathered with other
    /// sessions' writes), so a commit only writes the metadata, when given, the same way.
    async fn commit(
        &self,
        _session_id: &str,
        meta: Option<&SessionMeta>,
    ) -> Result<(), StoreError> {
        if let Some(meta) = meta {
            self.save_durably(meta).await?;
        }
        Ok(())
    }

    /// The metadata is a column of the point's transaction.
    fn metadata_rides_durable_points(&self) -> bool {
        true
    }

    /// Sessions are rows only the store deletes, and each delete notifies every follower.
    fn deletes_end_followers(&self) -> bool {
        true
    }

    /// The events and the metadata in one transaction, which notifies once.
    async fn append_and_commit(
        &self,
        session_id: &str,
        expected: u64,
        fence: Option<u64>,
        events: Vec<NewEvent>,
        meta: Option<&SessionMeta>,
    ) -> Result<Vec<Event>, StoreError> {
        Ok(self
            .append_events(session_id, expected, fence, events, meta)
            .await?)
    }

    async fn read_events(
        &self,
        session_id: &str,
        start_index: u64,
        limit: Option<usize>,
    ) -> Result<Vec<Event>, StoreError> {
        Ok(self
            .read_events_from(session_id, start_index, limit)
            .await?)
    }

    async fn last_event(&self, session_id: &str) -> Result<Option<Event>, StoreError> {
        Ok(self.last_event_of(session_id).await?)
    }

    async fn read_back(
        &self,
        session_id: &str,
        start_index: u64,
    ) -> Result<Option<(SessionMeta, Vec<Event>)>, StoreError> {
        Ok(self.read_back_from(session_id, start_index).await?)
    }

    async fn follow(&self, session_id: &str) -> Result<Appends, StoreError> {
        Ok(self.follow_appends(session_id, None).await?)
    }

    async fn follow_created(&self, session_id: &str) -> Result<Appends, StoreError> {
        Ok(self.follow_appends(session_id, Some(None)).await?)
    }

    async fn acquire_lease(
        &self,
        session_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError> {
        Ok(self.acquire(session_id, owner, ttl).await?)
    }

    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        Ok(self.renew(lease, ttl).await?)
    }

    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        Ok(self.release(lease).await?)
    }

    async fn expired_leases(&self) -> Result<Vec<Lease>, StoreError> {
        Ok(self.expired().await?)
    }

    async fn record_create_key(&self, record: &CreateKey) -> Result<Option<CreateKey>, StoreError> {
        Ok(self.record_key(record).await?)
    }

    async fn claim_slot(
        &self,
        schedule: &str,
        slot: DateTime<Utc>,
        owner: &str,
    ) -> Result<bool, StoreError> {
        Ok(self.claim(schedule, slot, owner).await?)
    }

    async fn signal(&self, session_id: &str, message: &str) -> Result<(), StoreError> {
        Ok(PgStore::signal(self, session_id, message).await?)
    }

    /// The control messages of [`PgStore::notices`] (a follower that falls behind skips what
    /// it missed: signals are not durable).
    async fn signals(&self) -> Result<Signals, StoreError> {
        Ok(Box::pin(futures::stream::unfold(
            self.notices(),
            |mut notices| async move {
                loop {
                    match notices.recv().await {
                        Ok(Notice::Control {
                            session_id,
                            message,
                        }) => {
                            return Some((
                                Signal {
                                    session_id,
                                    message,
                                },
                                notices,
                            ));
                        }
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => return None,
                    }
                }
            },
        )))
    }

    async fn delete_expired_sessions(
        &self,
        before: DateTime<Utc>,
    ) -> Result<RetentionReport, StoreError> {
        Ok(PgStore::delete_expired_sessions(self, before).await?)
    }

    async fn put_reminder(&self, reminder: &Reminder) -> Result<(), StoreError> {
        Ok(self.put_reminder_row(reminder).await?)
    }

    async fn remove_reminder(
        &self,
        session_id: &str,
        reminder_id: &str,
    ) -> Result<bool, StoreError> {
        Ok(self.remove_reminder_row(session_id, reminder_id).await?)
    }

    async fn session_reminders(&self, session_id: &str) -> Result<Vec<Reminder>, StoreError> {
        Ok(self
            .reminder_rows(Some(session_id), None, usize::MAX)
            .await?)
    }

    async fn due_reminders(
        &self,
        until: Option<DateTime<Utc>>,
        limit: usize,
    ) -> Result<Vec<Reminder>, StoreError> {
        Ok(self.reminder_rows(None, until, limit).await?)
    }

    async fn put_artifact(
        &self,
        record: &ArtifactRecord,
        contents: Option<&[u8]>,
        max: usize,
    ) -> Result<ArtifactRecord, StoreError> {
        Ok(self.put_artifact_row(record, contents, max).await?)
    }

    async fn list_artifacts(&self) -> Result<Vec<ArtifactRecord>, StoreError> {
        Ok(self.artifact_rows().await?)
    }

    async fn get_artifact(&self, id: &str) -> Result<Option<ArtifactRecord>, StoreError> {
        Ok(self.artifact_row(id).await?)
    }

    async fn artifact_content(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.artifact_content_row(id).await?)
    }

    async fn mcp_credentials(
        &self,
        principal: &str,
        connection: &str,
    ) -> Result<Option<serde_json::Value>, StoreError> {
        Ok(self.credentials_row(principal, connection).await?)
    }

    async fn put_mcp_credentials(
        &self,
        principal: &str,
        connection: &str,
        credentials: &serde_json::Value,
    ) -> Result<(), StoreError> {
        Ok(self
            .put_credentials_row(principal, connection, Some(credentials))
            .await?)
    }

    async fn clear_mcp_credentials(
        &self,
        principal: &str,
        connection: &str,
    ) -> Result<(), StoreError> {
        Ok(self
            .put_credentials_row(principal, connection, None)
            .await?)
    }

    async fn import_session(&self, meta: &SessionMeta, events: &[Event]) -> Result<(), StoreError> {
        Ok(self.import_session_rows(meta, events).await?)
    }

    async fn list_create_keys(
        &self,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<CreateKey>, StoreError> {
        Ok(self.create_key_rows(after, limit).await?)
    }

    async fn copy_marker(&self) -> Result<Option<String>, StoreError> {
        Ok(self.copy_marker_row().await?)
    }

    async fn set_copy_marker(&self, marker: Option<&str>) -> Result<(), StoreError> {
        Ok(self.set_copy_marker_row(marker).await?)
    }

    async fn delete_unacknowledged_sessions(
        &self,
        older_than: Duration,
    ) -> Result<Vec<SessionMeta>, StoreError> {
        let older_than_ms = i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX);
        Ok(self.delete_unacknowledged(older_than_ms).await?)
    }
}
