//! Argument specs for built-in tools: canonical names, aliases, types, JSON Schema, and the
//! one-line errors the model sees for unknown, missing or mistyped arguments.

use serde_json::{Map, Value, json};

/// The JSON type an argument accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArgType {
    String,
    Integer,
    Boolean,
    /// An array of strings (`ReadLints` paths).
    Strings,
    /// `[{id, content, status}]` for `UpdateTodos`.
    Todos,
}

/// One argument of a built-in tool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arg {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub ty: ArgType,
    pub required: bool,
    pub description: &'static str,
}

impl Arg {
    pub(crate) const fn new(name: &'static str, ty: ArgType, description: &'static str) -> Self {
        Arg {
            name,
            aliases: &[],
            ty,
            required: false,
            description,
        }
    }

    pub(crate) const fn required(mut self) -> Self {
        self.required = true;
        self
    }

    pub(crate) const fn aliases(mut self, aliases: &'static [&'static str]) -> Self {
        self.aliases = aliases;
        self
    }
}

/// The JSON Schema the model sees for `args` (canonical names only).
pub(crate) fn schema(args: &[Arg]) -> Value {
    let mut properties = Map::new();
    for arg in args {
        let mut prop = match arg.ty {
            ArgType::String => json!({"type": "string"}),
            ArgType::Integer => json!({"type": "integer"}),
            ArgType::Boolean => json!({"type": "boolean"}),
            ArgType::Strings => json!({"type": "array", "items": {"type": "string"}}),
            ArgType::Todos => json!({
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "content": {"type": "string"},
                        "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                    },
                    "required": ["id", "content", "status"]
                }
            }),
        };
        prop["description"] = Value::String(arg.description.to_string());
        properties.insert(arg.name.to_string(), prop);
    }
    let required: Vec<&str> = args.iter().filter(|a| a.required).map(|a| a.name).collect();
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// Maps aliases onto canonical names and checks names, presence and types.
pub(crate) fn normalize(args: &[Arg], input: Value) -> Result<Map<String, Value>, String> {
    let object = match input {
        Value::Object(object) => object,
        Value::Null => Map::new(),
        other => {
            return Err(format!(
                "tool input must be a JSON object, got {}",
                json_type(&other)
            ));
        }
    };
    let mut out = Map::new();
    let mut given_as: Vec<(&'static str, String)> = Vec::new();
    for (key, value) in object {
        let Some(arg) = args
            .iter()
            .find(|a| a.name == key || a.aliases.contains(&key.as_str()))
        else {
            let expected: Vec<&str> = args.iter().map(|a| a.name).collect();
            return Err(format!(
                "unknown argument \"{key}\"; expected one of: {}",
                expected.join(", ")
            ));
        };
        if let Some((_, first)) = given_as.iter().find(|(name, _)| *name == arg.name) {
            return Err(format!(
                "argument \"{}\" given twice (as \"{first}\" and \"{key}\")",
                arg.name
            ));
        }
        if value.is_null() {
            continue;
        }
        check_type(arg, &value)?;
        given_as.push((arg.name, key));
        out.insert(arg.name.to_string(), value);
    }
    if let Some(missing) = args
        .iter()
        .find(|a| a.required && !out.contains_key(a.name))
    {
        return Err(format!("missing required argument \"{}\"", missing.name));
    }
    Ok(out)
}

fn check_type(arg: &Arg, value: &Value) -> Result<(), String> {
    let ok = match arg.ty {
        ArgType::String => value.is_string(),
        ArgType::Integer => value.as_u64().is_some(),
        ArgType::Boolean => value.is_boolean(),
        ArgType::Strings => value
            .as_array()
            .is_some_and(|items| items.iter().all(Value::is_string)),
        ArgType::Todos => value.as_array().is_some_and(|items| {
            items.iter().all(|item| {
                ["id", "content", "status"]
                    .iter()
                    .all(|k| item.get(k).is_some_and(Value::is_string))
                    && item
                        .get("status")
                        .and_then(Value::as_str)
                        .is_some_and(|s| matches!(s, "pending" | "in_progress" | "completed"))
            })
        }),
    };
    if ok {
        return Ok(());
    }
    let expected = match arg.ty {
        ArgType::String => "a string",
        ArgType::Integer => "a non-negative integer",
        ArgType::Boolean => "a boolean",
        ArgType::Strings => "an array of strings",
        ArgType::Todos => {
            "an array of {id, content, status} with status pending, in_progress or completed"
        }
    };
    Err(format!(
        "argument \"{}\" must be {expected}, got {}",
        arg.name,
        json_type(value)
    ))
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

/// Typed access to normalized arguments (presence and types were already checked).
pub(crate) trait ArgsExt {
    fn str_arg(&self, name: &str) -> Option<&str>;
    fn u64_arg(&self, name: &str) -> Option<u64>;
    fn bool_arg(&self, name: &str) -> bool;
}

impl ArgsExt for Map<String, Value> {
    fn str_arg(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(Value::as_str)
    }

    fn u64_arg(&self, name: &str) -> Option<u64> {
        self.get(name).and_then(Value::as_u64)
    }

    fn bool_arg(&self, name: &str) -> bool {
        self.get(name).and_then(Value::as_bool).unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARGS: &[Arg] = &[
        Arg::new("path", ArgType::String, "p").required(),
        Arg::new("contents", ArgType::String, "c")
            .aliases(&["fileText", "file_text", "content"])
            .required(),
        Arg::new("limit", ArgType::Integer, "l"),
    ];

    #[test]
    fn maps_aliases_and_reports_errors() {
        let ok = normalize(ARGS, json!({"path": "/a", "file_text": "x"})).unwrap();
        assert_eq!(Value::Object(ok), json!({"path": "/a", "contents": "x"}));
        assert_eq!(
            normalize(ARGS, json!({"path": "/a", "contents": "x", "bogus": 1})).unwrap_err(),
            "unknown argument \"bogus\"; expected one of: path, contents, limit"
        );
        assert_eq!(
            normalize(ARGS, json!({"contents": "x"})).unwrap_err(),
            "missing required argument \"path\""
        );
        assert_eq!(
            normalize(ARGS, json!({"path": "/a", "contents": "x", "limit": "3"})).unwrap_err(),
            "argument \"limit\" must be a non-negative integer, got a string"
        );
        assert_eq!(
            normalize(ARGS, json!({"path": "/a", "contents": "x", "content": "y"})).unwrap_err(),
            "argument \"contents\" given twice (as \"content\" and \"contents\")"
        );
    }
}
