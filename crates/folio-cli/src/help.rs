//! `folio help [COMMAND] [--json]`: a command's help for a person, or its arguments as JSON for
//! tools that drive `folio`.

use std::process::ExitCode;

use clap::{Arg, ArgAction, Command};
use serde_json::{Value, json};

/// Arguments of `folio help`.
#[derive(Debug, clap::Args)]
pub(crate) struct HelpArgs {
    /// The command to describe (omit for the command index).
    command: Option<String>,
    /// Print the command's arguments as JSON.
    #[arg(long)]
    json: bool,
}

/// Prints help for `args.command` of `root` (the whole CLI's clap command).
pub(crate) fn help(mut root: Command, args: HelpArgs) -> anyhow::Result<ExitCode> {
    let command = match &args.command {
        None => root.clone(),
        Some(name) => root.find_subcommand_mut(name).cloned().ok_or_else(|| {
            let known: Vec<&str> = root.get_subcommands().map(Command::get_name).collect();
            anyhow::anyhow!("unknown command `{name}`; commands: {}", known.join(", "))
        })?,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&describe(&command))?);
    } else {
        let mut command = command;
        command.print_long_help()?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A command as JSON: its name, summary, arguments and subcommands.
fn describe(command: &Command) -> Value {
    let args: Vec<Value> = command
        .get_arguments()
        .filter(|arg| !matches!(arg.get_id().as_str(), "help" | "version"))
        .map(describe_arg)
        .collect();
    let mut out = json!({
        "name": command.get_name(),
        "about": command.get_about().map(|a| a.to_string()),
        "args": args,
    });
    let subcommands: Vec<Value> = command.get_subcommands().map(describe).collect();
    if !subcommands.is_empty() {
        out["subcommands"] = Value::Array(subcommands);
    }
    out
}

fn describe_arg(arg: &Arg) -> Value {
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    json!({
        "name": arg.get_id().as_str(),
        "long": arg.get_long().map(|l| format!("--{l}")),
        "short": arg.get_short().map(|s| format!("-{s}")),
        "positional": arg.is_positional(),
        "required": arg.is_required_set(),
        "takesValue": !matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count),
        "default": defaults.first(),
        "help": arg.get_help().map(|h| h.to_string()),
    })
}
