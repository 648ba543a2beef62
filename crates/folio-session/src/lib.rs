//! The session engine: sessions, admission, the live log, recovery, leases and takeover,
//! schedules and reminders. No HTTP: `folio-server` is a front over it, and so are the CLI,
//! channels and evals.
//!
//! Every effect of a turn is an [`Event`](folio_protocol::Event) appended to the session's log
//! first; streams, trajectories and replays all read the same log. Every surface funnels into
//! one [`SessionManager`]: one tokio actor per live session owns its running turn, its coalesce
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
//! let accepted = manager.create("local", "cli", request).await?;
//! let mut stream = manager.stream("local", &accepted.session_id, 0).await?;
//! while let Some(event) = stream.rx.recv().await {
//!     println!("{event:?}");
//! }
//! manager.shutdown().await; // running turns are recorded as interrupted
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod actor;
mod cluster;
mod command;
mod direct;
mod error;
mod eval_case;
mod fault;
mod fork;
mod journal;
mod live;
mod logs;
mod manager;
mod peer;
mod queries;
mod recovery;
mod retention;
pub mod schedule;
mod shared;
mod state;
mod store_backends;
mod stream;
mod token;
mod workspace_root;

pub use cluster::DEFAULT_LEASE_TTL;
pub use error::{ManagerError, OpenError};
pub use fault::{FaultPoint, UnknownFaultPoint};
pub use logs::LogBuffer;
pub use manager::{Accepted, ChannelMessage, SessionManager};
pub use state::{
    SessionMeta, SessionOptions, StateRoot, load_meta, new_session_id, new_turn_id,
    valid_session_id,
};
pub use store_backends::{StoreArtifacts, StoreCredentials, shared_backends};
pub use stream::EventStream;
pub use workspace_root::WorkspaceRoot;
