//! Channel wire types: what a channel route answers a provider, and the delivery records
//! `GET /v1/channels/<id>/deliveries` lists.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::OkTrue;

/// `202` answer of a channel route: the delivery is durable and its work runs in the background.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryAccepted {
    /// Always `true`.
    pub ok: OkTrue,
    /// The delivery's id (the provider's, or `dlv_…` when it sent none).
    pub delivery_id: String,
    /// Whether this id was already received within 24 h (acknowledged, not run again).
    pub duplicate: bool,
}

/// What became of a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryStatus {
    /// Recorded; its work has not finished yet (re-run after a restart).
    Pending,
    /// The message reached its session.
    Accepted,
    /// Nothing to do (an event the channel does not act on, the bot's own comment, …).
    Ignored,
    /// The work failed (see `message`).
    Failed,
}

/// One delivery of a channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryInfo {
    /// The delivery's id.
    pub id: String,
    /// The channel's id.
    pub channel: String,
    /// When it was received.
    pub received_at: DateTime<Utc>,
    /// The route (`/ticket`), event (`pull_request.opened`) or Slack event type.
    pub route: String,
    /// What became of it.
    pub status: DeliveryStatus,
    /// The session it reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Why it was ignored or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// How many times a provider retried it (duplicates acknowledged without running).
    pub duplicates: u32,
    /// The retries the provider announced (Slack's `X-Slack-Retry-Num`), oldest first: the
    /// recorded delivery itself when it arrived as a retry, then each retry acknowledged since.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<DeliveryRetry>,
}

/// A provider's retry of a delivery as it announced it (Slack: `X-Slack-Retry-Num` and
/// `X-Slack-Retry-Reason`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryRetry {
    /// The provider's retry number (`1` for the first retry).
    pub num: u32,
    /// Why the provider retried (`http_timeout`, `http_error`, …), when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `GET /v1/channels/<id>/deliveries`: the channel's deliveries, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeliveriesResponse {
    /// Always `true`.
    pub ok: OkTrue,
    /// The deliveries.
    pub deliveries: Vec<DeliveryInfo>,
}

/// What a `channel.delivery` event reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChannelDeliveryOutcome {
    /// A delivery's message reached the session.
    Received,
    /// The turn's answer went back to the provider (comment, thread message, `[deliver]` POST).
    Replied,
    /// The turn's answer could not be delivered (see `message`): retries ran out or the provider
    /// refused it.
    ReplyFailed,
}

/// `channel.delivery`: a channel delivery reached the session, or the answer to one went back
/// to its provider (or could not).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChannelDelivery {
    /// The channel's id.
    pub channel: String,
    /// What happened.
    pub outcome: ChannelDeliveryOutcome,
    /// The delivery's id (`received`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_id: Option<String>,
    /// The route, event or Slack event type of the delivery (`received`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// Why the answer was not delivered (`reply_failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The answer to a Slack `url_verification` request: its challenge, echoed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UrlVerification {
    /// The request's `challenge`.
    pub challenge: String,
}
