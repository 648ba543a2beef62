//! `folio serve` as a host of several agents (each with its own state and workspace root),
//! graceful shutdown, `folio chat` and `folio dev`.

mod serve_support;

use std::time::Duration;

use folio_protocol::{
    AgentDescription, AgentSummary, CreateSession, ErrorCode, EventBody, TURN_INTERRUPTED,
    TurnCompleted, TurnFailed,
};
use folio_session::SessionMeta;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serve_support::*;

/// The agent description at `url`.
async fn describe(url: &str) -> AgentDescription {
    expect(Method::GET, &format!("{url}/v1/agent"), NO_BODY, 200).await
}

fn write_agent(dir: &std::path::Path, name: &str) {
    std::fs::create_dir_all(dir.join("agent")).unwrap();
    std::fs::write(
        dir.join("agent/instructions.md"),
        format!("You are {name}.\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("agent/agent.toml"),
        format!(
            "name = \"{name}\"\ndescription = \"the {name} agent\"\nmodel = \"openai:gpt-test\"\n"
        ),
    )
    .unwrap();
}

#[tokio::test]
async fn a_folder_of_projects_mounts_each_agent_under_its_slug() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("from beta"));
    let root = tempfile::tempdir().unwrap();
    write_agent(&root.path().join("alpha"), "Alpha");
    write_agent(&root.path().join("beta"), "Beta");
    std::fs::create_dir_all(root.path().join("not-a-project")).unwrap();
    let state = tempfile::tempdir().unwrap();
    let workspaces = tempfile::tempdir().unwrap();
    let server = serve(
        &mock.openai_base_url(),
        root.path(),
        state.path(),
        &["--workspace-root", workspaces.path().to_str().unwrap()],
    )
    .await;
    let agents: Vec<AgentSummary> = expect(
        Method::GET,
        &format!("{}/v1/agents", server.host),
        NO_BODY,
        200,
    )
    .await;
    let summary = |name: &str| AgentSummary {
        slug: name.to_lowercase(),
        name: name.into(),
        description: Some(format!("the {name} agent")),
    };
    assert_eq!(agents, [summary("Alpha"), summary("Beta")]);
    let beta = format!("{}/beta", server.host);
    assert_eq!(describe(&beta).await.agent.name, "Beta");
    let created = create_session(
        &beta,
        &CreateSession {
            workspace_files: [("notes.md".to_string(), "hi\n".to_string())].into(),
            ..CreateSession::message("hi")
        },
    )
    .await;
    let id = created.session_id.as_str();
    // Each slug has its own state root and its own sessions, and its own workspace root.
    assert!(state.path().join("beta/sessions").join(id).exists());
    expect_error(
        Method::GET,
        &format!("{}/alpha/v1/session/{id}", server.host),
        NO_BODY,
        ErrorCode::NotFound,
    )
    .await;
    let mut stream = Stream::open(&beta, id, 0, None).await;
    let done = stream.until("turn.completed").await;
    assert_eq!(data::<TurnCompleted>(&done).reply, "from beta");
    assert_eq!(
        std::fs::read_to_string(workspaces.path().join("beta").join(id).join("notes.md")).unwrap(),
        "hi\n",
        "the session's workspace is under --workspace-root/<slug>"
    );
    let (status, index) = get(&format!("{}/", server.host)).await;
    assert_eq!(status, 200);
    let index = index.as_str().unwrap();
    assert!(index.contains("Alpha") && index.contains("Beta"));
    // --mode single refuses a folder of several agents.
    let output = tokio::process::Command::new(folio_bin())
        .args(["serve", "--port", "0", "--mode", "single", "--dir"])
        .arg(root.path())
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--mode single serves one agent"));
}

#[tokio::test]
async fn sigterm_records_running_turns_as_interrupted_and_exits() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("slow").first_byte_delay(Duration::from_secs(20)));
    let dir = project("name = \"stopper\"\nmodel = \"openai:gpt-test\"\n");
    let state = tempfile::tempdir().unwrap();
    let mut server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let created = create_session(&server.url, &CreateSession::message("hi")).await;
    let id = created.session_id.clone();
    let mut stream = Stream::open(&server.url, &id, 0, None).await;
    stream.until("step.started").await;
    let pid = server.child.id().unwrap() as i32;
    // SAFETY: sending a signal to our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = tokio::time::timeout(Duration::from_secs(15), server.child.wait())
        .await
        .expect("folio serve exits after SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
    // The stream saw the interruption, then ended.
    let failed = stream.until("turn.failed").await;
    assert_eq!(
        failed.body,
        EventBody::TurnFailed(TurnFailed {
            message: TURN_INTERRUPTED.into()
        })
    );
    let trace = state
        .path()
        .join("test-agent/traces")
        .join(format!("{id}.ndjson"));
    let log = read_ndjson(&std::fs::read_to_string(trace).unwrap());
    let types: Vec<&str> = log.iter().map(|event| event.event_type()).collect();
    assert_eq!(types[types.len() - 2..], ["turn.failed", "session.waiting"]);
    let meta = std::fs::read_to_string(
        state
            .path()
            .join("test-agent/sessions")
            .join(&id)
            .join("session.json"),
    )
    .unwrap();
    // The end of the turn is in the log (above); `session.json` keeps what the log cannot say.
    let parsed: SessionMeta = serde_json::from_str(&meta).unwrap();
    assert_eq!((parsed.turns, parsed.principal.as_str()), (1, "local"));
    assert_eq!(
        parsed.token_hash.map(|hash| hash.len()),
        Some(64),
        "the token is stored hashed"
    );
    assert!(!meta.contains(&created.continuation_token), "{meta}");
}

#[tokio::test]
async fn folio_chat_talks_to_a_running_agent() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("Hi from the agent."));
    mock.push(MockReply::text("Second reply."));
    let dir = project("name = \"chatty\"\nmodel = \"openai:gpt-test\"\n");
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let output = tokio::process::Command::new(folio_bin())
        .env_remove("FOLIO_TOKEN")
        .args(["chat", "--url", &server.url, "--message", "hello"])
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "Hi from the agent."
    );
    // The REPL: one message per stdin line, in one session.
    let mut child = tokio::process::Command::new(folio_bin())
        .env_remove("FOLIO_TOKEN")
        .args(["chat", "--url", &server.url])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    mock.push(MockReply::text("Third reply."));
    use tokio::io::AsyncWriteExt;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"first line\nsecond line\n").await.unwrap();
    drop(stdin);
    let output = child.wait_with_output().await.unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        ["Second reply.", "Third reply."]
    );
    assert_eq!(
        mock.requests().last().unwrap().user_texts(),
        ["first line", "second line"]
    );
}

#[tokio::test]
async fn folio_dev_reloads_the_agent_when_its_files_change() {
    let mock = MockModelServer::start().await;
    let dir = project("name = \"devy\"\ndescription = \"before\"\nmodel = \"openai:gpt-test\"\n");
    let state = tempfile::tempdir().unwrap();
    let mut command = tokio::process::Command::new(folio_bin());
    command
        .env_remove("FOLIO_MODEL")
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", mock.openai_base_url())
        .args(["dev", "--port", "0", "--dir"])
        .arg(dir.path())
        .arg("--state-root")
        .arg(state.path())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut url = String::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        if let Some(rest) = line.strip_prefix("agent test-agent: ") {
            url = rest.split(' ').next().unwrap().to_string();
            break;
        }
    }
    assert_eq!(
        describe(&url).await.agent.description.as_deref(),
        Some("before")
    );
    std::fs::write(
        dir.path().join("agent/agent.toml"),
        "name = \"devy\"\ndescription = \"after\"\nmodel = \"openai:gpt-test\"\n",
    )
    .unwrap();
    let mut reloaded = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if describe(&url).await.agent.description.as_deref() == Some("after") {
            reloaded = true;
            break;
        }
    }
    assert!(reloaded, "the agent was not reloaded");
    child.kill().await.unwrap();
}

#[tokio::test]
async fn a_busy_preferred_port_moves_to_the_next_free_one() {
    let mock = MockModelServer::start().await;
    let dir = project("name = \"porty\"\nmodel = \"openai:gpt-test\"\n");
    let state = tempfile::tempdir().unwrap();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port();
    let mut child = tokio::process::Command::new(folio_bin())
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", mock.openai_base_url())
        .args(["serve", "--port", &port.to_string(), "--dir"])
        .arg(dir.path())
        .arg("--state-root")
        .arg(state.path())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next_line().await.unwrap().unwrap();
    let url = first.strip_prefix("folio: listening on ").unwrap();
    let chosen: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    assert_ne!(chosen, port);
    assert!(
        chosen > port && chosen <= port.saturating_add(100),
        "{chosen} after {port}"
    );
    let _: Vec<AgentSummary> = expect(Method::GET, &format!("{url}/v1/agents"), NO_BODY, 200).await;
    drop(busy);
    child.kill().await.unwrap();
}

#[tokio::test]
async fn an_agent_is_mounted_under_its_directory_name_which_must_be_a_valid_slug() {
    let root = tempfile::tempdir().unwrap();
    write_agent(&root.path().join("v1"), "Reserved");
    let output = tokio::process::Command::new(folio_bin())
        .env("OPENAI_API_KEY", "test-key")
        .args(["serve", "--port", "0", "--dir"])
        .arg(root.path().join("v1"))
        .arg("--state-root")
        .arg(root.path().join("state"))
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("slug \"v1\" is reserved"), "{stderr}");
}
