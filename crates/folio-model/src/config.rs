//! Provider configuration: base URL, key variable, timeouts and the retry policy.

use std::time::Duration;

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
    /// Mark the system prompt as a prompt-cache breakpoint (Anthropic: a `cache_control` text
    /// block). Off by default: the system prompt goes as a plain string, which every server and
    /// proxy speaking the format accepts.
    pub cache: bool,
    /// Which OpenAI API an OpenAI(-compatible) model speaks; `None`: the spec's own
    /// (Chat Completions, or Responses for `openai-responses:`).
    pub api: Option<OpenAiApi>,
}

/// The OpenAI API a model is reached through (`agent.toml [provider] api`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAiApi {
    /// Chat Completions (`POST /chat/completions`), the default.
    Chat,
    /// Responses (`POST /responses`).
    Responses,
}

impl Default for ProviderConfig {
    fn default() -> ProviderConfig {
        ProviderConfig {
            base_url: None,
            api_key_env: None,
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
            stream: true,
            cache: false,
            api: None,
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
}
