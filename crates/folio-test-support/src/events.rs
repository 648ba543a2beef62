//! Reading a session's events as typed values: an NDJSON dump as [`Event`]s, and an event's
//! `data` as its own type ([`EventData`]).

use folio_protocol::{
    AbAssigned, ActionApprovalRequested, ActionApprovalResolved, ActionAuthorizationRequested,
    ActionAuthorizationResolved, ActionHostCall, ActionResult, ActionsRequested, AgentBound,
    ArtifactTagged, ChannelDelivery, ContextCompacted, Event, EventBody, MessageAppended,
    MessageCompleted, MessageQueued, MessageReceived, ReasoningAppended, ReasoningCompleted,
    ReminderCancelled, ReminderFired, ReminderSet, SessionCompleted, SessionFailed, SessionStarted,
    SessionWaiting, StepCompleted, StepStarted, SubagentCalled, SubagentCompleted, TurnCompleted,
    TurnFailed, TurnQueued, TurnStarted,
};

use crate::answers::read_wire;

/// The typed `data` of one event type.
pub trait EventData: Sized {
    /// The data when `body` is an event of this type.
    fn of(body: &EventBody) -> Option<&Self>;
}

macro_rules! event_data {
    ($($data:ident),* $(,)?) => {
        $(
            impl EventData for $data {
                fn of(body: &EventBody) -> Option<&Self> {
                    match body {
                        EventBody::$data(data) => Some(data),
                        _ => None,
                    }
                }
            }
        )*
    };
}

event_data!(
    SessionStarted,
    AbAssigned,
    SessionWaiting,
    SessionCompleted,
    SessionFailed,
    AgentBound,
    MessageReceived,
    MessageQueued,
    TurnQueued,
    TurnStarted,
    TurnCompleted,
    TurnFailed,
    StepStarted,
    StepCompleted,
    ReasoningAppended,
    ReasoningCompleted,
    MessageAppended,
    MessageCompleted,
    ActionsRequested,
    ActionResult,
    ActionApprovalRequested,
    ActionApprovalResolved,
    ActionAuthorizationRequested,
    ActionAuthorizationResolved,
    ActionHostCall,
    SubagentCalled,
    SubagentCompleted,
    ArtifactTagged,
    ContextCompacted,
    ChannelDelivery,
    ReminderSet,
    ReminderFired,
    ReminderCancelled,
);

/// `event`'s data as `T`.
///
/// # Panics
/// When `event` is of another type.
pub fn data<T: EventData>(event: &Event) -> &T {
    T::of(&event.body).unwrap_or_else(|| {
        panic!(
            "expected a {} event, got {event:#?}",
            std::any::type_name::<T>()
        )
    })
}

/// The data of every event of type `T`, in log order.
pub fn all<T: EventData>(events: &[Event]) -> Vec<&T> {
    events
        .iter()
        .filter_map(|event| T::of(&event.body))
        .collect()
}

/// Every event of type `T`, in log order.
pub fn of_type<T: EventData>(events: &[Event]) -> Vec<&Event> {
    events
        .iter()
        .filter(|event| T::of(&event.body).is_some())
        .collect()
}

/// The first event of type `T`.
///
/// # Panics
/// When there is none.
pub fn first<T: EventData>(events: &[Event]) -> &Event {
    events
        .iter()
        .find(|event| T::of(&event.body).is_some())
        .unwrap_or_else(|| {
            let types: Vec<&str> = events.iter().map(Event::event_type).collect();
            panic!("no {} event in {types:?}", std::any::type_name::<T>())
        })
}

/// Reads NDJSON (one event per line) as [`Event`]s, each exactly ([`read_wire`]).
///
/// # Panics
/// When a line is not JSON or not an `Event`.
pub fn read_ndjson(text: &str) -> Vec<Event> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let value = serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("an NDJSON line that is not JSON: {err}\n{line}"));
            read_wire(&value)
        })
        .collect()
}

/// Asserts that the events' indexes run from `start` up by exactly one.
///
/// # Panics
/// When an index is missing or repeated.
pub fn assert_contiguous(events: &[Event], start: u64) {
    let indexes: Vec<u64> = events.iter().map(|event| event.index).collect();
    let expected: Vec<u64> = (start..).take(events.len()).collect();
    assert_eq!(indexes, expected, "{events:#?}");
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = concat!(
        r#"{"type":"turn.failed","index":3,"sessionId":"ses_1","turnId":"turn_1","at":"2026-11-30T04:15:47.123Z","data":{"message":"turn interrupted"}}"#,
        "\n\n",
        r#"{"type":"session.waiting","index":4,"sessionId":"ses_1","at":"2026-11-30T04:15:47.124Z","data":{}}"#,
        "\n",
    );

    #[test]
    fn event_data_is_read_by_its_type() {
        let events = read_ndjson(LOG);
        assert_contiguous(&events, 3);
        let failed = TurnFailed {
            message: "turn interrupted".into(),
        };
        assert_eq!(data::<TurnFailed>(&events[0]), &failed);
        assert_eq!(all::<TurnFailed>(&events), [&failed]);
        assert_eq!(of_type::<SessionWaiting>(&events), [&events[1]]);
        assert_eq!(first::<SessionWaiting>(&events).index, 4);
        assert!(all::<TurnCompleted>(&events).is_empty());
        assert!(std::panic::catch_unwind(|| data::<TurnCompleted>(&events[0])).is_err());
        assert!(std::panic::catch_unwind(|| first::<TurnCompleted>(&events)).is_err());
        assert!(std::panic::catch_unwind(|| assert_contiguous(&events, 0)).is_err());
    }
}
