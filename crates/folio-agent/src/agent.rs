//! A loaded agent: its definition, its authored root (if any), and the harness its turns run
//! with; binds the per-turn FileSystem.

use std::path::Path;
use std::sync::Arc;

use folio_fs::{FileSystem, indexed, local_fs};
use folio_model::Provider;

use crate::allowlist::NativeTool;
use crate::config::Execution;
use crate::discovery::AgentDefinition;
use crate::root::{bind_turn_root, build_root, with_skills_mount};
use crate::skills::{HOST_SKILLS_DIR, ROOT_SKILLS_MOUNT, SkillContent, catalog, skills_mount};
use crate::tools::{FileTool, ScratchMode, ShellTool, TodosTool, ToolRegistry, WebFetchTool};
use crate::turn::Harness;
use crate::workspace::{agent_tool_catalog, prepare_host_workspace};

/// An agent ready to run turns.
#[derive(Clone)]
pub struct Agent {
    /// What discovery found.
    pub definition: Arc<AgentDefinition>,
    /// The authored root, shared by every session (a static root: writes are shared).
    pub root: Option<Arc<dyn FileSystem>>,
    /// The model, tools and system prompt of every turn.
    pub harness: Harness,
    /// The loaded skills (materialized into host workspaces, mounted at `/skills` under a root).
    pub skills: Arc<Vec<SkillContent>>,
}

impl Agent {
    /// Builds the agent's root and tool registry and binds it to `provider` serving `model`.
    pub async fn load(
        definition: AgentDefinition,
        provider: Arc<dyn Provider>,
        model: String,
    ) -> Result<Agent, String> {
        let skills = crate::skills::load_all(&definition.skills).await?;
        let root = match &definition.config.root {
            Some(mounts) => {
                let root = build_root(mounts, &definition.agent_dir).await?;
                Some(if skills.is_empty() {
                    root
                } else {
                    with_skills_mount(root, skills_mount(&skills)?)
                })
            }
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
        for tool in &definition.tools {
            if tool.execution() == Execution::Server {
                tools.register(tool.clone())?;
            }
        }
        let harness = Harness {
            provider,
            model,
            system: system_prompt(&definition, &skills),
            params: definition.config.model_params.clone(),
            tools,
            max_steps: definition.max_steps(),
        };
        Ok(Agent {
            definition: Arc::new(definition),
            root,
            harness,
            skills: Arc::new(skills),
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
        prepare_host_workspace(&self.definition, &self.skills, workspace).await?;
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

/// The system prompt: the instructions, the skills catalog (where `Read` finds each skill), and
/// on the host default the agent-tool catalog.
fn system_prompt(definition: &AgentDefinition, skills: &[SkillContent]) -> String {
    let mut parts = vec![definition.instructions.trim_end().to_string()];
    let base = if definition.is_rooted() {
        ROOT_SKILLS_MOUNT
    } else {
        HOST_SKILLS_DIR
    };
    parts.extend(catalog(skills, base));
    if !definition.is_rooted() {
        parts.extend(agent_tool_catalog(definition));
    }
    parts.join("\n\n")
}
