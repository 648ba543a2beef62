//! `folio help [COMMAND] [--json]`: a command's help for a person, or its arguments as JSON for
//! tools that drive `folio`.

use std::process::ExitCode;

use clap::{Arg, ArgAction, Command};
use folio_protocol::{ArgumentHelp, CommandHelp};

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

/// A command as its [`CommandHelp`]: its name, summary, arguments and subcommands.
fn describe(command: &Command) -> CommandHelp {
    CommandHelp {
        name: command.get_name().to_string(),
        about: command.get_about().map(|about| about.to_string()),
        args: command
            .get_arguments()
            .filter(|arg| !matches!(arg.get_id().as_str(), "help" | "version"))
            .map(describe_arg)
            .collect(),
        subcommands: command.get_subcommands().map(describe).collect(),
    }
}

fn describe_arg(arg: &Arg) -> ArgumentHelp {
    ArgumentHelp {
        name: arg.get_id().as_str().to_string(),
        long: arg.get_long().map(|long| format!("--{long}")),
        short: arg.get_short().map(|short| format!("-{short}")),
        positional: arg.is_positional(),
        required: arg.is_required_set(),
        takes_value: !matches!(
            arg.get_action(),
            ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count
        ),
        default: arg
            .get_default_values()
            .first()
            .map(|value| value.to_string_lossy().into_owned()),
        help: arg.get_help().map(|help| help.to_string()),
    }
}
