//! The [`Channels`] handle: what an in-process channel (webhook, GitHub, Slack) needs of the
//! engine besides sending messages ([`Turns::send_message`](crate::Turns::send_message)): the
//! delivery record beside the sessions, this server's identity in its claims, and the
//! `channel.delivery` events it records.

use std::sync::Arc;
use std::time::Duration;

use folio_protocol::{ChannelDelivery, EventBody};

use crate::engine::Engine;
use crate::error::ManagerError;

/// What channels keep and record beside the sessions.
#[derive(Clone)]
pub struct Channels {
    pub(crate) engine: Arc<Engine>,
}

impl Channels {
    /// Where the agent's channels keep their deliveries: beside the sessions, in their store.
    pub fn deliveries(&self) -> Arc<dyn folio_store::DeliveryStore> {
        self.engine.store.deliveries()
    }

    /// This server's id in the claims it takes in the store.
    pub fn server_id(&self) -> &str {
        &self.engine.lease.server
    }

    /// How long a claim this server takes lives unless renewed: the lease time to live.
    pub fn claim_ttl(&self) -> Duration {
        self.engine.lease.ttl
    }

    /// Records a `channel.delivery` event on `principal`'s session (`turn_id`: the turn whose
    /// answer it reports).
    pub async fn record_delivery(
        &self,
        principal: &str,
        session_id: &str,
        turn_id: Option<&str>,
        delivery: ChannelDelivery,
    ) -> Result<(), ManagerError> {
        let live = self.engine.owned(principal, session_id).await?;
        let body = EventBody::ChannelDelivery(delivery);
        self.engine
            .record_event(&live, turn_id.map(str::to_string), body, None)
            .await
    }
}
