//! `POST /v1/channels/<id><route>` of a webhook channel: authenticate, check, render, record
//! durably, acknowledge (`202`), then run the work in the background.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::HeaderMap;
use axum::response::Response;
use chrono::Utc;
use folio_protocol::ErrorCode;
use serde_json::{Map, Value};

use crate::acknowledge::acknowledge;
use crate::store::{Received, Work};
use crate::templates::{BodyInvalid, RenderError, Rendered, Templates};
use crate::{Channel, error};

/// A delivery id header whose value cannot name a delivery.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{header}: a delivery id must be 1 to 200 visible ASCII characters")]
struct BadDeliveryId {
    /// The header.
    header: String,
}

/// Headers that name a delivery when the manifest sets no `id_header`, in order.
const ID_HEADERS: &[&str] = &["webhook-id", "idempotency-key", "x-delivery-id"];

/// Handles one delivery to `route` of `channel`.
pub(crate) async fn receive(channel: Arc<Channel>, route: usize, req: Request) -> Response {
    let (headers, bytes) = match crate::admitted_body(&channel, req).await {
        Ok(admitted) => admitted,
        Err(answer) => return answer,
    };
    let body: Value = match serde_json::from_slice(&bytes) {
        Ok(body) => body,
        Err(err) => return error(ErrorCode::InvalidRequest, format!("body: not JSON: {err}")),
    };
    let rendered = match read(&channel.templates, route, &headers, &body) {
        Ok(rendered) => rendered,
        Err(unreadable) => return error(ErrorCode::InvalidRequest, unreadable.to_string()),
    };
    let id = match delivery_id(&channel, &headers) {
        Ok(id) => id,
        Err(err) => return error(ErrorCode::InvalidRequest, err.to_string()),
    };
    let work = Work {
        message: rendered.message,
        continuation: rendered
            .continuation
            .map(|key| format!("webhook:{}:{key}", channel.id)),
        title: rendered.title,
        admission: rendered.admission,
        workspace_files: Default::default(),
        body,
        stop: false,
    };
    acknowledge(
        channel.clone(),
        Received {
            id,
            received_at: Utc::now(),
            route: channel.templates.path(route).to_string(),
            work: Some(work),
            ignored: None,
            retry: None,
        },
    )
    .await
}

/// Why a delivery's body makes no work for its route.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unreadable {
    /// The body breaks the route's `body_schema`.
    #[error(transparent)]
    Invalid(#[from] BodyInvalid),
    /// A template of the route failed over this body.
    #[error("cannot render the route's templates over this body: {0}")]
    Render(#[from] RenderError),
}

/// Checks `body` against `route`'s schema and renders the route's templates over the body and
/// `headers`.
pub(crate) fn read(
    templates: &Templates,
    route: usize,
    headers: &HeaderMap,
    body: &Value,
) -> Result<Rendered, Unreadable> {
    templates.check(route, body)?;
    let context = serde_json::json!({ "body": body, "headers": header_map(headers) });
    Ok(templates.render_route(route, &context)?)
}

/// The delivery's id: the manifest's `id_header`, else the first of [`ID_HEADERS`] present,
/// else a fresh `dlv_…` (never deduplicated).
fn delivery_id(channel: &Channel, headers: &HeaderMap) -> Result<String, BadDeliveryId> {
    let names: Vec<&str> = match channel.id_header.as_deref() {
        Some(name) => vec![name],
        None => ID_HEADERS.to_vec(),
    };
    for name in names {
        if let Some(value) = headers.get(name) {
            let id = value
                .to_str()
                .ok()
                .filter(|id| {
                    !id.is_empty() && id.len() <= 200 && id.bytes().all(|b| b.is_ascii_graphic())
                })
                .ok_or_else(|| BadDeliveryId {
                    header: name.to_string(),
                })?;
            return Ok(id.to_string());
        }
    }
    Ok(format!("dlv_{}", ulid::Ulid::generate()))
}

/// The request headers as a template variable (lowercase names; non-UTF-8 values skipped).
fn header_map(headers: &HeaderMap) -> Value {
    let mut map = Map::new();
    for (name, value) in headers {
        if let Ok(value) = value.to_str() {
            map.insert(name.as_str().to_string(), Value::String(value.to_string()));
        }
    }
    Value::Object(map)
}
