//! The session engine: sessions, admission, the live log, recovery, leases and takeover,
//! schedules and reminders. No HTTP: `folio-server` is a front over it, and so are the CLI,
//! channels and evals.
//!
//! Every effect of a turn is an [`Event`](folio_protocol::Event) appended to the session's log
//! first; streams, trajectories and replays all read the same log. Every surface funnels into
//! one [`SessionManager`] and the handles it hands out ([`Sessions`], [`Turns`], [`Events`],
//! [`Approvals`], …): one tokio actor per live session owns its running turn, its coalesce
//! queue and its execution lock (admission is sequential code there, so a session never runs
//! two turns at once); idle sessions have no task. A live session reads its log once when it
//! opens and keeps the events in memory; appends go to the store, to that copy, and out to live
//! streams through a broadcast. A stream subscribes first, replays from its start index, then
//! follows, skipping indexes already sent.
//!
//! Sessions live under a [`StateRoot`] (`folio-store-disk`) or, with
//! [`SessionManager::open_on_store`], in a [`folio_store::SessionStore`] that several servers
//! share (`folio serve --store postgres://…`): a session's actor runs only on the server
//! holding its lease, live sessions on every server follow the store, commands for another
//! server's turn reach it as signals, and a dead server's turns are taken over when its leases
//! expire (module `cluster`; the log side is module `journal`).
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use folio_protocol::CreateSession;
//! use folio_session::{LogBuffer, SessionManager, StateRoot};
//!
//! # async fn run(agent: folio_agent::Agent) -> Result<(), Box<dyn std::error::Error>> {
//! // Opening recovers from a crash: turns that were running are recorded as failed.
//! let manager = SessionManager::open(StateRoot::new(".folio/state/demo"), Arc::new(agent), LogBuffer::new()).await?;
//! let request: CreateSession = serde_json::from_str(r#"{"message": "hello"}"#)?;
//! let accepted = manager.sessions().create("local", "cli", request).await?;
//! let mut stream = manager.events().stream("local", &accepted.session_id, 0).await?;
//! while let Some(event) = stream.rx.recv().await {
//!     println!("{event:?}");
//! }
//! manager.shutdown().await; // running turns are recorded as interrupted
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

// Layers, each using only those above it: leaves (`sync`, `clock`, `error`, `fault`, `logs`,
// `prepare`, `state`, `stream_event`, `token`, `workspace_root`, `authorize`); the actor's vocabulary (`command`,
// `remote`, `recovery`); a session's log and its live copy (`journal`, `live`); the shared
// state (`engine`); what runs inside a session (`reminder_store`, `actor`); how requests reach
// it (`dispatch`); the handles (`sessions`, `queries`, `turns`, `events`, `approvals`,
// `direct`, `reminders`, `peer`, `eval_case`, `retention`, `channels`); servers sharing a
// store (`cluster`); the scheduler (`schedule`); and the manager that opens it all.
mod actor;
mod approvals;
mod authorize;
mod channels;
mod clock;
mod cluster;
mod command;
mod direct;
mod dispatch;
mod engine;
mod error;
mod eval_case;
mod event_records;
mod events;
mod fault;
mod host;
mod host_grants;
mod host_storage;
mod journal;
mod live;
mod logs;
mod manager;
mod peer;
mod prepare;
mod queries;
mod quotas;
mod recovery;
mod reminder_store;
mod reminders;
mod remote;
mod retention;
pub mod schedule;
mod sessions;
mod state;
mod store_backends;
mod stream_event;
mod sync;
mod token;
mod turn_slots;
mod turns;
mod variants;
mod workspace_root;

pub use approvals::Approvals;
pub use channels::Channels;
pub use cluster::DEFAULT_LEASE_TTL;
pub use direct::Tools;
pub use error::{InternalError, ManagerError, OpenError};
pub use eval_case::Evals;
pub use events::{EventStream, Events, StreamReceiver};
pub use fault::{FaultPoint, UnknownFaultPoint};
pub use host::Host;
pub use host_grants::{BURST, CALLS_PER_SECOND, Grant, MAX_LOG_BYTES};
pub use host_storage::{MAX_ENTRIES, MAX_NAMESPACE_BYTES};
pub use logs::LogBuffer;
pub use manager::SessionManager;
pub use peer::Peers;
pub use prepare::{PrepareWorkspace, WorkspacePrep};
pub use reminders::Reminders;
pub use retention::Retention;
pub use sessions::{Accepted, Sessions};
pub use state::{
    SessionMeta, SessionOptions, StateRoot, VariantChoice, load_meta, new_session_id, new_turn_id,
    session_fixture, valid_session_id,
};
pub use store_backends::{StoreArtifacts, StoreCredentials, shared_backends};
pub use stream_event::StreamEvent;
pub use turns::{ChannelMessage, Turns};
pub use workspace_root::WorkspaceRoot;
