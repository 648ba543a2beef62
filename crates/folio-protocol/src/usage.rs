//! Token usage of a model response, a step or a turn.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

/// Token counts read from a provider: uncached input, output, cache reads and cache writes.
///
/// `input_tokens` counts only input that was neither read from nor written to the prompt cache,
/// so the whole prompt is `input_tokens + cache_read_tokens + cache_write_tokens`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens not served from or written to the cache.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens (including reasoning tokens).
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// True when every count is zero.
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }

    /// The sum of the parts whose usage is known; `None` when no part reported any.
    ///
    /// A provider that reports nothing (some OpenAI-compatible servers never send usage in a
    /// stream) leaves its part unknown, and an unknown total is `null` on the wire, never a
    /// made-up zero.
    pub fn sum_reported(parts: impl IntoIterator<Item = Option<Usage>>) -> Option<Usage> {
        parts.into_iter().flatten().reduce(Add::add)
    }
}

impl Add for Usage {
    type Output = Usage;

    fn add(self, rhs: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens + rhs.input_tokens,
            output_tokens: self.output_tokens + rhs.output_tokens,
            cache_read_tokens: self.cache_read_tokens + rhs.cache_read_tokens,
            cache_write_tokens: self.cache_write_tokens + rhs.cache_write_tokens,
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        *self = *self + rhs;
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Usage>>(iter: I) -> Usage {
        iter.fold(Usage::default(), Add::add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_field_by_field() {
        let mut total = Usage {
            input_tokens: 1,
            output_tokens: 2,
            cache_read_tokens: 3,
            cache_write_tokens: 4,
        };
        total += Usage {
            input_tokens: 10,
            output_tokens: 20,
            cache_read_tokens: 30,
            cache_write_tokens: 40,
        };
        assert_eq!(
            total,
            Usage {
                input_tokens: 11,
                output_tokens: 22,
                cache_read_tokens: 33,
                cache_write_tokens: 44,
            }
        );
        assert!(Usage::default().is_zero());
        assert!(!total.is_zero());
    }

    #[test]
    fn a_sum_of_unreported_parts_is_unknown_not_zero() {
        let one = Usage {
            input_tokens: 1,
            ..Usage::default()
        };
        assert_eq!(Usage::sum_reported([None, None]), None);
        assert_eq!(Usage::sum_reported([]), None);
        assert_eq!(
            Usage::sum_reported([None, Some(one), Some(one)]),
            Some(one + one)
        );
    }
}
