//! `folio help <cmd> --json` describes a command's arguments for tools that drive `folio`.

mod common;

use common::folio_bin;
use folio_protocol::{ArgumentHelp, CommandHelp};
use folio_test_support::read_wire;

#[test]
fn help_json_lists_a_commands_arguments() {
    let output = std::process::Command::new(folio_bin())
        .args(["help", "run", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let help: CommandHelp = read_wire(&serde_json::from_slice(&output.stdout).unwrap());
    assert_eq!(help.name, "run");
    assert!(help.subcommands.is_empty(), "{help:#?}");
    let message = help
        .args
        .iter()
        .find(|arg| arg.name == "message")
        .unwrap_or_else(|| panic!("no `message` argument: {help:#?}"));
    assert_eq!(
        message,
        &ArgumentHelp {
            name: "message".into(),
            long: Some("--message".into()),
            short: None,
            positional: false,
            required: true,
            takes_value: true,
            default: None,
            help: Some("The user message of the turn".into()),
        }
    );
    let json = help.args.iter().find(|arg| arg.name == "json").unwrap();
    assert!(!json.takes_value && !json.required, "{json:?}");
}

#[test]
fn help_for_an_unknown_command_is_one_line() {
    let output = std::process::Command::new(folio_bin())
        .args(["help", "nope"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: unknown command `nope`; commands: run, "),
        "{stderr}"
    );
}
