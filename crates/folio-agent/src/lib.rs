//! Agent discovery, the tool registry and the turn loop.
//!
//! An agent is a folder. [`discover`] reads it into an [`AgentDefinition`] plus
//! [`Diagnostic`]s (every fail-closed rule is an error naming file, field and rule).
//! [`Agent::load`] builds its authored root and its [`tools::ToolRegistry`]; each turn binds a
//! FileSystem ([`Agent::bind_turn_fs`]) and [`Harness::run_turn`] streams the model, runs tool
//! calls, and records every effect as an event through an [`EventSink`]. The conversation sent
//! to the model is rebuilt from those events ([`conversation::conversation`]), so a session's
//! log is its only state.
//!
//! Authored tools ([`tools::AuthoredTool`]) are subprocesses behind the same [`tools::Tool`]
//! trait, their input checked against a JSON Schema; [`skills`] are listed in the system prompt
//! and materialized where `Read` finds them; [`workspace`] prepares a host session workspace
//! (`AGENTS.md`, skills, agent-tool scripts, sandbox seeds) and writes per-send files.

pub mod agent;
pub mod allowlist;
pub mod artifacts;
pub mod config;
pub mod conversation;
pub mod discovery;
pub mod hooks;
pub mod info;
mod layout;
mod manifest;
pub mod mcp;
pub mod root;
mod sink;
pub mod skills;
pub mod subagents;
pub mod tools;
pub mod turn;
pub mod workspace;

pub use agent::Agent;
pub use discovery::{AgentDefinition, Diagnostic, Discovery, Severity, discover};
pub use layout::StateLayout;
pub use sink::EventSink;
pub use turn::{Harness, TURN_INTERRUPTED, Turn, TurnOutcome};
