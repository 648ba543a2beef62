//! A session's log as LangChain messages (`{"type": "human" | "ai" | "tool", ...}`) and its
//! pending approvals as interrupts, rebuilt event by event.

use std::collections::BTreeMap;

use folio_protocol::{Event, EventBody};
use serde_json::{Value, json};

/// What one event changed in the transcript.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Change {
    /// Nothing a client sees.
    None,
    /// A user message was added (its position in [`Transcript::messages`]).
    Human(usize),
    /// The current AI message got a text delta.
    Delta {
        /// Its position.
        at: usize,
        /// The delta.
        delta: String,
    },
    /// The current AI message got its final text or its tool calls.
    Ai(usize),
    /// A tool message was added.
    Tool(usize),
    /// A tool call now waits for a decision.
    Interrupt(Value),
}

/// The messages and pending interrupts of a session so far.
#[derive(Debug, Default)]
pub(crate) struct Transcript {
    /// LangChain message dicts, oldest first.
    pub(crate) messages: Vec<Value>,
    /// The id the current step's AI message gets.
    step_id: Option<String>,
    /// Where the current step's AI message is, once it has one.
    step_message: Option<usize>,
    /// Pending approvals by call id: `(turn id, interrupt)`.
    pub(crate) pending: BTreeMap<String, (Option<String>, Value)>,
}

impl Change {
    /// Whether `event`, which made this change, ends a checkpoint: a state the `values` stream
    /// shows and the thread's history lists (a user message, a model step's end, a tool result,
    /// an interrupt).
    pub(crate) fn is_checkpoint(&self, event: &Event) -> bool {
        matches!(
            self,
            Change::Human(_) | Change::Tool(_) | Change::Interrupt(_)
        ) || matches!(event.body, EventBody::StepCompleted(_))
    }
}

impl Transcript {
    /// The transcript of a whole log.
    pub(crate) fn of(events: &[Event]) -> Transcript {
        let mut transcript = Transcript::default();
        for event in events {
            transcript.apply(event);
        }
        transcript
    }

    /// The state's `values`.
    pub(crate) fn values(&self) -> Value {
        json!({ "messages": self.messages })
    }

    /// The pending interrupts.
    pub(crate) fn interrupts(&self) -> Vec<Value> {
        self.pending.values().map(|(_, i)| i.clone()).collect()
    }

    /// Applies one event.
    pub(crate) fn apply(&mut self, event: &Event) -> Change {
        match &event.body {
            EventBody::MessageReceived(m) => {
                self.step_id = None;
                self.step_message = None;
                self.messages.push(json!({
                    "type": "human",
                    "content": m.text,
                    "id": format!("human-{}-{}", event.session_id, event.index),
                    "additional_kwargs": {},
                    "response_metadata": {},
                }));
                Change::Human(self.messages.len() - 1)
            }
            EventBody::StepStarted(_) => {
                self.step_id = Some(format!("ai-{}-{}", event.session_id, event.index));
                self.step_message = None;
                Change::None
            }
            EventBody::MessageAppended(m) => {
                let at = self.ai_message(event);
                if let Some(Value::String(content)) = self.messages[at].get_mut("content") {
                    content.push_str(&m.delta);
                }
                Change::Delta {
                    at,
                    delta: m.delta.clone(),
                }
            }
            EventBody::MessageCompleted(m) => {
                let at = self.ai_message(event);
                self.messages[at]["content"] = json!(m.text);
                Change::Ai(at)
            }
            EventBody::ActionsRequested(r) => {
                let at = self.ai_message(event);
                let calls: Vec<Value> = r
                    .calls
                    .iter()
                    .map(|c| {
                        json!({"name": c.tool, "args": c.input, "id": c.call_id, "type": "tool_call"})
                    })
                    .collect();
                self.messages[at]["tool_calls"] = Value::Array(calls);
                Change::Ai(at)
            }
            EventBody::ActionResult(r) => {
                let content = match (&r.error, &r.output) {
                    (Some(error), _) => error.clone(),
                    (None, Some(Value::String(text))) => text.clone(),
                    (None, Some(other)) => other.to_string(),
                    (None, None) => String::new(),
                };
                self.pending.remove(&r.call_id);
                self.messages.push(json!({
                    "type": "tool",
                    "content": content,
                    "tool_call_id": r.call_id,
                    "name": r.tool,
                    "id": format!("tool-{}", r.call_id),
                    "status": if r.is_error { "error" } else { "success" },
                    "additional_kwargs": {},
                    "response_metadata": {},
                }));
                Change::Tool(self.messages.len() - 1)
            }
            EventBody::ActionApprovalRequested(r) => {
                let how = match r.elicitation {
                    Some(_) => {
                        "resume with {\"decision\": \"accept\", \"content\": {...}}, \"decline\" or \"cancel\""
                    }
                    None => {
                        "resume with {\"decision\": \"approve\"} or {\"decision\": \"deny\", \"reason\": \"...\"}"
                    }
                };
                let mut value = json!({
                    "action": "approval",
                    "call_id": r.call_id,
                    "tool": r.tool,
                    "input": r.input,
                    "how": how,
                });
                if let Some(elicitation) = &r.elicitation {
                    value["elicitation"] = serde_json::to_value(elicitation).unwrap_or(Value::Null);
                }
                let interrupt = json!({
                    "value": value,
                    "id": r.call_id,
                    "resumable": true,
                    "ns": ["tools"],
                    "when": "during",
                });
                self.pending.insert(
                    r.call_id.clone(),
                    (event.turn_id.clone(), interrupt.clone()),
                );
                Change::Interrupt(interrupt)
            }
            EventBody::ActionApprovalResolved(r) => {
                self.pending.remove(&r.call_id);
                Change::None
            }
            EventBody::TurnCompleted(_) | EventBody::TurnFailed(_) => {
                let turn = event.turn_id.clone();
                self.pending.retain(|_, (t, _)| *t != turn);
                Change::None
            }
            _ => Change::None,
        }
    }

    /// The position of the current step's AI message, added when the step has none yet.
    fn ai_message(&mut self, event: &Event) -> usize {
        if let Some(at) = self.step_message {
            return at;
        }
        let id = self
            .step_id
            .clone()
            .unwrap_or_else(|| format!("ai-{}-{}", event.session_id, event.index));
        self.messages.push(json!({
            "type": "ai",
            "content": "",
            "id": id,
            "tool_calls": [],
            "invalid_tool_calls": [],
            "additional_kwargs": {},
            "response_metadata": {},
        }));
        let at = self.messages.len() - 1;
        self.step_message = Some(at);
        at
    }
}
