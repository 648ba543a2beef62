//! The Agent Protocol routes (LangGraph clients) against the real `langgraph-sdk` from PyPI and
//! `@langchain/langgraph-sdk` from npm: the router on a loopback port, the engine answering
//! through the mock model, and `tests/agent_protocol/driver.py` run with the test venv's Python,
//! `driver.mjs` with Node (both installed by `scripts/install-test-deps`). Without them a test is
//! skipped, saying so, unless `FOLIO_TEST_DEPS_REQUIRED=1`, where it fails.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use folio_server::http::{HttpConfig, Layout, Mount, router};
use folio_test_support::{MockModelServer, MockReply};
use serde_json::json;
use support::*;

/// The repository's root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `None` after saying why a peer is missing, or a failure under `FOLIO_TEST_DEPS_REQUIRED=1`.
fn missing<T>(why: String) -> Option<T> {
    assert!(
        std::env::var("FOLIO_TEST_DEPS_REQUIRED").as_deref() != Ok("1"),
        "a LangGraph client is required here: {why}"
    );
    eprintln!("skipping: {why}");
    None
}

/// The test venv's Python with langgraph-sdk, or why it is missing.
fn python() -> Option<PathBuf> {
    let python = root().join("target/test-deps/venv/bin/python");
    let why = if !python.exists() {
        format!(
            "missing {} (run scripts/install-test-deps)",
            python.display()
        )
    } else {
        let found = std::process::Command::new(&python)
            .args(["-c", "import langgraph_sdk"])
            .output()
            .is_ok_and(|out| out.status.success());
        if found {
            return Some(python);
        }
        format!(
            "{} lacks langgraph-sdk (run scripts/install-test-deps)",
            python.display()
        )
    };
    missing(why)
}

/// LangGraph's JS client (`node_modules` of `target/test-deps/langgraph-js`), or why it is missing.
fn langgraph_js() -> Option<PathBuf> {
    let modules = root().join("target/test-deps/langgraph-js/node_modules");
    if modules
        .join("@langchain/langgraph-sdk/package.json")
        .is_file()
    {
        return Some(modules);
    }
    missing(format!(
        "missing {} (run scripts/install-test-deps)",
        modules.join("@langchain/langgraph-sdk").display()
    ))
}

/// The JS SDK streams a run (`values` and `messages-tuple`) and reads the thread's state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_js_langgraph_sdk_streams_a_run() {
    let Some(modules) = langgraph_js() else {
        return;
    };
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("hello from folio"));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let url = http(manager.clone()).await;
    // Node resolves an ES module's imports from the script's folder: the driver runs from a
    // folder whose node_modules is the installed one.
    let run = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&modules, run.path().join("node_modules")).unwrap();
    let driver = run.path().join("driver.mjs");
    std::fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agent_protocol/driver.mjs"),
        &driver,
    )
    .unwrap();
    let output = tokio::process::Command::new("node")
        .arg(&driver)
        .arg(&url)
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "the JS driver failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        (
            &seen["assistant"],
            seen["events"].as_array().and_then(|e| e.first()),
            seen["events"].as_array().and_then(|e| e.last()),
            &seen["reply"],
            &seen["tokens"],
            &seen["messages"],
        ),
        (
            &json!("t"),
            Some(&json!("metadata")),
            Some(&json!("end")),
            &json!("hello from folio"),
            &json!("hello from folio"),
            &json!([["human", "hi from js"], ["ai", "hello from folio"]]),
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langgraph_sdk_drives_assistants_threads_runs_interrupts_and_double_texts() {
    let Some(python) = python() else { return };
    let mock = MockModelServer::start().await;
    // In the order the driver's steps call the model.
    mock.push(MockReply::text("hello from folio"));
    mock.push(MockReply::text("second answer"));
    mock.push(MockReply::tool_calls([(
        "Deploy",
        json!({"target": "prod"}),
    )]));
    mock.push(MockReply::text("deployed it"));
    mock.push(MockReply::text("slow reply").first_byte_delay(Duration::from_millis(1500)));
    mock.push(MockReply::text("queued reply"));
    mock.push(
        MockReply::text("one two three four five six seven eight")
            .first_byte_delay(Duration::from_millis(300))
            .chunk_delay(Duration::from_millis(150)),
    );
    mock.push(MockReply::text("stateless answer"));
    mock.push(MockReply::text("preempted reply").first_byte_delay(Duration::from_millis(3000)));
    mock.push(MockReply::text("preempting reply"));
    mock.push(MockReply::text("cancelled reply").first_byte_delay(Duration::from_millis(3000)));
    mock.push(MockReply::tool_calls([(
        "Deploy",
        json!({"target": "prod"}),
    )]));
    mock.push(MockReply::text("not deployed"));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let url = http(manager.clone()).await;

    let driver = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agent_protocol/driver.py");
    let output = tokio::process::Command::new(&python)
        .arg(&driver)
        .arg(&url)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the langgraph-sdk driver failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for step in [
        "assistants",
        "threads",
        "stream",
        "wait",
        "interrupt",
        "double-text",
        "join_stream",
        "stateless",
        "interrupt-strategy",
        "deny",
    ] {
        assert!(
            stdout.contains(&format!("ok {step}\n")),
            "step {step} did not run: {stdout}"
        );
    }
}

/// Serves `manager` as agent `a` in the multi-agent layout with two token principals.
async fn serve_tokens(manager: folio_session::SessionManager) -> String {
    let app = router(
        vec![Mount {
            slug: "a".into(),
            evals: manager.state().clone(),
            manager,
            diagnostics: Vec::new(),
        }],
        HttpConfig {
            layout: Layout::Multi,
            auth: folio_auth::Auth::Tokens(vec![
                ("alice".into(), "alice-token".into()),
                ("bob".into(), "bob-token".into()),
            ]),
            ..HttpConfig::default()
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await
    });
    format!("http://{addr}/a")
}

/// POSTs `body` as `token`'s principal (none: no credentials): status and JSON answer.
async fn post(url: &str, token: Option<&str>, body: serde_json::Value) -> (u16, serde_json::Value) {
    let mut request = reqwest::Client::new().post(url).json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (
        status,
        response.json().await.unwrap_or(serde_json::Value::Null),
    )
}

#[tokio::test]
async fn the_routes_sit_under_the_agent_behind_the_servers_auth_and_threads_are_their_owners() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("for alice"));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let base = serve_tokens(manager).await;

    let (status, _) = post(&format!("{base}/assistants/search"), None, json!({})).await;
    assert_eq!(status, 401, "no credentials");
    let (status, found) = post(
        &format!("{base}/assistants/search"),
        Some("alice-token"),
        json!({}),
    )
    .await;
    assert_eq!(
        (status, found[0]["assistant_id"].clone()),
        (200, json!("a"))
    );

    let (status, thread) = post(&format!("{base}/threads"), Some("alice-token"), json!({})).await;
    assert_eq!(status, 200);
    let thread = thread["thread_id"].as_str().unwrap().to_string();
    let input = json!({"messages": [{"role": "user", "content": "hi"}]});
    let (status, values) = post(
        &format!("{base}/threads/{thread}/runs/wait"),
        Some("alice-token"),
        json!({"assistant_id": "a", "input": input}),
    )
    .await;
    assert_eq!(status, 200, "{values}");
    assert_eq!(values["messages"][1]["content"], "for alice");

    // Another principal does not see alice's thread.
    let (status, _) = post(
        &format!("{base}/threads/{thread}/runs/wait"),
        Some("bob-token"),
        json!({"assistant_id": "a", "input": input}),
    )
    .await;
    assert_eq!(status, 404);
    let (status, found) = post(
        &format!("{base}/threads/search"),
        Some("bob-token"),
        json!({}),
    )
    .await;
    assert_eq!((status, found), (200, json!([])));

    // Wrong input says what to send.
    let (status, error) = post(
        &format!("{base}/threads/{thread}/runs"),
        Some("alice-token"),
        json!({"assistant_id": "a", "input": input, "stream_mode": "tasks"}),
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        error["detail"]
            .as_str()
            .unwrap()
            .contains("stream_mode \"tasks\" is not supported"),
        "{error}"
    );
    let (status, error) = post(
        &format!("{base}/threads/{thread}/runs"),
        Some("alice-token"),
        json!({"assistant_id": "other", "input": input}),
    )
    .await;
    assert_eq!(status, 404, "{error}");
    let (status, error) = post(
        &format!("{base}/threads/{thread}/runs"),
        Some("alice-token"),
        json!({"assistant_id": "a", "command": {"resume": {"decision": "approve"}}}),
    )
    .await;
    assert_eq!(status, 409, "{error}");
    assert!(
        error["detail"]
            .as_str()
            .unwrap()
            .contains("nothing to resume"),
        "{error}"
    );
}

/// Threads and runs are stored with the sessions: a new server on the same state root serves
/// them (read with the SDK's sync client), with the thread's checkpoint history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_and_runs_survive_a_restart_with_their_history() {
    let Some(python) = python() else { return };
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("before the restart"));
    mock.push(MockReply::text("after the restart"));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let driver = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agent_protocol/restart.py");
    let drive = |url: String, args: Vec<String>| {
        let python = python.clone();
        let driver = driver.clone();
        async move {
            let output = tokio::process::Command::new(&python)
                .arg(&driver)
                .arg(&url)
                .args(&args)
                .output()
                .await
                .unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            assert!(
                output.status.success(),
                "restart.py {args:?} failed\nstdout:\n{stdout}\nstderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            stdout
        }
    };

    let first = manager(agent(&mock, dir.path()).await, state.path()).await;
    let thread = drive(http(first.clone()).await, vec!["before".into()]).await;
    let thread = thread.trim().to_string();
    first.shutdown().await;
    drop(first);

    let second = manager(agent(&mock, dir.path()).await, state.path()).await;
    let out = drive(http(second).await, vec!["after".into(), thread]).await;
    assert!(out.contains("ok restart"), "{out}");
}
