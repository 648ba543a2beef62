//! Model providers behind one [`Provider`] trait: OpenAI Chat Completions, OpenAI Responses,
//! Anthropic Messages, OpenAI-compatible endpoints, and the `replay:` provider for recorded
//! fixtures.
//!
//! The turn loop never sees a wire format. It builds a provider-neutral [`ModelRequest`] (system
//! prompt, [`Message`]s, [`ToolSpec`]s, pass-through params), calls [`Provider::stream`], and reads
//! typed [`Delta`]s: text, reasoning, tool-call start / argument fragments / end, usage, finish.
//! A [`ResponseAssembler`] folds the deltas into a [`Response`] (tool-call arguments assembled
//! from fragments and parsed as JSON).
//!
//! - [`open_provider`] turns `openai:gpt-4.1-mini`, `openai-responses:gpt-5`, `anthropic:claude-…`,
//!   `openai-compatible:MODEL` or `replay:PATH` into a provider, reading keys and base URLs
//!   through the `env` lookup it is given.
//! - HTTP providers retry 429, 5xx and connection errors before the first streamed event
//!   (exponential backoff with jitter, `Retry-After` honoured, at most [`RetryPolicy::max_attempts`]),
//!   never after; they enforce connect, first-byte and idle-stream [`Timeouts`]; when the
//!   cancellation token fires the stream yields [`ModelError::Cancelled`] and drops the connection.
//! - [`RecordingProvider`] writes each exchange to a JSONL fixture ([`SessionRecordingProvider`]:
//!   to the fixture of the session each call is made for, see [`for_session`]);
//!   [`ReplayProvider`] answers from it and fails with a diff when the agent asks something else.
//!
//! ```no_run
//! use folio_model::{open_provider, Delta, Message, ModelRequest, ProviderConfig, ResponseAssembler};
//! use futures::StreamExt;
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn demo() -> Result<(), folio_model::ModelError> {
//! let env = |name: &str| std::env::var(name).ok();
//! let (provider, model) = open_provider("openai:gpt-4.1-mini", &ProviderConfig::default(), &env)?;
//! let request = ModelRequest {
//!     model,
//!     system: "You are terse.".into(),
//!     messages: vec![Message::User { text: "Say hi".into() }],
//!     tools: vec![],
//!     params: Default::default(),
//! };
//! let mut stream = provider.stream(&request, CancellationToken::new()).await?;
//! let mut assembler = ResponseAssembler::new();
//! while let Some(delta) = stream.next().await {
//!     let delta = delta?;
//!     if let Delta::Text(text) = &delta {
//!         print!("{text}");
//!     }
//!     assembler.push(&delta);
//! }
//! let response = assembler.finish()?;
//! println!("\n{:?} {:?}", response.finish_reason, response.usage);
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod anthropic;
mod config;
#[doc(hidden)]
pub mod decode;
mod error;
mod http;
mod open;
mod openai;
mod pricing;
mod replay;
mod responses;
mod tokens;
mod types;

use async_trait::async_trait;
use futures::stream::BoxStream;
use tokio_util::sync::CancellationToken;

pub use config::{
    ANTHROPIC_DEFAULT_BASE, OPENAI_DEFAULT_BASE, OpenAiApi, ProviderConfig, RetryPolicy, Timeouts,
};
pub use error::{FixtureError, ModelError, TimeoutKind};
pub use open::{MissingKeyProvider, open_provider};
pub use pricing::PriceTable;
pub use replay::{
    FixtureFor, RecordingProvider, ReplayProvider, SessionRecordingProvider, for_session,
};
pub use tokens::{TokenCounter, known_context_window};
pub use types::{
    ContentPart, Delta, FinishReason, Message, ModelRequest, Reasoning, Response,
    ResponseAssembler, ToolCall, ToolSpec, Usage,
};

/// The stream of deltas of one model response.
pub type DeltaStream = BoxStream<'static, Result<Delta, ModelError>>;

/// A model provider: sends one request and streams the response as [`Delta`]s.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Sends `request` and returns its delta stream once the response has started.
    ///
    /// Retries (where the provider has them) happen inside this call, before it returns. When
    /// `cancel` fires, the call or the stream ends promptly with [`ModelError::Cancelled`].
    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<DeltaStream, ModelError>;

    /// The service behind this provider as OpenTelemetry's `gen_ai.provider.name` spells it
    /// (`openai`, `anthropic`); `None` for one that is not a model service (a test double).
    fn name(&self) -> Option<&'static str> {
        None
    }
}
