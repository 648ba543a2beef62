//! `folio help <cmd> --json` describes a command's arguments for tools that drive `folio`.

mod common;

use common::folio_bin;
use serde_json::Value;

#[test]
fn help_json_lists_a_commands_arguments() {
    let output = std::process::Command::new(folio_bin())
        .args(["help", "run", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let help: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(help["name"], "run");
    let message = help["args"]
        .as_array()
        .unwrap()
        .iter()
        .find(|arg| arg["name"] == "message")
        .unwrap();
    assert_eq!(message["long"], "--message");
    assert_eq!(message["required"], true);
    assert_eq!(message["takesValue"], true);
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
