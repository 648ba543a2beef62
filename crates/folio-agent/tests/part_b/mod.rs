//! Helpers shared by the MCP, subagent, hook and artifact tests: a project on disk, an agent
//! on the mock model server, an in-memory event sink, and the pinned MCP test servers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::Utc;
use folio_agent::LoadOptions;
use folio_agent::mcp::EnvLookup;
use folio_agent::tools::{ScratchMode, TodoList};
use folio_agent::{Agent, EventSink, SinkError, StateLayout, Turn, TurnOutcome, discover};
use folio_model::{ProviderConfig, open_provider};
use folio_protocol::{Event, EventBody, MessageReceived};
use tokio_util::sync::CancellationToken;

/// The repository root (where `target/test-deps` lives).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A binary of the pinned npm test peers; panics with the fix when it is missing.
pub fn npm_bin(name: &str) -> PathBuf {
    let path = repo_root()
        .join("target/test-deps/npm/node_modules/.bin")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-deps (it installs the pinned MCP test servers into target/test-deps/npm)",
        path.display()
    );
    path
}

/// Writes `files` (relative path → contents) under `dir`.
pub fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (path, contents) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
}

/// A project with instructions plus `files`.
pub fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_files(
        dir.path(),
        &[("agent/instructions.md", "You are a test agent.\n")],
    );
    write_files(dir.path(), files);
    dir
}

/// A fixed environment for `${NAME}` templates.
pub fn env_of(pairs: &[(&str, &str)]) -> EnvLookup {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Arc::new(move |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    })
}

/// Discovers `dir` (no errors allowed) and loads it on the mock server's OpenAI endpoint.
pub async fn load_agent(dir: &Path, base_url: &str, env: EnvLookup) -> Agent {
    let discovery = discover(dir);
    assert!(
        !discovery.has_errors(),
        "discovery errors: {:#?}",
        discovery.diagnostics
    );
    let definition = discovery.definition.unwrap();
    let config = ProviderConfig {
        base_url: Some(base_url.to_string()),
        ..ProviderConfig::default()
    };
    let key = |name: &str| (name == "OPENAI_API_KEY").then(|| "test-key".to_string());
    let (provider, model) = open_provider("openai:gpt-test", &config, &key).unwrap();
    let base = base_url.to_string();
    let options = LoadOptions {
        env: Some(env),
        state_root: Some(StateLayout::new(dir.join("state"))),
        open_model: Some(Arc::new(move |spec: &str| {
            let config = ProviderConfig {
                base_url: Some(base.clone()),
                ..ProviderConfig::default()
            };
            open_provider(spec, &config, &key)
        })),
        ..LoadOptions::default()
    };
    Agent::load_with(definition, provider, model, options)
        .await
        .unwrap()
}

/// Sees each event after it is recorded.
pub type Observer = Box<dyn Fn(&Event) + Send + Sync>;

/// An in-memory session log.
#[derive(Default)]
pub struct MemorySink {
    pub events: Mutex<Vec<Event>>,
    /// Called with every event after it is recorded.
    pub observer: Option<Observer>,
}

#[async_trait::async_trait]
impl EventSink for MemorySink {
    async fn emit(&self, turn_id: Option<&str>, body: EventBody) -> Result<Event, SinkError> {
        let event = {
            let mut events = self.events.lock().unwrap();
            let event = Event {
                index: events.len() as u64,
                session_id: "ses_test".into(),
                turn_id: turn_id.map(str::to_string),
                at: Utc::now(),
                body,
            };
            events.push(event.clone());
            event
        };
        if let Some(observer) = &self.observer {
            observer(&event);
        }
        Ok(event)
    }

    async fn checkpoint(&self) -> Result<(), SinkError> {
        Ok(())
    }
}

impl MemorySink {
    /// Every event so far.
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    /// The `type` of every event so far.
    pub fn types(&self) -> Vec<String> {
        self.events()
            .iter()
            .map(|e| e.body.event_type().to_string())
            .collect()
    }
}

/// Records `message.received` and runs one turn of `agent` in `workspace`.
pub async fn run_turn(
    agent: &Agent,
    sink: &MemorySink,
    workspace: &Path,
    message: &str,
) -> TurnOutcome {
    run_turn_until(agent, sink, workspace, message, CancellationToken::new()).await
}

/// [`run_turn`] with the turn's cancellation token (stop or preempt fires it).
pub async fn run_turn_until(
    agent: &Agent,
    sink: &MemorySink,
    workspace: &Path,
    message: &str,
    cancel: CancellationToken,
) -> TurnOutcome {
    let turn_id = format!("turn_{}", ulid::Ulid::generate());
    sink.emit(
        Some(&turn_id),
        EventBody::MessageReceived(MessageReceived {
            text: message.to_string(),
            admission: None,
            coalesced: None,
            client_message_id: None,
            request_digest: None,
        }),
    )
    .await
    .unwrap();
    std::fs::create_dir_all(workspace).unwrap();
    let session = folio_agent::TurnSession {
        session_id: "ses_test",
        continuation_key: None,
        principal: "local",
        variant: None,
    };
    let bound = agent.bind_turn_fs(workspace, &session).await.unwrap();
    assert_eq!(bound.scratch, ScratchMode::Host);
    let turn = Turn {
        session_id: "ses_test".into(),
        turn_id,
        events: sink.events(),
        fs: bound.fs,
        workspace: workspace.to_path_buf(),
        scratch: bound.scratch,
        prepare: bound.prepare,
        cancel,
        todos: TodoList::default(),
        context: Default::default(),
        trace: Default::default(),
        host: None,
    };
    agent.harness.run_turn(turn, sink).await
}

/// `(tool, isError, output-or-error)` of every `action.result`, in order.
pub fn results(events: &[Event]) -> Vec<(String, bool, serde_json::Value)> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::ActionResult(r) => Some((
                r.tool.clone(),
                r.is_error,
                match (&r.output, &r.error) {
                    (_, Some(error)) => serde_json::Value::String(error.clone()),
                    (Some(output), None) => output.clone(),
                    (None, None) => serde_json::Value::Null,
                },
            )),
            _ => None,
        })
        .collect()
}
