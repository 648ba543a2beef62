//! A loaded agent: its definition, its authored root (if any), and the harness its turns run
//! with; binds the per-turn FileSystem.

use std::path::Path;
use std::sync::Arc;

use folio_fs::{FileSystem, indexed, local_fs};
use folio_model::Provider;

use crate::allowlist::NativeTool;
use crate::discovery::AgentDefinition;
use crate::root::{bind_turn_root, build_root};
use crate::tools::{FileTool, ScratchMode, ShellTool, TodosTool, ToolRegistry, WebFetchTool};
use crate::turn::Harness;

/// An agent ready to run turns.
#[derive(Clone)]
pub struct Agent {
    /// What discovery found.
    pub definition: Arc<AgentDefinition>,
    /// The authored root, shared by every session (a static root: writes are shared).
    pub root: Option<Arc<dyn FileSystem>>,
    /// The model, tools and system prompt of every turn.
    pub harness: Harness,
}

impl Agent {
    /// Builds the agent's root and tool registry and binds it to `provider` serving `model`.
    pub async fn load(
        definition: AgentDefinition,
        provider: Arc<dyn Provider>,
        model: String,
    ) -> Result<Agent, String> {
        let root = match &definition.config.root {
            Some(mounts) => Some(build_root(mounts, &definition.agent_dir).await?),
            None => None,
        };
        let mut tools = ToolRegistry::new();
        for native in &definition.native_tools {
            let tool: Arc<dyn crate::tools::Tool> = match native {
                NativeTool::File(file) => Arc::new(*file),
                NativeTool::Shell => Arc::new(ShellTool),
                NativeTool::WebFetch => Arc::new(WebFetchTool::new()?),
                NativeTool::UpdateTodos => Arc::new(TodosTool::Update),
                NativeTool::ReadTodos => Arc::new(TodosTool::Read),
                // Subagents arrive with the full agent folder; until then `task` grants nothing.
                NativeTool::Task => continue,
            };
            tools.register(tool)?;
        }
        let harness = Harness {
            provider,
            model,
            system: definition.instructions.trim_end().to_string(),
            params: definition.config.model_params.clone(),
            tools,
            max_steps: definition.max_steps(),
        };
        Ok(Agent {
            definition: Arc::new(definition),
            root,
            harness,
        })
    }

    /// The FileSystem one turn binds: the authored root plus a fresh `/tmp`, or the host
    /// workspace (indexed when the allowlist grants `SemanticSearch`).
    pub async fn bind_turn_fs(
        &self,
        workspace: &Path,
    ) -> Result<(Arc<dyn FileSystem>, ScratchMode), String> {
        if let Some(root) = &self.root {
            return Ok((bind_turn_root(root.clone()), ScratchMode::Rooted));
        }
        let host = local_fs(workspace);
        let wants_index = self
            .definition
            .native_tools
            .contains(&NativeTool::File(FileTool::SemanticSearch));
        if wants_index {
            let tree = indexed(host)
                .await
                .map_err(|err| format!("could not index the workspace: {err}"))?;
            return Ok((tree, ScratchMode::Host));
        }
        Ok((host, ScratchMode::Host))
    }
}
