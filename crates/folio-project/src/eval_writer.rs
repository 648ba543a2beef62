//! `folio eval --from-session SESSION_ID`: an eval case written from a recorded session, its
//! steps from the session's messages and its expectations from what each turn did.

use folio_protocol::{Event, EventBody, RunResult};
use serde_json::Value;

use crate::observe::observe;

/// The text of an eval file with one case `case_id` from the session of `events`: a step per
/// user message, each expecting the turn's outcome and the tools it called (their inputs as a
/// subset, their order `in_order`). Sharpen the expectations by hand.
pub fn eval_from_session(events: &[Event], case_id: &str) -> String {
    let session = RunResult::from_events(events).session_id;
    let mut out = format!(
        "description = \"From session {session}\"\ntags = [\"from-session\"]\n\n[[cases]]\nid = {}\n",
        toml_string(case_id)
    );
    for event in events {
        let EventBody::MessageReceived(received) = &event.body else {
            continue;
        };
        let Some(turn_id) = &event.turn_id else {
            continue;
        };
        let observed = observe(events, turn_id, &received.text);
        let mut expect = vec![format!("{{ succeeded = {} }}", observed.succeeded)];
        let mut seen: Vec<&str> = Vec::new();
        for call in &observed.tool_calls {
            if !seen.contains(&call.tool.as_str()) {
                seen.push(&call.tool);
                expect.push(format!(
                    "{{ called_tool = {}, input = {}, args = \"subset\" }}",
                    toml_string(&call.tool),
                    toml_inline(&call.input)
                ));
            }
        }
        if !observed.tool_calls.is_empty() {
            let order: Vec<String> = observed
                .tool_calls
                .iter()
                .map(|call| toml_string(&call.tool))
                .collect();
            expect.push(format!(
                "{{ tool_order = [{}], mode = \"in_order\" }}",
                order.join(", ")
            ));
        }
        out.push_str(&format!(
            "\n  [[cases.steps]]\n  send = {}\n  expect = [\n{}  ]\n",
            toml_string(&received.text),
            expect
                .iter()
                .map(|line| format!("    {line},\n"))
                .collect::<String>()
        ));
    }
    out
}

fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// A JSON value as an inline TOML value (`null`, which TOML lacks, becomes an empty string; a
/// key holding `null` is left out).
fn toml_inline(value: &Value) -> String {
    match value {
        Value::Null => "\"\"".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => toml_string(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(toml_inline).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => {
            let fields: Vec<String> = map
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| format!("{} = {}", toml_key(k), toml_inline(v)))
                .collect();
            if fields.is_empty() {
                "{}".into()
            } else {
                format!("{{ {} }}", fields.join(", "))
            }
        }
    }
}

fn toml_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        key.to_string()
    } else {
        toml_string(key)
    }
}
