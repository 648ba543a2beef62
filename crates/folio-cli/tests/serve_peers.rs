//! Peer agents end to end (`agent = "<slug>"` in a connection manifest): a parent asks a peer
//! in the same `folio serve` twice and the follow-up continues the same peer session, also
//! after a restart; a peer on a second `folio serve` behind a bearer token; a cycle (A asks B
//! asks A …) cut at the depth limit, on one server and across two; stopping a parent's turn
//! stops the peer's turn, on one server and across two; `serve` and `run` refusing a peer
//! they cannot mount.

mod serve_support;

use std::path::Path;
use std::time::Duration;

use folio_agent::peers::MAX_PEER_DEPTH;
use folio_protocol::{
    Acknowledged, ActionResult, AskResult, AskStatus, CreateSession, Event, FollowUp,
    MessageReceived, OkTrue, Page, SessionStarted, SessionStatus, SessionSummary, TurnFailed,
};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::json;
use serve_support::*;

/// Writes project `slug` under `parent` with `files` (beside its instructions and agent.toml).
fn agent(parent: &Path, slug: &str, files: &[(&str, &str)]) {
    let dir = parent.join(slug);
    write_files(
        &dir,
        &[
            ("agent/instructions.md", "You answer briefly.\n"),
            (
                "agent/agent.toml",
                "model = \"openai:gpt-test\"\ntools = []\n",
            ),
        ],
    );
    write_files(&dir, files);
}

/// A connection manifest asking the peer `slug` of the same server.
fn peer(slug: &str) -> String {
    format!("description = \"Answers questions\"\nagent = \"{slug}\"\n")
}

/// The results of the calls of `tool` in a session's log, in order.
fn results<'a>(events: &'a [Event], tool: &str) -> Vec<&'a ActionResult> {
    all::<ActionResult>(events)
        .into_iter()
        .filter(|result| result.tool == tool)
        .collect()
}

/// The peer's answer a successful peer call recorded in the parent's log.
fn asked(result: &ActionResult) -> AskResult {
    assert!(!result.is_error, "{result:?}");
    read_wire(result.output.as_ref().expect("a peer call has an output"))
}

/// Waits until session `id` of `url` has recorded `turns` waits (its turns are done).
async fn settle(url: &str, id: &str, turns: usize) -> Vec<Event> {
    let mut stream = Stream::open(url, id, 0, None).await;
    stream.until_count("session.waiting", turns).await;
    events(url, id).await
}

#[tokio::test]
async fn a_parent_asks_a_local_peer_twice_in_one_peer_session_even_after_a_restart() {
    let mock = MockModelServer::start().await;
    let projects = tempfile::tempdir().unwrap();
    agent(
        projects.path(),
        "asker",
        &[("agent/mcp-connections/helper.toml", &peer("helper"))],
    );
    agent(projects.path(), "helper", &[]);
    let state = tempfile::tempdir().unwrap();
    mock.push(MockReply::tool_calls([(
        "mcp__helper__ask",
        json!({"message": "What is 2+2?"}),
    )]))
    .push(MockReply::text("4"))
    .push(MockReply::text("The helper says 4."));
    let mut server = serve(&mock.openai_base_url(), projects.path(), state.path(), &[]).await;
    let (asker, helper) = (
        format!("{}/asker", server.host),
        format!("{}/helper", server.host),
    );
    let created = create_session(&asker, &CreateSession::message("Ask the helper.")).await;
    let id = created.session_id.clone();
    let log = settle(&asker, &id, 1).await;
    let first_answer = asked(results(&log, "mcp__helper__ask")[0]);
    assert_eq!(
        first_answer,
        AskResult {
            status: AskStatus::Completed,
            session_id: first_answer.session_id.clone(),
            reply: "4".into(),
        }
    );
    // The peer's own session is an ordinary session of the parent's principal, opened by the
    // peer channel.
    let started = data::<SessionStarted>(first::<SessionStarted>(
        &events(&helper, &first_answer.session_id).await,
    ))
    .clone();
    assert_eq!(
        (started.channel.as_str(), started.principal.as_str()),
        ("peer", "local")
    );

    // A restart between the two asks: the pairing is durable.
    server.child.kill().await.unwrap();
    mock.push(MockReply::tool_calls([(
        "mcp__helper__ask",
        json!({"message": "And times 3?"}),
    )]))
    .push(MockReply::text("12"))
    .push(MockReply::text("The helper says 12."));
    server = serve(&mock.openai_base_url(), projects.path(), state.path(), &[]).await;
    let (asker, helper) = (
        format!("{}/asker", server.host),
        format!("{}/helper", server.host),
    );
    follow_up(
        &asker,
        &id,
        &FollowUp::new(&created.continuation_token, "Ask again."),
    )
    .await;
    let log = settle(&asker, &id, 2).await;
    let calls = results(&log, "mcp__helper__ask");
    assert_eq!(calls.len(), 2);
    let second = asked(calls[1]);
    assert_eq!(
        second,
        AskResult {
            status: AskStatus::Completed,
            session_id: first_answer.session_id.clone(),
            reply: "12".into(),
        }
    );
    // The peer session holds both questions, and its model saw the first with the second.
    let peer_log = settle(&helper, &first_answer.session_id, 2).await;
    let asked_texts: Vec<&str> = all::<MessageReceived>(&peer_log)
        .iter()
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(asked_texts, ["What is 2+2?", "And times 3?"]);
    let requests = mock.requests();
    assert_eq!(requests.len(), 6);
    assert_eq!(requests[4].user_texts(), ["What is 2+2?", "And times 3?"]);
    assert_eq!(mock.remaining(), 0);
}

#[tokio::test]
async fn a_peer_on_a_second_server_is_asked_with_its_token_and_continued() {
    let mock = MockModelServer::start().await;
    let remote_projects = tempfile::tempdir().unwrap();
    agent(remote_projects.path(), "helper", &[]);
    let remote_state = tempfile::tempdir().unwrap();
    let remote = serve(
        &mock.openai_base_url(),
        &remote_projects.path().join("helper"),
        remote_state.path(),
        &["--bearer-token", "peer-secret"],
    )
    .await;
    let projects = tempfile::tempdir().unwrap();
    agent(
        projects.path(),
        "asker",
        &[(
            "agent/mcp-connections/helper.toml",
            "agent = \"helper\"\nurl = \"${HELPER_URL}\"\nheaders = { Authorization = \"Bearer ${HELPER_TOKEN}\" }\n",
        )],
    );
    let state = tempfile::tempdir().unwrap();
    let local = serve_with_env(
        &mock.openai_base_url(),
        &projects.path().join("asker"),
        state.path(),
        &[],
        &[
            ("HELPER_URL", &format!("{}/v1/mcp", remote.url)),
            ("HELPER_TOKEN", "peer-secret"),
        ],
    )
    .await;
    for (question, answer) in [("What is 2+2?", "4"), ("And times 3?", "12")] {
        mock.push(MockReply::tool_calls([(
            "mcp__helper__ask",
            json!({"message": question}),
        )]))
        .push(MockReply::text(answer))
        .push(MockReply::text(format!("The helper says {answer}.")));
    }
    let created = create_session(&local.url, &CreateSession::message("Ask the helper.")).await;
    let id = created.session_id.clone();
    settle(&local.url, &id, 1).await;
    follow_up(
        &local.url,
        &id,
        &FollowUp::new(&created.continuation_token, "Ask again."),
    )
    .await;
    let log = settle(&local.url, &id, 2).await;
    let answers: Vec<AskResult> = results(&log, "mcp__helper__ask")
        .into_iter()
        .map(asked)
        .collect();
    assert_eq!(answers.len(), 2);
    assert!(answers[0].session_id.starts_with("ses_"), "{answers:?}");
    assert_eq!(
        answers,
        ["4", "12"].map(|reply| AskResult {
            status: AskStatus::Completed,
            session_id: answers[0].session_id.clone(),
            reply: reply.into(),
        })
    );
    // The remote peer's second turn continued its first conversation.
    assert_eq!(
        mock.requests()[4].user_texts(),
        ["What is 2+2?", "And times 3?"]
    );
}

/// Queues the model replies of a ping–pong cycle: every session down to depth
/// [`MAX_PEER_DEPTH`] asks the other agent (the one at the limit is refused), then each answers.
fn queue_cycle(mock: &MockModelServer) {
    let hops = MAX_PEER_DEPTH + 1;
    for depth in 0..hops {
        let tool = if depth % 2 == 0 {
            "mcp__pong__ask"
        } else {
            "mcp__ping__ask"
        };
        mock.push(MockReply::tool_calls([(
            tool,
            json!({"message": "ask back"}),
        )]));
    }
    for depth in (0..hops).rev() {
        mock.push(MockReply::text(format!("answer at depth {depth}")));
    }
}

/// Walks a ping–pong cycle from ping's session `id` through the peer session ids each parent's
/// log recorded (`url_of(slug)`: where that agent is served): each ask below the limit is
/// answered from one level deeper, and the ask at the limit is a tool error naming the cut.
async fn walk_cycle(url_of: impl Fn(&str) -> String, id: String) {
    let mut session_id = id;
    for depth in 0..=MAX_PEER_DEPTH {
        let (slug, tool) = if depth % 2 == 0 {
            ("ping", "mcp__pong__ask")
        } else {
            ("pong", "mcp__ping__ask")
        };
        let log = settle(&url_of(slug), &session_id, 1).await;
        let result = results(&log, tool)[0];
        if depth < MAX_PEER_DEPTH {
            let answer = asked(result);
            assert_eq!(answer.reply, format!("answer at depth {}", depth + 1));
            session_id = answer.session_id;
        } else {
            assert!(result.is_error, "{result:?}");
            let peer = &tool["mcp__".len()..tool.len() - "__ask".len()];
            assert_eq!(
                result.error.as_deref(),
                Some(
                    format!(
                        "not asking peer agent \"{peer}\": this session is already {MAX_PEER_DEPTH} peer asks deep and the limit is {MAX_PEER_DEPTH} (agents asking each other in a cycle, A asks B asks A, end here); answer without asking it"
                    )
                    .as_str()
                )
            );
        }
    }
}

#[tokio::test]
async fn agents_asking_each_other_in_a_cycle_are_cut_at_the_depth_limit() {
    let mock = MockModelServer::start().await;
    let projects = tempfile::tempdir().unwrap();
    agent(
        projects.path(),
        "ping",
        &[("agent/mcp-connections/pong.toml", &peer("pong"))],
    );
    agent(
        projects.path(),
        "pong",
        &[("agent/mcp-connections/ping.toml", &peer("ping"))],
    );
    let state = tempfile::tempdir().unwrap();
    // ping asks pong asks ping …: the session at depth MAX asks once more and is refused.
    queue_cycle(&mock);
    let server = serve(&mock.openai_base_url(), projects.path(), state.path(), &[]).await;
    let created = create_session(
        &format!("{}/ping", server.host),
        &CreateSession::message("Start the cycle."),
    )
    .await;
    walk_cycle(|slug| format!("{}/{slug}", server.host), created.session_id).await;
    assert_eq!(mock.remaining(), 0);
}

/// A manifest asking the peer `slug` on another server, at the URL in the variable `var`.
fn remote_peer(slug: &str, var: &str) -> String {
    format!("agent = \"{slug}\"\nurl = \"${{{var}}}\"\n")
}

/// A loopback port nothing listens on now (for a server whose URL another must know first).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn agents_on_two_servers_asking_each_other_in_a_cycle_are_cut_at_the_depth_limit() {
    let mock = MockModelServer::start().await;
    let projects = tempfile::tempdir().unwrap();
    agent(
        projects.path(),
        "ping",
        &[(
            "agent/mcp-connections/pong.toml",
            &remote_peer("pong", "PONG_URL"),
        )],
    );
    agent(
        projects.path(),
        "pong",
        &[(
            "agent/mcp-connections/ping.toml",
            &remote_peer("ping", "PING_URL"),
        )],
    );
    // Each server needs the other's URL: ping's port is chosen before either starts (a peer
    // connection opens at its first ask, so pong may start before ping listens).
    let ping_port = free_port().to_string();
    let (ping_state, pong_state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let pong = serve_with_env(
        &mock.openai_base_url(),
        &projects.path().join("pong"),
        pong_state.path(),
        &[],
        &[(
            "PING_URL",
            &format!("http://127.0.0.1:{ping_port}/ping/v1/mcp"),
        )],
    )
    .await;
    let ping = serve_with_env(
        &mock.openai_base_url(),
        &projects.path().join("ping"),
        ping_state.path(),
        &["--port", &ping_port],
        &[("PONG_URL", &format!("{}/v1/mcp", pong.url))],
    )
    .await;
    assert_eq!(ping.url, format!("http://127.0.0.1:{ping_port}/ping"));
    // The depth travels in each ask (`peerDepth`), so the cut happens on whichever server
    // reaches the limit: here ping, at depth MAX, refuses to ask pong again.
    queue_cycle(&mock);
    let created = create_session(&ping.url, &CreateSession::message("Start the cycle.")).await;
    walk_cycle(
        |slug| {
            if slug == "ping" {
                ping.url.clone()
            } else {
                pong.url.clone()
            }
        },
        created.session_id,
    )
    .await;
    assert_eq!(mock.remaining(), 0);
}

/// The one session of the agent at `url` (the peer session an ask opened), once it exists.
async fn only_session(url: &str) -> String {
    for _ in 0..600 {
        let page: Page<SessionSummary> =
            expect(Method::GET, &format!("{url}/v1/sessions"), NO_BODY, 200).await;
        if let Some(session) = page.data.first() {
            assert_eq!(page.data.len(), 1, "{:?}", page.data);
            return session.session_id.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no session appeared at {url} within 30 s");
}

/// Starts a parent turn at `parent` that asks the peer served at `peer` (whose model never
/// answers in time), stops the parent's turn, and checks that both turns end interrupted.
async fn stopping_the_parent_stops_the_peer(mock: &MockModelServer, parent: &str, peer: &str) {
    mock.push(MockReply::tool_calls([(
        "mcp__helper__ask",
        json!({"message": "Take your time."}),
    )]))
    // Far longer than any wait below: the peer's turn can only end by being stopped.
    .push(MockReply::text("too late").first_byte_delay(Duration::from_secs(300)));
    let created = create_session(parent, &CreateSession::message("Ask the helper.")).await;
    let peer_id = only_session(peer).await;
    let mut peer_stream = Stream::open(peer, &peer_id, 0, None).await;
    peer_stream.until("step.started").await;
    let mut parent_stream = Stream::open(parent, &created.session_id, 0, None).await;
    parent_stream.until("actions.requested").await;

    let stopped: Acknowledged = expect(
        Method::POST,
        &format!("{parent}/v1/session/{}/stop", created.session_id),
        Some(&json!({})),
        200,
    )
    .await;
    assert_eq!(stopped, Acknowledged { ok: OkTrue });
    for stream in [&mut parent_stream, &mut peer_stream] {
        let failed = stream.until("turn.failed").await;
        assert_eq!(data::<TurnFailed>(&failed).message, "turn interrupted");
    }
    // The peer waits for its next message like any stopped chat session.
    peer_stream.until("session.waiting").await;
    assert_eq!(session(peer, &peer_id).await.status, SessionStatus::Waiting);
    assert_eq!(mock.remaining(), 0);
}

#[tokio::test]
async fn stopping_a_parents_turn_stops_its_peers_turn_in_the_same_server() {
    let mock = MockModelServer::start().await;
    let projects = tempfile::tempdir().unwrap();
    agent(
        projects.path(),
        "asker",
        &[("agent/mcp-connections/helper.toml", &peer("helper"))],
    );
    agent(projects.path(), "helper", &[]);
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), projects.path(), state.path(), &[]).await;
    stopping_the_parent_stops_the_peer(
        &mock,
        &format!("{}/asker", server.host),
        &format!("{}/helper", server.host),
    )
    .await;
}

#[tokio::test]
async fn stopping_a_parents_turn_stops_its_peers_turn_on_another_server() {
    let mock = MockModelServer::start().await;
    let projects = tempfile::tempdir().unwrap();
    agent(projects.path(), "helper", &[]);
    agent(
        projects.path(),
        "asker",
        &[(
            "agent/mcp-connections/helper.toml",
            &remote_peer("helper", "HELPER_URL"),
        )],
    );
    let (remote_state, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let remote = serve(
        &mock.openai_base_url(),
        &projects.path().join("helper"),
        remote_state.path(),
        &[],
    )
    .await;
    let local = serve_with_env(
        &mock.openai_base_url(),
        &projects.path().join("asker"),
        state.path(),
        &[],
        &[("HELPER_URL", &format!("{}/v1/mcp", remote.url))],
    )
    .await;
    stopping_the_parent_stops_the_peer(&mock, &local.url, &remote.url).await;
}

#[tokio::test]
async fn serve_and_run_refuse_a_peer_they_cannot_mount_naming_it() {
    let projects = tempfile::tempdir().unwrap();
    agent(
        projects.path(),
        "asker",
        &[("agent/mcp-connections/helper.toml", &peer("helper"))],
    );
    agent(projects.path(), "other", &[]);
    let state = tempfile::tempdir().unwrap();
    let served = folio("http://127.0.0.1:9/v1")
        .args(["serve", "--port", "0", "--dir"])
        .arg(projects.path())
        .arg("--state-root")
        .arg(state.path())
        .output()
        .await
        .unwrap();
    assert!(!served.status.success());
    let stderr = String::from_utf8_lossy(&served.stderr);
    let manifest = projects
        .path()
        .join("asker/agent/mcp-connections/helper.toml");
    assert!(
        stderr.contains(&format!(
            "agent asker: {}: peer agent \"helper\" is not mounted in this server (mounted: asker, other)",
            manifest.display()
        )),
        "{stderr}"
    );

    let ran = folio("http://127.0.0.1:9/v1")
        .args(["run", "--message", "hi", "--dir"])
        .arg(projects.path().join("asker"))
        .output()
        .await
        .unwrap();
    assert!(!ran.status.success());
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(
        stderr.contains(&format!(
            "{}: agent = \"helper\" is a peer agent in the same server, and only folio serve mounts peers",
            manifest.display()
        )),
        "{stderr}"
    );
}
