//! What a model call costs: the prices of the models Folio's docs name, and the project's own
//! (`[prices."<model>"]` in `folio.toml`), applied to the usage each call reports.

use std::collections::BTreeMap;

use folio_protocol::{ModelPrice, Usage};

/// USD per million tokens: input, output, cache read, cache write (`None`: the input price).
const fn price(input: f64, output: f64, cache_read: f64, cache_write: Option<f64>) -> ModelPrice {
    ModelPrice {
        input,
        output,
        cache_read: Some(cache_read),
        cache_write,
    }
}

/// The providers' list prices (as published in 2025: override them in `folio.toml` when they
/// change) of the models Folio's docs name, by model-id
/// prefix; OpenAI charges no cache writes beyond the input price.
const DEFAULT_PRICES: &[(&str, ModelPrice)] = &[
    ("gpt-5", price(1.25, 10.0, 0.125, None)),
    ("gpt-5-mini", price(0.25, 2.0, 0.025, None)),
    ("gpt-5-nano", price(0.05, 0.4, 0.005, None)),
    ("gpt-4.1", price(2.0, 8.0, 0.5, None)),
    ("gpt-4.1-mini", price(0.4, 1.6, 0.1, None)),
    ("gpt-4.1-nano", price(0.1, 0.4, 0.025, None)),
    ("gpt-4o", price(2.5, 10.0, 1.25, None)),
    ("gpt-4o-mini", price(0.15, 0.6, 0.075, None)),
    ("o3", price(2.0, 8.0, 0.5, None)),
    ("o3-mini", price(1.1, 4.4, 0.55, None)),
    ("o4-mini", price(1.1, 4.4, 0.275, None)),
    ("claude-opus-4", price(15.0, 75.0, 1.5, Some(18.75))),
    ("claude-opus-4-5", price(5.0, 25.0, 0.5, Some(6.25))),
    ("claude-sonnet-4", price(3.0, 15.0, 0.3, Some(3.75))),
    ("claude-haiku-4-5", price(1.0, 5.0, 0.1, Some(1.25))),
    ("claude-3-5-haiku", price(0.8, 4.0, 0.08, Some(1.0))),
];

/// The value of the longest key of `table` that `model` starts with (dated snapshots such as
/// `gpt-4.1-mini-2025-04-14` take their family's entry).
pub(crate) fn by_model_prefix<'a, T>(
    table: impl IntoIterator<Item = (&'a str, T)>,
    model: &str,
) -> Option<T> {
    table
        .into_iter()
        .filter(|(prefix, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, value)| value)
}

/// Model prices: the project's first, then Folio's defaults.
#[derive(Debug, Clone, Default)]
pub struct PriceTable {
    overrides: BTreeMap<String, ModelPrice>,
}

impl PriceTable {
    /// The defaults, with `overrides` (model id or id prefix → price) taking precedence.
    pub fn new(overrides: BTreeMap<String, ModelPrice>) -> PriceTable {
        PriceTable { overrides }
    }

    /// The price of `model` (a model id, without its `provider:`), if one is known.
    pub fn price(&self, model: &str) -> Option<ModelPrice> {
        let overrides = self.overrides.iter().map(|(k, v)| (k.as_str(), *v));
        by_model_prefix(overrides, model)
            .or_else(|| by_model_prefix(DEFAULT_PRICES.iter().copied(), model))
    }

    /// `usage` with its cost at `model`'s price; unchanged (cost `null`) without one.
    pub fn priced(&self, usage: Usage, model: &str) -> Usage {
        match self.price(model) {
            Some(price) => usage.priced(&price),
            None => usage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_matching_prefix_prices_a_model_and_the_project_wins() {
        let table = PriceTable::default();
        assert_eq!(table.price("gpt-4.1-mini-2025-04-14").unwrap().input, 0.4);
        assert_eq!(table.price("gpt-4.1").unwrap().input, 2.0);
        assert_eq!(table.price("o3-mini").unwrap().input, 1.1);
        assert_eq!(
            table.price("claude-sonnet-4-5-20250929").unwrap().output,
            15.0
        );
        assert_eq!(table.price("my-local-model"), None);

        let own = ModelPrice {
            input: 1.0,
            output: 2.0,
            cache_read: None,
            cache_write: None,
        };
        let table = PriceTable::new(BTreeMap::from([
            ("gpt-4.1".to_string(), own),
            ("my-local".to_string(), own),
        ]));
        assert_eq!(table.price("gpt-4.1-mini").unwrap(), own);
        assert_eq!(table.price("my-local-model").unwrap(), own);

        let usage = Usage {
            input_tokens: 3_000_000,
            output_tokens: 1_000_000,
            ..Usage::default()
        };
        assert_eq!(table.priced(usage, "my-local-model").cost_usd, Some(5.0));
        assert_eq!(table.priced(usage, "unknown").cost_usd, None);
    }
}
