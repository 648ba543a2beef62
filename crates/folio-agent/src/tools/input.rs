//! Typed inputs of the built-in tools. Each tool's input is one serde struct; the JSON Schema
//! the model sees is generated from it (schemars) and a call's arguments are parsed into it
//! (serde), so the schema and the parsing cannot drift apart. Aliases are `#[serde(alias)]`s:
//! accepted, never advertised.
//!
//! The model-facing schema dialect is flat and plain: definitions are inlined, an optional
//! argument is just its type (optionality is the `required` list), integers carry no Rust width
//! (`format`, `minimum: 0`), and the root is `{type, properties, required,
//! additionalProperties}` without a title or description (the tool has its own).

use std::fmt;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Serialize;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::ToolError;

/// Why a call's arguments do not fit the tool's input; one line naming the argument.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The input is not a JSON object (`null` reads as `{}`).
    #[error("tool input must be a JSON object, got {got}")]
    NotAnObject {
        /// The JSON type given instead (`a string`, `an array`, …).
        got: &'static str,
    },
    /// An argument the tool does not take.
    #[error("unknown argument \"{name}\"; expected one of: {}", expected.join(", "))]
    Unknown {
        /// The argument as given.
        name: String,
        /// The tool's arguments, canonical names in declaration order.
        expected: Vec<&'static str>,
    },
    /// A required argument is absent.
    #[error("missing required argument \"{name}\"")]
    Missing {
        /// The canonical argument name.
        name: &'static str,
    },
    /// One argument given twice, under its name and an alias (or two aliases).
    #[error("argument \"{name}\" given twice (under its name and an alias)")]
    Duplicate {
        /// The canonical argument name.
        name: &'static str,
    },
    /// An argument of the wrong JSON type.
    #[error("argument \"{name}\" must be {expected}, got {got}")]
    WrongType {
        /// The argument as given.
        name: String,
        /// What the schema asks for (`a string`, `a non-negative integer`, …).
        expected: String,
        /// The JSON type given (`a string`, `null`, …).
        got: &'static str,
    },
    /// An argument of the right JSON type whose value does not fit (a negative count, an
    /// unknown enum value inside a list).
    #[error("argument \"{name}\" must be {expected}: {source}")]
    Invalid {
        /// The argument as given.
        name: String,
        /// What the schema asks for.
        expected: String,
        /// What serde found wrong.
        #[source]
        source: serde_json::Error,
    },
    /// Anything else serde reported about the input as a whole.
    #[error("invalid tool input: {message}")]
    Other {
        /// serde's message.
        message: String,
    },
}

impl From<InputError> for ToolError {
    fn from(err: InputError) -> Self {
        ToolError(err.to_string())
    }
}

/// The JSON Schema the model sees for input type `T` (see the module docs for the dialect).
pub(crate) fn schema<T: JsonSchema>() -> Value {
    let mut value = raw_schema::<T>();
    flatten(&mut value);
    if let Value::Object(root) = &mut value {
        for key in ["$schema", "title", "description"] {
            root.remove(key);
        }
        root.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        root.entry("required")
            .or_insert_with(|| Value::Array(Vec::new()));
    }
    value
}

/// schemars' schema of `T` for deserialization, every definition inlined.
fn raw_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_deserialize()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    generator.into_root_schema_for::<T>().to_value()
}

/// Applies the model-facing dialect to every subschema of `value`.
fn flatten(value: &mut Value) {
    match value {
        Value::Object(object) => {
            // `Option<T>` reads as `T`: absence (and `null`) is what `required` leaves out.
            if let Some(Value::Array(types)) = object.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    object.insert("type".into(), only);
                }
            }
            if object.get("type").and_then(Value::as_str) == Some("integer") {
                object.remove("format");
                if object.get("minimum").and_then(Value::as_u64) == Some(0) {
                    object.remove("minimum");
                }
            }
            object.values_mut().for_each(flatten);
        }
        Value::Array(items) => items.iter_mut().for_each(flatten),
        _ => {}
    }
}

/// Parses a call's arguments into `T`; `null` reads as `{}`.
pub(crate) fn parse<T: JsonSchema + DeserializeOwned>(input: Value) -> Result<T, InputError> {
    let object = match input {
        Value::Object(object) => object,
        Value::Null => Map::new(),
        other => {
            return Err(InputError::NotAnObject {
                got: json_type(&other),
            });
        }
    };
    T::deserialize(Args(object)).map_err(|raw| explain::<T>(raw))
}

/// Checks a call's arguments against `T` and returns them with canonical names (aliases
/// mapped, `null`s of optional arguments dropped): the input recorded and later called with.
pub(crate) fn prepare<T: JsonSchema + DeserializeOwned + Serialize>(
    input: Value,
) -> Result<Value, ToolError> {
    canonical(&parse::<T>(input)?)
}

/// `input` as JSON with canonical names, absent optional arguments left out.
pub(crate) fn canonical<T: Serialize>(input: &T) -> Result<Value, ToolError> {
    let mut value = serde_json::to_value(input)
        .map_err(|err| ToolError(format!("could not re-encode the tool input: {err}")))?;
    if let Value::Object(object) = &mut value {
        object.retain(|_, v| !v.is_null());
    }
    Ok(value)
}

/// How a JSON value's type reads in an error message (`a string`, `an array`, …).
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Turns serde's report into the one-line error, using `T`'s schema to say what was expected.
fn explain<T: JsonSchema>(raw: Raw) -> InputError {
    let schema = raw_schema::<T>();
    let property = |name: &str| schema.get("properties").and_then(|p| p.get(name));
    match raw {
        Raw::Unknown { name, fields } => InputError::Unknown {
            name,
            expected: fields
                .iter()
                .copied()
                .filter(|field| property(field).is_some())
                .collect(),
        },
        Raw::Missing(name) => InputError::Missing { name },
        Raw::Duplicate(name) => InputError::Duplicate { name },
        Raw::Value {
            name,
            value,
            source,
        } => {
            let Some(expected) = property(&name) else {
                // An alias: serde's message says what was expected.
                return InputError::Other {
                    message: format!("argument \"{name}\": {source}"),
                };
            };
            let got = json_type(&value);
            let expected_type = expected.get("type");
            let type_matches = match expected_type {
                Some(Value::String(t)) => json_type_is(&value, t),
                Some(Value::Array(types)) => types
                    .iter()
                    .filter_map(Value::as_str)
                    .any(|t| json_type_is(&value, t)),
                _ => true,
            };
            let expected = describe(expected);
            if type_matches {
                InputError::Invalid {
                    name,
                    expected,
                    source,
                }
            } else {
                InputError::WrongType {
                    name,
                    expected,
                    got,
                }
            }
        }
        Raw::Custom(message) => InputError::Other { message },
    }
}

/// Whether `value` is of JSON Schema type `ty`.
fn json_type_is(value: &Value, ty: &str) -> bool {
    match ty {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    }
}

/// A property schema in words: `a string`, `a non-negative integer`, `an array of {id, …}`.
fn describe(schema: &Value) -> String {
    let ty = match schema.get("type") {
        Some(Value::String(ty)) => ty.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ => return "a JSON value".to_string(),
    };
    if let Some(Value::Array(values)) = schema.get("enum") {
        let values: Vec<String> = values.iter().map(Value::to_string).collect();
        return format!("one of {}", values.join(", "));
    }
    match ty {
        "string" => "a string".into(),
        "boolean" => "a boolean".into(),
        "number" => "a number".into(),
        "integer" if schema.get("minimum").and_then(Value::as_u64) == Some(0) => {
            "a non-negative integer".into()
        }
        "integer" => "an integer".into(),
        "object" => "an object".into(),
        "array" => match schema.get("items") {
            Some(items) if items.get("properties").is_some() => {
                let fields: Vec<&str> = match items.get("required").and_then(Value::as_array) {
                    Some(required) => required.iter().filter_map(Value::as_str).collect(),
                    None => items["properties"]
                        .as_object()
                        .map(|p| p.keys().map(String::as_str).collect())
                        .unwrap_or_default(),
                };
                format!("an array of {{{}}}", fields.join(", "))
            }
            Some(items) => match describe(items).strip_prefix("a ") {
                Some(single) => format!("an array of {single}s"),
                None => "an array".into(),
            },
            None => "an array".into(),
        },
        other => format!("of type {other}"),
    }
}

/// What serde reported, before it is put in words ([`explain`]).
#[derive(Debug)]
enum Raw {
    Unknown {
        name: String,
        fields: &'static [&'static str],
    },
    Missing(&'static str),
    Duplicate(&'static str),
    Value {
        name: String,
        value: Value,
        source: serde_json::Error,
    },
    Custom(String),
}

impl fmt::Display for Raw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Raw::Unknown { name, .. } => write!(f, "unknown field {name}"),
            Raw::Missing(name) => write!(f, "missing field {name}"),
            Raw::Duplicate(name) => write!(f, "duplicate field {name}"),
            Raw::Value { name, source, .. } => write!(f, "{name}: {source}"),
            Raw::Custom(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for Raw {}

impl de::Error for Raw {
    fn custom<M: fmt::Display>(message: M) -> Self {
        Raw::Custom(message.to_string())
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        Raw::Unknown {
            name: field.to_string(),
            fields: expected,
        }
    }

    fn missing_field(field: &'static str) -> Self {
        Raw::Missing(field)
    }

    fn duplicate_field(field: &'static str) -> Self {
        Raw::Duplicate(field)
    }
}

/// The top level of a call's arguments as a deserializer whose errors keep their structure
/// (which argument, what went wrong), unlike `serde_json::Value`'s formatted messages.
struct Args(Map<String, Value>);

impl<'de> de::Deserializer<'de> for Args {
    type Error = Raw;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Raw> {
        visitor.visit_map(Entries {
            entries: self.0.into_iter(),
            pending: None,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

/// The entries of [`Args`]; each value is deserialized by `serde_json::Value` and a failure
/// is tagged with the argument's name.
struct Entries {
    entries: serde_json::map::IntoIter,
    pending: Option<(String, Value)>,
}

impl<'de> MapAccess<'de> for Entries {
    type Error = Raw;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Raw> {
        let Some((name, value)) = self.entries.next() else {
            return Ok(None);
        };
        let key = seed.deserialize(name.as_str().into_deserializer())?;
        self.pending = Some((name, value));
        Ok(Some(key))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Raw> {
        let (name, value) = self
            .pending
            .take()
            .ok_or_else(|| Raw::Custom("a value was asked for before its key".into()))?;
        seed.deserialize(value.clone())
            .map_err(|source| Raw::Value {
                name,
                value,
                source,
            })
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    /// A sample input.
    #[derive(Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Sample {
        /// The path.
        path: String,
        /// The contents.
        #[serde(alias = "fileText", alias = "file_text", alias = "content")]
        contents: String,
        /// How many.
        limit: Option<u64>,
    }

    fn error(input: Value) -> String {
        parse::<Sample>(input).unwrap_err().to_string()
    }

    #[test]
    fn maps_aliases_and_reports_errors() {
        assert_eq!(
            prepare::<Sample>(json!({"path": "/a", "file_text": "x", "limit": null})).unwrap(),
            json!({"path": "/a", "contents": "x"})
        );
        assert_eq!(
            error(json!({"path": "/a", "contents": "x", "bogus": 1})),
            "unknown argument \"bogus\"; expected one of: path, contents, limit"
        );
        assert_eq!(
            error(json!({"contents": "x"})),
            "missing required argument \"path\""
        );
        assert_eq!(
            error(json!({"path": "/a", "contents": "x", "limit": "3"})),
            "argument \"limit\" must be a non-negative integer, got a string"
        );
        assert!(
            error(json!({"path": "/a", "contents": "x", "limit": -3}))
                .starts_with("argument \"limit\" must be a non-negative integer: invalid value"),
        );
        assert_eq!(
            error(json!({"path": "/a", "contents": "x", "content": "y"})),
            "argument \"contents\" given twice (under its name and an alias)"
        );
        assert_eq!(
            error(json!("/a")),
            "tool input must be a JSON object, got a string"
        );
    }

    #[test]
    fn the_schema_is_flat_and_plain() {
        assert_eq!(
            schema::<Sample>(),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The path."},
                    "contents": {"type": "string", "description": "The contents."},
                    "limit": {"type": "integer", "description": "How many."}
                },
                "required": ["path", "contents"],
                "additionalProperties": false
            })
        );
    }
}
