//! Round-trip tests: every event type parses from a fixed line and serializes back to it exactly.

use chrono::{TimeZone, Utc};
use folio_protocol::*;
use pretty_assertions::assert_eq;
use serde_json::json;

/// Parses `line`, checks the typed value, and checks that serializing gives `line` back.
fn round_trip(line: &str, expected: EventBody) -> Event {
    let event: Event = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
    assert_eq!(event.body, expected);
    assert_eq!(serde_json::to_string(&event).unwrap(), line);
    event
}

fn line(kind: &str, data: &str) -> String {
    format!(
        r#"{{"type":"{kind}","index":3,"sessionId":"ses_01JDXYZ","turnId":"turn_01JDXYZ","at":"2026-11-30T04:15:47.123Z","data":{data}}}"#
    )
}

#[test]
fn envelope_fields_and_optional_turn_id() {
    let with_turn = round_trip(
        &line("turn.started", r#"{"model":"openai:gpt-4.1-mini"}"#),
        EventBody::TurnStarted(TurnStarted {
            model: "openai:gpt-4.1-mini".into(),
        }),
    );
    assert_eq!(
        with_turn,
        Event {
            index: 3,
            session_id: "ses_01JDXYZ".into(),
            turn_id: Some("turn_01JDXYZ".into()),
            at: Utc.with_ymd_and_hms(2026, 11, 30, 4, 15, 47).unwrap()
                + chrono::Duration::milliseconds(123),
            body: EventBody::TurnStarted(TurnStarted {
                model: "openai:gpt-4.1-mini".into()
            }),
        }
    );
    assert_eq!(with_turn.event_type(), "turn.started");

    let without_turn = r#"{"type":"session.waiting","index":0,"sessionId":"ses_1","at":"2026-11-30T04:15:47.000Z","data":{}}"#;
    let event = round_trip(without_turn, EventBody::SessionWaiting(SessionWaiting {}));
    assert_eq!(event.turn_id, None);
}

#[test]
fn at_is_written_with_milliseconds() {
    let event = Event {
        index: 0,
        session_id: "ses_1".into(),
        turn_id: None,
        at: Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap()
            + chrono::Duration::microseconds(6789),
        body: SessionCompleted {}.into(),
    };
    assert_eq!(
        serde_json::to_value(&event).unwrap()["at"],
        json!("2026-01-02T03:04:05.006Z")
    );
}

#[test]
fn unknown_type_is_an_error() {
    let err = serde_json::from_str::<Event>(&line("turn.exploded", "{}")).unwrap_err();
    assert!(err.to_string().contains("turn.exploded"), "{err}");
}

#[test]
fn session_events() {
    round_trip(
        &line(
            "session.started",
            r#"{"mode":"chat","channel":"http","title":"Hi","principal":"local"}"#,
        ),
        EventBody::SessionStarted(SessionStarted {
            mode: SessionMode::Chat,
            channel: "http".into(),
            title: Some("Hi".into()),
            principal: "local".into(),
            forked_from: None,
        }),
    );
    round_trip(
        &line(
            "session.started",
            r#"{"mode":"task","channel":"schedule","principal":"anonymous"}"#,
        ),
        EventBody::SessionStarted(SessionStarted {
            mode: SessionMode::Task,
            channel: "schedule".into(),
            title: None,
            principal: "anonymous".into(),
            forked_from: None,
        }),
    );
    round_trip(
        &line("ab.assigned", r#"{"experiment":"prompt-v2","variant":"b"}"#),
        EventBody::AbAssigned(AbAssigned {
            experiment: "prompt-v2".into(),
            variant: "b".into(),
            reason: None,
        }),
    );
    round_trip(
        &line(
            "ab.assigned",
            r#"{"experiment":"prompt-v2","variant":"b","reason":"continuation_key"}"#,
        ),
        EventBody::AbAssigned(AbAssigned {
            experiment: "prompt-v2".into(),
            variant: "b".into(),
            reason: Some("continuation_key".into()),
        }),
    );
    round_trip(
        &line("session.waiting", "{}"),
        EventBody::SessionWaiting(SessionWaiting {}),
    );
    round_trip(
        &line("session.completed", "{}"),
        EventBody::SessionCompleted(SessionCompleted {}),
    );
    round_trip(
        &line("session.failed", r#"{"message":"turn interrupted"}"#),
        EventBody::SessionFailed(SessionFailed {
            message: "turn interrupted".into(),
        }),
    );
    round_trip(
        &line("agent.bound", r#"{"url":"https://example.invalid/c/1"}"#),
        EventBody::AgentBound(AgentBound {
            url: "https://example.invalid/c/1".into(),
        }),
    );
}

#[test]
fn message_and_turn_events() {
    round_trip(
        &line("message.received", r#"{"text":"hello"}"#),
        EventBody::MessageReceived(MessageReceived {
            text: "hello".into(),
            admission: None,
            coalesced: None,
            client_message_id: None,
            request_digest: None,
        }),
    );
    round_trip(
        &line(
            "message.received",
            r#"{"text":"a\nb","admission":"coalesce","coalesced":2}"#,
        ),
        EventBody::MessageReceived(MessageReceived {
            text: "a\nb".into(),
            admission: Some(Admission::Coalesce),
            coalesced: Some(2),
            client_message_id: None,
            request_digest: None,
        }),
    );
    round_trip(
        &line(
            "message.received",
            r#"{"text":"again","clientMessageId":"msg-7"}"#,
        ),
        EventBody::MessageReceived(MessageReceived {
            text: "again".into(),
            admission: None,
            coalesced: None,
            client_message_id: Some("msg-7".into()),
            request_digest: None,
        }),
    );
    round_trip(
        &line(
            "message.queued",
            r#"{"text":"later","workspaceFiles":{"a.txt":"A"},"clientMessageId":"msg-8"}"#,
        ),
        EventBody::MessageQueued(MessageQueued {
            text: "later".into(),
            workspace_files: [("a.txt".to_string(), "A".to_string())].into(),
            client_message_id: Some("msg-8".into()),
            request_digest: None,
        }),
    );
    round_trip(
        &line("turn.queued", r#"{"position":2}"#),
        EventBody::TurnQueued(TurnQueued { position: 2 }),
    );
    round_trip(
        &line(
            "turn.completed",
            r#"{"reply":"done","usage":{"inputTokens":10,"outputTokens":5,"cacheReadTokens":3,"cacheWriteTokens":1,"costUsd":null},"steps":2,"durationMs":1234}"#,
        ),
        EventBody::TurnCompleted(TurnCompleted {
            reply: "done".into(),
            usage: Some(Usage {
                input_tokens: 10,
                output_tokens: 5,
                cache_read_tokens: 3,
                cache_write_tokens: 1,
                cost_usd: None,
            }),
            compaction_usage: None,
            steps: 2,
            duration_ms: 1234,
        }),
    );
    // A provider that reported no usage: unknown, not zero.
    round_trip(
        &line(
            "turn.completed",
            r#"{"reply":"done","usage":null,"steps":1,"durationMs":7}"#,
        ),
        EventBody::TurnCompleted(TurnCompleted {
            reply: "done".into(),
            usage: None,
            compaction_usage: None,
            steps: 1,
            duration_ms: 7,
        }),
    );
    round_trip(
        &line("turn.failed", r#"{"message":"turn interrupted"}"#),
        EventBody::TurnFailed(TurnFailed {
            message: "turn interrupted".into(),
        }),
    );
}

#[test]
fn step_and_stream_events() {
    round_trip(
        &line("step.started", r#"{"step":1}"#),
        EventBody::StepStarted(StepStarted { step: 1 }),
    );
    round_trip(
        &line(
            "step.completed",
            r#"{"step":1,"durationMs":40,"finishReason":"tool_calls","usage":{"inputTokens":12,"outputTokens":3,"cacheReadTokens":0,"cacheWriteTokens":0,"costUsd":null}}"#,
        ),
        EventBody::StepCompleted(StepCompleted {
            step: 1,
            duration_ms: 40,
            finish_reason: FinishReason::ToolCalls,
            usage: Some(Usage {
                input_tokens: 12,
                output_tokens: 3,
                ..Usage::default()
            }),
        }),
    );
    round_trip(
        &line(
            "step.completed",
            r#"{"step":2,"durationMs":41,"finishReason":"pause_turn"}"#,
        ),
        EventBody::StepCompleted(StepCompleted {
            step: 2,
            duration_ms: 41,
            finish_reason: FinishReason::Other("pause_turn".into()),
            usage: None,
        }),
    );
    round_trip(
        &line("reasoning.appended", r#"{"delta":"Let me"}"#),
        EventBody::ReasoningAppended(ReasoningAppended {
            delta: "Let me".into(),
        }),
    );
    round_trip(
        &line(
            "reasoning.completed",
            r#"{"text":"Let me think.","signature":"sig=="}"#,
        ),
        EventBody::ReasoningCompleted(ReasoningCompleted {
            text: "Let me think.".into(),
            signature: Some("sig==".into()),
        }),
    );
    round_trip(
        &line("reasoning.completed", r#"{"text":"plain"}"#),
        EventBody::ReasoningCompleted(ReasoningCompleted {
            text: "plain".into(),
            signature: None,
        }),
    );
    round_trip(
        &line("message.appended", r#"{"delta":"Hel"}"#),
        EventBody::MessageAppended(MessageAppended {
            delta: "Hel".into(),
        }),
    );
    round_trip(
        &line("message.completed", r#"{"text":"Hello"}"#),
        EventBody::MessageCompleted(MessageCompleted {
            text: "Hello".into(),
        }),
    );
}

#[test]
fn action_events() {
    round_trip(
        &line(
            "actions.requested",
            r#"{"calls":[{"callId":"call_1","tool":"Read","input":{"path":"/a.txt"}},{"callId":"call_2","tool":"task","input":{"prompt":"go"},"subagent":"researcher"}]}"#,
        ),
        EventBody::ActionsRequested(ActionsRequested {
            calls: vec![
                RequestedCall {
                    call_id: "call_1".into(),
                    tool: "Read".into(),
                    input: json!({"path": "/a.txt"}),
                    subagent: None,
                },
                RequestedCall {
                    call_id: "call_2".into(),
                    tool: "task".into(),
                    input: json!({"prompt": "go"}),
                    subagent: Some("researcher".into()),
                },
            ],
        }),
    );
    round_trip(
        &line(
            "action.result",
            r#"{"callId":"call_1","tool":"Read","output":"     1\thi","isError":false,"durationMs":3}"#,
        ),
        EventBody::ActionResult(ActionResult {
            call_id: "call_1".into(),
            tool: "Read".into(),
            output: Some(json!("     1\thi")),
            error: None,
            is_error: false,
            duration_ms: 3,
        }),
    );
    round_trip(
        &line(
            "action.result",
            r#"{"callId":"call_3","tool":"Read","output":[{"data":"iVBO","mimeType":"image/png","type":"image"}],"isError":false,"durationMs":4}"#,
        ),
        EventBody::ActionResult(ActionResult {
            call_id: "call_3".into(),
            tool: "Read".into(),
            output: Some(json!([{"type": "image", "mimeType": "image/png", "data": "iVBO"}])),
            error: None,
            is_error: false,
            duration_ms: 4,
        }),
    );
    round_trip(
        &line(
            "action.result",
            r#"{"callId":"call_4","tool":"Read","error":"no such file","isError":true,"durationMs":1}"#,
        ),
        EventBody::ActionResult(ActionResult {
            call_id: "call_4".into(),
            tool: "Read".into(),
            output: None,
            error: Some("no such file".into()),
            is_error: true,
            duration_ms: 1,
        }),
    );
    round_trip(
        &line(
            "action.approval_requested",
            r#"{"callId":"call_5","tool":"Write","input":{"path":"/b"}}"#,
        ),
        EventBody::ActionApprovalRequested(ActionApprovalRequested {
            call_id: "call_5".into(),
            tool: "Write".into(),
            input: json!({"path": "/b"}),
            expires_at: None,
            elicitation: None,
        }),
    );
    round_trip(
        &line(
            "action.approval_resolved",
            r#"{"callId":"call_5","decision":"deny","reason":"no","by":"local"}"#,
        ),
        EventBody::ActionApprovalResolved(ActionApprovalResolved {
            call_id: "call_5".into(),
            decision: ApprovalDecision::Deny,
            reason: Some("no".into()),
            by: "local".into(),
            content: None,
        }),
    );
    round_trip(
        &line(
            "action.approval_resolved",
            r#"{"callId":"call_6","decision":"approve","by":"bearer"}"#,
        ),
        EventBody::ActionApprovalResolved(ActionApprovalResolved {
            call_id: "call_6".into(),
            decision: ApprovalDecision::Approve,
            reason: None,
            by: "bearer".into(),
            content: None,
        }),
    );
    round_trip(
        &line(
            "action.authorization_requested",
            r#"{"callId":"auth_1","tool":"mcp__docs__search","server":"docs","url":"https://as.example/authorize?state=s"}"#,
        ),
        EventBody::ActionAuthorizationRequested(ActionAuthorizationRequested {
            call_id: "auth_1".into(),
            tool: "mcp__docs__search".into(),
            server: "docs".into(),
            url: "https://as.example/authorize?state=s".into(),
        }),
    );
    round_trip(
        &line(
            "action.authorization_resolved",
            r#"{"callId":"auth_1","authorized":false,"reason":"access_denied"}"#,
        ),
        EventBody::ActionAuthorizationResolved(ActionAuthorizationResolved {
            call_id: "auth_1".into(),
            authorized: false,
            reason: Some("access_denied".into()),
        }),
    );
}

#[test]
fn subagent_and_artifact_events() {
    round_trip(
        &line(
            "subagent.called",
            r#"{"callId":"call_2","subagent":"researcher","prompt":"go"}"#,
        ),
        EventBody::SubagentCalled(SubagentCalled {
            call_id: "call_2".into(),
            subagent: "researcher".into(),
            prompt: "go".into(),
        }),
    );
    round_trip(
        &line(
            "subagent.completed",
            r#"{"callId":"call_2","subagent":"researcher","reply":"found it","isError":false}"#,
        ),
        EventBody::SubagentCompleted(SubagentCompleted {
            call_id: "call_2".into(),
            subagent: "researcher".into(),
            reply: "found it".into(),
            is_error: false,
        }),
    );
    round_trip(
        &line(
            "artifact.tagged",
            r#"{"id":"art_1","kind":"file","key":"report.md","title":"Report"}"#,
        ),
        EventBody::ArtifactTagged(ArtifactTagged {
            id: "art_1".into(),
            kind: "file".into(),
            key: "report.md".into(),
            title: "Report".into(),
        }),
    );
}
