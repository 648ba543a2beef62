//! MCP authorization under `folio serve`, end to end against an OAuth-protected MCP server
//! with its own authorization server (`OAuthMcpServer`): a turn whose connection needs
//! authorization parks on `action.authorization_requested` with the URL; the test plays the
//! person, following the URL (logging in as a named user), and the authorization server
//! redirects the browser to the server's `/v1/mcp-auth/callback`; the turn resumes and the call
//! runs with that principal's token. Each principal authorizes on its own and never uses another's
//! token; an expired access token is refreshed without a person; a restart while a turn waits
//! asks again with a fresh URL; and no token ever appears outside the token files: not in the
//! event log, nor the state root's other files, nor the server's log. On a shared store (two
//! servers, one PostgreSQL), the redirect may reach the server whose turn does not wait for it,
//! and the token stored through one server serves the principal's sessions on every server.

mod serve_support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use folio_protocol::{
    ActionAuthorizationRequested, ActionAuthorizationResolved, ActionResult, CreateSession,
    FollowUp, FollowUpAccepted, SessionCreated,
};
use folio_test_support::{MockModelServer, MockReply, OAuthMcpServer};
use reqwest::Method;
use serde_json::json;
use serve_support::*;

const TOOL: &str = "mcp__docs__whoami";
const ALICE: &str = "alice-token";
const BOB: &str = "bob-token";

/// A project whose agent connects to `server` as `docs`, a tokens file naming alice and bob,
/// and the operator's login (`folio mcp login`, principal `local`), whose token lists the
/// tools when the agent loads.
struct Setup {
    project: Project,
    /// Holds the state root (`state/`), the tokens file and the server's log.
    work: tempfile::TempDir,
    tokens: PathBuf,
    log: PathBuf,
}

impl Setup {
    /// The state root `folio serve` is given.
    fn state(&self) -> PathBuf {
        self.work.path().join("state")
    }

    /// The agent's own state root under it (the multi-agent layout adds the slug).
    fn agent_state(&self) -> PathBuf {
        self.state().join("test-agent")
    }
}

async fn setup(server: &OAuthMcpServer) -> Setup {
    use std::os::unix::fs::PermissionsExt as _;
    let project = project("name = \"docs-agent\"\nmodel = \"openai:gpt-test\"\n");
    let connections = project.path().join("agent/mcp-connections");
    std::fs::create_dir_all(&connections).unwrap();
    std::fs::write(
        connections.join("docs.toml"),
        format!("url = \"{}\"\n", server.url()),
    )
    .unwrap();
    let work = tempfile::tempdir().unwrap();
    // Where `folio serve --state-root <work>/state` keeps this agent's state.
    let state = work.path().join("state/test-agent");
    let tokens = work.path().join("tokens.toml");
    std::fs::write(&tokens, format!("alice = \"{ALICE}\"\nbob = \"{BOB}\"\n")).unwrap();
    let log = work.path().join("serve.log");
    // The operator logs in through a "browser" that logs in as `operator` at once.
    let browser = work.path().join("browser.sh");
    let visits = work.path().join("browser.out");
    std::fs::write(
        &browser,
        format!(
            "#!/bin/sh\nexec curl -sSL -o /dev/null -w '%{{http_code}} %{{url_effective}}\\n' \"$1&user=operator\" >> {} 2>&1\n",
            visits.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    let login = tokio::process::Command::new(folio_bin())
        .args(["mcp", "login", "docs", "--dir"])
        .arg(project.path())
        .arg("--state-root")
        .arg(&state)
        .env("BROWSER", &browser)
        .kill_on_drop(true)
        .output();
    let login = tokio::time::timeout(Duration::from_secs(60), login).await;
    let visited = std::fs::read_to_string(&visits).unwrap_or_default();
    let login = login
        .unwrap_or_else(|_| panic!("folio mcp login did not finish; the browser saw: {visited}"))
        .unwrap();
    assert!(
        login.status.success(),
        "{}\nthe browser saw: {visited}",
        String::from_utf8_lossy(&login.stderr)
    );
    Setup {
        project,
        work,
        tokens,
        log,
    }
}

async fn serve_it(mock: &MockModelServer, setup: &Setup) -> Served {
    serve_logging_to(
        &mock.openai_base_url(),
        setup.project.path(),
        &setup.state(),
        &["--tokens-file", setup.tokens.to_str().unwrap()],
        &[("FOLIO_LOG", "debug")],
        &setup.log,
    )
    .await
}

async fn create_as(url: &str, token: &str, message: &str) -> SessionCreated {
    let (status, created) = call_as::<SessionCreated>(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(&CreateSession::message(message)),
        Some(token),
    )
    .await;
    assert_eq!(status, 201);
    created
}

/// The person: opens the authorization URL, logs in as `user`, and follows the redirect back
/// to the server; returns the page the server answers.
async fn log_in(url: &str, user: &str) -> (u16, String) {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::limited(3))
        .build()
        .unwrap();
    let response = browser
        .get(format!("{url}&user={user}"))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// The output of the next `action.result` on `stream`.
async fn next_output(stream: &mut Stream) -> String {
    let result = stream.until("action.result").await;
    let result = data::<ActionResult>(&result).clone();
    assert!(!result.is_error, "{result:?}");
    result.output.map(|o| o.to_string()).unwrap_or_default()
}

/// Every token the authorization server issued is absent from every file under the state
/// root but the principals' token files, and from the server's log.
fn assert_tokens_stay_in_their_files(server: &OAuthMcpServer, setup: &Setup) {
    let issued = server.issued_tokens();
    assert!(!issued.is_empty());
    let mut files = Vec::new();
    let mut stack = vec![setup.state()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file()
                && !path.parent().is_some_and(|d| {
                    d.parent()
                        .is_some_and(|d| d.file_name() == Some("mcp-auth".as_ref()))
                })
            {
                files.push(path);
            }
        }
    }
    files.push(setup.log.clone());
    assert!(
        files
            .iter()
            .any(|f| f.parent().is_some_and(|d| d.ends_with("traces"))),
        "no event log among {files:?}"
    );
    for file in &files {
        // The server is still running: a temporary file (`session.json.tmp`) listed above may
        // have been renamed over its target since, which the walk lists too.
        let bytes = match std::fs::read(file) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => panic!("{}: {err}", file.display()),
        };
        let text = String::from_utf8_lossy(&bytes).to_string();
        for token in &issued {
            assert!(
                !text.contains(token.as_str()),
                "token {token} leaked into {}",
                file.display()
            );
        }
    }
}

/// The access token stored for `principal`.
fn stored_access_token(state: &Path, principal: &str) -> String {
    use std::os::unix::fs::PermissionsExt as _;
    let path = state.join(format!("mcp-auth/{principal}/docs.json"));
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", path.display());
    let stored: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    stored
        .pointer("/token_response/access_token")
        .and_then(serde_json::Value::as_str)
        .expect("an access token")
        .to_string()
}

#[tokio::test]
async fn a_turn_parks_on_mcp_authorization_and_each_principal_uses_its_own_token() {
    let server = OAuthMcpServer::start(Duration::from_secs(3600)).await;
    let setup = setup(&server).await;
    let mock = MockModelServer::start().await;
    let served = serve_it(&mock, &setup).await;
    let url = served.url.clone();

    // Alice's turn calls the tool: her call parks on the authorization, with the URL.
    mock.push(MockReply::tool_calls([(TOOL, json!({}))]));
    mock.push(MockReply::text("You are Alice."));
    let alice = create_as(&url, ALICE, "who am I?").await;
    let mut stream = Stream::open(&url, &alice.session_id, 0, Some(ALICE)).await;
    let requested = stream.until("action.authorization_requested").await;
    let requested = data::<ActionAuthorizationRequested>(&requested).clone();
    assert_eq!(
        (requested.tool.as_str(), requested.server.as_str()),
        (TOOL, "docs")
    );
    let redirect = reqwest::Url::parse(&requested.url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "redirect_uri")
        .map(|(_, v)| v.into_owned());
    assert_eq!(redirect, Some(format!("{url}/v1/mcp-auth/callback")));
    assert!(
        requested.call_id.starts_with("auth_"),
        "{}",
        requested.call_id
    );

    // A redirect without the login's state, or with a guessed one, reaches nothing.
    for forged in ["state=guess&code=evil", "code=evil"] {
        let answer = reqwest::get(format!("{url}/v1/mcp-auth/callback?{forged}"))
            .await
            .unwrap();
        assert!(
            [400, 404].contains(&answer.status().as_u16()),
            "{forged}: {}",
            answer.status()
        );
    }
    // Alice logs in: the browser comes back to the server, and the turn goes on.
    let (status, page) = log_in(&requested.url, "alice").await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Folio is authorized"), "{page}");
    let resolved = stream.until("action.authorization_resolved").await;
    let resolved = data::<ActionAuthorizationResolved>(&resolved).clone();
    assert_eq!(
        (
            resolved.call_id.as_str(),
            resolved.authorized,
            resolved.reason
        ),
        (requested.call_id.as_str(), true, None)
    );
    assert_eq!(next_output(&mut stream).await, "\"you are alice\"");
    stream.until("session.waiting").await;
    // The state is single-use: the same redirect again finds no login.
    let (again, _) = log_in(&requested.url, "alice").await;
    assert_eq!(again, 404);

    // Bob has no token of his own: his call parks too, though Alice's token is stored.
    mock.push(MockReply::tool_calls([(TOOL, json!({}))]));
    mock.push(MockReply::text("You are Bob."));
    let bob = create_as(&url, BOB, "and me?").await;
    let mut bob_stream = Stream::open(&url, &bob.session_id, 0, Some(BOB)).await;
    let asked = bob_stream.until("action.authorization_requested").await;
    let asked = data::<ActionAuthorizationRequested>(&asked).clone();
    let (status, page) = log_in(&asked.url, "bob").await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(next_output(&mut bob_stream).await, "\"you are bob\"");
    bob_stream.until("session.waiting").await;

    // Alice's next call uses her stored token without asking.
    mock.push(MockReply::tool_calls([(TOOL, json!({}))]));
    mock.push(MockReply::text("Still Alice."));
    let _: FollowUpAccepted = call_as(
        Method::POST,
        &format!("{url}/v1/session/{}", alice.session_id),
        Some(&FollowUp::new(&alice.continuation_token, "again")),
        Some(ALICE),
    )
    .await
    .1;
    assert_eq!(next_output(&mut stream).await, "\"you are alice\"");
    stream.until("session.waiting").await;
    assert_eq!(stream.count("action.authorization_requested"), 1);

    let state = &setup.agent_state();
    let (alice_token, bob_token, operator_token) = (
        stored_access_token(state, "alice"),
        stored_access_token(state, "bob"),
        stored_access_token(state, "local"),
    );
    assert!(alice_token != bob_token && alice_token != operator_token);
    // One registration per principal that logged in, the operator's included.
    assert_eq!(server.registered_clients(), 3);
    assert_tokens_stay_in_their_files(&server, &setup);
}

#[tokio::test]
async fn a_restart_asks_again_and_an_expired_token_is_refreshed_without_a_person() {
    let server = OAuthMcpServer::start(Duration::from_secs(2)).await;
    let setup = setup(&server).await;
    let mock = MockModelServer::start().await;
    let mut served = serve_it(&mock, &setup).await;
    let url = served.url.clone();

    mock.push(MockReply::tool_calls([(TOOL, json!({}))]));
    mock.push(MockReply::text("You are Alice."));
    let alice = create_as(&url, ALICE, "who am I?").await;
    let mut stream = Stream::open(&url, &alice.session_id, 0, Some(ALICE)).await;
    let first = stream.until("action.authorization_requested").await;
    let first = data::<ActionAuthorizationRequested>(&first).clone();

    // The server dies while the turn waits: the login's PKCE verifier died with it.
    served.child.kill().await.unwrap();
    let served = serve_it(&mock, &setup).await;
    let url = served.url.clone();
    let mut stream = Stream::open(&url, &alice.session_id, 0, Some(ALICE)).await;
    let abandoned = stream.until("action.authorization_resolved").await;
    let abandoned = data::<ActionAuthorizationResolved>(&abandoned).clone();
    assert_eq!(
        (abandoned.call_id.as_str(), abandoned.authorized),
        (first.call_id.as_str(), false)
    );
    assert!(
        abandoned
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("server restarted"),
        "{abandoned:?}"
    );
    // The old login's redirect reaches nothing; the resumed turn asks again with a new URL.
    let old_state = reqwest::Url::parse(&first.url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    let stale = reqwest::get(format!(
        "{url}/v1/mcp-auth/callback?code=stale&state={old_state}"
    ))
    .await
    .unwrap();
    assert_eq!(stale.status().as_u16(), 404);
    let second = stream.until("action.authorization_requested").await;
    let second = data::<ActionAuthorizationRequested>(&second).clone();
    assert_ne!(second.url, first.url);
    let (status, page) = log_in(&second.url, "alice").await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(next_output(&mut stream).await, "\"you are alice\"");
    stream.until("session.waiting").await;
    let before = stored_access_token(&setup.agent_state(), "alice");

    // The access token lives 2 s; past it, the call refreshes it without asking anyone.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let refreshes = server.refreshes();
    mock.push(MockReply::tool_calls([(TOOL, json!({}))]));
    mock.push(MockReply::text("Still Alice."));
    let _: FollowUpAccepted = call_as(
        Method::POST,
        &format!("{url}/v1/session/{}", alice.session_id),
        Some(&FollowUp::new(&alice.continuation_token, "again")),
        Some(ALICE),
    )
    .await
    .1;
    assert_eq!(next_output(&mut stream).await, "\"you are alice\"");
    stream.until("session.waiting").await;
    assert_eq!(stream.count("action.authorization_requested"), 2);
    assert!(server.refreshes() > refreshes, "no refresh happened");
    assert_ne!(stored_access_token(&setup.agent_state(), "alice"), before);
    drop(served);
    assert_tokens_stay_in_their_files(&server, &setup);
}

/// A copy of the operator's login (`mcp-auth/local/`) under a fresh state root of its own, for
/// one more server of the agent.
fn state_with_operator_login(setup: &Setup) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let to = root.path().join("mcp-auth/local");
    std::fs::create_dir_all(&to).unwrap();
    std::fs::copy(
        setup.agent_state().join("mcp-auth/local/docs.json"),
        to.join("docs.json"),
    )
    .unwrap();
    root
}

#[tokio::test(flavor = "multi_thread")]
async fn on_a_shared_store_a_redirect_reaching_another_server_completes_the_turn_and_the_token_serves_every_server()
 {
    let Some(database) = folio_store_postgres::testing::test_database("mcp_auth_across").await
    else {
        return;
    };
    let server = OAuthMcpServer::start(Duration::from_secs(3600)).await;
    let setup = setup(&server).await;
    let mock = MockModelServer::start().await;
    let workspaces = tempfile::tempdir().unwrap();
    let states = [
        state_with_operator_login(&setup),
        state_with_operator_login(&setup),
    ];
    let mut servers = Vec::new();
    for state in &states {
        let served = serve_logging_to(
            &mock.openai_base_url(),
            setup.project.path(),
            state.path(),
            &[
                "--mode",
                "single",
                "--tokens-file",
                setup.tokens.to_str().unwrap(),
                "--store",
                &database,
                "--workspace-root",
                workspaces.path().to_str().unwrap(),
                "--lease-ttl-ms",
                "3000",
            ],
            &[],
            &setup.log,
        )
        .await;
        servers.push(served);
    }
    let (a, b) = (servers[0].url.clone(), servers[1].url.clone());

    // Alice's turn on A parks on the authorization; the redirect, through a load balancer,
    // reaches B.
    mock.push(MockReply::tool_calls([(TOOL, json!({}))]));
    mock.push(MockReply::text("You are Alice."));
    let alice = create_as(&a, ALICE, "who am I?").await;
    let mut stream = Stream::open(&a, &alice.session_id, 0, Some(ALICE)).await;
    let requested = stream.until("action.authorization_requested").await;
    let requested = data::<ActionAuthorizationRequested>(&requested).clone();
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let login = browser
        .get(format!("{}&user=alice", requested.url))
        .send()
        .await
        .unwrap();
    let back = login.headers()["location"].to_str().unwrap().to_string();
    assert!(
        back.starts_with(&format!("{a}/v1/mcp-auth/callback?")),
        "{back}"
    );
    let to_b = back.replacen(&a, &b, 1);
    let answer = browser.get(&to_b).send().await.unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    assert!(answer.text().await.unwrap().contains("Folio is authorized"));
    stream.until("action.authorization_resolved").await;
    assert_eq!(next_output(&mut stream).await, "\"you are alice\"");
    stream.until("session.waiting").await;
    // The redirect is used up: no turn on any server waits for it, and each server says so.
    for url in [&a, &b] {
        let again = browser.get(back.replacen(&a, url, 1)).send().await.unwrap();
        assert_eq!(again.status().as_u16(), 404, "{url}");
    }

    // Alice's session on B calls the tool with the token stored through A: nobody is asked.
    mock.push(MockReply::tool_calls([(TOOL, json!({}))]));
    mock.push(MockReply::text("Alice again."));
    let on_b = create_as(&b, ALICE, "who am I now?").await;
    let mut on_b_stream = Stream::open(&b, &on_b.session_id, 0, Some(ALICE)).await;
    assert_eq!(next_output(&mut on_b_stream).await, "\"you are alice\"");
    on_b_stream.until("session.waiting").await;
    assert_eq!(on_b_stream.count("action.authorization_requested"), 0);

    // The token is a row of the store, in no server's state root.
    let store = folio_store_postgres::PgStore::connect(&database, Default::default())
        .await
        .unwrap();
    let stored = folio_store::SessionStore::mcp_credentials(&store, "alice", "docs")
        .await
        .unwrap()
        .expect("alice's credentials in the store");
    let token = stored
        .pointer("/token_response/access_token")
        .and_then(serde_json::Value::as_str)
        .unwrap();
    assert!(server.issued_tokens().iter().any(|issued| issued == token));
    for state in &states {
        assert!(!state.path().join("mcp-auth/alice").exists());
    }
}
