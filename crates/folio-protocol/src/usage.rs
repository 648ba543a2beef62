//! Token usage of a model response, a step or a turn, and what it cost.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

/// Token counts read from a provider: uncached input, output, cache reads and cache writes, and
/// their price.
///
/// `input_tokens` counts only input that was neither read from nor written to the prompt cache,
/// so the whole prompt is `input_tokens + cache_read_tokens + cache_write_tokens`.
///
/// `cost_usd` is `null` when the model has no price (never a made-up `0`). A sum keeps a cost
/// only while every part with tokens has one: a priced step plus an unpriced one costs `null`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// What these tokens cost in US dollars at the model's price; `null` when it has none.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// True when every count is zero.
    pub fn is_zero(&self) -> bool {
        self.tokens() == 0
    }

    /// All tokens: input, output, cache reads and cache writes.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
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

impl Usage {
    /// This usage with its cost at `price`.
    pub fn priced(self, price: &ModelPrice) -> Usage {
        let rate = |tokens: u64, per_million: f64| tokens as f64 * per_million / 1_000_000.0;
        Usage {
            cost_usd: Some(
                rate(self.input_tokens, price.input)
                    + rate(self.output_tokens, price.output)
                    + rate(
                        self.cache_read_tokens,
                        price.cache_read.unwrap_or(price.input),
                    )
                    + rate(
                        self.cache_write_tokens,
                        price.cache_write.unwrap_or(price.input),
                    ),
            ),
            ..self
        }
    }
}

/// A model's price in US dollars per million tokens (`[prices."<model>"]` in `folio.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Uncached input tokens.
    #[schemars(range(min = 0))]
    pub input: f64,
    /// Output tokens (reasoning included).
    #[schemars(range(min = 0))]
    pub output: f64,
    /// Input tokens read from the prompt cache (default: `input`).
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub cache_read: Option<f64>,
    /// Input tokens written to the prompt cache (default: `input`).
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub cache_write: Option<f64>,
}

impl ModelPrice {
    /// Whether every rate is a finite number, zero or more.
    pub fn is_valid(&self) -> bool {
        [
            Some(self.input),
            Some(self.output),
            self.cache_read,
            self.cache_write,
        ]
        .into_iter()
        .flatten()
        .all(|rate| rate.is_finite() && rate >= 0.0)
    }
}

/// A cost in US dollars for people: `$1.23`, and two significant digits below a cent
/// (`$0.0012`), so that a cheap call does not read as free.
pub fn format_usd(cost: f64) -> String {
    if cost >= 0.01 || cost == 0.0 {
        format!("${cost:.2}")
    } else {
        let digits = (-cost.log10()).ceil() as usize + 1;
        format!("${cost:.digits$}")
    }
}

/// Costs are never NaN (prices are finite and not negative), so equality is an equivalence.
impl Eq for Usage {}

impl Add for Usage {
    type Output = Usage;

    /// Token counts saturate: a provider's usage is outside input, and counts near `u64::MAX`
    /// must not overflow (a panic in a debug build, a wrap in a release one).
    fn add(self, rhs: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(rhs.input_tokens),
            output_tokens: self.output_tokens.saturating_add(rhs.output_tokens),
            cache_read_tokens: self.cache_read_tokens.saturating_add(rhs.cache_read_tokens),
            cache_write_tokens: self
                .cache_write_tokens
                .saturating_add(rhs.cache_write_tokens),
            // A part without tokens adds nothing, priced or not.
            cost_usd: match (self.cost_usd, rhs.cost_usd) {
                (Some(a), Some(b)) => Some(a + b),
                (Some(a), None) if rhs.is_zero() => Some(a),
                (None, Some(b)) if self.is_zero() => Some(b),
                _ => None,
            },
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
            cost_usd: None,
        };
        total += Usage {
            input_tokens: 10,
            output_tokens: 20,
            cache_read_tokens: 30,
            cache_write_tokens: 40,
            cost_usd: None,
        };
        assert_eq!(
            total,
            Usage {
                input_tokens: 11,
                output_tokens: 22,
                cache_read_tokens: 33,
                cache_write_tokens: 44,
                cost_usd: None,
            }
        );
        assert!(Usage::default().is_zero());
        assert!(!total.is_zero());
    }

    #[test]
    fn token_counts_saturate_instead_of_overflowing() {
        // Found writing the `sse` fuzz target: two usage chunks near u64::MAX (fuzz/regressions/sse/).
        let huge = Usage {
            input_tokens: u64::MAX - 1,
            output_tokens: 1 << 63,
            cache_read_tokens: 0,
            cache_write_tokens: u64::MAX,
            cost_usd: None,
        };
        let total: Usage = [huge, huge].into_iter().sum();
        assert_eq!(
            total,
            Usage {
                input_tokens: u64::MAX,
                output_tokens: u64::MAX,
                cache_read_tokens: 0,
                cache_write_tokens: u64::MAX,
                cost_usd: None,
            }
        );
    }

    #[test]
    fn a_price_is_per_million_tokens_of_each_kind() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 500_000,
            cache_read_tokens: 2_000_000,
            cache_write_tokens: 0,
            cost_usd: None,
        };
        let price = ModelPrice {
            input: 2.0,
            output: 8.0,
            cache_read: Some(0.5),
            cache_write: None,
        };
        assert_eq!(usage.priced(&price).cost_usd, Some(2.0 + 4.0 + 1.0));
        let no_cache_rate = ModelPrice {
            cache_read: None,
            ..price
        };
        assert_eq!(usage.priced(&no_cache_rate).cost_usd, Some(2.0 + 4.0 + 4.0));
        assert!(price.is_valid());
        assert!(
            !ModelPrice {
                input: f64::NAN,
                ..price
            }
            .is_valid()
        );
        assert!(
            !ModelPrice {
                cache_write: Some(-1.0),
                ..price
            }
            .is_valid()
        );
    }

    #[test]
    fn costs_read_in_dollars_and_cheap_ones_keep_two_digits() {
        assert_eq!(format_usd(1.234), "$1.23");
        assert_eq!(format_usd(0.0), "$0.00");
        assert_eq!(format_usd(0.0012), "$0.0012");
        assert_eq!(format_usd(0.000_034_1), "$0.000034");
    }

    #[test]
    fn a_sum_costs_what_its_parts_cost_and_null_once_a_part_with_tokens_has_no_price() {
        let priced = |tokens, cost| Usage {
            input_tokens: tokens,
            cost_usd: cost,
            ..Usage::default()
        };
        assert_eq!(
            (priced(1, Some(0.5)) + priced(2, Some(0.25))).cost_usd,
            Some(0.75)
        );
        assert_eq!((priced(1, Some(0.5)) + priced(2, None)).cost_usd, None);
        assert_eq!((priced(2, None) + priced(1, Some(0.5))).cost_usd, None);
        // The empty usage (what a sum starts from) adds nothing.
        assert_eq!(
            [priced(1, Some(0.5)), priced(1, Some(0.5))]
                .into_iter()
                .sum::<Usage>()
                .cost_usd,
            Some(1.0)
        );
        assert_eq!((Usage::default() + Usage::default()).cost_usd, None);
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
