//! In-process helpers: an agent on the mock model server (plus Rust test tools), a
//! `SessionManager` on a temporary state root (`folio-server`'s tests add the HTTP router).
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use folio_agent::tools::{Tool, ToolContext, ToolError, ToolOutput};
use folio_agent::{Agent, discover};
use folio_model::{ProviderConfig, open_provider};
use folio_session::{LogBuffer, SessionManager, StateRoot};
use folio_test_support::MockModelServer;
use serde::Deserialize;
use serde_json::{Value, json};

/// What [`DeployTool`] takes.
#[derive(Deserialize)]
struct DeployInput {
    target: String,
}

impl DeployInput {
    /// Reads a call's input.
    fn read(input: &Value) -> Result<DeployInput, ToolError> {
        DeployInput::deserialize(input).map_err(|_| ToolError("target: required string".into()))
    }
}

/// A tool whose model-initiated calls wait for approval.
pub struct DeployTool;

#[async_trait::async_trait]
impl Tool for DeployTool {
    fn name(&self) -> &str {
        "Deploy"
    }
    fn description(&self) -> &str {
        "Deploys to a target."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]})
    }
    fn prepare(&self, input: Value) -> Result<Value, ToolError> {
        DeployInput::read(&input).map(|_| input)
    }
    async fn call(&self, input: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let DeployInput { target } = DeployInput::read(&input)?;
        Ok(ToolOutput::Text(format!("deployed {target}")))
    }
    fn needs_approval(&self) -> bool {
        true
    }
}

/// A project folder for the mock model.
pub fn project(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::write(dir.path().join("agent/instructions.md"), "Test agent.\n").unwrap();
    std::fs::write(
        dir.path().join("agent/agent.toml"),
        format!("name = \"t\"\nmodel = \"openai:gpt-test\"\n{extra}"),
    )
    .unwrap();
    dir
}

/// The project's agent answering through `mock`, with [`DeployTool`] registered.
pub async fn agent(mock: &MockModelServer, dir: &Path) -> Arc<Agent> {
    agent_on(mock, dir, "openai:gpt-test").await
}

/// [`agent`] with the model `spec` (an OpenAI-format provider: `openai:…`,
/// `openai-responses:…`).
pub async fn agent_on(mock: &MockModelServer, dir: &Path, spec: &str) -> Arc<Agent> {
    let definition = discover(dir).definition.expect("a valid project");
    let config = ProviderConfig {
        base_url: Some(mock.openai_base_url()),
        ..ProviderConfig::default()
    };
    let (provider, model) = open_provider(spec, &config, &|_| Some("test-key".into())).unwrap();
    let mut agent = Agent::load(definition, provider, model).await.unwrap();
    agent.harness.tools.register(Arc::new(DeployTool)).unwrap();
    Arc::new(agent)
}

/// A manager on `state`.
pub async fn manager(agent: Arc<Agent>, state: &Path) -> SessionManager {
    SessionManager::open(StateRoot::new(state), agent, LogBuffer::new())
        .await
        .unwrap()
}

/// Waits until the session has ended `count` turns (`session.waiting`, or `session.failed` for
/// a task) and returns its whole log.
pub async fn wait_turns(
    manager: &SessionManager,
    id: &str,
    count: usize,
) -> Vec<folio_protocol::Event> {
    use folio_protocol::EventBody;
    let mut stream = manager.events().stream("local", id, 0).await.unwrap();
    let mut seen = 0;
    while let Some(event) = stream.rx.recv().await {
        if matches!(
            event.as_deref().map(|e| &e.body),
            Some(EventBody::SessionWaiting(_) | EventBody::SessionFailed(_))
        ) {
            seen += 1;
            if seen == count {
                break;
            }
        }
    }
    manager.events().read("local", id).await.unwrap()
}
