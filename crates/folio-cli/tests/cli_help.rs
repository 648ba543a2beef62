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

#[test]
fn help_json_of_eval_names_list_and_concurrency() {
    let output = std::process::Command::new(folio_bin())
        .args(["help", "eval", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let help: CommandHelp = read_wire(&serde_json::from_slice(&output.stdout).unwrap());
    let arg = |name: &str| {
        help.args
            .iter()
            .find(|arg| arg.name == name)
            .unwrap_or_else(|| panic!("no `{name}` argument: {help:#?}"))
            .clone()
    };
    assert_eq!(
        arg("concurrency"),
        ArgumentHelp {
            name: "concurrency".into(),
            long: Some("--concurrency".into()),
            short: None,
            positional: false,
            required: false,
            takes_value: true,
            default: None,
            help: Some(
                "Cases run at once, overriding evals/evals.toml (`--max-concurrency` is an alias)"
                    .into()
            ),
        }
    );
    let list = arg("list");
    assert!(!list.takes_value && !list.required, "{list:?}");
    assert!(
        help.args.iter().all(|arg| arg.name != "max_concurrency"),
        "{help:#?}"
    );
}

#[test]
fn serve_dev_and_eval_take_a_record_dir() {
    for command in ["serve", "dev", "eval"] {
        let output = std::process::Command::new(folio_bin())
            .args(["help", command, "--json"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{command}");
        let help: CommandHelp = read_wire(&serde_json::from_slice(&output.stdout).unwrap());
        let record = help
            .args
            .iter()
            .find(|arg| arg.name == "record_dir")
            .unwrap_or_else(|| panic!("no `record_dir` argument of {command}: {help:#?}"));
        assert_eq!(record.long.as_deref(), Some("--record-dir"), "{command}");
        assert!(record.takes_value && !record.required, "{record:?}");
        let text = record.help.as_deref().unwrap_or_default();
        assert!(
            text.contains("<slug>/<SESSION_ID>.jsonl")
                || text.contains("<slug>/<session id>.jsonl"),
            "{command}: {text}"
        );
    }
}
