//! Telemetry a session's own code adds through the host API: attributes on the span of the
//! calling tool call, and points of counters and histograms it names itself. Names and units
//! are checked here, so a bad one is refused with a message, never exported.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use opentelemetry::metrics::{Counter, Histogram};
use opentelemetry::{KeyValue, Value};
use serde_json::Map;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The longest metric or attribute name.
pub const MAX_NAME: usize = 255;
/// The longest unit.
pub const MAX_UNIT: usize = 63;
/// The most attributes one call may set.
pub const MAX_ATTRIBUTES: usize = 64;
/// The longest string attribute value, in bytes.
pub const MAX_VALUE_BYTES: usize = 4096;
/// Distinct custom instruments a process keeps (a flood of new names is refused).
const MAX_INSTRUMENTS: usize = 1_000;

/// Name prefixes Folio's own instruments and attributes use.
const RESERVED: &[&str] = &["agent_sdk.", "gen_ai.", "cursor.", "otel.", "folio."];

/// Why a custom attribute or metric point was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CustomTelemetryError {
    /// A name breaks the naming rule.
    #[error("{what} \"{name}\": {why}; use dotted lowercase words such as app.documents.indexed")]
    Name {
        /// `metric name` or `attribute`.
        what: &'static str,
        /// The name as given (cut to 80 characters).
        name: String,
        /// Which rule.
        why: &'static str,
    },
    /// A value that cannot be recorded.
    #[error("{0}")]
    Value(String),
    /// Too many distinct instruments in this process.
    #[error(
        "metric \"{0}\": this server already keeps {MAX_INSTRUMENTS} custom instruments; reuse a name and tell points apart with attributes"
    )]
    TooMany(String),
}

/// Checks a metric or attribute name: 1 to 255 characters of `a-z`, `0-9`, `_` and `.`,
/// starting with a letter, no empty segment, not one of Folio's prefixes.
pub fn check_name(what: &'static str, name: &str) -> Result<(), CustomTelemetryError> {
    let refuse = |why| {
        Err(CustomTelemetryError::Name {
            what,
            name: name.chars().take(80).collect(),
            why,
        })
    };
    if name.is_empty() || name.len() > MAX_NAME {
        return refuse("must be 1 to 255 characters");
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return refuse("must start with a lowercase letter");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.')
    {
        return refuse("may hold only a-z, 0-9, _ and .");
    }
    if name.split('.').any(str::is_empty) {
        return refuse("has an empty segment");
    }
    if RESERVED.iter().any(|prefix| name.starts_with(prefix)) {
        return refuse(
            "uses a prefix Folio reserves (agent_sdk., gen_ai., cursor., otel., folio.)",
        );
    }
    Ok(())
}

fn check_unit(unit: &str) -> Result<(), CustomTelemetryError> {
    if unit.len() > MAX_UNIT || !unit.chars().all(|c| c.is_ascii_graphic()) {
        return Err(CustomTelemetryError::Value(format!(
            "unit \"{}\": at most {MAX_UNIT} printable ASCII characters without spaces (UCUM, e.g. s, ms, By, {{document}})",
            unit.chars().take(80).collect::<String>()
        )));
    }
    Ok(())
}

/// Checks attributes and converts them: strings (at most 4 KiB), numbers and booleans.
pub fn attributes(
    map: &Map<String, serde_json::Value>,
) -> Result<Vec<KeyValue>, CustomTelemetryError> {
    if map.len() > MAX_ATTRIBUTES {
        return Err(CustomTelemetryError::Value(format!(
            "attributes: {} given, at most {MAX_ATTRIBUTES}",
            map.len()
        )));
    }
    map.iter()
        .map(|(name, value)| {
            check_name("attribute", name)?;
            let value = match value {
                serde_json::Value::String(text) if text.len() <= MAX_VALUE_BYTES => {
                    Value::from(text.clone())
                }
                serde_json::Value::String(_) => {
                    return Err(CustomTelemetryError::Value(format!(
                        "attribute {name}: longer than {MAX_VALUE_BYTES} bytes"
                    )));
                }
                serde_json::Value::Bool(flag) => Value::from(*flag),
                serde_json::Value::Number(number) => match number.as_i64() {
                    Some(int) => Value::from(int),
                    None => Value::from(number.as_f64().unwrap_or(f64::NAN)),
                },
                _ => {
                    return Err(CustomTelemetryError::Value(format!(
                        "attribute {name}: give a string, number or boolean"
                    )));
                }
            };
            Ok(KeyValue::new(name.clone(), value))
        })
        .collect()
}

/// Sets `attributes` (checked) on `span`.
pub fn set_span_attributes(
    span: &tracing::Span,
    attributes: &Map<String, serde_json::Value>,
) -> Result<usize, CustomTelemetryError> {
    let converted = self::attributes(attributes)?;
    let count = converted.len();
    for pair in converted {
        span.set_attribute(pair.key, pair.value);
    }
    Ok(count)
}

/// A custom instrument, created once per name, kind and unit.
#[derive(Clone)]
enum Instrument {
    Counter(Counter<f64>),
    Histogram(Histogram<f64>),
}

/// The custom instruments by name, kind (`true`: counter) and unit.
type Instruments = Mutex<HashMap<(String, bool, String), Instrument>>;

fn instruments() -> &'static Instruments {
    static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
    INSTRUMENTS.get_or_init(Mutex::default)
}

/// Records `value` on the counter (`counter = true`; the value must be ≥ 0) or histogram
/// `name` with `unit` and `attributes`, all checked first.
pub fn record_metric(
    name: &str,
    counter: bool,
    value: f64,
    unit: Option<&str>,
    attributes: &Map<String, serde_json::Value>,
) -> Result<(), CustomTelemetryError> {
    check_name("metric name", name)?;
    let unit = unit.unwrap_or("");
    check_unit(unit)?;
    if !value.is_finite() {
        return Err(CustomTelemetryError::Value(format!(
            "metric {name}: the value must be a finite number"
        )));
    }
    if counter && value < 0.0 {
        return Err(CustomTelemetryError::Value(format!(
            "metric {name}: a counter only adds; the value must be 0 or more (use a histogram for values that go down)"
        )));
    }
    let pairs = self::attributes(attributes)?;
    let key = (name.to_string(), counter, unit.to_string());
    let instrument = {
        let mut kept = instruments().lock().unwrap_or_else(|p| p.into_inner());
        match kept.get(&key) {
            Some(instrument) => instrument.clone(),
            None => {
                if kept.len() >= MAX_INSTRUMENTS {
                    return Err(CustomTelemetryError::TooMany(name.to_string()));
                }
                let meter = opentelemetry::global::meter("folio.host");
                let instrument = if counter {
                    Instrument::Counter(
                        meter
                            .f64_counter(name.to_string())
                            .with_unit(unit.to_string())
                            .build(),
                    )
                } else {
                    Instrument::Histogram(
                        meter
                            .f64_histogram(name.to_string())
                            .with_unit(unit.to_string())
                            .build(),
                    )
                };
                kept.insert(key, instrument.clone());
                instrument
            }
        }
    };
    match instrument {
        Instrument::Counter(counter) => counter.add(value, &pairs),
        Instrument::Histogram(histogram) => histogram.record(value, &pairs),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rule() {
        for good in ["app.count", "a", "app.documents_indexed.total", "x1.y2"] {
            assert_eq!(check_name("metric name", good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "App.count",
            "1app",
            "app..count",
            "app.count.",
            "app count",
            "app-count",
            "gen_ai.usage",
            "agent_sdk.turn",
            "cursor.x",
        ] {
            assert!(check_name("metric name", bad).is_err(), "{bad}");
        }
        assert!(check_name("metric name", &"a".repeat(256)).is_err());
    }

    #[test]
    fn values_are_checked() {
        let none = Map::new();
        assert!(record_metric("app.x", true, -1.0, None, &none).is_err());
        assert!(record_metric("app.x", false, f64::NAN, None, &none).is_err());
        assert!(record_metric("app.x", true, 1.0, Some("has space"), &none).is_err());
        assert!(record_metric("app.x", true, 1.0, Some("{document}"), &none).is_ok());
        let mut attrs = Map::new();
        attrs.insert("app.list".into(), serde_json::json!([1]));
        assert!(record_metric("app.x", true, 1.0, None, &attrs).is_err());
    }
}
