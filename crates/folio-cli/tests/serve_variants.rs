//! A/B variants end to end: `folio serve` assigns each new session a variant of `agent.toml`
//! once (`ab.assigned`), runs its turns with the variant's model, parameters, instructions and
//! tools (checked on the requests the mock model received), keeps it across follow-ups and a
//! restart, keeps a disabled variant's sessions on it, and counts each variant on
//! `GET /v1/variants`.

mod serve_support;

use folio_protocol::{
    AbAssigned, Acknowledged, ActionApprovalRequested, ApprovalDecision, ApprovalRequest,
    CreateSession, FollowUp, OkTrue, Usage, VariantStats, VariantStatus, VariantsResponse,
};
use folio_test_support::{MockModelServer, MockReply, RecordedRequest};

/// A text reply reporting 10 input and 2 output tokens.
fn reply(text: &str) -> MockReply {
    MockReply::text(text).with_usage(Usage {
        input_tokens: 10,
        output_tokens: 2,
        ..Usage::default()
    })
}
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::json;
use serve_support::*;

/// Two variants: `concise` gets every new session (the control has no weight) and overrides
/// the model, a parameter, the instructions and the tools.
const AGENT: &str = r#"name = "ab"
model = "openai:gpt-base"
tools = ["read", "grep"]

[variants.control]
weight = 0

[variants.concise]
model = "openai:gpt-concise"
model_params = { temperature = 0.1 }
instructions = "concise.md"
tools = ["read"]
"#;

/// The same variants after the experiment moved on: `concise` is switched off and the
/// control takes new sessions.
const AGENT_LATER: &str = r#"name = "ab"
model = "openai:gpt-base"
tools = ["read", "grep"]

[variants.control]
weight = 1

[variants.concise]
enabled = false
model = "openai:gpt-concise"
model_params = { temperature = 0.1 }
instructions = "concise.md"
tools = ["read"]
"#;

fn ab_project() -> Project {
    let dir = project(AGENT);
    write_files(
        dir.path(),
        &[
            ("agent/instructions.md", "You are the base prompt.\n"),
            ("agent/concise.md", "Answer in one word.\n"),
            (
                "agent/tools/deploy.toml",
                r#"description = "Deploy a service."
command = ["sh", "-c", "cat >/dev/null; echo deployed"]
needs_approval = true

[input_schema]
type = "object"
properties.target = { type = "string" }
"#,
            ),
        ],
    );
    dir
}

/// What a request asked for: the model, the temperature, the system prompt, the tools (sorted).
fn asked(request: &RecordedRequest) -> (String, Option<f64>, String, Vec<String>) {
    let system = request
        .messages()
        .iter()
        .filter(|m| m.role == "system")
        .map(|m| m.text())
        .collect();
    let mut tools = request.tool_names();
    tools.sort();
    (
        request.body["model"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        request.body["temperature"].as_f64(),
        system,
        tools,
    )
}

fn assert_concise(request: &RecordedRequest) {
    let (model, temperature, system, tools) = asked(request);
    assert_eq!(
        (model.as_str(), temperature, tools),
        (
            "gpt-concise",
            Some(0.1),
            vec!["Read".into(), "deploy".into()]
        )
    );
    assert!(system.starts_with("Answer in one word."), "{system}");
    assert!(!system.contains("base prompt"), "{system}");
}

fn assert_control(request: &RecordedRequest) {
    let (model, temperature, system, tools) = asked(request);
    assert_eq!(
        (model.as_str(), temperature, tools),
        (
            "gpt-base",
            None,
            vec!["Grep".into(), "Read".into(), "deploy".into()]
        )
    );
    assert!(system.starts_with("You are the base prompt."), "{system}");
}

/// The `ab.assigned` of a session's log, which comes right after `session.started`.
async fn assignment(url: &str, id: &str) -> AbAssigned {
    let log = events(url, id).await;
    let types: Vec<&str> = log.iter().map(|e| e.event_type()).collect();
    assert_eq!(
        types[..3],
        ["session.started", "ab.assigned", "message.received"],
        "assigned before its first turn"
    );
    data::<AbAssigned>(&log[1]).clone()
}

#[tokio::test]
async fn a_session_keeps_its_variant_across_follow_ups_restarts_and_switching_it_off() {
    let mock = MockModelServer::start().await;
    let dir = ab_project();
    let state = tempfile::tempdir().unwrap();
    let mut server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();

    // A new session gets `concise` by weight and runs with its overrides.
    mock.push(reply("One."));
    let created = create_session(&url, &CreateSession::message("hello")).await;
    let id = created.session_id.clone();
    Stream::open(&url, &id, 0, None)
        .await
        .until("session.waiting")
        .await;
    assert_eq!(
        assignment(&url, &id).await,
        AbAssigned {
            experiment: "ab".into(),
            variant: "concise".into(),
            reason: Some("weight".into()),
        }
    );
    assert_concise(&mock.requests()[0]);
    assert_eq!(session(&url, &id).await.variant.as_deref(), Some("concise"));

    // A follow-up keeps it.
    mock.push(reply("Two."));
    let followed = follow_up(
        &url,
        &id,
        &FollowUp::new(&created.continuation_token, "again"),
    )
    .await;
    let mut stream = Stream::open(&url, &id, 0, None).await;
    stream.until_count("session.waiting", 2).await;
    assert_concise(&mock.requests()[1]);

    // The server restarts with `concise` switched off: the session keeps it, new ones do not
    // get it.
    server.child.start_kill().unwrap();
    server.child.wait().await.unwrap();
    std::fs::write(dir.path().join("agent/agent.toml"), AGENT_LATER).unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    assert_eq!(session(&url, &id).await.variant.as_deref(), Some("concise"));
    mock.push(reply("Three."));
    follow_up(
        &url,
        &id,
        &FollowUp::new(&followed.continuation_token, "more"),
    )
    .await;
    Stream::open(&url, &id, 0, None)
        .await
        .until_count("session.waiting", 3)
        .await;
    assert_concise(&mock.requests()[2]);

    // A new session gets the control, with the agent as written; a person denies its deploy,
    // and its next turn fails.
    mock.push(MockReply::tool_calls([(
        "deploy",
        json!({"target": "prod"}),
    )]));
    mock.push(reply("Not deployed."));
    let other = create_session(&url, &CreateSession::message("deploy")).await;
    let mut stream = Stream::open(&url, &other.session_id, 0, None).await;
    let requested = stream.until("action.approval_requested").await;
    let call_id = &data::<ActionApprovalRequested>(&requested).call_id;
    let denied: Acknowledged = expect(
        Method::POST,
        &format!("{url}/v1/session/{}/approvals/{call_id}", other.session_id),
        Some(&ApprovalRequest {
            decision: ApprovalDecision::Deny,
            reason: Some("freeze".into()),
            content: None,
        }),
        200,
    )
    .await;
    assert_eq!(denied, Acknowledged { ok: OkTrue });
    stream.until("session.waiting").await;
    assert_control(&mock.requests()[3]);
    assert_eq!(assignment(&url, &other.session_id).await.variant, "control");
    mock.push(MockReply::status(400));
    follow_up(
        &url,
        &other.session_id,
        &FollowUp::new(&other.continuation_token, "try again"),
    )
    .await;
    stream.until_count("session.waiting", 2).await;
    assert_eq!(stream.count("turn.failed"), 1);

    // Each variant's counts.
    let answer: VariantsResponse =
        expect(Method::GET, &format!("{url}/v1/variants"), NO_BODY, 200).await;
    let usage = |id: &str| {
        let url = url.clone();
        let id = id.to_string();
        async move { session(&url, &id).await.usage }
    };
    let concise_usage: Usage = usage(&id).await;
    let control_usage: Usage = usage(&other.session_id).await;
    assert!(concise_usage.tokens() > 0, "{concise_usage:?}");
    assert!(control_usage.tokens() > 0, "{control_usage:?}");
    let latency = |name: &str| {
        let row = answer.variants.iter().find(|v| v.name == name).unwrap();
        (row.latency_p50_ms, row.latency_p95_ms)
    };
    let (concise_p50, concise_p95) = latency("concise");
    let (control_p50, control_p95) = latency("control");
    assert!(concise_p50.is_some() && concise_p50 <= concise_p95);
    assert!(
        control_p50.is_some() && control_p50 == control_p95,
        "one turn completed"
    );
    assert_eq!(
        answer,
        VariantsResponse {
            ok: OkTrue,
            experiment: "ab".into(),
            variants: vec![
                VariantStats {
                    name: "concise".into(),
                    status: VariantStatus::Disabled,
                    weight: 1,
                    sessions: 1,
                    turns: 3,
                    failures: 0,
                    approvals_denied: 0,
                    usage: concise_usage,
                    latency_p50_ms: concise_p50,
                    latency_p95_ms: concise_p95,
                },
                VariantStats {
                    name: "control".into(),
                    status: VariantStatus::Enabled,
                    weight: 1,
                    sessions: 1,
                    turns: 2,
                    failures: 1,
                    approvals_denied: 1,
                    usage: control_usage,
                    latency_p50_ms: control_p50,
                    latency_p95_ms: control_p95,
                },
            ],
        }
    );
}

/// Weights 70/30 over sessions with continuation keys: each key's variant is the one the
/// assignment function picks for it (the same for a second session of the key), and
/// `GET /v1/variants` counts them.
#[tokio::test]
async fn weights_split_sessions_and_continuation_keys_stick() {
    let mock = MockModelServer::start().await;
    let dir = project(
        "name = \"split\"\nmodel = \"openai:gpt-base\"\n\n[variants.a]\nweight = 70\n\n[variants.b]\nweight = 30\n",
    );
    let definition = folio_project::discover(dir.path())
        .definition
        .expect("the project is valid");
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    const SESSIONS: usize = 40;
    let mut expected = [0u64; 2];
    for n in 0..SESSIONS {
        let key = format!("customer-{n}");
        let (picked, _) = folio_project::assign_variant(
            &definition.variants,
            folio_project::AssignKey {
                experiment: "split",
                session_id: "unused: the key decides",
                continuation_key: Some(&key),
                principal: "local",
            },
        )
        .unwrap();
        expected[usize::from(picked.name == "b")] += 1;
        // Two sessions of the key: both get the key's variant.
        for _ in 0..2 {
            mock.push(reply("ok"));
            let request = CreateSession {
                continuation_key: Some(key.clone()),
                ..CreateSession::message("hi")
            };
            let created = create_session(&url, &request).await;
            Stream::open(&url, &created.session_id, 0, None)
                .await
                .until("session.waiting")
                .await;
            assert_eq!(
                assignment(&url, &created.session_id).await,
                AbAssigned {
                    experiment: "split".into(),
                    variant: picked.name.clone(),
                    reason: Some("continuation_key".into()),
                }
            );
        }
    }
    let a_share = expected[0] as f64 / SESSIONS as f64;
    assert!((0.55..=0.85).contains(&a_share), "{expected:?}");
    let answer: VariantsResponse =
        expect(Method::GET, &format!("{url}/v1/variants"), NO_BODY, 200).await;
    let sessions: Vec<(&str, u64)> = answer
        .variants
        .iter()
        .map(|v| (v.name.as_str(), v.sessions))
        .collect();
    assert_eq!(sessions, [("a", expected[0] * 2), ("b", expected[1] * 2)]);
}
