//! What `folio` prints as JSON outside runs: `folio help [COMMAND] --json` (a command's
//! arguments, for tools that drive `folio`) and `folio call` (a direct tool call's result).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What `folio call TOOL` prints: the tool's result and whether it failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallOutput {
    /// `false` when the input was invalid or the tool failed (the command then exits 1).
    pub ok: bool,
    /// The tool's output, or the error text.
    pub result: Value,
    /// Whether the tool failed (always `!ok`).
    pub is_error: bool,
}

impl CallOutput {
    /// The output of a call that returned `result` (`is_error` when it failed).
    pub fn new(result: Value, is_error: bool) -> Self {
        CallOutput {
            ok: !is_error,
            result,
            is_error,
        }
    }
}

/// `folio help [COMMAND] --json`: a command, its arguments and its subcommands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandHelp {
    /// The command's name (`folio` for the command index).
    pub name: String,
    /// Its one-line summary, if it has one.
    pub about: Option<String>,
    /// Its arguments (`--help` and `--version` left out).
    pub args: Vec<ArgumentHelp>,
    /// Its subcommands; absent when it has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subcommands: Vec<CommandHelp>,
}

/// One argument of a [`CommandHelp`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArgumentHelp {
    /// The argument's id, e.g. `message`.
    pub name: String,
    /// Its long flag with the dashes (`--message`), if it has one.
    pub long: Option<String>,
    /// Its short flag with the dash (`-m`), if it has one.
    pub short: Option<String>,
    /// Whether it is given by position rather than by flag.
    pub positional: bool,
    /// Whether the command refuses to run without it.
    pub required: bool,
    /// Whether it takes a value (`false` for a switch such as `--json`).
    pub takes_value: bool,
    /// Its default value, if it has one.
    pub default: Option<String>,
    /// Its help text, if it has one.
    pub help: Option<String>,
}
