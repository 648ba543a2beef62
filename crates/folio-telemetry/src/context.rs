//! W3C trace context in (an incoming `traceparent` is linked from a turn, or parents it) and out
//! (outgoing model and MCP requests carry the current span's), and the ids every log line inside
//! a turn carries.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;

use crate::config::TraceparentMode;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::registry::{LookupSpan, Registry};

/// The ids of a turn, kept on its span so the log lines inside it carry them.
#[derive(Debug, Clone)]
pub(crate) struct TurnIds {
    /// The session id.
    pub(crate) session_id: String,
    /// The turn id.
    pub(crate) turn_id: String,
    /// The trace id, when the turn is traced.
    pub(crate) trace_id: Option<String>,
}

/// The OpenTelemetry context of a W3C `traceparent` value, when it is valid.
fn remote_context(traceparent: &str) -> Option<opentelemetry::Context> {
    let carrier = HashMap::from([("traceparent".to_string(), traceparent.trim().to_string())]);
    let context = TraceContextPropagator::new().extract(&carrier);
    context.span().span_context().is_valid().then_some(context)
}

/// Parents `span` on `traceparent` (a W3C header value) when that is valid, as a server span
/// (`agent_sdk.http`) is. Call it right after creating the span, before entering it.
pub fn adopt_parent(span: &tracing::Span, traceparent: Option<&str>) {
    if let Some(parent) = traceparent.and_then(remote_context) {
        // Fails only when nothing is exported (no OpenTelemetry layer): the span stays local.
        let _ = span.set_parent(parent);
    }
}

/// Whether an incoming `traceparent` parents a turn ([`TraceparentMode::Parent`]) rather than
/// being linked from it (the default).
static PARENT_TURNS: AtomicBool = AtomicBool::new(false);

/// Sets how an incoming `traceparent` joins a turn (from `[telemetry] traceparent`).
pub(crate) fn set_traceparent_mode(mode: TraceparentMode) {
    PARENT_TURNS.store(mode == TraceparentMode::Parent, Ordering::Relaxed);
}

/// Joins the root span of a turn, `span`, to the caller's `traceparent` (a W3C header value)
/// when that is valid: by default the turn stays the root of its own trace and carries a span
/// link to the caller's span; under [`TraceparentMode::Parent`] the caller's span parents it.
/// Call it right after creating the span, before entering it.
pub fn adopt_caller(span: &tracing::Span, traceparent: Option<&str>) {
    let Some(caller) = traceparent.and_then(remote_context) else {
        return;
    };
    if PARENT_TURNS.load(Ordering::Relaxed) {
        // Fails only when nothing is exported (no OpenTelemetry layer): the span stays local.
        let _ = span.set_parent(caller);
    } else {
        span.add_link(caller.span().span_context().clone());
    }
}

tokio::task_local! {
    /// The `traceparent` header of the request being answered.
    static INCOMING: Option<String>;
}

/// Runs `work` (answering a request) with the request's `traceparent` header at hand, so the
/// turns it starts are joined to it ([`incoming_traceparent`], [`adopt_caller`]).
pub async fn with_incoming<F: Future>(traceparent: Option<String>, work: F) -> F::Output {
    INCOMING.scope(traceparent, work).await
}

/// The `traceparent` header of the request being answered, inside [`with_incoming`].
pub fn incoming_traceparent() -> Option<String> {
    INCOMING.try_with(Clone::clone).ok().flatten()
}

/// Marks `span` as turn `turn_id` of session `session_id`: joins it to `traceparent` (the
/// header of the request that started the turn, [`adopt_caller`]) when that is valid, and makes
/// every log line inside the span carry the session, turn and trace ids. Call it right after
/// creating the span, before entering it.
pub fn enter_turn(
    span: &tracing::Span,
    session_id: &str,
    turn_id: &str,
    traceparent: Option<&str>,
) {
    adopt_caller(span, traceparent);
    let context = span.context();
    let span_context = context.span().span_context().clone();
    let ids = TurnIds {
        session_id: session_id.to_string(),
        turn_id: turn_id.to_string(),
        trace_id: span_context
            .is_valid()
            .then(|| span_context.trace_id().to_string()),
    };
    span.with_subscriber(|(id, dispatch)| {
        if let Some(span) = dispatch
            .downcast_ref::<Registry>()
            .and_then(|registry| registry.span(id))
        {
            span.extensions_mut().insert(ids);
        }
    });
}

/// The W3C trace context headers (`traceparent`, and `tracestate` when set) of the current
/// span, for an outgoing request; empty when nothing is traced.
pub fn trace_headers() -> HashMap<String, String> {
    let context = tracing::Span::current().context();
    let mut carrier = HashMap::new();
    if context.span().span_context().is_valid() {
        TraceContextPropagator::new().inject_context(&context, &mut carrier);
    }
    carrier
}

/// Whether message and tool contents may be recorded on spans.
static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Sets whether contents are captured (from `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`).
pub(crate) fn set_capture_content(capture: bool) {
    CAPTURE_CONTENT.store(capture, Ordering::Relaxed);
}

/// Whether message and tool contents may be recorded on spans (opted in with
/// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`).
pub fn capture_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}
