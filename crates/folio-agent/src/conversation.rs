//! The conversation is a function of the event log: the provider-neutral messages of a session
//! are rebuilt from its events, live during a turn and after a restart alike.

use std::collections::HashSet;

use folio_model::{ContentPart, Message, Reasoning, ToolCall};
use folio_protocol::{Event, EventBody};
use serde_json::Value;

pub use folio_protocol::INTERRUPTED_RESULT;

/// How the summary of a compacted conversation opens, as the first user message.
pub const SUMMARY_HEADING: &str = "Summary of the earlier conversation (compacted to fit the context window; the full record is kept in the session log):";

/// Rebuilds the messages to send to the provider from a session's events, in order.
///
/// After a `context.compacted` event the conversation is its summary (one user message) and
/// the events from its `upToIndex` on; the events before are not read at all, so the rebuild
/// costs what the model sees, not the length of the log.
pub fn conversation(events: &[Event]) -> Vec<Message> {
    let compacted = events.iter().rev().find_map(|event| match &event.body {
        EventBody::ContextCompacted(compacted) => Some(compacted),
        _ => None,
    });
    let (mut messages, events) = match compacted {
        Some(compacted) => {
            let first = events.partition_point(|event| event.index < compacted.up_to_index);
            let summary = Message::User {
                text: format!("{SUMMARY_HEADING}\n\n{}", compacted.summary),
            };
            (vec![summary], &events[first..])
        }
        None => (Vec::new(), events),
    };
    let mut step = Step::default();
    // Calls requested but not yet answered, so an interrupted call still gets a result.
    let mut open_calls: Vec<(String, String)> = Vec::new();
    // Calls a subagent made inside a `Task` call: recorded for the stream, not the conversation.
    let mut subagent_calls: HashSet<String> = HashSet::new();
    for event in events {
        match &event.body {
            EventBody::MessageReceived(received) => {
                step.flush(&mut messages);
                close_open(&mut open_calls, &mut messages);
                messages.push(Message::User {
                    text: received.text.clone(),
                });
            }
            EventBody::StepStarted(_) => {
                step.flush(&mut messages);
                close_open(&mut open_calls, &mut messages);
            }
            EventBody::MessageCompleted(done) => step.text = Some(done.text.clone()),
            EventBody::ReasoningCompleted(done) => {
                step.reasoning = Some(Reasoning {
                    text: done.text.clone(),
                    signature: done.signature.clone(),
                });
            }
            EventBody::ActionsRequested(requested) => {
                for call in &requested.calls {
                    if call.subagent.is_some() {
                        subagent_calls.insert(call.call_id.clone());
                        continue;
                    }
                    step.calls.push(ToolCall::from(call));
                    open_calls.push((call.call_id.clone(), call.tool.clone()));
                }
                step.flush(&mut messages);
            }
            EventBody::ActionResult(result) => {
                if subagent_calls.contains(&result.call_id) {
                    continue;
                }
                let Some(position) = open_calls.iter().position(|(id, _)| *id == result.call_id)
                else {
                    continue;
                };
                open_calls.remove(position);
                let content = match (&result.error, &result.output) {
                    (Some(error), _) => vec![ContentPart::Text {
                        text: error.clone(),
                    }],
                    (None, Some(output)) => content_of(output),
                    (None, None) => vec![ContentPart::Text {
                        text: String::new(),
                    }],
                };
                messages.push(Message::ToolResult {
                    call_id: result.call_id.clone(),
                    tool: result.tool.clone(),
                    content,
                    is_error: result.is_error,
                });
            }
            EventBody::TurnCompleted(_) | EventBody::TurnFailed(_) => {
                step.flush(&mut messages);
                close_open(&mut open_calls, &mut messages);
            }
            _ => {}
        }
    }
    step.flush(&mut messages);
    close_open(&mut open_calls, &mut messages);
    messages
}

/// How a recorded tool output is shown to the model: text, content parts, or compact JSON.
pub fn content_of(output: &Value) -> Vec<ContentPart> {
    if let Value::String(text) = output {
        return vec![ContentPart::Text { text: text.clone() }];
    }
    if let Some(parts) = output.as_array().and_then(|items| {
        items
            .iter()
            .map(|item| serde_json::from_value::<ContentPart>(item.clone()).ok())
            .collect::<Option<Vec<_>>>()
    }) && !parts.is_empty()
    {
        return parts;
    }
    vec![ContentPart::Text {
        text: output.to_string(),
    }]
}

#[derive(Default)]
struct Step {
    text: Option<String>,
    reasoning: Option<Reasoning>,
    calls: Vec<ToolCall>,
}

impl Step {
    fn flush(&mut self, messages: &mut Vec<Message>) {
        let step = std::mem::take(self);
        if step.text.is_none() && step.calls.is_empty() {
            return;
        }
        messages.push(Message::Assistant {
            text: step.text.unwrap_or_default(),
            reasoning: step.reasoning,
            tool_calls: step.calls,
        });
    }
}

fn close_open(open: &mut Vec<(String, String)>, messages: &mut Vec<Message>) {
    for (call_id, tool) in open.drain(..) {
        messages.push(Message::ToolResult {
            call_id,
            tool,
            content: vec![ContentPart::Text {
                text: INTERRUPTED_RESULT.to_string(),
            }],
            is_error: true,
        });
    }
}
