//! `open_provider`, which turns a `provider:model` spec into a client.

use std::sync::Arc;

use crate::anthropic::AnthropicProvider;
use crate::config::{ANTHROPIC_DEFAULT_BASE, OPENAI_DEFAULT_BASE, OpenAiApi, ProviderConfig};
use crate::http::HttpTransport;
use crate::openai::OpenAiProvider;
use crate::replay::ReplayProvider;
use crate::responses::ResponsesProvider;
use crate::{ModelError, Provider};

/// Opens the provider named by `spec` (`openai:MODEL`, `openai-responses:MODEL`,
/// `anthropic:MODEL`, `openai-compatible:MODEL`, `ollama:MODEL`, `llama-cpp:MODEL`,
/// `replay:PATH`) and returns it with the model id to put in requests. `ollama` and `llama-cpp`
/// are OpenAI-compatible presets: the local server's address (`OLLAMA_HOST`, default
/// `127.0.0.1:11434`; `LLAMA_CPP_HOST`, default `127.0.0.1:8080`) and no key unless
/// `api_key_env` names one.
///
/// OpenAI and OpenAI-compatible models speak Chat Completions unless [`ProviderConfig::api`]
/// says Responses; `openai-responses:MODEL` is `openai:MODEL` speaking Responses.
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
            "model `{spec}` must be `provider:model` (openai, openai-responses, anthropic, openai-compatible, ollama, llama-cpp, replay)"
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
    // The OpenAI API the spec speaks: `[provider] api`, else Responses for `openai-responses`.
    let api = match (kind, config.api) {
        ("openai-responses", Some(OpenAiApi::Chat)) => {
            return Err(ModelError::Config(format!(
                "`{spec}` speaks the Responses API but [provider] api = \"chat\": use `openai:{model}` for Chat Completions, or remove api"
            )));
        }
        ("openai-responses", _) => OpenAiApi::Responses,
        ("anthropic", Some(_)) => {
            return Err(ModelError::Config(format!(
                "[provider] api chooses the API of OpenAI and OpenAI-compatible models, not `{kind}:`: remove it"
            )));
        }
        (_, api) => api.unwrap_or(OpenAiApi::Chat),
    };
    // An OpenAI(-compatible) client at `base` speaking `api`.
    let openai =
        |transport: HttpTransport, base: &str, api_key: Option<String>| -> Arc<dyn Provider> {
            match api {
                OpenAiApi::Chat => Arc::new(OpenAiProvider::new(transport, base, api_key)),
                OpenAiApi::Responses => Arc::new(ResponsesProvider::new(transport, base, api_key)),
            }
        };
    let provider: Arc<dyn Provider> = match kind {
        "openai" | "openai-responses" => {
            let base = config
                .base_url
                .clone()
                .or_else(|| lookup("OPENAI_BASE_URL"))
                .unwrap_or_else(|| OPENAI_DEFAULT_BASE.to_string());
            let api_key = key("OPENAI_API_KEY")?;
            let transport = HttpTransport::new("openai", config)?;
            openai(transport, &base, Some(api_key))
        }
        "openai-compatible" | "ollama" | "llama-cpp" => {
            let base = match (config.base_url.clone(), kind) {
                (Some(base), _) => base,
                (None, "ollama") => local_server_base(lookup("OLLAMA_HOST"), "127.0.0.1:11434"),
                (None, "llama-cpp") => {
                    local_server_base(lookup("LLAMA_CPP_HOST"), "127.0.0.1:8080")
                }
                (None, _) => {
                    return Err(ModelError::Config(
                        "openai-compatible needs base_url in agent.toml [provider]".to_string(),
                    ));
                }
            };
            let api_key = match &config.api_key_env {
                Some(var) => {
                    Some(lookup(var).ok_or_else(|| ModelError::MissingKey { var: var.clone() })?)
                }
                None => None,
            };
            let transport = HttpTransport::new(kind_name(kind), config)?;
            openai(transport, &base, api_key)
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
            Arc::new(AnthropicProvider::new(
                transport,
                &base,
                api_key,
                config.cache,
            ))
        }
        "replay" => Arc::new(ReplayProvider::open(model)?),
        other => {
            return Err(ModelError::Config(format!(
                "unknown provider `{other}` in `{spec}` (expected openai, openai-responses, anthropic, openai-compatible, ollama, llama-cpp or replay)"
            )));
        }
    };
    Ok((provider, model.to_string()))
}

/// The OpenAI-compatible base URL of a local model server: `host` as its own variable spells it
/// (`OLLAMA_HOST=0.0.0.0:11434`, with or without a scheme), else `default`; the API under `/v1`.
fn local_server_base(host: Option<String>, default: &str) -> String {
    let host = host.unwrap_or_else(|| default.to_string());
    let host = host.trim_end_matches('/');
    let url = if host.contains("://") {
        host.to_string()
    } else {
        format!("http://{host}")
    };
    // A server listening on every interface is reached on loopback.
    format!("{}/v1", url.replacen("://0.0.0.0", "://127.0.0.1", 1))
}

/// The provider name errors and spans use for a spec's provider kind.
fn kind_name(kind: &str) -> &'static str {
    match kind {
        "ollama" => "ollama",
        "llama-cpp" => "llama-cpp",
        _ => "openai-compatible",
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

#[cfg(test)]
mod tests {
    use super::*;

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
            "invalid model configuration: model `gpt-4` must be `provider:model` (openai, openai-responses, anthropic, openai-compatible, ollama, llama-cpp, replay)"
        );
        assert_eq!(
            message("mistral:large"),
            "invalid model configuration: unknown provider `mistral` in `mistral:large` (expected openai, openai-responses, anthropic, openai-compatible, ollama, llama-cpp or replay)"
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
        assert_eq!(
            message("openai-responses:gpt-5"),
            "OPENAI_API_KEY is not set: export it or set api_key_env in agent.toml [provider]"
        );
        let with_api = |api| ProviderConfig {
            api: Some(api),
            ..ProviderConfig::default()
        };
        let refused = |spec: &str, config: &ProviderConfig| match open_provider(spec, config, &none)
        {
            Ok(_) => panic!("{spec} opened"),
            Err(error) => error.to_string(),
        };
        assert_eq!(
            refused("openai-responses:gpt-5", &with_api(OpenAiApi::Chat)),
            "invalid model configuration: `openai-responses:gpt-5` speaks the Responses API but [provider] api = \"chat\": use `openai:gpt-5` for Chat Completions, or remove api"
        );
        assert_eq!(
            refused(
                "anthropic:claude-sonnet-4-5",
                &with_api(OpenAiApi::Responses)
            ),
            "invalid model configuration: [provider] api chooses the API of OpenAI and OpenAI-compatible models, not `anthropic:`: remove it"
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
