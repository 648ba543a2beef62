//! Helpers shared by the provider tests.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use folio_model::{
    Delta, Message, ModelError, ModelRequest, Provider, ProviderConfig, Response,
    ResponseAssembler, RetryPolicy, Timeouts, ToolSpec, open_provider,
};
use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The environment the tests pretend to run in (never the process environment).
pub fn env(name: &str) -> Option<String> {
    match name {
        "OPENAI_API_KEY" => Some("sk-test".into()),
        "ANTHROPIC_API_KEY" => Some("ak-test".into()),
        _ => None,
    }
}

/// Small timeouts and fast retries pointing at `base`.
pub fn config(base: String) -> ProviderConfig {
    ProviderConfig {
        base_url: Some(base),
        api_key_env: None,
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            first_byte: Duration::from_secs(5),
            idle: Duration::from_secs(5),
        },
        retry: RetryPolicy {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_secs(3),
        },
        stream: true,
        cache: false,
        api: None,
    }
}

pub fn open(spec: &str, config: &ProviderConfig) -> Arc<dyn Provider> {
    match open_provider(spec, config, &env) {
        Ok((provider, _model)) => provider,
        Err(error) => panic!("open {spec}: {error}"),
    }
}

/// A request with one user message and one tool.
pub fn request(text: &str) -> ModelRequest {
    ModelRequest {
        model: "test-model".into(),
        system: "You are a test.".into(),
        messages: vec![Message::User { text: text.into() }],
        tools: vec![ToolSpec {
            name: "Read".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        params: Default::default(),
    }
}

/// Every delta of one call, or the first error.
pub async fn collect(
    provider: &dyn Provider,
    request: &ModelRequest,
) -> Result<Vec<Delta>, ModelError> {
    let mut stream = provider.stream(request, CancellationToken::new()).await?;
    let mut deltas = Vec::new();
    while let Some(delta) = stream.next().await {
        deltas.push(delta?);
    }
    Ok(deltas)
}

/// Folds deltas into a response.
pub fn assemble(deltas: &[Delta]) -> Response {
    let mut assembler = ResponseAssembler::new();
    for delta in deltas {
        assembler.push(delta);
    }
    assembler.finish().expect("assemble")
}
