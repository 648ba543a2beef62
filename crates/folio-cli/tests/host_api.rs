//! The host API through the real binary: `folio serve` starts an authored tool whose shell
//! script calls `folio host …` (files, reminders, artifacts, a host connection — the
//! `mcp-server-everything` package from npm —, telemetry) over the socket under the state root
//! with the token its process was given; each call lands in the session's log as
//! `action.host_call` inside the tool call. After the call ends its token is refused.

mod serve_support;

use std::path::Path;

use folio_protocol::{
    ActionHostCall, ActionResult, ArtifactTagged, CreateSession, Event, ReminderSet,
};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use serve_support::*;

const AGENT: &str = "name = \"Host Agent\"\nmodel = \"openai:gpt-test\"\n";

/// A tool that runs `folio host` commands and prints one JSON object of their answers.
const PROBE: &str = r#"set -u
F="$FOLIO_BIN"
printf '{'
printf '"whoami": %s,' "$($F host whoami)"
printf '"write": %s,' "$($F host files write notes/a.md --contents 'hello from the tool')"
printf '"read": %s,' "$($F host files read notes/a.md)"
printf '"escape": %s,' "$($F host files read ../../../../etc/passwd)"
printf '"reminder": %s,' "$($F host reminder set --in 1h 'check the build')"
printf '"artifact": %s,' "$($F host artifact put report-1 --title Report --contents 'the body')"
printf '"connections": %s,' "$($F host connection list)"
printf '"echo": %s,' "$($F host connection call ops echo '{"message": "from a tool"}')"
printf '"metric": %s,' "$($F host telemetry metric app.probe.runs 1 --unit '{run}')"
printf '"badMetric": %s,' "$($F host telemetry metric gen_ai.stolen 1)"
printf '"attr": %s,' "$($F host telemetry attr app.probe.ok=true)"
printf '"log": %s,' "$($F host telemetry log 'probe ran')"
printf '"url": "%s", "token": "%s"}' "$FOLIO_HOST_URL" "$FOLIO_HOST_TOKEN"
"#;

fn npm_bin(name: &str) -> std::path::PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-deps/npm/node_modules/.bin")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-deps",
        path.display()
    );
    path
}

fn probe_project() -> Project {
    let dir = project(AGENT);
    write_files(
        dir.path(),
        &[
            (
                "agent/tools/probe.toml",
                "description = \"Probe the host API.\"\ncommand = [\"sh\", \"probe.sh\"]\neffect = \"read\"\n[input_schema]\ntype = \"object\"\n",
            ),
            ("agent/tools/probe.sh", PROBE),
            (
                "agent/host-connections/ops.toml",
                &format!(
                    "description = \"Everything test server\"\ncommand = \"{}\"\nargs = [\"stdio\"]\n",
                    npm_bin("mcp-server-everything").display()
                ),
            ),
        ],
    );
    dir
}

/// The JSON object the probe tool printed.
fn probe_output(events: &[Event]) -> Value {
    let result = all::<ActionResult>(events)
        .into_iter()
        .find(|result| result.tool == "probe")
        .expect("the probe ran");
    assert!(!result.is_error, "the probe failed: {result:#?}");
    result
        .output
        .clone()
        .expect("the probe printed its answers")
}

#[tokio::test]
async fn a_tool_reaches_its_own_session_through_the_host_api_and_its_token_dies_with_the_call() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([("probe", json!({}))]));
    mock.push(MockReply::text("probed"));
    let dir = probe_project();
    let state = tempfile::tempdir().unwrap();
    let folio = folio_bin();
    let server = serve_with_env(
        &mock.openai_base_url(),
        dir.path(),
        state.path(),
        &["--mode", "single"],
        &[("FOLIO_BIN", folio.to_str().unwrap())],
    )
    .await;
    let created = create_session(&server.url, &CreateSession::message("probe it")).await;
    let id = created.session_id.clone();
    let mut stream = Stream::open(&server.url, &id, 0, None).await;
    stream.until("turn.completed").await;
    let events = events(&server.url, &id).await;
    let out = probe_output(&events);

    // Who the token acts for: this session, this call.
    let call_id = all::<ActionResult>(&events)[0].call_id.clone();
    assert_eq!(out["whoami"]["sessionId"], json!(id));
    assert_eq!(out["whoami"]["callId"], json!(call_id));
    assert_eq!(out["whoami"]["principal"], json!("local"));
    assert!(
        out["url"].as_str().unwrap().starts_with("unix:"),
        "a socket, not a port: {}",
        out["url"]
    );
    // Files: the session's FileSystem, confined.
    assert_eq!(out["write"]["ok"], json!(true), "{}", out["write"]);
    assert!(
        out["read"]["output"]
            .as_str()
            .unwrap()
            .contains("hello from the tool"),
        "{}",
        out["read"]
    );
    assert_eq!(out["escape"]["ok"], json!(false), "{}", out["escape"]);
    assert_eq!(out["escape"]["error"], json!("invalid_request"));
    // A reminder and an artifact of this session, recorded as the HTTP API records them.
    let reminder_id = out["reminder"]["reminder"]["reminderId"].as_str().unwrap();
    assert_eq!(all::<ReminderSet>(&events)[0].reminder_id, reminder_id);
    let artifact_id = out["artifact"]["artifact"]["id"].as_str().unwrap();
    assert_eq!(all::<ArtifactTagged>(&events)[0].id, artifact_id);
    let (status, listed) = get(&format!("{}/v1/session/{id}/reminders", server.url)).await;
    assert_eq!(status, 200);
    assert_eq!(listed["data"][0]["message"], json!("check the build"));
    // The host connection: listed with its tools, and called.
    assert_eq!(
        out["connections"]["connections"][0]["connection"],
        json!("ops")
    );
    assert!(
        out["echo"]["result"].to_string().contains("from a tool"),
        "{}",
        out["echo"]
    );
    // Telemetry: a good metric and attribute are taken, a reserved name refused.
    assert_eq!(out["metric"]["ok"], json!(true), "{}", out["metric"]);
    assert_eq!(out["attr"]["ok"], json!(true), "{}", out["attr"]);
    assert_eq!(out["badMetric"]["error"], json!("invalid_request"));
    // The log line reached the session's log.
    let (_, logs) = get(&format!("{}/v1/logs", server.url)).await;
    assert!(logs.to_string().contains("probe ran"), "{logs}");

    // Every call is in the log, inside the tool call, in order.
    let calls: Vec<&ActionHostCall> = all::<ActionHostCall>(&events);
    let operations: Vec<&str> = calls.iter().map(|c| c.operation.as_str()).collect();
    assert_eq!(
        operations,
        [
            "files.write",
            "files.read",
            "files.read",
            "reminders.set",
            "artifacts.put",
            "connections.list",
            "connections.call",
            "telemetry.metric",
            "telemetry.metric",
            "telemetry.attributes",
            "telemetry.log",
        ]
    );
    assert!(calls.iter().all(|c| c.call_id == call_id));
    assert!(
        calls[2].error.is_some(),
        "the escape is recorded as refused"
    );
    let turn = events
        .iter()
        .find(|e| e.event_type() == "action.result")
        .unwrap()
        .turn_id
        .clone();
    assert!(
        events
            .iter()
            .filter(|e| e.event_type() == "action.host_call")
            .all(|e| e.turn_id == turn),
        "recorded in the tool call's turn"
    );

    // A direct call of the tool on the session (outside a turn, inside the session's actor)
    // gets a token of its own, and its host calls are recorded too.
    let (status, direct) = call(
        reqwest::Method::POST,
        &format!("{}/v1/session/{id}/tools/probe", server.url),
        Some(json!({"input": {}})),
        None,
    )
    .await;
    assert_eq!(status, 200, "{direct}");
    let direct_out = &direct["result"];
    let direct_call = direct_out["whoami"]["callId"].as_str().unwrap().to_string();
    assert!(direct_call.starts_with("direct_"), "{direct_out}");
    assert_eq!(direct_out["whoami"]["sessionId"], json!(id));
    assert!(
        direct_out["reminder"]["reminder"]["reminderId"].is_string(),
        "{direct_out}"
    );
    let after = folio_test_support::events(&server.url, &id).await;
    let direct_calls: Vec<&ActionHostCall> = all::<ActionHostCall>(&after)
        .into_iter()
        .filter(|c| c.call_id == direct_call)
        .collect();
    assert_eq!(direct_calls.len(), 11, "{direct_calls:#?}");
    assert_eq!(all::<ReminderSet>(&after).len(), 2);

    // The call has ended: its token is refused.
    let replay = tokio::process::Command::new(&folio)
        .args(["host", "whoami"])
        .env("FOLIO_HOST_URL", out["url"].as_str().unwrap())
        .env("FOLIO_HOST_TOKEN", out["token"].as_str().unwrap())
        .output()
        .await
        .unwrap();
    assert!(!replay.status.success());
    let body: Value = serde_json::from_slice(&replay.stdout).unwrap();
    assert_eq!(body["error"], json!("unauthorized"), "{body}");
    // And outside a call there is nothing to reach.
    let outside = tokio::process::Command::new(&folio)
        .args(["host", "whoami"])
        .env_remove("FOLIO_HOST_URL")
        .env_remove("FOLIO_HOST_TOKEN")
        .output()
        .await
        .unwrap();
    assert!(!outside.status.success());
    assert!(
        String::from_utf8_lossy(&outside.stderr)
            .contains("FOLIO_HOST_URL and FOLIO_HOST_TOKEN are not set"),
        "{}",
        String::from_utf8_lossy(&outside.stderr)
    );
}

/// A hook's run gets a token for the event's session: it writes a storage entry and a log
/// line, recorded under `hook_<name>_<index>`.
#[tokio::test]
async fn a_hook_reaches_the_session_of_its_event() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("done"));
    let dir = project(AGENT);
    write_files(
        dir.path(),
        &[(
            "agent/hooks/note.toml",
            "events = [\"turn.completed\"]\ncommand = \"cat >/dev/null; \\\"$FOLIO_BIN\\\" host kv put last-turn done > \\\"$OUT\\\"\"\n",
        )],
    );
    let state = tempfile::tempdir().unwrap();
    let out = state.path().join("hook-out.json");
    let folio = folio_bin();
    let server = serve_with_env(
        &mock.openai_base_url(),
        dir.path(),
        state.path(),
        &["--mode", "single"],
        &[
            ("FOLIO_BIN", folio.to_str().unwrap()),
            ("OUT", out.to_str().unwrap()),
        ],
    )
    .await;
    let created = create_session(&server.url, &CreateSession::message("hi")).await;
    let id = created.session_id;
    let written = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            if let Ok(text) = std::fs::read_to_string(&out)
                && let Ok(value) = serde_json::from_str::<Value>(&text)
            {
                return value;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the hook ran");
    assert_eq!(written["entry"]["key"], json!("last-turn"), "{written}");
    assert_eq!(written["entry"]["version"], json!(1));
    let events = events(&server.url, &id).await;
    let completed = events
        .iter()
        .find(|e| e.event_type() == "turn.completed")
        .unwrap()
        .index;
    let calls = all::<ActionHostCall>(&events);
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(calls[0].operation, "kv.put");
    assert_eq!(calls[0].call_id, format!("hook_note_{completed}"));
}

/// `storage` in the allowlist: the model keeps notes in the same storage, per scope.
#[tokio::test]
async fn the_model_keeps_notes_with_the_storage_tools() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "storage_put",
        json!({"key": "plan", "value": {"step": 1}, "scope": "principal"}),
    )]));
    mock.push(MockReply::tool_calls([(
        "storage_put",
        json!({"key": "plan", "value": {"step": 2}, "scope": "principal", "ifVersion": 5}),
    )]));
    mock.push(MockReply::tool_calls([(
        "storage_list",
        json!({"scope": "principal"}),
    )]));
    mock.push(MockReply::text("noted"));
    mock.push(MockReply::tool_calls([(
        "storage_get",
        json!({"key": "plan", "scope": "principal"}),
    )]));
    mock.push(MockReply::text("read"));
    let dir = project(
        "name = \"Host Agent\"\nmodel = \"openai:gpt-test\"\ntools = [\"read\", \"storage\"]\n",
    );
    let state = tempfile::tempdir().unwrap();
    let server = serve(
        &mock.openai_base_url(),
        dir.path(),
        state.path(),
        &["--mode", "single"],
    )
    .await;
    let first = create_session(&server.url, &CreateSession::message("plan")).await;
    let mut stream = Stream::open(&server.url, &first.session_id, 0, None).await;
    stream.until("turn.completed").await;
    let results: Vec<ActionResult> =
        all::<ActionResult>(&events(&server.url, &first.session_id).await)
            .into_iter()
            .cloned()
            .collect();
    assert_eq!(results.len(), 3, "{results:#?}");
    assert!(!results[0].is_error, "{results:#?}");
    assert_eq!(results[0].output.as_ref().unwrap()["version"], json!(1));
    assert!(results[1].is_error, "a stale ifVersion is the tool's error");
    assert!(
        results[1]
            .error
            .as_deref()
            .unwrap()
            .contains("expected version 5, but it is at version 1"),
        "{results:#?}"
    );
    assert_eq!(
        results[2].output.as_ref().unwrap()["entries"][0]["value"],
        json!({"step": 1})
    );
    // Another session of the same principal reads the note.
    let second = create_session(&server.url, &CreateSession::message("recall")).await;
    let mut stream = Stream::open(&server.url, &second.session_id, 0, None).await;
    stream.until("turn.completed").await;
    let read = all::<ActionResult>(&events(&server.url, &second.session_id).await)[0].clone();
    assert_eq!(read.output.unwrap()["value"], json!({"step": 1}));
}

/// A state root too deep for a socket address: the host API is served on a loopback port.
#[tokio::test]
async fn a_state_root_too_long_for_a_socket_gets_a_loopback_port() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([("where", json!({}))]));
    mock.push(MockReply::text("here"));
    let dir = project(AGENT);
    write_files(
        dir.path(),
        &[(
            "agent/tools/where.toml",
            "description = \"Where is the host API?\"\ncommand = [\"sh\", \"-c\", \"cat >/dev/null; printf '{\\\"url\\\": \\\"%s\\\", \\\"who\\\": %s}' \\\"$FOLIO_HOST_URL\\\" \\\"$(\\\"$FOLIO_BIN\\\" host whoami)\\\"\"]\neffect = \"read\"\n[input_schema]\ntype = \"object\"\n",
        )],
    );
    let state = tempfile::tempdir().unwrap();
    let deep = state.path().join("a-state-root-nested-deeply".repeat(5));
    let folio = folio_bin();
    let server = serve_with_env(
        &mock.openai_base_url(),
        dir.path(),
        &deep,
        &["--mode", "single"],
        &[("FOLIO_BIN", folio.to_str().unwrap())],
    )
    .await;
    let created = create_session(&server.url, &CreateSession::message("where")).await;
    let mut stream = Stream::open(&server.url, &created.session_id, 0, None).await;
    stream.until("turn.completed").await;
    let events = events(&server.url, &created.session_id).await;
    let result = all::<ActionResult>(&events)[0].clone();
    let output = result
        .output
        .clone()
        .unwrap_or_else(|| panic!("{result:#?}"));
    assert!(
        output["url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:"),
        "{output}"
    );
    assert_eq!(output["who"]["sessionId"], json!(created.session_id));
}
