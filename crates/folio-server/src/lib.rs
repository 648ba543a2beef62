//! Sessions, admission, the event log and the HTTP API.
//!
//! Every effect of a turn is an [`Event`](folio_protocol::Event) appended to the session's
//! [`EventLog`] first; streams, trajectories and replays all read the same log. Sessions live
//! under a [`StateRoot`]: `sessions/<id>/session.json`, `sessions/<id>/workspace/` and
//! `traces/<id>.ndjson`.
//!
//! Every surface funnels into one [`SessionManager`]: one tokio actor per live session owns
//! its running turn, its coalesce queue and its execution lock (admission is sequential code
//! there, so a session never runs two turns at once); idle sessions have no task. A live session
//! reads its log once when it opens and keeps the events in memory; appends go to disk, to that
//! copy, and out to live streams through a broadcast. A stream subscribes first, replays from its
//! start index, then follows, skipping indexes already sent. [`http::router`] maps the routes of
//! docs/http-api.md onto the manager, behind [`Auth`]; every body it reads or writes is a
//! [`folio_protocol`] type.
//!
//! [`SessionManager::open_on_store`] runs the same sessions on a [`folio_store::SessionStore`]
//! that several servers share (`folio serve --store postgres://…`): a session's actor runs only
//! on the server holding its lease, live sessions on every server follow the store, commands for
//! another server's turn reach it as signals, and a dead server's turns are taken over when its
//! leases expire (module `cluster`; the log side is module `journal`).
//!
//! ```no_run
//! use std::net::SocketAddr;
//! use std::sync::Arc;
//!
//! use folio_server::http::{HttpConfig, Mount, router};
//! use folio_server::{LogBuffer, SessionManager, StateRoot};
//!
//! # async fn serve(agent: folio_agent::Agent) -> Result<(), Box<dyn std::error::Error>> {
//! // Opening recovers from a crash: turns that were running are recorded as failed.
//! let manager = SessionManager::open(StateRoot::new(".folio/state/demo"), Arc::new(agent), LogBuffer::new())?;
//! let app = router(
//!     vec![Mount { slug: "demo".into(), manager: manager.clone(), diagnostics: Vec::new() }],
//!     HttpConfig::default(), // local-dev-strict, /<slug>/v1/…, 1 MiB bodies
//! );
//! // TCP_NODELAY on every connection: no 40 ms stall before each streamed event.
//! let listener = folio_server::no_delay(tokio::net::TcpListener::bind("127.0.0.1:3000").await?);
//! axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
//!     .with_graceful_shutdown(async move {
//!         let _ = tokio::signal::ctrl_c().await;
//!         manager.shutdown().await // running turns are recorded as interrupted
//!     })
//!     .await?;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod actor;
mod auth;
mod cluster;
mod command;
mod direct;
mod disk_deliveries;
mod disk_store;
mod error;
mod eval_case;
mod evals;
mod event_log;
mod fault;
mod fork;
mod guard;
pub mod http;
mod http_trace;
mod journal;
mod listener;
mod live;
mod logs;
mod manager;
mod mcp;
mod peer;
mod playground;
mod principal;
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

pub use auth::{Auth, AuthConfigError, AuthError};
pub use cluster::DEFAULT_LEASE_TTL;
pub use disk_deliveries::DiskDeliveries;
pub use disk_store::DiskStore;
pub use error::{ManagerError, OpenError};
pub use evals::{EvalRunError, list_eval_runs, read_eval_run, write_eval_run};
pub use event_log::{EventLog, LogError, read_events};
pub use fault::{FaultPoint, UnknownFaultPoint};
pub use guard::{Browsers, BrowsersError};
pub use listener::{NoDelayListener, no_delay};
pub use logs::LogBuffer;
pub use manager::{Accepted, ChannelMessage, SessionManager};
pub use state::{
    SessionMeta, SessionOptions, StateRoot, load_meta, new_session_id, new_turn_id,
    valid_session_id,
};
pub use store_backends::{StoreArtifacts, StoreCredentials, shared_backends};
pub use stream::EventStream;
pub use workspace_root::WorkspaceRoot;
