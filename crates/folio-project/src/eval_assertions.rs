//! The assertions of an eval step (`expect = [ { … }, … ]`): one kind key per table, plus that
//! kind's options, decoded with a message naming the field and the rule when a table is wrong.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value, json};

/// How a called tool's input is compared with the expected `input`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ArgMode {
    /// The input equals `input`.
    Exact,
    /// Every key of `input` is in the input with an equal value (recursively); extra keys pass.
    #[default]
    Subset,
    /// The input is not compared.
    Ignore,
}

/// How an actual trajectory is compared with the expected one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OrderMode {
    /// The calls are exactly the expected ones, in order.
    Exact,
    /// The expected calls appear in this order, other calls between them allowed.
    #[default]
    InOrder,
    /// Every expected call appears, in any order.
    AnyOrder,
}

/// One expected call of a trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedCall {
    /// The tool name.
    pub tool: String,
    /// The input to compare, when given.
    pub input: Option<Value>,
}

/// A check of one step, evaluated after its turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Assertion {
    /// `succeeded = true|false`: whether the turn completed.
    Succeeded(bool),
    /// `called_tool = "name"`, with optional `input`, `args` and `paths` (JSON path → value) and
    /// `times`.
    CalledTool {
        /// The tool.
        tool: String,
        /// The expected input.
        input: Option<Value>,
        /// How `input` is compared.
        args: ArgMode,
        /// JSON paths into the input (`$.a.b[0]`) and the value each must equal.
        paths: BTreeMap<String, Value>,
        /// Exactly this many matching calls, when given (else at least one).
        times: Option<u32>,
    },
    /// `not_called_tool = "name"`.
    NotCalledTool(String),
    /// `reply_includes = "text"`.
    ReplyIncludes(String),
    /// `reply_matches = "regex"`.
    ReplyMatches(String),
    /// `tool_order = [names]` or `trajectory = [names or {tool, input}]`, with `mode`, `args`
    /// and an optional F1 `threshold` that turns the check into partial credit.
    Trajectory {
        /// The key it was written with (`tool_order` or `trajectory`).
        key: &'static str,
        /// The expected calls.
        calls: Vec<ExpectedCall>,
        /// How the order is compared.
        mode: OrderMode,
        /// How inputs are compared.
        args: ArgMode,
        /// Passing F1 score (0 to 1); without it the mode's rule decides.
        threshold: Option<f64>,
    },
    /// `max_tool_calls = N`.
    MaxToolCalls(u64),
    /// `max_tokens = N` (input + output + cache tokens of the turn).
    MaxTokens(u64),
    /// `max_steps = N`: model calls of the turn.
    MaxSteps(u64),
    /// `max_duration_secs = N`.
    MaxDurationSecs(f64),
    /// `file = "/path"` with `contains`, `equals` or `exists` (default: exists).
    File {
        /// The path in the case's workspace (or root).
        path: String,
        /// What the file must hold.
        check: FileCheck,
    },
    /// `tool_errored = "name"`: a call of the tool ended in an error.
    ToolErrored(String),
    /// `no_tool_errors = true`.
    NoToolErrors,
    /// `approval_requested = "name"`: a call of the tool asked for approval.
    ApprovalRequested(String),
    /// `command = ["prog", "arg", …]` with optional `timeout_secs`: runs in the project folder
    /// with the step's observation (JSON) on stdin; passes on exit 0, its stdout is the reason.
    Command {
        /// The program and its arguments.
        argv: Vec<String>,
        /// Seconds before the command is killed and the assertion fails.
        timeout_secs: u64,
    },
    /// A step's `result_schema`: the reply, read as JSON, satisfies this JSON Schema.
    ResultSchema(Value),
    /// `judge = { rubric = "…", model = "…", threshold = 0.5 }`: an LLM grades the step.
    Judge {
        /// What the grader checks.
        rubric: String,
        /// The grader's model (default: the case's).
        model: Option<String>,
        /// Passing score (default 0.5).
        threshold: f64,
    },
}

/// What a `file` assertion checks.
#[derive(Debug, Clone, PartialEq)]
pub enum FileCheck {
    /// The file exists (`true`) or not (`false`).
    Exists(bool),
    /// The file holds this text.
    Contains(String),
    /// The file is exactly this text.
    Equals(String),
}

/// How long a `command` assertion may run unless it says (`timeout_secs`).
pub const DEFAULT_COMMAND_TIMEOUT_SECS: u64 = 30;

/// The assertion keys, each with the options it accepts.
pub const ASSERTION_KINDS: &[(&str, &[&str])] = &[
    ("succeeded", &[]),
    ("called_tool", &["input", "args", "paths", "times"]),
    ("not_called_tool", &[]),
    ("reply_includes", &[]),
    ("reply_matches", &[]),
    ("tool_order", &["mode", "threshold"]),
    ("trajectory", &["mode", "args", "threshold"]),
    ("max_tool_calls", &[]),
    ("max_tokens", &[]),
    ("max_steps", &[]),
    ("max_duration_secs", &[]),
    ("file", &["contains", "equals", "exists"]),
    ("tool_errored", &[]),
    ("no_tool_errors", &[]),
    ("approval_requested", &[]),
    ("command", &["timeout_secs"]),
    ("judge", &[]),
];

/// One `expect` table in the `eval` JSON Schema: a branch per kind of [`ASSERTION_KINDS`] with
/// its key (required) and its options, nothing else.
pub(crate) struct ExpectTable;

impl JsonSchema for ExpectTable {
    fn schema_name() -> Cow<'static, str> {
        "Assertion".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let branches: Vec<Value> = ASSERTION_KINDS
            .iter()
            .map(|(kind, options)| {
                let mut properties = Map::new();
                properties.insert(kind.to_string(), value_schema(kind, None));
                for option in *options {
                    properties.insert(option.to_string(), value_schema(kind, Some(option)));
                }
                json!({
                    "type": "object",
                    "required": [kind],
                    "properties": properties,
                    "additionalProperties": false,
                })
            })
            .collect();
        json_schema!({
            "description": "One assertion: exactly one kind key (succeeded, called_tool, trajectory, judge, …) and that kind's options.",
            "anyOf": branches,
        })
    }
}

/// The schema of an assertion kind's value (`option` `None`) or of one of its options: the
/// rules [`decode_assertion`] enforces, as far as JSON Schema can say them.
fn value_schema(kind: &str, option: Option<&str>) -> Value {
    let name = json!({"type": "string", "minLength": 1});
    let count = json!({"type": "integer", "minimum": 0});
    let fraction = json!({"type": "number", "minimum": 0, "maximum": 1});
    let args = json!({"enum": ["exact", "subset", "ignore"], "description": "How inputs are compared (default subset)."});
    let mode = json!({"enum": ["exact", "in_order", "any_order"], "description": "How the order is compared (default in_order)."});
    let (mut schema, description) = match (kind, option) {
        ("succeeded", None) => (json!({"type": "boolean"}), "Whether the turn completed."),
        ("called_tool", None) => (name, "A tool the turn called."),
        ("called_tool", Some("input")) => (json!({}), "The expected input, compared by `args`."),
        ("called_tool", Some("paths")) => (
            json!({"type": "object", "propertyNames": {"pattern": "^\\$"}}),
            "JSON paths into the input (`$.a.b[0]`) and the value each must equal.",
        ),
        ("called_tool", Some("times")) => (count, "Exactly this many matching calls."),
        ("not_called_tool", None) => (name, "A tool the turn must not call."),
        ("reply_includes", None) => (name, "Text the reply contains."),
        ("reply_matches", None) => (name, "A regex the reply matches."),
        ("tool_order", None) => (
            json!({"type": "array", "items": name}),
            "Tool names in the expected order.",
        ),
        ("trajectory", None) => (
            json!({"type": "array", "items": {"anyOf": [
                name.clone(),
                {
                    "type": "object",
                    "required": ["tool"],
                    "properties": {"tool": name, "input": {}},
                    "additionalProperties": false,
                },
            ]}}),
            "The expected calls: tool names or { tool, input }.",
        ),
        ("tool_order" | "trajectory", Some("mode")) => (mode, ""),
        ("trajectory", Some("args")) => (args, ""),
        ("called_tool", Some("args")) => (args, ""),
        ("tool_order" | "trajectory", Some("threshold")) => (
            fraction,
            "Passing F1 score over expected vs actual calls (partial credit).",
        ),
        ("max_tool_calls", None) => (count, "At most this many tool calls."),
        ("max_tokens", None) => (count, "At most this many tokens over the turn."),
        ("max_steps", None) => (count, "At most this many model calls."),
        ("max_duration_secs", None) => (
            json!({"type": "number", "exclusiveMinimum": 0}),
            "The turn takes at most this many seconds.",
        ),
        ("file", None) => (name, "A path in the case's workspace (or root)."),
        ("file", Some("contains" | "equals")) => (json!({"type": "string", "minLength": 1}), ""),
        ("file", Some("exists")) => (json!({"type": "boolean"}), ""),
        ("tool_errored", None) => (name, "A tool whose call ended in an error."),
        ("no_tool_errors", None) => (json!({"const": true}), "No tool call ended in an error."),
        ("approval_requested", None) => (name, "A tool whose call asked for approval."),
        ("command", None) => (
            json!({"type": "array", "items": {"type": "string"}, "minItems": 1}),
            "A program and its arguments, run in the project folder with the step's observation (JSON) on stdin: exit 0 passes, stdout is the reason.",
        ),
        ("command", Some("timeout_secs")) => (
            json!({"type": "integer", "minimum": 1}),
            "Seconds before the command is killed and the assertion fails (default 30).",
        ),
        ("judge", None) => (
            json!({
                "type": "object",
                "required": ["rubric"],
                "properties": {"rubric": name.clone(), "model": name, "threshold": fraction},
                "additionalProperties": false,
            }),
            "An LLM grader: its rubric, model (default: the case's) and passing score (default 0.5).",
        ),
        // Unreachable for the kinds and options above (a unit test checks every pair).
        _ => (json!(false), ""),
    };
    if let (Value::Object(schema), false) = (&mut schema, description.is_empty()) {
        schema.insert("description".into(), description.into());
    }
    schema
}

/// Why an `expect` table is not an assertion: the field and the rule it breaks.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AssertionError {
    /// The table names no assertion kind, but a key close to one.
    #[error("unknown assertion `{unknown}` (did you mean `{suggestion}`?)")]
    UnknownKind {
        /// The key found.
        unknown: String,
        /// The kind it most likely meant.
        suggestion: &'static str,
    },
    /// The table names no assertion kind.
    #[error("an assertion needs one of: {} (found {})", kinds.join(", "), found_keys(found))]
    NoKind {
        /// The assertion kinds.
        kinds: Vec<&'static str>,
        /// The keys of the table.
        found: Vec<String>,
    },
    /// The table names several assertion kinds.
    #[error(
        "one assertion per table: {} are two assertions; write them as separate tables",
        kinds.join(" and ")
    )]
    SeveralKinds {
        /// The kinds named.
        kinds: Vec<String>,
    },
    /// A key that is not an option of the kind.
    #[error("{}", unknown_option(kind, key, valid))]
    UnknownOption {
        /// The assertion kind.
        kind: &'static str,
        /// The key found.
        key: String,
        /// The kind's options (none: it takes none).
        valid: &'static [&'static str],
    },
    /// An unknown key inside a field's table (`judge`, a `trajectory` call).
    #[error("{field}: unknown key `{key}`{place}; valid keys: {valid}")]
    UnknownKey {
        /// The field holding the table.
        field: &'static str,
        /// The key found.
        key: String,
        /// Where in the field (` in a call`), or nothing.
        place: &'static str,
        /// The valid keys.
        valid: &'static str,
    },
    /// A field's value breaks its rule.
    #[error("{field}: {rule}")]
    Field {
        /// The field (`called_tool.times`, `judge.rubric`).
        field: String,
        /// The rule it breaks (`must be a string`).
        rule: &'static str,
    },
    /// A `called_tool.paths` key is not a supported JSON path.
    #[error("called_tool.paths: `{path}`: {source}")]
    JsonPath {
        /// The path as written.
        path: String,
        /// Why it is not supported.
        #[source]
        source: JsonPathError,
    },
    /// `reply_matches` is not a valid regex.
    #[error("reply_matches: not a valid regex ({})", regex_reason(source))]
    Regex {
        /// What the regex parser said.
        #[source]
        source: regex::Error,
    },
}

impl AssertionError {
    fn field(field: impl Into<String>, rule: &'static str) -> AssertionError {
        AssertionError::Field {
            field: field.into(),
            rule,
        }
    }
}

fn found_keys(found: &[String]) -> String {
    if found.is_empty() {
        "an empty table".to_string()
    } else {
        found.join(", ")
    }
}

fn unknown_option(kind: &str, key: &str, valid: &[&str]) -> String {
    if valid.is_empty() {
        format!("{kind}: takes no options (found `{key}`)")
    } else {
        format!(
            "{kind}: unknown option `{key}`; valid options: {}",
            valid.join(", ")
        )
    }
}

/// The reason of a regex error (its message spans lines: pattern, caret, reason).
fn regex_reason(err: &regex::Error) -> String {
    let text = err.to_string();
    let reason = text.lines().last().unwrap_or_default();
    reason.trim_start_matches("error: ").to_string()
}

/// Decodes one `expect` table; the error names the field and the rule.
pub(crate) fn decode_assertion(table: &toml::Table) -> Result<Assertion, AssertionError> {
    let kinds: Vec<&str> = table
        .keys()
        .map(String::as_str)
        .filter(|key| ASSERTION_KINDS.iter().any(|(kind, _)| kind == key))
        .collect();
    let (kind, options) = match kinds.as_slice() {
        [kind] => ASSERTION_KINDS
            .iter()
            .find(|(name, _)| name == kind)
            .copied()
            .expect("a kind of ASSERTION_KINDS"),
        [] => {
            let names: Vec<&'static str> = ASSERTION_KINDS.iter().map(|(kind, _)| *kind).collect();
            let unknown = table.keys().next().map(String::as_str).unwrap_or_default();
            return Err(match crate::naming::nearest_key(unknown, &names) {
                Some(suggestion) => AssertionError::UnknownKind {
                    unknown: unknown.to_string(),
                    suggestion,
                },
                None => AssertionError::NoKind {
                    kinds: names,
                    found: table.keys().cloned().collect(),
                },
            });
        }
        several => {
            return Err(AssertionError::SeveralKinds {
                kinds: several.iter().map(|k| k.to_string()).collect(),
            });
        }
    };
    for key in table.keys() {
        if key != kind && !options.contains(&key.as_str()) {
            return Err(AssertionError::UnknownOption {
                kind,
                key: key.clone(),
                valid: options,
            });
        }
    }
    let value = &table[kind];
    Ok(match kind {
        "succeeded" => Assertion::Succeeded(boolean(kind, value)?),
        "called_tool" => Assertion::CalledTool {
            tool: string(kind, value)?,
            input: table.get("input").map(json),
            args: arg_mode(table, kind)?,
            paths: match table.get("paths") {
                None => BTreeMap::new(),
                Some(toml::Value::Table(paths)) => {
                    for path in paths.keys() {
                        check_json_path(path).map_err(|source| AssertionError::JsonPath {
                            path: path.clone(),
                            source,
                        })?;
                    }
                    paths.iter().map(|(k, v)| (k.clone(), json(v))).collect()
                }
                Some(_) => {
                    return Err(AssertionError::field(
                        "called_tool.paths",
                        "must be a table of JSON path = value (e.g. { \"$.prUrl\" = \"…\" })",
                    ));
                }
            },
            times: match table.get("times") {
                None => None,
                Some(times) => Some(
                    u32::try_from(count("called_tool.times", times)?)
                        .map_err(|_| AssertionError::field("called_tool.times", "too large"))?,
                ),
            },
        },
        "not_called_tool" => Assertion::NotCalledTool(string(kind, value)?),
        "reply_includes" => Assertion::ReplyIncludes(string(kind, value)?),
        "reply_matches" => {
            let pattern = string(kind, value)?;
            if let Err(source) = regex::Regex::new(&pattern) {
                return Err(AssertionError::Regex { source });
            }
            Assertion::ReplyMatches(pattern)
        }
        "tool_order" | "trajectory" => {
            let key = if kind == "tool_order" {
                "tool_order"
            } else {
                "trajectory"
            };
            let toml::Value::Array(items) = value else {
                return Err(AssertionError::field(key, "must be a list of tool names"));
            };
            let calls = items
                .iter()
                .map(|item| expected_call(key, item))
                .collect::<Result<Vec<_>, _>>()?;
            let threshold = match table.get("threshold") {
                None => None,
                Some(value) => Some(fraction(&format!("{key}.threshold"), value)?),
            };
            Assertion::Trajectory {
                key,
                calls,
                mode: order_mode(table, key)?,
                args: arg_mode(table, key)?,
                threshold,
            }
        }
        "max_tool_calls" => Assertion::MaxToolCalls(count(kind, value)?),
        "max_tokens" => Assertion::MaxTokens(count(kind, value)?),
        "max_steps" => Assertion::MaxSteps(count(kind, value)?),
        "max_duration_secs" => Assertion::MaxDurationSecs(match value {
            toml::Value::Integer(n) if *n > 0 => *n as f64,
            toml::Value::Float(n) if *n > 0.0 => *n,
            _ => {
                return Err(AssertionError::field(
                    "max_duration_secs",
                    "must be a positive number of seconds",
                ));
            }
        }),
        "file" => {
            let path = string(kind, value)?;
            let checks: Vec<FileCheck> = [
                table
                    .get("contains")
                    .map(|v| string("file.contains", v).map(FileCheck::Contains)),
                table
                    .get("equals")
                    .map(|v| string("file.equals", v).map(FileCheck::Equals)),
                table
                    .get("exists")
                    .map(|v| boolean("file.exists", v).map(FileCheck::Exists)),
            ]
            .into_iter()
            .flatten()
            .collect::<Result<_, _>>()?;
            let check = match <[FileCheck; 1]>::try_from(checks) {
                Ok([check]) => check,
                Err(checks) if checks.is_empty() => FileCheck::Exists(true),
                Err(_) => {
                    return Err(AssertionError::field(
                        "file",
                        "give one of contains, equals or exists (write another file assertion for a second check)",
                    ));
                }
            };
            Assertion::File { path, check }
        }
        "tool_errored" => Assertion::ToolErrored(string(kind, value)?),
        "no_tool_errors" => {
            if !boolean(kind, value)? {
                return Err(AssertionError::field(
                    "no_tool_errors",
                    "only `true` is meaningful (remove the assertion to allow errors)",
                ));
            }
            Assertion::NoToolErrors
        }
        "approval_requested" => Assertion::ApprovalRequested(string(kind, value)?),
        "command" => {
            let argv = match value {
                toml::Value::Array(items) if !items.is_empty() => items
                    .iter()
                    .map(|item| string("command", item))
                    .collect::<Result<Vec<_>, _>>()?,
                _ => {
                    return Err(AssertionError::field(
                        "command",
                        "must be a list: the program, then its arguments (e.g. [\"python3\", \"checks/reply.py\"])",
                    ));
                }
            };
            let timeout_secs = match table.get("timeout_secs") {
                None => DEFAULT_COMMAND_TIMEOUT_SECS,
                Some(value) => match count("command.timeout_secs", value)? {
                    0 => {
                        return Err(AssertionError::field(
                            "command.timeout_secs",
                            "must be at least 1",
                        ));
                    }
                    secs => secs,
                },
            };
            Assertion::Command { argv, timeout_secs }
        }
        "judge" => {
            let toml::Value::Table(judge) = value else {
                return Err(AssertionError::field(
                    "judge",
                    "must be a table { rubric = \"…\", model = \"…\" }",
                ));
            };
            for key in judge.keys() {
                if !["rubric", "model", "threshold"].contains(&key.as_str()) {
                    return Err(AssertionError::UnknownKey {
                        field: "judge",
                        key: key.clone(),
                        place: "",
                        valid: "rubric, model, threshold",
                    });
                }
            }
            let rubric = judge.get("rubric").ok_or_else(|| {
                AssertionError::field("judge.rubric", "required: say what the grader checks")
            })?;
            Assertion::Judge {
                rubric: string("judge.rubric", rubric)?,
                model: judge
                    .get("model")
                    .map(|m| string("judge.model", m))
                    .transpose()?,
                threshold: match judge.get("threshold") {
                    None => 0.5,
                    Some(value) => fraction("judge.threshold", value)?,
                },
            }
        }
        // Unreachable: `kind` is one of ASSERTION_KINDS, and each is decoded above.
        other => return Err(AssertionError::field(other, "not an assertion")),
    })
}

fn json(value: &toml::Value) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn string(field: &str, value: &toml::Value) -> Result<String, AssertionError> {
    match value {
        toml::Value::String(text) if !text.is_empty() => Ok(text.clone()),
        toml::Value::String(_) => Err(AssertionError::field(field, "must not be empty")),
        _ => Err(AssertionError::field(field, "must be a string")),
    }
}

fn boolean(field: &str, value: &toml::Value) -> Result<bool, AssertionError> {
    value
        .as_bool()
        .ok_or_else(|| AssertionError::field(field, "must be true or false"))
}

fn count(field: &str, value: &toml::Value) -> Result<u64, AssertionError> {
    match value {
        toml::Value::Integer(n) if *n >= 0 => Ok(*n as u64),
        _ => Err(AssertionError::field(
            field,
            "must be a whole number, 0 or more",
        )),
    }
}

fn fraction(field: &str, value: &toml::Value) -> Result<f64, AssertionError> {
    let number = match value {
        toml::Value::Float(n) => *n,
        toml::Value::Integer(n) => *n as f64,
        _ => f64::NAN,
    };
    if (0.0..=1.0).contains(&number) {
        Ok(number)
    } else {
        Err(AssertionError::field(field, "must be a number from 0 to 1"))
    }
}

fn arg_mode(table: &toml::Table, kind: &str) -> Result<ArgMode, AssertionError> {
    match table.get("args").map(toml::Value::as_str) {
        None => Ok(ArgMode::default()),
        Some(Some("exact")) => Ok(ArgMode::Exact),
        Some(Some("subset")) => Ok(ArgMode::Subset),
        Some(Some("ignore")) => Ok(ArgMode::Ignore),
        Some(_) => Err(AssertionError::field(
            format!("{kind}.args"),
            "must be \"exact\", \"subset\" or \"ignore\"",
        )),
    }
}

fn order_mode(table: &toml::Table, kind: &str) -> Result<OrderMode, AssertionError> {
    match table.get("mode").map(toml::Value::as_str) {
        None => Ok(OrderMode::default()),
        Some(Some("exact")) => Ok(OrderMode::Exact),
        Some(Some("in_order")) => Ok(OrderMode::InOrder),
        Some(Some("any_order")) => Ok(OrderMode::AnyOrder),
        Some(_) => Err(AssertionError::field(
            format!("{kind}.mode"),
            "must be \"exact\", \"in_order\" or \"any_order\"",
        )),
    }
}

fn expected_call(key: &str, item: &toml::Value) -> Result<ExpectedCall, AssertionError> {
    match item {
        toml::Value::String(tool) if !tool.is_empty() => Ok(ExpectedCall {
            tool: tool.clone(),
            input: None,
        }),
        toml::Value::Table(call) if key == "trajectory" => {
            for name in call.keys() {
                if name != "tool" && name != "input" {
                    return Err(AssertionError::UnknownKey {
                        field: "trajectory",
                        key: name.clone(),
                        place: " in a call",
                        valid: "tool, input",
                    });
                }
            }
            let tool = call.get("tool").ok_or_else(|| {
                AssertionError::field("trajectory", "a call table needs tool = \"name\"")
            })?;
            Ok(ExpectedCall {
                tool: string("trajectory.tool", tool)?,
                input: call.get("input").map(json),
            })
        }
        _ if key == "trajectory" => Err(AssertionError::field(
            "trajectory",
            "each call is a tool name or { tool = \"…\", input = { … } }",
        )),
        _ => Err(AssertionError::field(key, "each item must be a tool name")),
    }
}

/// Why a JSON path is not of the supported form (`$`, then `.key`, `['key']` or `[n]` steps).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonPathError {
    /// The path does not start with `$`.
    #[error("a JSON path starts with `$` (e.g. `$.prUrl`)")]
    NoRoot,
    /// A `.` is followed by no key.
    #[error("an empty key after `.`")]
    EmptyKey,
    /// A `[…]` holds neither an index nor a quoted key.
    #[error("`[{inner}]` is neither an index nor a quoted key")]
    BadBracket {
        /// What the brackets hold.
        inner: String,
    },
    /// A character that starts no step.
    #[error("unexpected `{found}`: use `.key`, `['key']` or `[n]`")]
    Unexpected {
        /// The character.
        found: char,
    },
}

/// Checks a JSON path of the supported form: `$`, then `.key`, `['key']` or `[n]` steps.
pub fn check_json_path(path: &str) -> Result<(), JsonPathError> {
    parse_json_path(path).map(|_| ())
}

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathStep {
    /// An object key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// Parses `$.a.b[0]['c d']` into its steps.
pub fn parse_json_path(path: &str) -> Result<Vec<PathStep>, JsonPathError> {
    let rest = path.strip_prefix('$').ok_or(JsonPathError::NoRoot)?;
    let mut steps = Vec::new();
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                let mut key = String::new();
                while let Some(&next) = chars.peek() {
                    if next == '.' || next == '[' {
                        break;
                    }
                    key.push(next);
                    chars.next();
                }
                if key.is_empty() {
                    return Err(JsonPathError::EmptyKey);
                }
                steps.push(PathStep::Key(key));
            }
            '[' => {
                let mut inner = String::new();
                for next in chars.by_ref() {
                    if next == ']' {
                        break;
                    }
                    inner.push(next);
                }
                let quoted = inner
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
                match (quoted, inner.parse::<usize>()) {
                    (Some(key), _) => steps.push(PathStep::Key(key.to_string())),
                    (None, Ok(index)) => steps.push(PathStep::Index(index)),
                    (None, Err(_)) => {
                        return Err(JsonPathError::BadBracket { inner });
                    }
                }
            }
            other => {
                return Err(JsonPathError::Unexpected { found: other });
            }
        }
    }
    Ok(steps)
}
