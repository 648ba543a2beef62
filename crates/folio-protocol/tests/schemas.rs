//! The generated JSON Schemas accept what the types write and refuse what they would not read.

use folio_protocol::*;
use serde_json::{Value, json};

fn schema(name: &str) -> jsonschema::Validator {
    let (_, schema) = schemas()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no schema {name}"));
    jsonschema::options()
        .build(schema.as_value())
        .unwrap_or_else(|err| panic!("{name}: {err}"))
}

fn assert_valid(name: &str, value: &Value) {
    let errors: Vec<String> = schema(name)
        .iter_errors(value)
        .map(|err| err.to_string())
        .collect();
    assert!(errors.is_empty(), "{name} refuses {value:#}: {errors:#?}");
}

fn assert_invalid(name: &str, value: &Value) {
    assert!(
        !schema(name).is_valid(value),
        "{name} accepts {value:#}, which the type refuses"
    );
}

#[test]
fn events_written_by_the_types_are_valid() {
    let at = chrono::DateTime::parse_from_rfc3339("2026-11-30T04:15:47.123Z")
        .unwrap()
        .to_utc();
    let bodies = [
        EventBody::SessionStarted(SessionStarted {
            mode: SessionMode::Chat,
            channel: "http".into(),
            title: None,
            principal: "local".into(),
            forked_from: None,
        }),
        EventBody::MessageReceived(MessageReceived {
            text: "hi".into(),
            admission: Some(Admission::Coalesce),
            coalesced: Some(2),
            client_message_id: Some("msg-1".into()),
            request_digest: None,
        }),
        EventBody::MessageQueued(MessageQueued {
            text: "later".into(),
            workspace_files: [("a.txt".to_string(), "A".to_string())].into(),
            client_message_id: None,
            request_digest: None,
        }),
        EventBody::StepCompleted(StepCompleted {
            step: 1,
            duration_ms: 5,
            finish_reason: FinishReason::Other("pause_turn".into()),
            usage: None,
        }),
        EventBody::ActionsRequested(ActionsRequested {
            calls: vec![RequestedCall {
                call_id: "call_1".into(),
                tool: "Read".into(),
                input: json!({"path": "/a"}),
                subagent: None,
            }],
        }),
        EventBody::TurnFailed(TurnFailed {
            message: TURN_INTERRUPTED.into(),
        }),
        EventBody::SessionWaiting(SessionWaiting {}),
    ];
    for (index, body) in bodies.into_iter().enumerate() {
        let event = Event {
            index: index as u64,
            session_id: "ses_1".into(),
            turn_id: (index > 0).then(|| "turn_1".into()),
            at,
            body,
        };
        assert_valid("Event", &serde_json::to_value(&event).unwrap());
    }
    assert_invalid(
        "Event",
        &json!({"type": "no.such", "index": 0, "sessionId": "s", "at": "2026-11-30T04:15:47.123Z", "data": {}}),
    );
    assert_invalid(
        "Event",
        &json!({"type": "turn.failed", "index": 0, "sessionId": "s", "at": "2026-11-30T04:15:47.123Z", "data": {}}),
    );
}

#[test]
fn http_bodies_written_by_the_types_are_valid() {
    assert_valid(
        "CreateSession",
        &serde_json::to_value(CreateSession::message("hi")).unwrap(),
    );
    assert_invalid("CreateSession", &json!({"message": "x", "colour": 1}));
    assert_valid(
        "FollowUp",
        &serde_json::to_value(FollowUp::new("http:t", "again")).unwrap(),
    );
    assert_valid(
        "SessionCreated",
        &serde_json::to_value(SessionCreated {
            ok: OkTrue,
            session_id: "ses_1".into(),
            continuation_token: "http:t".into(),
            playground_url: "/a/playground?session=ses_1".into(),
            trace_url: "/a/v1/session/ses_1/events".into(),
        })
        .unwrap(),
    );
    assert_invalid("SessionCreated", &json!({"ok": true, "sessionId": "ses_1"}));
    let page = Page::new(
        vec![SessionSummary {
            session_id: "ses_1".into(),
            mode: SessionMode::Task,
            status: SessionStatus::Completed,
            title: String::new(),
            created_at: "2026-11-30T04:15:47.123Z".into(),
            updated_at: "2026-11-30T04:15:47.123Z".into(),
            turns: 1,
            last_index: 9,
            usage: Usage {
                input_tokens: 12,
                output_tokens: 3,
                ..Usage::default()
            },
            continuation_key: Some("acme:ticket-7".into()),
            variant: Some("concise".into()),
        }],
        Some("ses_1".into()),
    );
    assert_valid("SessionPage", &serde_json::to_value(&page).unwrap());
    assert_valid(
        "ErrorBody",
        &serde_json::to_value(ErrorBody::new(ErrorCode::SessionBusy, "busy")).unwrap(),
    );
    assert_invalid(
        "ErrorBody",
        &json!({"ok": true, "error": "session_busy", "message": "busy"}),
    );
    assert_invalid(
        "ErrorBody",
        &json!({"ok": false, "error": "teapot", "message": "x"}),
    );
    assert_valid(
        "AskResult",
        &serde_json::to_value(AskResult {
            status: AskStatus::Failed,
            session_id: "ses_1".into(),
            reply: TURN_INTERRUPTED.into(),
        })
        .unwrap(),
    );
    assert_valid(
        "AgentDescription",
        &serde_json::to_value(AgentDescription {
            ok: OkTrue,
            agent: AgentHeader {
                slug: "demo".into(),
                name: "Demo".into(),
                description: None,
                model: "openai:gpt-test".into(),
                rooted: false,
            },
            tools: Vec::new(),
            skills: Vec::new(),
            subagents: Vec::new(),
            connections: vec![ConnectionDescription {
                connection: ConnectionInfo {
                    name: "everything".into(),
                    description: None,
                    transport: TransportInfo::Peer {
                        agent: "other".into(),
                        url: Some("https://peers.example/other/v1/mcp".into()),
                    },
                    env_vars: Vec::new(),
                },
                visible_to: Visibility::Host,
                error: None,
            }],
            channels: Vec::new(),
            hooks: Vec::new(),
            schedules: Vec::new(),
            artifacts: None,
            diagnostics: vec![DiagnosticInfo {
                severity: Severity::Warning,
                file: "agent/agent.toml".into(),
                line: Some(3),
                message: "unknown key".into(),
            }],
        })
        .unwrap(),
    );
}
