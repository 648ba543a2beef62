//! Peer agents end to end (`agent = "<slug>"` in a connection manifest): a parent asks a peer
//! in the same `folio serve` twice and the follow-up continues the same peer session, also
//! after a restart; a peer on a second `folio serve` behind a bearer token; a cycle (A asks B
//! asks A …) cut at the depth limit; `serve` and `run` refusing a peer they cannot mount.

mod serve_support;

use std::path::Path;

use folio_agent::peers::MAX_PEER_DEPTH;
use folio_protocol::{
    ActionResult, AskResult, AskStatus, CreateSession, Event, FollowUp, MessageReceived,
    SessionStarted,
};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
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
    let server = serve(&mock.openai_base_url(), projects.path(), state.path(), &[]).await;
    let created = create_session(
        &format!("{}/ping", server.host),
        &CreateSession::message("Start the cycle."),
    )
    .await;
    // Walk the chain through the peer session ids each parent's log recorded.
    let mut session_id = created.session_id.clone();
    for depth in 0..hops {
        let (slug, tool) = if depth % 2 == 0 {
            ("ping", "mcp__pong__ask")
        } else {
            ("pong", "mcp__ping__ask")
        };
        let url = format!("{}/{slug}", server.host);
        let log = settle(&url, &session_id, 1).await;
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
    assert_eq!(mock.remaining(), 0);
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
