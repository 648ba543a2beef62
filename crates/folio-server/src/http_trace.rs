//! The `agent_sdk.http` span: one SERVER span per inbound request, parented on its W3C
//! `traceparent`, which the turns the request starts link (or are parented on) too, not this span.
//! A request that appends to a session's log (a create or a follow-up) records the range of
//! events appended while it was answered (`agent_sdk.event_index.first` / `.last`); any other
//! request appends no event (a direct tool call's own synthetic turn span covers its call), so
//! its span carries no range.

use std::ops::RangeInclusive;
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Json, Response};
use serde::Serialize;
use tracing::Instrument;
use tracing::field::Empty;

/// Answers `req` inside its `agent_sdk.http` span, with its `traceparent` at hand for the turns
/// it starts; records the status and the `agent_sdk.http.duration` metric.
pub(crate) async fn traced(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().as_str().to_string();
    let route = req.extensions().get::<MatchedPath>().map_or_else(
        || req.uri().path().to_string(),
        |path| path.as_str().to_string(),
    );
    let traceparent = req
        .headers()
        .get("traceparent")
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    let span = tracing::info_span!(
        "agent_sdk.http",
        otel.kind = "server",
        http.request.method = %method,
        http.route = %route,
        url.path = req.uri().path(),
        http.response.status_code = Empty,
        agent_sdk.event_index.first = Empty,
        agent_sdk.event_index.last = Empty,
        otel.status_code = Empty,
    );
    folio_telemetry::adopt_parent(&span, traceparent.as_deref());
    let response = folio_telemetry::with_incoming(traceparent, next.run(req))
        .instrument(span.clone())
        .await;
    let status = response.status().as_u16();
    span.record("http.response.status_code", i64::from(status));
    if let Some(Covered(events)) = response.extensions().get::<Covered>() {
        span.record(
            "agent_sdk.event_index.first",
            folio_telemetry::int(*events.start()),
        );
        span.record(
            "agent_sdk.event_index.last",
            folio_telemetry::int(*events.end()),
        );
    }
    if response.status().is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
    folio_telemetry::metrics::http_request(&method, &route, status, started.elapsed());
    response
}

/// The session-log events a request appended, which its span records.
#[derive(Clone)]
struct Covered(RangeInclusive<u64>);

/// A success answer, `body` with `status`, from a request that appended `events` to a session's
/// log (`None`: none), which its `agent_sdk.http` span records.
pub(crate) fn covering<E>(
    events: Option<RangeInclusive<u64>>,
    status: StatusCode,
    body: impl Serialize,
) -> Result<Response, E> {
    let mut response = (status, Json(body)).into_response();
    if let Some(events) = events {
        response.extensions_mut().insert(Covered(events));
    }
    Ok(response)
}
