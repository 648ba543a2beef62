//! Provider configuration and `open_provider`, which turns a `provider:model` spec into a client.

use std::sync::Arc;
use std::time::Duration;

use crate::anthropic::AnthropicProvider;
use crate::http::HttpTransport;
use crate::openai::OpenAiProvider;
use crate::replay::ReplayProvider;
use crate::{ModelError, Provider};

/// Public OpenAI API base.
pub const OPENAI_DEFAULT_BASE: &str = "https://api.openai.com/v1";
/// Public Anthropic API base.
pub const ANTHROPIC_DEFAULT_BASE: &str = "https://api.anthropic.com";

/// How to reach a provider: `agent.toml [provider]` plus timeouts and retries.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    /// API base URL; overrides `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` (required for
    /// `openai-compatible`).
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key; overrides the provider default.
    pub api_key_env: Option<String>,
    /// Connect, first-byte and idle-stream timeouts.
    pub timeouts: Timeouts,
    /// Retry policy for 429, 5xx and connection errors.
    pub retry: RetryPolicy,
    /// Stream responses (default). `false` asks OpenAI-compatible servers for one whole
    /// response instead, for servers that stream badly or leave usage out of streams.
    pub stream: bool,
}

impl Default for ProviderConfig {
    fn default() -> ProviderConfig {
        ProviderConfig {
            base_url: None,
            api_key_env: None,
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
            stream: true,
        }
    }
}

/// Timeouts of one model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing the TCP/TLS connection (default 10 s).
    pub connect: Duration,
    /// From sending the request to the first streamed event (default 120 s).
    pub first_byte: Duration,
    /// Between two streamed chunks (default 120 s).
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(120),
            idle: Duration::from_secs(120),
        }
    }
}

/// Exponential backoff with jitter for retryable failures before the first streamed token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts, the first included (default 4).
    pub max_attempts: u32,
    /// Delay before the second attempt; doubles each retry (default 500 ms).
    pub initial_backoff: Duration,
    /// Upper bound of one backoff delay and of an honoured `Retry-After` (default 30 s).
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The delay before retry number `retry` (1-based): `Retry-After` when given, else backoff
    /// `initial * 2^(retry-1)` with jitter in [50 %, 100 %], both capped at `max_backoff`.
    pub(crate) fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max_backoff);
        }
        let exponent = retry.saturating_sub(1).min(16);
        let full = self
            .initial_backoff
            .saturating_mul(1u32 << exponent)
            .min(self.max_backoff);
        let jitter: f64 = rand::random_range(0.5..=1.0);
        full.mul_f64(jitter)
    }
}

/// Opens the provider named by `spec` (`openai:MODEL`, `anthropic:MODEL`,
/// `openai-compatible:MODEL`, `replay:PATH`) and returns it with the model id to put in requests.
///
/// Credentials and base URLs are read through `env` (the CLI passes `std::env::var`), never from
/// the process environment directly. A missing API key fails here, naming the variable to set.
pub fn open_provider(
    spec: &str,
    config: &ProviderConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Arc<dyn Provider>, String), ModelError> {
    let (kind, model) = spec.split_once(':').ok_or_else(|| {
        ModelError::Config(format!(
            "model `{spec}` must be `provider:model` (openai, anthropic, openai-compatible, replay)"
        ))
    })?;
    if model.is_empty() {
        return Err(ModelError::Config(format!(
            "model `{spec}` names no model after `{kind}:`"
        )));
    }
    let lookup = |name: &str| env(name).filter(|value| !value.is_empty());
    let key = |default_var: &str| {
        let var = config.api_key_env.as_deref().unwrap_or(default_var);
        lookup(var).ok_or_else(|| ModelError::MissingKey {
            var: var.to_string(),
        })
    };
    let provider: Arc<dyn Provider> = match kind {
        "openai" => {
            let base = config
                .base_url
                .clone()
                .or_else(|| lookup("OPENAI_BASE_URL"))
                .unwrap_or_else(|| OPENAI_DEFAULT_BASE.to_string());
            let api_key = key("OPENAI_API_KEY")?;
            let transport = HttpTransport::new("openai", config)?;
            Arc::new(OpenAiProvider::new(transport, &base, Some(api_key)))
        }
        "openai-compatible" => {
            let base = config.base_url.clone().ok_or_else(|| {
                ModelError::Config(
                    "openai-compatible needs base_url in agent.toml [provider]".to_string(),
                )
            })?;
            let api_key = match &config.api_key_env {
                Some(var) => {
                    Some(lookup(var).ok_or_else(|| ModelError::MissingKey { var: var.clone() })?)
                }
                None => None,
            };
            let transport = HttpTransport::new("openai-compatible", config)?;
            Arc::new(OpenAiProvider::new(transport, &base, api_key))
        }
        "anthropic" if !config.stream => {
            return Err(ModelError::Config(
                "`stream = false` is for openai and openai-compatible providers; Anthropic's Messages API is always streamed here: remove it from [provider]".to_string(),
            ));
        }
        "anthropic" => {
            let base = config
                .base_url
                .clone()
                .or_else(|| lookup("ANTHROPIC_BASE_URL"))
                .unwrap_or_else(|| ANTHROPIC_DEFAULT_BASE.to_string());
            let api_key = key("ANTHROPIC_API_KEY")?;
            let transport = HttpTransport::new("anthropic", config)?;
            Arc::new(AnthropicProvider::new(transport, &base, api_key))
        }
        "replay" => Arc::new(ReplayProvider::open(model)?),
        other => {
            return Err(ModelError::Config(format!(
                "unknown provider `{other}` in `{spec}` (expected openai, anthropic, openai-compatible or replay)"
            )));
        }
    };
    Ok((provider, model.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_honours_retry_after() {
        let policy = RetryPolicy {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(300),
        };
        for _ in 0..50 {
            let first = policy.delay(1, None);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let second = policy.delay(2, None);
            assert!(second >= Duration::from_millis(100) && second <= Duration::from_millis(200));
            let capped = policy.delay(5, None);
            assert!(capped >= Duration::from_millis(150) && capped <= Duration::from_millis(300));
        }
        assert_eq!(
            policy.delay(1, Some(Duration::from_millis(250))),
            Duration::from_millis(250)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(60))),
            Duration::from_millis(300)
        );
    }

    #[test]
    fn bad_specs_are_clear() {
        let none = |_: &str| None;
        let config = ProviderConfig::default();
        let message = |spec: &str| match open_provider(spec, &config, &none) {
            Ok(_) => panic!("{spec} opened"),
            Err(error) => error.to_string(),
        };
        assert_eq!(
            message("gpt-4"),
            "invalid model configuration: model `gpt-4` must be `provider:model` (openai, anthropic, openai-compatible, replay)"
        );
        assert_eq!(
            message("mistral:large"),
            "invalid model configuration: unknown provider `mistral` in `mistral:large` (expected openai, anthropic, openai-compatible or replay)"
        );
        assert_eq!(
            message("openai-compatible:llama"),
            "invalid model configuration: openai-compatible needs base_url in agent.toml [provider]"
        );
        assert_eq!(
            message("openai:gpt-4.1-mini"),
            "OPENAI_API_KEY is not set: export it or set api_key_env in agent.toml [provider]"
        );
        assert_eq!(
            message("anthropic:claude-sonnet-4-5"),
            "ANTHROPIC_API_KEY is not set: export it or set api_key_env in agent.toml [provider]"
        );
        let custom = ProviderConfig {
            api_key_env: Some("MY_KEY".into()),
            ..ProviderConfig::default()
        };
        assert!(matches!(
            open_provider("openai:gpt-4.1-mini", &custom, &none),
            Err(ModelError::MissingKey { var }) if var == "MY_KEY"
        ));
    }
}

/// A provider whose API key is not set: every request fails at once with the error that names
/// the variable, so a server can start and each turn says what to set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingKeyProvider {
    var: String,
}

impl MissingKeyProvider {
    /// A provider that fails every request asking for `var`.
    pub fn new(var: impl Into<String>) -> Self {
        MissingKeyProvider { var: var.into() }
    }
}

#[async_trait::async_trait]
impl Provider for MissingKeyProvider {
    async fn stream(
        &self,
        _request: &crate::ModelRequest,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> Result<crate::DeltaStream, ModelError> {
        Err(ModelError::MissingKey {
            var: self.var.clone(),
        })
    }
}
