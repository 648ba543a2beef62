//! The `agent_sdk.http` span: one SERVER span per inbound request, parented on its W3C
//! `traceparent`, which the turns the request starts are parented on too (not on this span).

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
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
        otel.status_code = Empty,
    );
    folio_telemetry::adopt_parent(&span, traceparent.as_deref());
    let response = folio_telemetry::with_incoming(traceparent, next.run(req))
        .instrument(span.clone())
        .await;
    let status = response.status().as_u16();
    span.record("http.response.status_code", status);
    if response.status().is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
    folio_telemetry::metrics::http_request(&method, &route, status, started.elapsed());
    response
}
