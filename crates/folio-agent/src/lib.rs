//! The agent runtime: the tool registry, the MCP client, hooks, artifacts and the turn loop.
//!
//! An agent is a folder; folio-project discovers it into an [`AgentDefinition`] (re-exported
//! here with [`discover`]). [`Agent::load`] builds its authored root and its
//! [`tools::ToolRegistry`]; each turn binds a FileSystem ([`Agent::bind_turn_fs`]) and
//! [`Harness::run_turn`] streams the model, runs tool calls, and records every effect as an
//! event through an [`EventSink`]. The conversation sent to the model is rebuilt from those
//! events ([`conversation::conversation`]), so a session's log is its only state.
//!
//! Authored tools ([`tools::AuthoredTool`]) are subprocesses behind the same [`tools::Tool`]
//! trait, their input checked against a JSON Schema; [`skills`] are listed in the system prompt
//! and materialized where `Read` finds them; [`workspace`] prepares a host session workspace
//! (`AGENTS.md`, skills, agent-tool scripts, sandbox seeds) and writes per-send files.

mod agent;
mod artifacts;
pub mod conversation;
mod hooks;
pub mod mcp;
mod root;
pub mod skills;
pub mod subagents;
pub mod tools;
pub mod turn;
pub mod workspace;

pub use agent::{Agent, LoadError, LoadOptions, ModelOpener, provider_config};
pub use artifacts::{
    ArtifactError, ArtifactRecord, ArtifactStore, DEFAULT_KIND, TAG_ARTIFACT, TagArtifactTool,
    TagRequest,
};
pub use folio_project::{AgentDefinition, Diagnostic, Discovery, Severity, discover};
pub use hooks::{HookDispatcher, HookOutcome, HookRun};
pub use root::RootError;
pub use turn::{EventSink, Harness, TURN_INTERRUPTED, Turn, TurnOutcome};
