//! A run's events as Server-Sent Events, per stream mode (the table in docs/agent-protocol.md).
//! Every frame's `id:` is `<log index>-<n>` (the n-th frame the event gave, from 1; `metadata`
//! is `<run start>-0`), so a client that reconnects with `Last-Event-ID` gets the frames after it.

use bytes::Bytes;
use folio_protocol::{Event, EventBody};
use serde_json::{Value, json};

use crate::runs::{Run, Status, Step};
use crate::transcript::{Change, Transcript};

/// The stream modes served.
pub(crate) const MODES: &[&str] = &[
    "values",
    "messages",
    "messages-tuple",
    "updates",
    "events",
    "custom",
    "debug",
];

/// A frame id: `(log index, n)`.
pub(crate) type FrameId = (u64, u32);

/// Reads a `Last-Event-ID`.
pub(crate) fn parse_id(id: &str) -> Option<FrameId> {
    let (index, n) = id.trim().split_once('-')?;
    Some((index.parse().ok()?, n.parse().ok()?))
}

/// Turns a run's events into frames.
pub(crate) struct Frames {
    modes: Vec<String>,
    run: Run,
    turn: Option<String>,
    transcript: Transcript,
    /// Frames up to this id were sent before (`Last-Event-ID`).
    after: Option<FrameId>,
    /// The run ended and `end` was written.
    pub(crate) done: bool,
    started: bool,
    /// Messages whose `messages/metadata` frame was sent (the `messages` mode).
    described: std::collections::BTreeSet<String>,
}

impl Frames {
    /// Frames of `run` in `modes`, skipping those up to `after`.
    pub(crate) fn new(run: Run, modes: Vec<String>, after: Option<FrameId>) -> Frames {
        Frames {
            modes,
            turn: run.turn.clone(),
            run,
            transcript: Transcript::default(),
            after,
            done: false,
            started: false,
            described: std::collections::BTreeSet::new(),
        }
    }

    fn wants(&self, mode: &str) -> bool {
        self.modes.iter().any(|m| m == mode)
    }

    fn frame(&self, out: &mut Vec<Bytes>, id: FrameId, event: &str, data: &Value) {
        if self.after.is_some_and(|after| id <= after) {
            return;
        }
        out.push(Bytes::from(format!(
            "event: {event}\nid: {}-{}\ndata: {data}\n\n",
            id.0, id.1
        )));
    }

    /// `messages/metadata` the first time the `messages` mode shows `message`.
    fn describe(&mut self, out: &mut Vec<Bytes>, id: FrameId, message: &Value, node: &str) {
        let Some(key) = message["id"].as_str() else {
            return;
        };
        if self.described.insert(key.to_string()) {
            let data = json!({ key: {"metadata": self.message_metadata(node)} });
            self.frame(out, id, "messages/metadata", &data);
        }
    }

    /// The per-message metadata of the `messages` modes.
    fn message_metadata(&self, node: &str) -> Value {
        json!({
            "run_id": self.run.run_id,
            "thread_id": self.run.thread_id,
            "assistant_id": self.run.assistant_id,
            "graph_id": self.run.assistant_id,
            "langgraph_node": node,
        })
    }

    /// The frames of one event of the session's log (every event, from index 0: the
    /// transcript needs the whole log).
    pub(crate) fn push(&mut self, event: &Event) -> Vec<Bytes> {
        let mut out = Vec::new();
        if self.done {
            return out;
        }
        let step = self.run.step(&mut self.turn, event);
        let change = self.transcript.apply(event);
        if step == Step::Outside {
            return out;
        }
        if !self.started {
            self.started = true;
            let data = json!({"run_id": self.run.run_id, "attempt": 1});
            self.frame(&mut out, (self.run.start, 0), "metadata", &data);
        }
        let mut n = 0u32;
        let mut next = || {
            n += 1;
            (event.index, n)
        };
        if self.wants("events") {
            let data = self.lifecycle(event, &change);
            self.frame(&mut out, next(), "events", &data);
        }
        if self.wants("debug") {
            let data = json!({"type": "folio_event", "step": event.index, "timestamp": event.at, "payload": event});
            self.frame(&mut out, next(), "debug", &data);
        }
        match &change {
            Change::Delta { at, delta } => {
                let message = &self.transcript.messages[*at];
                if self.wants("messages-tuple") {
                    let chunk = json!({
                        "type": "AIMessageChunk",
                        "content": delta,
                        "id": message["id"],
                        "tool_calls": [],
                        "tool_call_chunks": [],
                    });
                    let data = json!([chunk, self.message_metadata("agent")]);
                    self.frame(&mut out, next(), "messages", &data);
                }
                if self.wants("messages") {
                    let message = message.clone();
                    self.describe(&mut out, next(), &message, "agent");
                    self.frame(&mut out, next(), "messages/partial", &json!([message]));
                }
            }
            Change::Ai(at) => {
                let message = self.transcript.messages[*at].clone();
                if self.wants("messages-tuple")
                    && matches!(event.body, EventBody::ActionsRequested(_))
                {
                    // The text streamed as deltas; the tool calls arrive whole.
                    let chunks: Vec<Value> = message["tool_calls"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .enumerate()
                        .map(|(i, c)| {
                            json!({"name": c["name"], "args": c["args"].to_string(), "id": c["id"], "index": i, "type": "tool_call_chunk"})
                        })
                        .collect();
                    let chunk = json!({
                        "type": "AIMessageChunk",
                        "content": "",
                        "id": message["id"],
                        "tool_calls": message["tool_calls"],
                        "tool_call_chunks": chunks,
                    });
                    let data = json!([chunk, self.message_metadata("agent")]);
                    self.frame(&mut out, next(), "messages", &data);
                }
                if self.wants("messages") {
                    self.describe(&mut out, next(), &message, "agent");
                    self.frame(&mut out, next(), "messages/complete", &json!([message]));
                }
            }
            Change::Tool(at) => {
                let message = self.transcript.messages[*at].clone();
                if self.wants("messages-tuple") {
                    let data = json!([message, self.message_metadata("tools")]);
                    self.frame(&mut out, next(), "messages", &data);
                }
                if self.wants("messages") {
                    self.describe(&mut out, next(), &message, "tools");
                    self.frame(&mut out, next(), "messages/complete", &json!([message]));
                }
                if self.wants("updates") {
                    let data = json!({"tools": {"messages": [message]}});
                    self.frame(&mut out, next(), "updates", &data);
                }
            }
            Change::Interrupt(interrupt) => {
                if self.wants("updates") {
                    let data = json!({"__interrupt__": [interrupt]});
                    self.frame(&mut out, next(), "updates", &data);
                }
            }
            Change::Human(_) | Change::None => {}
        }
        if let (EventBody::StepCompleted(_), true, Some(message)) =
            (&event.body, self.wants("updates"), self.step_message())
        {
            let data = json!({"agent": {"messages": [message]}});
            self.frame(&mut out, next(), "updates", &data);
        }
        let snapshot = change.is_checkpoint(event);
        if let Step::End(status, error) = &step {
            if self.wants("values") {
                self.frame(&mut out, next(), "values", &self.transcript.values());
            }
            if *status == Status::Error {
                let data =
                    json!({"error": "TurnFailed", "message": error.clone().unwrap_or_default()});
                self.frame(&mut out, next(), "error", &data);
            }
            self.frame(&mut out, next(), "end", &Value::Null);
            self.done = true;
        } else if snapshot && self.wants("values") {
            self.frame(&mut out, next(), "values", &self.transcript.values());
        }
        out
    }

    /// The AI message of the step that just ended, if it made one.
    fn step_message(&self) -> Option<Value> {
        self.transcript
            .messages
            .last()
            .filter(|m| m["type"] == "ai")
            .cloned()
    }

    /// The `events` mode's record of one Folio event.
    fn lifecycle(&self, event: &Event, change: &Change) -> Value {
        let graph = &self.run.assistant_id;
        let (name, of, data) = match (&event.body, change) {
            (EventBody::MessageReceived(_), Change::Human(at)) => (
                "on_chain_start",
                graph.clone(),
                json!({"input": {"messages": [self.transcript.messages[*at]]}}),
            ),
            (EventBody::StepStarted(_), _) => (
                "on_chat_model_start",
                "model".to_string(),
                json!({"input": {"messages": self.transcript.messages}}),
            ),
            (EventBody::MessageAppended(m), Change::Delta { at, .. }) => (
                "on_chat_model_stream",
                "model".to_string(),
                json!({"chunk": {"type": "AIMessageChunk", "content": m.delta, "id": self.transcript.messages[*at]["id"]}}),
            ),
            (EventBody::StepCompleted(_), _) => (
                "on_chat_model_end",
                "model".to_string(),
                json!({"output": self.step_message()}),
            ),
            (EventBody::ActionsRequested(r), _) => (
                "on_tool_start",
                "tools".to_string(),
                json!({"input": r.calls.iter().map(|c| json!({"name": c.tool, "args": c.input, "id": c.call_id})).collect::<Vec<_>>()}),
            ),
            (EventBody::ActionResult(r), Change::Tool(at)) => (
                "on_tool_end",
                r.tool.clone(),
                json!({"output": self.transcript.messages[*at]}),
            ),
            (EventBody::TurnCompleted(_), _) => (
                "on_chain_end",
                graph.clone(),
                json!({"output": self.transcript.values()}),
            ),
            _ => (
                "on_custom_event",
                event.event_type().to_string(),
                serde_json::to_value(event).unwrap_or(Value::Null),
            ),
        };
        json!({
            "event": name,
            "name": of,
            "run_id": self.run.run_id,
            "data": data,
            "metadata": {"folio_type": event.event_type(), "folio_index": event.index},
            "tags": [],
        })
    }
}
