//! Test support for end-to-end tests: the mock model server and helpers.
//!
//! [`MockModelServer`] is an axum server on `127.0.0.1:0` that speaks the model wire formats
//! exactly (OpenAI Chat Completions SSE chunks with `[DONE]` and the usage chunk; OpenAI
//! Responses SSE events with output items, reasoning items and `response.completed`; Anthropic
//! Messages SSE events), answering each request with the next scripted [`MockReply`]. It records
//! every request and notices clients that abandon a stream, so a test reads like a story:
//! script the model → run the code → assert on the recorded requests.
//!
//! ```
//! use folio_test_support::{MockModelServer, MockReply};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let server = MockModelServer::start().await;
//! server.push(MockReply::tool_calls([("Read", json!({"path": "/README.md"}))]));
//! server.push(MockReply::text("It is a README."));
//! server.push(MockReply::rate_limited(1));
//! // Point a provider at server.openai_base_url() or server.anthropic_base_url(), run it, then:
//! assert!(server.requests().is_empty());
//! assert_eq!(server.remaining(), 3);
//! # }
//! ```
//!
//! [`read_wire`] and [`check_answer`] read Folio's own HTTP answers through their
//! folio-protocol types, exactly, so a test fails when the server and the contract drift apart.
//! [`call`], [`answer`], [`expect`], [`expect_error`], [`refused`], [`create_session`],
//! [`follow_up`], [`session`] and [`events`] speak HTTP to a running agent and hand back those
//! typed values; [`data`], [`all`],
//! [`of_type`] and [`first`] read an event's `data` as its own type ([`EventData`]).
//!
//! [`project`] writes an agent folder for a test; [`channels`] signs and sends channel
//! deliveries as the providers do and reads their outcome back.
//!
//! [`otlp::Sink`] is an OTLP receiver (PyPI's `oteltest`) for telemetry tests.
//!
//! [`OAuthMcpServer`] is an MCP server behind OAuth 2.1 with its own authorization server, for
//! end-to-end tests of MCP authorization.
//!
//! Failure modes: [`MockReply::status`] / [`MockReply::rate_limited`] (with `Retry-After`),
//! [`MockReply::with_stream_error`],
//! [`MockReply::drop_after_chunks`], [`MockReply::first_byte_delay`], [`MockReply::chunk_delay`].

#![warn(missing_docs)]

mod answers;
pub mod channels;
mod events;
mod fake_api;
mod http;
mod oauth_mcp;
pub mod otlp;
mod project;
mod reply;
mod server;
mod wire;

pub use answers::{check_answer, read_answer, read_wire};
pub use events::{EventData, all, assert_contiguous, data, first, of_type, read_ndjson};
pub use fake_api::{ApiCall, FakeApi};
pub use folio_protocol::Usage;
pub use http::{
    NO_BODY, answer, call, call_as, client, create_session, events, expect, expect_error,
    follow_up, refused, session,
};
pub use oauth_mcp::OAuthMcpServer;
pub use project::{Project, eval_project, project, python, test_deps, workspace_root, write_files};
pub use reply::{MockReply, ReplySpec, ToolCallSpec};
pub use server::{ChatMessage, Disconnect, MockModelServer, RecordedRequest};
