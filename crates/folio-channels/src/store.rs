//! A channel's deliveries in the store ([`Deliveries`]): what it received, decided and
//! reported, its continuation keys and its followed sessions, kept by the server's
//! [`DeliveryStore`] (the state root's `channels/<id>/` files, or the shared PostgreSQL store,
//! where every server of the agent sees the same ones). The store keeps a delivery's decision
//! (its [`Work`], or why nothing runs) as given; this module turns it back into the work a
//! restart (or another server) runs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use folio_protocol::{Admission, DeliveryInfo, DeliveryRetry, DeliveryStatus};
use folio_store::{
    Admitted, Continuation, DeliveryOutcome, DeliveryStore, Follow, Followed, ReceivedDelivery,
    StoreError,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a delivery asks of its session, decided when it was received (so a restart re-runs
/// exactly what was acknowledged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Work {
    /// The message.
    pub(crate) message: String,
    /// The continuation key (`ticket:42`, `pr:o/r#1`): same key → same session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) continuation: Option<String>,
    /// A new session's title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) title: Option<String>,
    /// What a busy session does with it.
    pub(crate) admission: Admission,
    /// Files written into the workspace before the turn.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) workspace_files: BTreeMap<String, String>,
    /// The delivery's body (`state` of reply templates).
    #[serde(default)]
    pub(crate) body: Value,
    /// Stop the session's turn and clear its queue instead of sending a message (Slack `stop`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) stop: bool,
}

/// One received delivery.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Received {
    /// The delivery id.
    pub(crate) id: String,
    /// When it arrived.
    pub(crate) received_at: DateTime<Utc>,
    /// Its route or event.
    pub(crate) route: String,
    /// What it asks (absent: nothing to run).
    pub(crate) work: Option<Work>,
    /// Why nothing runs (an event the channel does not act on, the bot's own comment, …).
    pub(crate) ignored: Option<String>,
    /// The provider announced this request as a retry (Slack's `X-Slack-Retry-Num`).
    pub(crate) retry: Option<DeliveryRetry>,
}

/// What the channel decided about a delivery: the part of it the store keeps as given.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Decision {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    work: Option<Work>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ignored: Option<String>,
}

impl Received {
    /// The delivery as the store keeps it.
    fn to_store(&self) -> ReceivedDelivery {
        let decision = Decision {
            work: self.work.clone(),
            ignored: self.ignored.clone(),
        };
        let decision = match serde_json::to_value(decision) {
            Ok(Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        };
        ReceivedDelivery {
            id: self.id.clone(),
            received_at: self.received_at,
            route: self.route.clone(),
            retry: self.retry.clone(),
            decision,
        }
    }

    /// The delivery the store kept; the error says why its decision cannot be read.
    fn from_store(delivery: ReceivedDelivery) -> Result<Received, UnreadableDelivery> {
        let decision: Decision =
            serde_json::from_value(Value::Object(delivery.decision)).map_err(|source| {
                UnreadableDelivery {
                    id: delivery.id.clone(),
                    source,
                }
            })?;
        Ok(Received {
            id: delivery.id,
            received_at: delivery.received_at,
            route: delivery.route,
            work: decision.work,
            ignored: decision.ignored,
            retry: delivery.retry,
        })
    }
}

/// A recorded delivery whose work cannot be read back (recorded by another version, or
/// damaged): it is recorded as failed.
#[derive(Debug, thiserror::Error)]
#[error("delivery {id}: its recorded work: {source}")]
pub(crate) struct UnreadableDelivery {
    /// The delivery id.
    pub(crate) id: String,
    /// Why its recorded work does not decode.
    #[source]
    pub(crate) source: serde_json::Error,
}

/// One channel's deliveries in the server's store, with the server's claims.
#[derive(Clone)]
pub(crate) struct Deliveries {
    channel: String,
    store: Arc<dyn DeliveryStore>,
    /// This server's id in its claims.
    owner: String,
    /// How long a claim lives unless renewed.
    ttl: Duration,
}

impl Deliveries {
    /// `channel`'s deliveries in `store`, claimed as `owner` for `ttl`.
    pub(crate) fn new(
        channel: &str,
        store: Arc<dyn DeliveryStore>,
        owner: &str,
        ttl: Duration,
    ) -> Deliveries {
        Deliveries {
            channel: channel.to_string(),
            store,
            owner: owner.to_string(),
            ttl,
        }
    }

    /// How long a claim lives unless renewed.
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Records a delivery durably unless its id was seen within 24 h; a new one is claimed by
    /// this server.
    pub(crate) async fn receive(&self, received: &Received) -> Result<Admitted, StoreError> {
        let delivery = received.to_store();
        self.store
            .receive_delivery(&self.channel, &delivery, &self.owner, self.ttl)
            .await
    }

    /// Records what became of a delivery.
    pub(crate) async fn finish(
        &self,
        id: &str,
        status: DeliveryStatus,
        session_id: Option<String>,
        message: Option<String>,
    ) -> Result<(), StoreError> {
        let outcome = DeliveryOutcome {
            status,
            session_id,
            message,
        };
        self.store
            .finish_delivery(&self.channel, id, &outcome)
            .await
    }

    /// The pending deliveries nobody runs (received before a restart, or by a server that
    /// died), claimed by this server; a delivery whose recorded work cannot be read is
    /// recorded as failed instead, and why is returned beside them.
    pub(crate) async fn claim(
        &self,
    ) -> Result<(Vec<Received>, Vec<UnreadableDelivery>), StoreError> {
        let claimed = self
            .store
            .claim_deliveries(&self.channel, &self.owner, self.ttl)
            .await?;
        let (mut runnable, mut unreadable) = (Vec::new(), Vec::new());
        for delivery in claimed {
            let id = delivery.id.clone();
            match Received::from_store(delivery) {
                Ok(received) => runnable.push(received),
                Err(unreadable_delivery) => {
                    let failed = DeliveryStatus::Failed;
                    let reason = unreadable_delivery.to_string();
                    self.finish(&id, failed, None, Some(reason)).await?;
                    unreadable.push(unreadable_delivery);
                }
            }
        }
        Ok((runnable, unreadable))
    }

    /// Every delivery, newest first.
    pub(crate) async fn list(&self) -> Result<Vec<DeliveryInfo>, StoreError> {
        self.store.list_deliveries(&self.channel).await
    }

    /// The session a continuation key names.
    pub(crate) async fn session_for(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.store.continuation(&self.channel, key).await
    }

    /// The session `key` names (unless it is `stale`), or the key reserved for this server to
    /// open one.
    pub(crate) async fn reserve(
        &self,
        key: &str,
        stale: Option<&str>,
    ) -> Result<Continuation, StoreError> {
        self.store
            .reserve_continuation(&self.channel, key, stale, &self.owner, self.ttl)
            .await
    }

    /// Binds a continuation key to a session, durably.
    pub(crate) async fn bind(&self, key: &str, session_id: &str) -> Result<(), StoreError> {
        self.store
            .bind_continuation(&self.channel, key, session_id)
            .await
    }

    /// Whether the reply of `turn` in `session` was already posted (or given up).
    pub(crate) async fn replied(&self, session: &str, turn: &str) -> Result<bool, StoreError> {
        self.store.replied(&self.channel, session, turn).await
    }

    /// Records that the reply of `turn` was posted (`failed`: given up, and why).
    pub(crate) async fn record_reply(
        &self,
        session: &str,
        turn: &str,
        failed: Option<&str>,
    ) -> Result<(), StoreError> {
        self.store
            .record_reply(&self.channel, session, turn, failed)
            .await
    }

    /// Delivery `id` (with `context`, and a check run queued for the next turn) reached
    /// `session`: followed by this server from it, unless a follower runs.
    pub(crate) async fn follow(
        &self,
        session: &str,
        id: &str,
        context: &Value,
        queued_check: Option<u64>,
    ) -> Result<Followed, StoreError> {
        self.store
            .follow_session(
                &self.channel,
                session,
                id,
                context,
                queued_check,
                &self.owner,
                self.ttl,
            )
            .await
    }

    /// Renews this server's follow of `session`: its state, or `None` once another server
    /// took it over.
    pub(crate) async fn renew_follow(&self, session: &str) -> Result<Option<Follow>, StoreError> {
        self.store
            .renew_follow(&self.channel, session, &self.owner, self.ttl)
            .await
    }

    /// Takes the check run queued for the session's next turn.
    pub(crate) async fn take_queued_check(&self, session: &str) -> Result<Option<u64>, StoreError> {
        self.store
            .take_queued_check(&self.channel, session, &self.owner)
            .await
    }

    /// Ends this server's follow of `session` unless a delivery reached it since
    /// `generation`; whether it ended.
    pub(crate) async fn end_follow(
        &self,
        session: &str,
        generation: u64,
    ) -> Result<bool, StoreError> {
        self.store
            .end_follow(&self.channel, session, &self.owner, generation)
            .await
    }

    /// The follows nobody renews (a restart, a dead server), claimed by this server.
    pub(crate) async fn claim_follows(&self) -> Result<Vec<Follow>, StoreError> {
        self.store
            .claim_follows(&self.channel, &self.owner, self.ttl)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_delivery_reads_back_as_the_store_keeps_it() {
        let received = Received {
            id: "d1".into(),
            received_at: Utc::now(),
            route: "/ticket".into(),
            work: Some(Work {
                message: "hi".into(),
                continuation: Some("ticket:1".into()),
                title: None,
                admission: Admission::Coalesce,
                workspace_files: BTreeMap::from([("a.txt".into(), "A".into())]),
                body: serde_json::json!({"ticketId": 1}),
                stop: false,
            }),
            ignored: None,
            retry: Some(DeliveryRetry {
                num: 2,
                reason: None,
            }),
        };
        let stored = received.to_store();
        assert_eq!(Received::from_store(stored).unwrap(), received);
        let ignored = Received {
            work: None,
            ignored: Some("the bot's own comment".into()),
            ..received
        };
        assert_eq!(Received::from_store(ignored.to_store()).unwrap(), ignored);
        let mut broken = ignored.to_store();
        broken
            .decision
            .insert("work".into(), serde_json::json!({"message": 3}));
        let err = Received::from_store(broken).unwrap_err();
        assert_eq!(err.id, "d1");
        assert!(err.to_string().contains("its recorded work"), "{err}");
    }
}
