//! `folio doctor`: each check against a real machine state — a scaffolded project, a missing
//! key, a broken agent folder, a busy port, a world-writable state root, no Node.js on PATH.

mod common;

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::folio_bin;
use serde_json::Value;

/// `folio init --template demo` into `parent/demo`.
fn demo(parent: &Path) -> PathBuf {
    let dir = parent.join("demo");
    let init = Command::new(folio_bin())
        .args(["init", "--template", "demo"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(init.status.success(), "{init:?}");
    dir
}

/// `folio doctor --json --dir DIR EXTRA…` (on port 0 unless EXTRA names one) with the model
/// keys and `FOLIO_MODEL` cleared.
fn doctor(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> (Output, Vec<Value>) {
    let mut command = Command::new(folio_bin());
    command
        .args(["doctor", "--json", "--dir"])
        .arg(dir)
        .args(extra);
    if !extra.contains(&"--port") {
        command.args(["--port", "0"]);
    }
    command
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("FOLIO_MODEL");
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    let checks: Vec<Value> = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("doctor --json printed no JSON ({err}): {output:?}"));
    (output, checks)
}

/// The check named `name`.
fn check<'a>(checks: &'a [Value], name: &str) -> &'a Value {
    checks
        .iter()
        .find(|check| check["check"] == name)
        .unwrap_or_else(|| panic!("no `{name}` check in {checks:#?}"))
}

#[test]
fn a_scaffolded_project_passes_and_the_text_report_has_one_line_per_check() {
    let temp = tempfile::tempdir().unwrap();
    let dir = demo(temp.path());
    let (output, checks) = doctor(&dir, &[], &[("OPENAI_API_KEY", "sk-test")]);
    assert!(output.status.success(), "{checks:#?}");
    for name in ["folio", "agent", "model", "state"] {
        assert_eq!(check(&checks, name)["status"], "ok", "{checks:#?}");
    }
    assert!(
        check(&checks, "folio")["detail"]
            .as_str()
            .unwrap()
            .starts_with(&format!("folio {}", env!("CARGO_PKG_VERSION"))),
        "{checks:#?}"
    );

    let text = Command::new(folio_bin())
        .args(["doctor", "--port", "0", "--dir"])
        .arg(&dir)
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap();
    let stdout = String::from_utf8(text.stdout).unwrap();
    for name in ["folio", "agent", "model", "node", "git", "state", "port"] {
        assert!(
            stdout
                .lines()
                .any(|line| line.split_whitespace().nth(1) == Some(name)),
            "no line for {name}:\n{stdout}"
        );
    }
}

#[test]
fn a_missing_key_fails_naming_the_variable_to_export() {
    let temp = tempfile::tempdir().unwrap();
    let dir = demo(temp.path());
    let spec = ["--model", "anthropic:claude-sonnet-4-5"];
    let (output, checks) = doctor(&dir, &spec, &[]);
    assert_eq!(output.status.code(), Some(1), "{checks:#?}");
    let model = check(&checks, "model");
    assert_eq!(model["status"], "fail");
    assert!(
        model["detail"]
            .as_str()
            .unwrap()
            .contains("ANTHROPIC_API_KEY"),
        "{model}"
    );
    assert!(
        model["fix"]
            .as_str()
            .unwrap()
            .starts_with("export ANTHROPIC_API_KEY="),
        "{model}"
    );

    let (output, checks) = doctor(&dir, &spec, &[("ANTHROPIC_API_KEY", "sk-test")]);
    assert!(output.status.success(), "{checks:#?}");
    assert_eq!(check(&checks, "model")["status"], "ok");
}

#[test]
fn a_broken_agent_folder_fails_pointing_at_validate() {
    let temp = tempfile::tempdir().unwrap();
    let dir = demo(temp.path());
    std::fs::write(dir.join("agent/agent.toml"), "model = [not toml\n").unwrap();
    let (output, checks) = doctor(&dir, &[], &[]);
    assert_eq!(output.status.code(), Some(1), "{checks:#?}");
    let agent = check(&checks, "agent");
    assert_eq!(agent["status"], "fail");
    assert!(
        agent["fix"].as_str().unwrap().contains("folio validate"),
        "{agent}"
    );

    // No agent folder at all is a warning: `folio doctor` also checks a machine before init.
    let empty = tempfile::tempdir().unwrap();
    let (output, checks) = doctor(empty.path(), &[], &[]);
    assert!(output.status.success(), "{checks:#?}");
    assert_eq!(check(&checks, "agent")["status"], "warn");
    assert!(
        check(&checks, "agent")["fix"]
            .as_str()
            .unwrap()
            .contains("folio init")
    );
}

#[test]
fn a_busy_port_and_a_world_writable_state_root_are_warnings() {
    let temp = tempfile::tempdir().unwrap();
    let dir = demo(temp.path());
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let state = temp.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).unwrap();
    let key = [("OPENAI_API_KEY", "sk-test")];
    let (output, checks) = doctor(
        &dir,
        &["--port", &port, "--state-root", state.to_str().unwrap()],
        &key,
    );
    assert!(output.status.success(), "{checks:#?}");
    assert_eq!(check(&checks, "port")["status"], "warn", "{checks:#?}");
    let state_check = check(&checks, "state");
    assert_eq!(state_check["status"], "warn", "{checks:#?}");
    assert_eq!(
        state_check["fix"],
        format!("chmod go-w {}", state.display())
    );

    // A state root this user cannot create fails (root ignores permissions, so only as others).
    let locked = temp.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o500)).unwrap();
    if std::fs::write(locked.join("probe"), b"").is_err() {
        let root = locked.join("state");
        let (output, checks) = doctor(&dir, &["--state-root", root.to_str().unwrap()], &key);
        assert_eq!(output.status.code(), Some(1), "{checks:#?}");
        assert_eq!(check(&checks, "state")["status"], "fail");
    }
}

#[test]
fn without_node_an_npx_connection_fails_and_no_connection_only_warns() {
    let temp = tempfile::tempdir().unwrap();
    let dir = demo(temp.path());
    let no_tools = temp.path().join("empty-path");
    std::fs::create_dir(&no_tools).unwrap();
    let path = [
        ("PATH", no_tools.to_str().unwrap()),
        ("OPENAI_API_KEY", "sk-test"),
    ];
    // The demo's MCP connection runs `npx`.
    let (output, checks) = doctor(&dir, &[], &path);
    assert_eq!(output.status.code(), Some(1), "{checks:#?}");
    let node = check(&checks, "node");
    assert_eq!(node["status"], "fail", "{checks:#?}");
    assert!(
        node["fix"].as_str().unwrap().contains("Node.js 18"),
        "{node}"
    );
    assert_eq!(check(&checks, "git")["status"], "warn");

    std::fs::remove_dir_all(dir.join("agent/mcp-connections")).unwrap();
    let (output, checks) = doctor(&dir, &[], &path);
    assert!(output.status.success(), "{checks:#?}");
    assert_eq!(check(&checks, "node")["status"], "warn");
}
