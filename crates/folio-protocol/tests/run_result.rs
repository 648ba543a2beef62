//! `RunResult::from_events` on fixed event logs.

use folio_protocol::{Event, RunResult, ToolCallRecord, TurnSummary, Usage};
use pretty_assertions::assert_eq;
use serde_json::json;

fn parse(log: &str) -> Vec<Event> {
    log.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect()
}

const TWO_TURNS: &str = r#"
{"type":"session.started","index":0,"sessionId":"ses_A","at":"2026-11-30T04:15:47.000Z","data":{"mode":"chat","channel":"cli","principal":"local"}}
{"type":"message.received","index":1,"sessionId":"ses_A","turnId":"turn_1","at":"2026-11-30T04:15:47.001Z","data":{"text":"read a.txt"}}
{"type":"turn.started","index":2,"sessionId":"ses_A","turnId":"turn_1","at":"2026-11-30T04:15:47.002Z","data":{"model":"replay:f.jsonl"}}
{"type":"step.started","index":3,"sessionId":"ses_A","turnId":"turn_1","at":"2026-11-30T04:15:47.003Z","data":{"step":1}}
{"type":"step.completed","index":4,"sessionId":"ses_A","turnId":"turn_1","at":"2026-11-30T04:15:47.010Z","data":{"step":1,"durationMs":7,"finishReason":"tool_calls"}}
{"type":"actions.requested","index":5,"sessionId":"ses_A","turnId":"turn_1","at":"2026-11-30T04:15:47.011Z","data":{"calls":[{"callId":"c1","tool":"Read","input":{"path":"/a.txt"}},{"callId":"c2","tool":"task","input":{"prompt":"x"},"subagent":"helper"},{"callId":"c3","tool":"Read","input":{"path":"/missing"}}]}}
{"type":"action.result","index":6,"sessionId":"ses_A","turnId":"turn_1","at":"2026-11-30T04:15:47.014Z","data":{"callId":"c3","tool":"Read","error":"not found","isError":true,"durationMs":1}}
{"type":"action.result","index":7,"sessionId":"ses_A","turnId":"turn_1","at":"2026-11-30T04:15:47.015Z","data":{"callId":"c1","tool":"Read","output":"     1\thi","isError":false,"durationMs":3}}
{"type":"action.result","index":8,"sessionId":"ses_A","turnId":"turn_1","at":"2026-11-30T04:15:47.020Z","data":{"callId":"c2","tool":"task","output":"sub reply","isError":false,"durationMs":5}}
{"type":"message.completed","index":9,"sessionId":"ses_A","turnId":"turn_1","at":"2026-11-30T04:15:47.030Z","data":{"text":"It says hi."}}
{"type":"turn.completed","index":10,"sessionId":"ses_A","turnId":"turn_1","at":"2026-11-30T04:15:47.031Z","data":{"reply":"It says hi.","usage":{"inputTokens":100,"outputTokens":20,"cacheReadTokens":50,"cacheWriteTokens":10},"steps":2,"durationMs":29}}
{"type":"session.waiting","index":11,"sessionId":"ses_A","at":"2026-11-30T04:15:47.032Z","data":{}}
{"type":"message.received","index":12,"sessionId":"ses_A","turnId":"turn_2","at":"2026-11-30T04:15:48.000Z","data":{"text":"thanks"}}
{"type":"turn.started","index":13,"sessionId":"ses_A","turnId":"turn_2","at":"2026-11-30T04:15:48.001Z","data":{"model":"replay:f.jsonl"}}
{"type":"turn.completed","index":14,"sessionId":"ses_A","turnId":"turn_2","at":"2026-11-30T04:15:48.101Z","data":{"reply":"You're welcome.","usage":{"inputTokens":1,"outputTokens":2,"cacheReadTokens":3,"cacheWriteTokens":4},"steps":1,"durationMs":100}}
{"type":"session.waiting","index":15,"sessionId":"ses_A","at":"2026-11-30T04:15:48.102Z","data":{}}
"#;

#[test]
fn pairs_calls_with_results_and_sums_usage() {
    let result = RunResult::from_events(&parse(TWO_TURNS));
    assert_eq!(
        result,
        RunResult {
            session_id: "ses_A".into(),
            ok: true,
            reply: "You're welcome.".into(),
            turns: vec![
                TurnSummary {
                    turn_id: "turn_1".into(),
                    ok: true,
                    reply: "It says hi.".into(),
                    duration_ms: 29,
                    usage: Some(Usage {
                        input_tokens: 100,
                        output_tokens: 20,
                        cache_read_tokens: 50,
                        cache_write_tokens: 10,
                        cost_usd: None,
                    }),
                },
                TurnSummary {
                    turn_id: "turn_2".into(),
                    ok: true,
                    reply: "You're welcome.".into(),
                    duration_ms: 100,
                    usage: Some(Usage {
                        input_tokens: 1,
                        output_tokens: 2,
                        cache_read_tokens: 3,
                        cache_write_tokens: 4,
                        cost_usd: None,
                    }),
                },
            ],
            tool_calls: vec![
                ToolCallRecord {
                    call_id: "c1".into(),
                    tool: "Read".into(),
                    input: json!({"path": "/a.txt"}),
                    output: json!("     1\thi"),
                    is_error: false,
                    duration_ms: 3,
                    subagent: None,
                },
                ToolCallRecord {
                    call_id: "c2".into(),
                    tool: "task".into(),
                    input: json!({"prompt": "x"}),
                    output: json!("sub reply"),
                    is_error: false,
                    duration_ms: 5,
                    subagent: Some("helper".into()),
                },
                ToolCallRecord {
                    call_id: "c3".into(),
                    tool: "Read".into(),
                    input: json!({"path": "/missing"}),
                    output: json!("not found"),
                    is_error: true,
                    duration_ms: 1,
                    subagent: None,
                },
            ],
            usage: Some(Usage {
                input_tokens: 101,
                output_tokens: 22,
                cache_read_tokens: 53,
                cache_write_tokens: 14,
                cost_usd: None,
            }),
            error: None,
            compactions: vec![],
        }
    );
}

#[test]
fn wire_shape_matches_cli_spec() {
    let result = RunResult::from_events(&parse(TWO_TURNS));
    let value = serde_json::to_value(&result).unwrap();
    assert_eq!(
        value["toolCalls"][0],
        json!({"callId": "c1", "tool": "Read", "input": {"path": "/a.txt"}, "output": "     1\thi",
               "isError": false, "durationMs": 3, "subagent": null})
    );
    assert_eq!(value["error"], json!(null));
    assert_eq!(
        value["turns"][1],
        json!({"turnId": "turn_2", "ok": true, "reply": "You're welcome.", "durationMs": 100,
               "usage": {"inputTokens": 1, "outputTokens": 2, "cacheReadTokens": 3, "cacheWriteTokens": 4, "costUsd": null}})
    );
    let back: RunResult = serde_json::from_value(value).unwrap();
    assert_eq!(back, result);
}

#[test]
fn interrupted_turn_is_the_error() {
    let log = r#"
{"type":"message.received","index":0,"sessionId":"ses_B","turnId":"turn_1","at":"2026-11-30T04:15:47.000Z","data":{"text":"go"}}
{"type":"turn.started","index":1,"sessionId":"ses_B","turnId":"turn_1","at":"2026-11-30T04:15:47.000Z","data":{"model":"m"}}
{"type":"message.completed","index":2,"sessionId":"ses_B","turnId":"turn_1","at":"2026-11-30T04:15:47.100Z","data":{"text":"partial"}}
{"type":"actions.requested","index":3,"sessionId":"ses_B","turnId":"turn_1","at":"2026-11-30T04:15:47.200Z","data":{"calls":[{"callId":"c9","tool":"Shell","input":{"command":"sleep 9"}}]}}
{"type":"turn.failed","index":4,"sessionId":"ses_B","turnId":"turn_1","at":"2026-11-30T04:15:47.250Z","data":{"message":"turn interrupted"}}
"#;
    let result = RunResult::from_events(&parse(log));
    assert_eq!(
        result,
        RunResult {
            session_id: "ses_B".into(),
            ok: false,
            reply: "partial".into(),
            turns: vec![TurnSummary {
                turn_id: "turn_1".into(),
                ok: false,
                reply: "partial".into(),
                duration_ms: 250,
                usage: None,
            }],
            tool_calls: vec![ToolCallRecord {
                call_id: "c9".into(),
                tool: "Shell".into(),
                input: json!({"command": "sleep 9"}),
                output: json!(null),
                is_error: false,
                duration_ms: 0,
                subagent: None,
            }],
            usage: None,
            error: Some("turn interrupted".into()),
            compactions: vec![],
        }
    );
}

#[test]
fn session_failure_and_unfinished_and_empty_logs() {
    let log = r#"
{"type":"turn.started","index":0,"sessionId":"ses_C","turnId":"turn_1","at":"2026-11-30T04:15:47.000Z","data":{"model":"m"}}
{"type":"turn.completed","index":1,"sessionId":"ses_C","turnId":"turn_1","at":"2026-11-30T04:15:47.000Z","data":{"reply":"r","usage":{"inputTokens":0,"outputTokens":0,"cacheReadTokens":0,"cacheWriteTokens":0},"steps":1,"durationMs":0}}
{"type":"session.failed","index":2,"sessionId":"ses_C","at":"2026-11-30T04:15:47.000Z","data":{"message":"hook failed"}}
"#;
    let failed = RunResult::from_events(&parse(log));
    assert!(!failed.ok);
    assert_eq!(failed.error.as_deref(), Some("hook failed"));

    let unfinished = RunResult::from_events(&parse(
        r#"{"type":"turn.started","index":0,"sessionId":"ses_D","turnId":"turn_1","at":"2026-11-30T04:15:47.000Z","data":{"model":"m"}}"#,
    ));
    assert!(!unfinished.ok);
    assert_eq!(unfinished.error.as_deref(), Some("turn did not finish"));

    let empty = RunResult::from_events(&[]);
    assert_eq!(empty.session_id, "");
    assert!(!empty.ok);
    assert_eq!(empty.error.as_deref(), Some("no turn in the event log"));
}

#[test]
fn in_memory_and_stored_events_give_the_same_result() {
    use chrono::{TimeZone, Utc};
    use folio_protocol::{EventBody, TurnFailed, TurnStarted};
    let base = Utc.with_ymd_and_hms(2026, 11, 30, 4, 15, 47).unwrap();
    let live = vec![
        Event {
            index: 0,
            session_id: "ses_E".into(),
            turn_id: Some("turn_1".into()),
            at: base + chrono::Duration::microseconds(900),
            body: EventBody::TurnStarted(TurnStarted { model: "m".into() }),
        },
        Event {
            index: 1,
            session_id: "ses_E".into(),
            turn_id: Some("turn_1".into()),
            at: base + chrono::Duration::microseconds(2_100),
            body: EventBody::TurnFailed(TurnFailed {
                message: "boom".into(),
            }),
        },
    ];
    let stored: Vec<Event> = live
        .iter()
        .map(|event| serde_json::from_str(&serde_json::to_string(event).unwrap()).unwrap())
        .collect();
    let from_live = RunResult::from_events(&live);
    assert_eq!(from_live, RunResult::from_events(&stored));
    assert_eq!(from_live.turns[0].duration_ms, 2);
}

#[test]
fn compaction_points_are_listed() {
    let log = r#"{"type":"message.received","index":0,"sessionId":"ses_D","turnId":"turn_1","at":"2026-11-30T04:15:47.000Z","data":{"text":"hi"}}
{"type":"context.compacted","index":1,"sessionId":"ses_D","turnId":"turn_1","at":"2026-11-30T04:15:47.001Z","data":{"upToIndex":0,"summary":"s","tokensBefore":900,"tokensAfter":120}}
{"type":"turn.completed","index":2,"sessionId":"ses_D","turnId":"turn_1","at":"2026-11-30T04:15:47.002Z","data":{"reply":"r","usage":null,"steps":1,"durationMs":2}}
"#;
    let result = RunResult::from_events(&parse(log));
    assert_eq!(
        result.compactions,
        [folio_protocol::CompactionPoint {
            turn_id: Some("turn_1".into()),
            index: 1,
            up_to_index: 0,
            tokens_before: 900,
            tokens_after: 120,
        }]
    );
    assert_eq!(
        serde_json::to_value(&result).unwrap()["compactions"][0]["tokensAfter"],
        120
    );
}
