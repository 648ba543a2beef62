//! Acknowledging a delivery, the same for every kind of channel: it is recorded durably, then
//! answered `202` and its work started in the background (`sessions`); a duplicate id is
//! answered the same way and runs nothing.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use folio_protocol::{DeliveryAccepted, ErrorCode, OkTrue};
use folio_session::FaultPoint;
use folio_store::Admitted;

use crate::store::Received;
use crate::{Channel, error, sessions};

/// Records `received` durably, then answers `202` and starts its work (a duplicate id is
/// answered the same way and runs nothing).
pub(crate) async fn acknowledge(channel: Arc<Channel>, received: Received) -> Response {
    let id = received.id.clone();
    let admitted = match channel.store.receive(&received).await {
        Ok(admitted) => admitted,
        Err(err) => {
            return error(
                ErrorCode::Internal,
                format!("the delivery was not recorded, retry it: {err}"),
            );
        }
    };
    let duplicate = admitted == Admitted::Duplicate;
    let withheld = channel.manager.fault_armed(FaultPoint::ChannelAcknowledged);
    if !duplicate && !withheld {
        // The work outlives the request: it takes the delivery's `traceparent` along, so the
        // turn it wakes is joined to the sender's trace, linked or parented (a delivery resumed
        // after a restart has none).
        let traceparent = folio_telemetry::incoming_traceparent();
        tokio::spawn(folio_telemetry::with_incoming(
            traceparent,
            sessions::run(channel.clone(), received, false),
        ));
    }
    (
        StatusCode::ACCEPTED,
        axum::Json(DeliveryAccepted {
            ok: OkTrue,
            delivery_id: id,
            duplicate,
        }),
    )
        .into_response()
}
