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
//! Subagents run through the same step loop as the turn ([`subagents`]); peer agents are asked
//! through their `ask` ([`peers`]); a root can be built per session ([`LiveRoot`]); every path
//! under a state root comes from [`StateLayout`].
//!
//! Discover an agent folder, load it on a `replay:` model, and run one turn into a log kept in
//! memory:
//!
//! ```
//! use std::sync::Mutex;
//!
//! use folio_agent::tools::TodoList;
//! use folio_agent::{Agent, EventSink, SinkError, Turn, TurnOutcome, TurnSession, discover};
//! use folio_model::{Delta, FinishReason, Message, ModelRequest, ProviderConfig, open_provider};
//! use folio_protocol::{Event, EventBody, MessageReceived};
//! use tokio_util::sync::CancellationToken;
//!
//! /// A session log in memory (`folio serve` appends to a file instead).
//! #[derive(Default)]
//! struct MemorySink(Mutex<Vec<Event>>);
//!
//! #[async_trait::async_trait]
//! impl EventSink for MemorySink {
//!     async fn emit(&self, turn_id: Option<&str>, body: EventBody) -> Result<Event, SinkError> {
//!         let mut events = self.0.lock().map_err(|_| SinkError::new("the log lock is poisoned"))?;
//!         let event = Event {
//!             index: events.len() as u64,
//!             session_id: "ses_doc".into(),
//!             turn_id: turn_id.map(str::to_string),
//!             at: chrono::Utc::now(),
//!             body,
//!         };
//!         events.push(event.clone());
//!         Ok(event)
//!     }
//!
//!     async fn checkpoint(&self) -> Result<(), SinkError> {
//!         Ok(())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The agent folder: instructions, and no tools.
//! let project = tempfile::tempdir()?;
//! std::fs::create_dir_all(project.path().join("agent"))?;
//! std::fs::write(project.path().join("agent/instructions.md"), "Greet the user by name.\n")?;
//! std::fs::write(project.path().join("agent/agent.toml"), "tools = []\n")?;
//! let discovery = discover(project.path());
//! assert!(!discovery.has_errors(), "{:?}", discovery.diagnostics);
//! let definition = discovery.definition.ok_or("discovery found no agent")?;
//!
//! // A replay fixture: each line is a request the agent will make and the deltas answering it.
//! let asked = ModelRequest {
//!     model: "recorded".into(),
//!     system: String::new(), // replay compares the messages and tools only
//!     messages: vec![Message::User { text: "Hi, I am Ada.".into() }],
//!     tools: vec![],
//!     params: Default::default(),
//! };
//! let answer = [
//!     Delta::Text("Hello, ".into()),
//!     Delta::Text("Ada!".into()),
//!     Delta::Finish(FinishReason::Stop),
//! ];
//! let fixture = project.path().join("hello.jsonl");
//! let line = serde_json::json!({"request": asked, "response": answer});
//! std::fs::write(&fixture, line.to_string())?;
//! let spec = format!("replay:{}", fixture.display());
//! let (provider, model) = open_provider(&spec, &ProviderConfig::default(), &|_| None)?;
//! let agent = Agent::load(definition, provider, model).await?;
//!
//! // One turn: record the user's message, bind the turn's FileSystem, run it.
//! let sink = MemorySink::default();
//! let turn_id = "turn_1";
//! let text = "Hi, I am Ada.".to_string();
//! let received = EventBody::MessageReceived(MessageReceived {
//!     text,
//!     admission: None,
//!     coalesced: None,
//!     client_message_id: None,
//!     request_digest: None,
//! });
//! let first = sink.emit(Some(turn_id), received).await?;
//! let workspace = project.path().join("workspace");
//! std::fs::create_dir_all(&workspace)?;
//! let session = TurnSession { session_id: "ses_doc", continuation_key: None, principal: "local", variant: None };
//! let bound = agent.bind_turn_fs(&workspace, &session).await?;
//! let turn = Turn {
//!     session_id: "ses_doc".into(),
//!     turn_id: turn_id.into(),
//!     events: vec![first],
//!     fs: bound.fs,
//!     workspace,
//!     scratch: bound.scratch,
//!     prepare: bound.prepare,
//!     cancel: CancellationToken::new(),
//!     todos: TodoList::default(),
//!     context: Default::default(),
//!     trace: Default::default(),
//!     host: None,
//! };
//! let outcome = agent.harness.run_turn(turn, &sink).await;
//! let TurnOutcome::Completed { reply } = outcome else {
//!     panic!("the turn failed: {outcome:?}");
//! };
//! println!("{reply}");
//! assert_eq!(reply, "Hello, Ada!");
//!
//! // The log holds the whole turn, from the message to `turn.completed`.
//! let log = sink.0.lock().map_err(|_| "the log lock is poisoned")?;
//! let types: Vec<&str> = log.iter().map(Event::event_type).collect();
//! assert_eq!(types.first(), Some(&"message.received"));
//! assert_eq!(types.last(), Some(&"turn.completed"));
//! # Ok(())
//! # }
//! ```

mod agent;
mod artifacts;
mod compaction;
mod conversation;
mod env;
mod hooks;
mod layout;
pub mod mcp;
pub mod peers;
mod root;
mod sink;
pub mod skills;
mod subagents;
pub mod tools;
mod turn;
mod workspace;

pub use agent::{
    Agent, AgentRoot, AgentVariant, BindError, LoadError, LoadOptions, ModelOpener, SharedBackends,
    TurnFs, TurnSession, provider_config,
};
pub use artifacts::{
    ArtifactBackend, ArtifactError, ArtifactRecord, ArtifactStore, DEFAULT_KIND, DirArtifacts,
    TAG_ARTIFACT, TagArtifactTool, TagRequest,
};
pub use compaction::{ContextBudget, Summarizer, context_start};
pub use conversation::{SUMMARY_HEADING, content_of, conversation};
pub use folio_project::{AgentDefinition, Diagnostic, Discovery, Severity, discover};
pub use hooks::{HookDispatcher, HookFailure, HookOutcome, HookRun};
pub use layout::StateLayout;
pub use root::{LiveRoot, MountFailure, RootContext, RootError, RootFactory, RootHost, check_root};
pub use sink::{AuthorizationFailure, AuthorizationRedirect, EventSink, SinkError};
pub use subagents::{Subagent, TASK_TOOL, TaskTool};
pub use tools::host::{HostBroker, HostCaller, HostGrant, StorageError, StorageRequest};
pub use turn::{
    Harness, TURN_INTERRUPTED, Turn, TurnOutcome, TurnTrace, denied_message, pending_approvals,
    restart_answers, trace_direct_call,
};
pub use workspace::{
    AGENT_TOOLS_DIR, LazyWorkspace, MEMORY_DIR, PREPARED_MARKER, PrepareError, WorkspaceFileError,
    agent_tool_catalog, agents_md, check_workspace_path, prepare_host_workspace, workspace_quota,
    write_workspace_files,
};
