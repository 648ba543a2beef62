//! Channel deliveries in the store: what a channel received (deduplicated by id for 24 h), the
//! work a server claimed and has not finished, the continuation keys that pick a session, the
//! replies already reported, and which server follows a session to answer the provider.
//!
//! Every server of one store shares these, so a provider's retry that reaches another server is
//! still a duplicate, the work of a dead server's deliveries is claimed by a live one once its
//! claim expires, one continuation key opens one session, one server at a time follows a
//! session, and a turn's reply is reported once.

use std::time::Duration;

use chrono::{DateTime, Utc};
use folio_protocol::{DeliveryInfo, DeliveryRetry, DeliveryStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::StoreError;

/// How long a delivery id is remembered: the same id received within it is a duplicate.
pub fn dedup_window() -> chrono::Duration {
    chrono::Duration::hours(24)
}

/// One received delivery as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceivedDelivery {
    /// The delivery id (the provider's, or one the channel made up).
    pub id: String,
    /// When it arrived (kept to the microsecond).
    pub received_at: DateTime<Utc>,
    /// Its route or event.
    pub route: String,
    /// The provider announced this request as a retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<DeliveryRetry>,
    /// What the channel decided to do with it (its work, or why nothing runs), kept as given.
    #[serde(flatten)]
    pub decision: Map<String, Value>,
}

/// Whether a received delivery is new ([`DeliveryStore::receive_delivery`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admitted {
    /// First time within 24 h: recorded and claimed by the receiver; its work must run.
    New,
    /// Seen within 24 h: counted, not run again.
    Duplicate,
}

/// What became of a delivery's work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryOutcome {
    /// Accepted, ignored or failed.
    pub status: DeliveryStatus,
    /// The session it reached.
    pub session_id: Option<String>,
    /// Why it was ignored or failed.
    pub message: Option<String>,
}

/// A continuation key's binding ([`DeliveryStore::reserve_continuation`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Continuation {
    /// The key names this session.
    Bound(String),
    /// The key names none: the caller holds it until it binds it or the reservation expires.
    Reserved,
    /// Another caller holds the key's reservation: ask again shortly.
    Busy,
}

/// A session followed to answer a provider: from which delivery's message, with the latest
/// delivery's context.
#[derive(Debug, Clone, PartialEq)]
pub struct Follow {
    /// The session.
    pub session_id: String,
    /// The delivery whose message the follower starts from.
    pub delivery_id: String,
    /// The latest delivery's context (its body: reply templates' `state`, GitHub's PR).
    pub context: Value,
    /// A check run queued for the session's next turn (GitHub).
    pub queued_check: Option<u64>,
    /// Counts the deliveries that reached the session while it was followed.
    pub generation: u64,
}

/// Who follows a session once a delivery reached it ([`DeliveryStore::follow_session`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Followed {
    /// Nobody did (or its follower's claim expired): the caller follows it now.
    Started(Follow),
    /// A follower runs (on this server or another) and will see the new delivery.
    Running,
}

/// One channel's record as `folio store copy` moves it between stores: what it received and
/// bound, without its claims and follows (which belong to running servers).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChannelRecord {
    /// Its deliveries in arrival order (oldest first): each as received, and what became of it
    /// (status, session, message, duplicates, announced retries).
    pub deliveries: Vec<(ReceivedDelivery, DeliveryInfo)>,
    /// Its continuation keys with the sessions they name, by key (byte order).
    pub continuations: Vec<(String, String)>,
    /// The turns whose end was reported (or given up), `(session, turn)`, in byte order.
    pub replies: Vec<(String, String)>,
}

impl ChannelRecord {
    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.deliveries.is_empty() && self.continuations.is_empty() && self.replies.is_empty()
    }
}

/// Where channels keep their deliveries, continuation keys, reported replies and followers.
///
/// Every method names its channel; `owner` is the calling server's id, and a claim it takes
/// lives `ttl` unless renewed. Every method may fail with [`StoreError::Unavailable`]
/// (retryable) or a backend error.
#[async_trait::async_trait]
pub trait DeliveryStore: Send + Sync {
    /// Records `delivery` durably unless its id was received within 24 h before it (then the
    /// duplicate and its announced retry are counted and nothing else happens). A new one is
    /// pending, claimed by `owner` for `ttl`.
    async fn receive_delivery(
        &self,
        channel: &str,
        delivery: &ReceivedDelivery,
        owner: &str,
        ttl: Duration,
    ) -> Result<Admitted, StoreError>;

    /// Records what became of delivery `id`, durably.
    async fn finish_delivery(
        &self,
        channel: &str,
        id: &str,
        outcome: &DeliveryOutcome,
    ) -> Result<(), StoreError>;

    /// The pending deliveries whose claim expired (a server died or gave up on them), oldest
    /// first, now claimed by `owner` for `ttl`.
    async fn claim_deliveries(
        &self,
        channel: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Vec<ReceivedDelivery>, StoreError>;

    /// Every delivery of the channel, newest first.
    async fn list_deliveries(&self, channel: &str) -> Result<Vec<DeliveryInfo>, StoreError>;

    /// The session continuation `key` names.
    async fn continuation(&self, channel: &str, key: &str) -> Result<Option<String>, StoreError>;

    /// The session `key` names, or the key reserved for `owner` (for `ttl`) to open one;
    /// `stale`: a session the key named that is gone, so the key counts as naming none.
    async fn reserve_continuation(
        &self,
        channel: &str,
        key: &str,
        stale: Option<&str>,
        owner: &str,
        ttl: Duration,
    ) -> Result<Continuation, StoreError>;

    /// Binds `key` to `session_id` (ending its reservation), durably.
    async fn bind_continuation(
        &self,
        channel: &str,
        key: &str,
        session_id: &str,
    ) -> Result<(), StoreError>;

    /// Whether the end of `turn_id` in `session_id` was already reported (or given up).
    async fn replied(
        &self,
        channel: &str,
        session_id: &str,
        turn_id: &str,
    ) -> Result<bool, StoreError>;

    /// Records that the end of `turn_id` was reported (`failed`: given up, and why), durably.
    async fn record_reply(
        &self,
        channel: &str,
        session_id: &str,
        turn_id: &str,
        failed: Option<&str>,
    ) -> Result<(), StoreError>;

    /// A delivery (`delivery_id`, with `context` and a `queued_check` for the next turn)
    /// reached `session_id`: its follower, if one runs, sees the new context and a newer
    /// generation; else `owner` follows it from that delivery, claimed for `ttl`.
    #[allow(clippy::too_many_arguments)]
    async fn follow_session(
        &self,
        channel: &str,
        session_id: &str,
        delivery_id: &str,
        context: &Value,
        queued_check: Option<u64>,
        owner: &str,
        ttl: Duration,
    ) -> Result<Followed, StoreError>;

    /// Renews `owner`'s follow of `session_id` for `ttl`: its current state, or `None` when
    /// another server took it over (or it ended).
    async fn renew_follow(
        &self,
        channel: &str,
        session_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<Follow>, StoreError>;

    /// Takes the check run queued for the next turn of `owner`'s follow of `session_id`.
    async fn take_queued_check(
        &self,
        channel: &str,
        session_id: &str,
        owner: &str,
    ) -> Result<Option<u64>, StoreError>;

    /// Ends `owner`'s follow of `session_id` unless a delivery reached the session since
    /// `generation`; whether it ended.
    async fn end_follow(
        &self,
        channel: &str,
        session_id: &str,
        owner: &str,
        generation: u64,
    ) -> Result<bool, StoreError>;

    /// The channels that have a record, by id (byte order): what `folio store copy` reads.
    async fn channels(&self) -> Result<Vec<String>, StoreError>;

    /// Everything `channel`'s record holds but its claims and follows (`folio store copy`).
    async fn export_channel(&self, channel: &str) -> Result<ChannelRecord, StoreError>;

    /// Adds what `record` holds that `channel`'s record lacks, durably: the deliveries whose id
    /// it has not received (pending ones unclaimed, for the next
    /// [`claim_deliveries`](DeliveryStore::claim_deliveries)), in order; the keys it does not
    /// bind; the replies it has not recorded (`folio store copy`).
    async fn import_channel(&self, channel: &str, record: &ChannelRecord)
    -> Result<(), StoreError>;

    /// The follows whose claim expired (their server died), now claimed by `owner` for `ttl`.
    async fn claim_follows(
        &self,
        channel: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Vec<Follow>, StoreError>;
}
