//! Wire types shared by the Folio server, CLI, evals and clients.
//!
//! Fields are camelCase on the wire; tagged unions carry an explicit `type` tag. The crate knows
//! nothing about HTTP, models or sessions: it only says what the bytes look like.
//!
//! - [`Event`] is one line of a session's NDJSON event log: the envelope
//!   `{"type", "index", "sessionId", "turnId"?, "at", "data"}` with a typed [`EventBody`].
//! - [`Usage`] counts tokens and adds up with `+` / `+=`.
//! - [`RunResult`] is the `run --json` / `trajectory --json` result, built from events by
//!   [`RunResult::from_events`] (the single function both commands use).
//!
//! ```
//! use folio_protocol::{Event, EventBody, MessageCompleted};
//!
//! let line = r#"{"type":"message.completed","index":7,"sessionId":"ses_1","turnId":"turn_1","at":"2026-11-30T04:15:47.123Z","data":{"text":"done"}}"#;
//! let event: Event = serde_json::from_str(line).unwrap();
//! assert_eq!(event.body, EventBody::MessageCompleted(MessageCompleted { text: "done".into() }));
//! assert_eq!(serde_json::to_string(&event).unwrap(), line);
//! ```

#![warn(missing_docs)]

mod event;
mod result;
mod usage;

pub use event::{
    AbAssigned, ActionApprovalRequested, ActionApprovalResolved, ActionResult, ActionsRequested,
    Admission, AgentBound, ApprovalDecision, ArtifactTagged, Event, EventBody, FinishReason,
    MessageAppended, MessageCompleted, MessageReceived, ReasoningAppended, ReasoningCompleted,
    RequestedCall, SessionCompleted, SessionFailed, SessionMode, SessionStarted, SessionWaiting,
    StepCompleted, StepStarted, SubagentCalled, SubagentCompleted, TurnCompleted, TurnFailed,
    TurnQueued, TurnStarted, format_at,
};
pub use result::{RunResult, ToolCallRecord, TurnSummary};
pub use usage::Usage;
