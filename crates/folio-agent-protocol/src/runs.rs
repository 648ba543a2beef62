//! Runs: which events of a session's log belong to a run, and how it stands.

use chrono::{DateTime, Utc};
use folio_protocol::{Event, EventBody};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The message a run's turn reports when it was stopped or preempted.
const INTERRUPTED: &str = "turn interrupted";

/// A run: a turn of the thread's session (input), or the rest of a turn parked on an approval
/// (resume). Stored as is ([`crate::threads`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Run {
    pub(crate) run_id: String,
    pub(crate) thread_id: String,
    pub(crate) assistant_id: String,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) metadata: Value,
    pub(crate) multitask_strategy: String,
    /// The stream modes it was created with (`join_stream` replays these by default).
    pub(crate) stream_modes: Vec<String>,
    /// The first log index that may belong to it.
    pub(crate) start: u64,
    /// The turn it follows: known up front for a resume, else the turn of the first
    /// `message.received` at or after `start`.
    pub(crate) turn: Option<String>,
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// Its message waits behind another turn.
    Pending,
    /// Its turn runs.
    Running,
    /// Its turn completed.
    Success,
    /// Its turn failed.
    Error,
    /// Its turn waits for an approval, or was stopped or preempted.
    Interrupted,
}

impl Status {
    /// The Agent Protocol's name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Running => "running",
            Status::Success => "success",
            Status::Error => "error",
            Status::Interrupted => "interrupted",
        }
    }

    /// Whether the run is over.
    pub(crate) fn ended(self) -> bool {
        !matches!(self, Status::Pending | Status::Running)
    }
}

/// What one event means to a run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// Before the run, or another turn's.
    Outside,
    /// Part of the run.
    Inside,
    /// The run's last event, with how it ended (and the error message of a failed turn).
    End(Status, Option<String>),
}

impl Run {
    /// Follows the log: `turn` is the run's turn once seen.
    pub(crate) fn step(&self, turn: &mut Option<String>, event: &Event) -> Step {
        if event.index < self.start {
            return Step::Outside;
        }
        if turn.is_none() {
            match &event.body {
                EventBody::MessageReceived(_) if event.turn_id.is_some() => {
                    turn.clone_from(&event.turn_id);
                    return Step::Inside;
                }
                _ => return Step::Outside,
            }
        }
        if event.turn_id != *turn {
            return Step::Outside;
        }
        match &event.body {
            EventBody::TurnCompleted(_) => Step::End(Status::Success, None),
            EventBody::TurnFailed(f) if f.message == INTERRUPTED => {
                Step::End(Status::Interrupted, None)
            }
            EventBody::TurnFailed(f) => Step::End(Status::Error, Some(f.message.clone())),
            EventBody::ActionApprovalRequested(_) => Step::End(Status::Interrupted, None),
            _ => Step::Inside,
        }
    }

    /// How the run stands after `events` (a whole log).
    pub(crate) fn status(&self, events: &[Event]) -> Status {
        let mut turn = self.turn.clone();
        for event in events {
            if let Step::End(status, _) = self.step(&mut turn, event) {
                return status;
            }
        }
        if turn.is_some() {
            Status::Running
        } else {
            Status::Pending
        }
    }

    /// The run as the Agent Protocol shows it.
    pub(crate) fn to_json(&self, status: Status) -> Value {
        json!({
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "assistant_id": self.assistant_id,
            "created_at": self.created_at,
            "updated_at": self.created_at,
            "status": status.as_str(),
            "metadata": self.metadata,
            "multitask_strategy": self.multitask_strategy,
            "kwargs": {},
        })
    }
}

#[cfg(test)]
mod tests {
    use folio_protocol::{Event, EventBody, MessageReceived, TurnFailed};

    use super::*;

    fn event(index: u64, turn: &str, body: EventBody) -> Event {
        Event {
            index,
            session_id: "ses_x".into(),
            turn_id: Some(turn.into()),
            at: Utc::now(),
            body,
        }
    }

    fn received(index: u64, turn: &str) -> Event {
        let body = serde_json::from_value::<MessageReceived>(json!({"text": "hi"})).unwrap();
        event(index, turn, EventBody::MessageReceived(body))
    }

    fn failed(index: u64, turn: &str, message: &str) -> Event {
        let body = TurnFailed {
            message: message.into(),
        };
        event(index, turn, EventBody::TurnFailed(body))
    }

    fn run(start: u64) -> Run {
        Run {
            run_id: "r".into(),
            thread_id: "t".into(),
            assistant_id: "a".into(),
            created_at: Utc::now(),
            metadata: json!({}),
            multitask_strategy: "interrupt".into(),
            stream_modes: vec!["values".into()],
            start,
            turn: None,
        }
    }

    #[test]
    fn a_run_follows_its_own_turn_not_the_one_it_preempted() {
        // Run 1 started turn a at 0; run 2 began at 1 and preempted it.
        let log = vec![
            received(0, "a"),
            failed(1, "a", INTERRUPTED),
            received(2, "b"),
        ];
        assert_eq!(run(0).status(&log), Status::Interrupted);
        assert_eq!(run(1).status(&log), Status::Running);
        assert_eq!(run(3).status(&log), Status::Pending);
        let mut log = log;
        log.push(failed(3, "b", "the model failed"));
        assert_eq!(run(1).status(&log), Status::Error);
        let mut turn = None;
        let steps: Vec<Step> = log.iter().map(|e| run(1).step(&mut turn, e)).collect();
        assert_eq!(
            steps,
            vec![
                Step::Outside,
                Step::Outside,
                Step::Inside,
                Step::End(Status::Error, Some("the model failed".into())),
            ]
        );
    }
}
