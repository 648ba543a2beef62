//! Compiling the JSON Schemas an agent folder carries (authored tool inputs, artifact kinds).
//! Remote `$ref`s are never fetched: jsonschema is built without its resolvers.

use serde_json::Value;

/// A JSON Schema that does not compile, with where it fails.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a valid JSON Schema{}: {message}", at.as_ref().map(|at| format!(" at {at}")).unwrap_or_default())]
pub struct InvalidSchema {
    /// The dotted path of the offending keyword inside the schema, when not at its top.
    pub at: Option<String>,
    /// What the validator reported.
    pub message: String,
}

/// Compiles `schema` into a validator, or says why it is not a valid JSON Schema.
pub fn compile_schema(schema: &Value) -> Result<jsonschema::Validator, InvalidSchema> {
    jsonschema::validator_for(schema).map_err(|err| {
        let at = err
            .instance_path()
            .as_str()
            .trim_start_matches('/')
            .replace('/', ".");
        InvalidSchema {
            at: Some(at).filter(|at| !at.is_empty()),
            message: err.to_string(),
        }
    })
}
