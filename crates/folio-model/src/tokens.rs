//! Token counts of model requests, for the context budget.
//!
//! Counted, not guessed, where the provider's tokenizer is public: OpenAI models (and
//! OpenAI-compatible servers serving a model under an OpenAI name) are counted with their own
//! BPE (`o200k_base`, `cl100k_base`, … through tiktoken-rs, which ships the vocabularies).
//! Every other model (Anthropic's tokenizer is not public, local models name their own) uses a
//! documented approximation: one token per three bytes of UTF-8, rounded up. English text runs
//! about four bytes per token, so the approximation over-counts, and a budget built on it
//! compacts a little early rather than overflowing the window.

use tiktoken_rs::CoreBPE;
use tiktoken_rs::tokenizer::{Tokenizer, get_tokenizer};

use crate::{ContentPart, Message, ModelRequest};

/// Tokens a chat message costs beyond its text (role and separators, as OpenAI documents).
const PER_MESSAGE: u64 = 4;
/// Tokens counted for one image in a tool result (a large image costs about this much).
const PER_IMAGE: u64 = 1_000;
/// Bytes per token of the approximation.
const APPROXIMATE_BYTES_PER_TOKEN: u64 = 3;

/// The context window of a model Folio knows, in tokens (`None`: unknown).
pub fn known_context_window(model: &str) -> Option<u64> {
    const WINDOWS: &[(&str, u64)] = &[
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 400_000),
        ("gpt-4o", 128_000),
        ("chatgpt-4o", 128_000),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4-mini", 200_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-4", 8_192),
        ("gpt-3.5-turbo", 16_385),
        ("claude", 200_000),
    ];
    crate::pricing::by_model_prefix(WINDOWS.iter().copied(), model)
}

/// Counts tokens of text and requests for one model.
#[derive(Clone, Copy)]
pub enum TokenCounter {
    /// The model's own BPE.
    Bpe(&'static CoreBPE),
    /// One token per three bytes (models whose tokenizer is not public).
    Approximate,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TokenCounter::Bpe(_) => "TokenCounter::Bpe",
            TokenCounter::Approximate => "TokenCounter::Approximate",
        })
    }
}

impl TokenCounter {
    /// The counter for `model` (a model id as sent to the provider, e.g. `gpt-4.1-mini`).
    pub fn for_model(model: &str) -> TokenCounter {
        match get_tokenizer(model) {
            Some(Tokenizer::O200kBase | Tokenizer::O200kHarmony) => {
                TokenCounter::Bpe(tiktoken_rs::o200k_base_singleton())
            }
            Some(Tokenizer::Cl100kBase) => TokenCounter::Bpe(tiktoken_rs::cl100k_base_singleton()),
            _ => TokenCounter::Approximate,
        }
    }

    /// Whether counts come from the model's own tokenizer.
    pub fn is_exact(&self) -> bool {
        matches!(self, TokenCounter::Bpe(_))
    }

    /// Tokens of `text`.
    pub fn count(&self, text: &str) -> u64 {
        match self {
            TokenCounter::Bpe(bpe) => bpe.encode_ordinary(text).len() as u64,
            TokenCounter::Approximate => (text.len() as u64).div_ceil(APPROXIMATE_BYTES_PER_TOKEN),
        }
    }

    /// Tokens of one conversation message.
    pub fn message(&self, message: &Message) -> u64 {
        measure_message(message, &|text| self.count(text))
    }

    /// Tokens of a whole request: system prompt, every message and every tool's schema.
    pub fn request(&self, request: &ModelRequest) -> u64 {
        measure_request(request, &|text| self.count(text))
    }

    /// Whether `text` has more than `limit` tokens. Every token is at least one byte, so a text
    /// of at most `limit` bytes is never tokenized.
    pub fn exceeds(&self, text: &str, limit: u64) -> bool {
        text.len() as u64 > limit && self.count(text) > limit
    }

    /// The tokens of `request` when they exceed `limit`, else `None`. A request whose bytes
    /// (measured the same way) fit is not tokenized: the check costs a length sum per step.
    pub fn request_over(&self, request: &ModelRequest, limit: u64) -> Option<u64> {
        if measure_request(request, &|text| text.len() as u64) <= limit {
            return None;
        }
        Some(self.request(request)).filter(|tokens| *tokens > limit)
    }
}

/// The size of a request in whatever unit `size` measures text in (tokens, or bytes as an upper
/// bound of tokens), with the same per-message and per-image allowances.
fn measure_request(request: &ModelRequest, size: &dyn Fn(&str) -> u64) -> u64 {
    let tools: u64 = request
        .tools
        .iter()
        .map(|tool| {
            size(&tool.name) + size(&tool.description) + size(&tool.input_schema.to_string())
        })
        .sum();
    PER_MESSAGE
        + size(&request.system)
        + request
            .messages
            .iter()
            .map(|m| measure_message(m, size))
            .sum::<u64>()
        + tools
}

fn measure_message(message: &Message, size: &dyn Fn(&str) -> u64) -> u64 {
    PER_MESSAGE
        + match message {
            Message::User { text } => size(text),
            Message::Assistant {
                text,
                reasoning,
                tool_calls,
            } => {
                size(text)
                    + reasoning.as_ref().map_or(0, |r| size(&r.text))
                    + tool_calls
                        .iter()
                        .map(|call| size(&call.name) + size(&call.input.to_string()))
                        .sum::<u64>()
            }
            Message::ToolResult { content, .. } => content
                .iter()
                .map(|part| match part {
                    ContentPart::Text { text } => size(text),
                    ContentPart::Image { .. } => PER_IMAGE,
                })
                .sum(),
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_models_use_their_own_bpe_and_others_the_approximation() {
        let o200k = TokenCounter::for_model("gpt-4.1-mini");
        assert!(o200k.is_exact());
        // "hello world" is two tokens in o200k_base and cl100k_base.
        assert_eq!(o200k.count("hello world"), 2);
        assert_eq!(
            TokenCounter::for_model("gpt-4-0613").count("hello world"),
            2
        );
        let approx = TokenCounter::for_model("claude-sonnet-4-5");
        assert!(!approx.is_exact());
        assert_eq!(approx.count("hello world"), 4); // 11 bytes / 3, rounded up
        assert_eq!(approx.count(""), 0);
    }

    #[test]
    fn the_byte_shortcut_agrees_with_counting() {
        let counter = TokenCounter::for_model("gpt-4.1-mini");
        let text = "hello world ".repeat(100);
        assert!(counter.exceeds(&text, 150));
        assert!(!counter.exceeds(&text, 250));
        assert!(!counter.exceeds("hello world", 5), "11 bytes, 2 tokens");
        let request = ModelRequest {
            model: "gpt-4.1-mini".into(),
            system: String::new(),
            messages: vec![Message::User { text }],
            tools: Vec::new(),
            params: Default::default(),
        };
        let tokens = counter.request(&request);
        assert_eq!(counter.request_over(&request, tokens - 1), Some(tokens));
        assert_eq!(counter.request_over(&request, tokens), None);
        assert_eq!(counter.request_over(&request, 10_000), None);
    }

    #[test]
    fn a_request_counts_system_messages_and_tools() {
        let counter = TokenCounter::Approximate;
        let request = ModelRequest {
            model: "m".into(),
            system: "abcdef".into(),
            messages: vec![Message::User { text: "abc".into() }],
            tools: Vec::new(),
            params: Default::default(),
        };
        assert_eq!(counter.request(&request), PER_MESSAGE + 2 + PER_MESSAGE + 1);
    }
}
