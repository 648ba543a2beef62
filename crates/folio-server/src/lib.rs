//! The HTTP surface of the session engine: the routes of docs/http-api.md over
//! [`folio_session::SessionManager`], behind [`Auth`] and the browser guard ([`Browsers`]); the
//! MCP endpoint (`/v1/mcp`) and the playground's assets. Every body it reads or writes is a
//! [`folio_protocol`] type; no business rule lives here: a handler parses, calls the manager
//! and maps the result to a status.
//!
//! ```no_run
//! use std::net::SocketAddr;
//! use std::sync::Arc;
//!
//! use folio_server::http::{HttpConfig, Mount, router};
//! use folio_session::{LogBuffer, SessionManager, StateRoot};
//!
//! # async fn serve(agent: folio_agent::Agent) -> Result<(), Box<dyn std::error::Error>> {
//! // Opening recovers from a crash: turns that were running are recorded as failed.
//! let manager = SessionManager::open(StateRoot::new(".folio/state/demo"), Arc::new(agent), LogBuffer::new()).await?;
//! let app = router(
//!     vec![Mount {
//!         slug: "demo".into(),
//!         manager: manager.clone(),
//!         diagnostics: Vec::new(),
//!         evals: manager.state().clone(), // where `GET /v1/evals` finds stored eval runs
//!     }],
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

mod guard;
pub mod host;
pub mod http;
mod http_trace;
mod listener;
mod mcp;
mod playground;
mod principal;

pub use guard::{Browsers, BrowsersError};
pub use listener::{NoDelayListener, no_delay};
#[doc(hidden)]
pub use mcp::arguments as mcp_arguments;
