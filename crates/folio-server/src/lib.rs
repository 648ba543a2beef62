//! Sessions, admission, the event log and the HTTP API.
//!
//! Every effect of a turn is an [`Event`](folio_protocol::Event) appended to the session's
//! [`EventLog`] first; streams, trajectories and replays all read the same log. Sessions live
//! under a [`StateRoot`]: `sessions/<id>/session.json`, `sessions/<id>/workspace/` and
//! `traces/<id>.ndjson`.

mod event_log;
mod session;
mod state;

pub use event_log::{EventLog, LogError, read_events};
pub use session::{Session, SessionError};
pub use state::{SessionMeta, SessionStatus, StateRoot, new_session_id, new_turn_id};
