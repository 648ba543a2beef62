//! A loaded agent: its definition, its authored root (if any), and the harness its turns run
//! with; binds the per-turn FileSystem.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use folio_fs::{FileSystem, local_fs, workspace_fs};
use folio_model::{ModelError, Provider, ProviderConfig, open_provider};
use folio_project::{
    AgentDefinition, Backends, Execution, InvalidSchema, NativeTool, ProviderApi, ProviderSection,
    ROOT_FORBIDDEN, ROOT_SKILLS_MOUNT, resolve,
};

use crate::artifacts::{ArtifactBackend, ArtifactError, ArtifactStore, TagArtifactTool};
use crate::compaction::{ContextBudget, Summarizer};
use crate::hooks::HookDispatcher;
use crate::layout::StateLayout;
use crate::mcp::{
    Connections, EnvLookup, LOCAL_PRINCIPAL, McpAuth, McpConnection, McpError, McpLogin, McpTool,
    McpTransport, process_env,
};
use crate::peers::{PeerDirectory, PeerTool};
use crate::root::{
    LiveRoot, RootContext, RootError, RootHost, bind_turn_root, build_root, with_skills_mount,
};
use crate::skills::{HOST_SKILLS_DIR, SkillContent, SkillError, catalog, skills_mount};
use crate::subagents::{Subagent, TaskTool};
use crate::tools::{
    AuthoredTool, DuplicateTool, ReadLintsTool, SandboxPolicy, ScratchMode, ShellTool, TodosTool,
    ToolRegistry, WebClientError, WebFetchTool, WebSearchTool,
};
use crate::turn::Harness;
use crate::workspace::workspace_quota;
use crate::workspace::{LazyWorkspace, PrepareError, agent_tool_catalog};

/// An agent ready to run turns.
#[derive(Clone)]
pub struct Agent {
    /// What discovery found.
    pub definition: Arc<AgentDefinition>,
    /// The authored root instead of the host disk: `[root]` (shared by every session) or a
    /// live root built per session.
    pub root: Option<AgentRoot>,
    /// The model, tools and system prompt of every turn.
    pub harness: Harness,
    /// The loaded skills (materialized into host workspaces, mounted at `/skills` under a root).
    pub skills: Arc<Vec<SkillContent>>,
    /// MCP connections: `mcp-connections/` (tools offered to the model) and `host-connections/`.
    /// A peer agent on another server is one too; a peer in the same server is asked in-process.
    pub connections: Connections,
    /// Model-facing MCP connections whose server could not start, with why (only with
    /// [`LoadOptions::keep_failed_connections`]; [`Agent::reconnect`] tries them again). Calls
    /// of their tools fail with that error.
    pub failed_connections: BTreeMap<String, McpError>,
    /// Runs `hooks/` on every event a session of this agent records.
    pub hooks: HookDispatcher,
    /// The agent's artifact records (`<state-root>/artifacts`).
    pub artifacts: ArtifactStore,
    /// The durable memory folder every local session workspace links as `memory/`
    /// (`<state-root>/memory`).
    pub memory_dir: PathBuf,
    /// Whether host-default file tools reach the whole host disk (the single-user opt-out).
    pub unconfined_files: bool,
    /// The A/B variants (`[variants.<name>]`), by name: what a session assigned one runs with.
    pub variants: BTreeMap<String, AgentVariant>,
}

/// One A/B variant as loaded: the agent's definition with the variant's instructions, tools
/// and skills, and the harness its sessions' turns run with (its model and parameters).
#[derive(Clone)]
pub struct AgentVariant {
    /// The agent's definition with the variant's overrides applied.
    pub definition: Arc<AgentDefinition>,
    /// The model, tools and system prompt of the variant's turns.
    pub harness: Harness,
    /// The skills the variant offers.
    pub skills: Arc<Vec<SkillContent>>,
}

/// The FileSystem an agent's sessions run on instead of the host disk.
#[derive(Clone)]
pub enum AgentRoot {
    /// `[root]` of `agent.toml` (with the skills mount): one tree every session shares, so
    /// writes are shared. A root with per-session state (an object-store mount, which
    /// remembers the versions a session read) is given to each session as its own
    /// [`FileSystem::session_view`] instead ([`AgentRoot::Live`]).
    Static(Arc<dyn FileSystem>),
    /// Built per session (or per turn) by the host's factory ([`LoadOptions::live_root`]).
    Live {
        /// The factory and its per-session handles.
        root: LiveRoot,
        /// The agent's skills, mounted read-only at `/skills` over every built root.
        skills: Option<Arc<dyn FileSystem>>,
    },
}

/// Opens the provider of a `provider:model` spec (a subagent's `model`); returns it with the
/// model id to send.
pub type ModelOpener =
    Arc<dyn Fn(&str) -> Result<(Arc<dyn Provider>, String), ModelError> + Send + Sync>;

/// The session a turn's FileSystem is bound for (what a live root is built from).
#[derive(Debug, Clone, Copy, Default)]
pub struct TurnSession<'a> {
    /// The session id.
    pub session_id: &'a str,
    /// The session's continuation key, when it has one.
    pub continuation_key: Option<&'a str>,
    /// The principal that owns the session.
    pub principal: &'a str,
    /// The A/B variant the session runs with, when it was assigned one.
    pub variant: Option<&'a str>,
}

/// What [`Agent::bind_turn_fs`] binds for one turn.
pub struct TurnFs {
    /// The turn's FileSystem.
    pub fs: Arc<dyn FileSystem>,
    /// Host default or authored root.
    pub scratch: ScratchMode,
    /// The host session workspace, prepared on its first need (`None` under an authored root).
    pub prepare: Option<LazyWorkspace>,
}

/// Why a turn's FileSystem could not be bound.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The host session workspace could not be prepared.
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    /// The confined workspace tree could not be opened.
    #[error("cannot open the session workspace: {0}")]
    Workspace(#[from] folio_fs::PathError),
}

/// Why an agent could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A skill could not be loaded (a read error, or its generating command failed).
    #[error(transparent)]
    Skill(#[from] SkillError),
    /// A mount of `[root]` could not be built.
    #[error(transparent)]
    Root(#[from] RootError),
    /// Two tools ended up with the same name.
    #[error(transparent)]
    DuplicateTool(#[from] DuplicateTool),
    /// An authored tool's input schema does not compile.
    #[error("tools/{tool}.toml: input_schema: {source}")]
    AuthoredTool {
        /// The tool's name.
        tool: String,
        /// Why the schema is invalid.
        source: InvalidSchema,
    },
    /// The `WebFetch` tool's HTTP client could not be built.
    #[error(transparent)]
    WebClient(#[from] WebClientError),
    /// An MCP server of `mcp-connections/` could not be started or listed.
    #[error(transparent)]
    Mcp(#[from] McpError),
    /// A connection asks a peer agent of the same server, but the agent is loaded outside
    /// `folio serve` (no [`LoadOptions::peers`]).
    #[error(
        "{}: agent = \"{agent}\" is a peer agent in the same server, and only folio serve mounts peers: serve the folder holding both projects (folio serve --dir <parent>), or add url = \"http://<server>/{agent}/v1/mcp\" to ask a running server",
        file.display()
    )]
    PeerNeedsServer {
        /// The connection manifest.
        file: PathBuf,
        /// The peer agent's slug.
        agent: String,
    },
    /// The artifact store could not be opened.
    #[error(transparent)]
    Artifacts(#[from] ArtifactError),
    /// The model of `[context] compaction_model` could not be opened.
    #[error("agent.toml context.compaction_model: {source}")]
    CompactionModel {
        /// Why the model could not be opened.
        source: ModelError,
    },
    /// A live root was given to an agent it cannot serve.
    #[error("live root: {reason}")]
    LiveRoot {
        /// What conflicts with it and what to do.
        reason: String,
    },
    /// A variant's model could not be opened.
    #[error("agent.toml variants.{name}.model: {source}")]
    VariantModel {
        /// The variant's name.
        name: String,
        /// Why its model could not be opened.
        source: ModelError,
    },
    /// A subagent's own model could not be opened.
    #[error("subagent \"{id}\": model: {source}")]
    SubagentModel {
        /// The subagent's id.
        id: String,
        /// Why its model could not be opened.
        source: ModelError,
    },
}

/// What [`Agent::load_with`] needs from its host beyond the definition and the model.
#[derive(Clone, Default)]
pub struct LoadOptions {
    /// Resolves `${NAME}` templates of connections and provider keys (default: the process env).
    pub env: Option<EnvLookup>,
    /// The state root, where artifacts and memory live (default `<project>/.folio/state`).
    pub state_root: Option<StateLayout>,
    /// Opens a subagent's own model (default: `open_provider` with the agent's `[provider]`).
    pub open_model: Option<ModelOpener>,
    /// The single-user opt-out: host-default file tools reach the whole host disk instead of
    /// only the session workspace and its `memory/` link (the default, see [`Agent::bind_turn_fs`]).
    pub unconfined_files: bool,
    /// Load the agent even when a server of `mcp-connections/` cannot start: the connection is
    /// recorded in [`Agent::failed_connections`] instead of failing the load (`folio serve`,
    /// which retries it; `folio run` fails fast).
    pub keep_failed_connections: bool,
    /// How a person is asked when an HTTP MCP server needs OAuth authorization (`folio run`);
    /// none: such a connection fails, telling to run `folio mcp login` (`folio serve`).
    pub mcp_login: Option<McpLogin>,
    /// `folio serve`'s OAuth callback route (`<agent URL>/v1/mcp-auth/callback`): with it, each
    /// session's principal calls a streamable-HTTP MCP server with its own client and tokens,
    /// and a call that needs authorization parks its turn on `action.authorization_requested`
    /// until the redirect comes back there. The agent's own client (which lists the tools)
    /// keeps the tokens `folio mcp login` stored for `local`.
    pub mcp_redirect_uri: Option<String>,
    /// The agents of the same server, where a same-server peer connection (`agent = "<slug>"`
    /// without `url`) finds its peer (`folio serve` fills it once every agent is loaded).
    /// Without it such a connection fails the load with [`LoadError::PeerNeedsServer`].
    pub peers: Option<PeerDirectory>,
    /// A root built per session by a factory, instead of the host disk (the Rust form of
    /// `[root]`, which it cannot be combined with). The agent runs as under `[root]`: the
    /// rooted tool set, `/tmp` scratch per turn, skills at `/skills`, no `Shell` or `Task`.
    pub live_root: Option<LiveRoot>,
    /// What a store other servers share keeps instead of the state root (`folio serve
    /// --store`).
    pub shared: SharedBackends,
}

/// What the agent keeps in a store other servers share instead of under the state root
/// (`folio serve --store`); each `None`: under the state root.
#[derive(Clone, Default)]
pub struct SharedBackends {
    /// The artifact records (instead of `<state-root>/artifacts`).
    pub artifacts: Option<Arc<dyn ArtifactBackend>>,
    /// The MCP credentials of the sessions' principals (instead of `<state-root>/mcp-auth/`).
    pub mcp_credentials: Option<Arc<dyn crate::mcp::SharedCredentials>>,
}

impl Agent {
    /// Builds the agent's root and tool registry and binds it to `provider` serving `model`,
    /// with default [`LoadOptions`].
    pub async fn load(
        definition: AgentDefinition,
        provider: Arc<dyn Provider>,
        model: String,
    ) -> Result<Agent, LoadError> {
        Agent::load_with(definition, provider, model, LoadOptions::default()).await
    }

    /// Builds the agent: root, tools (native, authored, MCP, `tag_artifact`, `Task`), subagents,
    /// hooks and the artifact store. Starts the MCP servers of `mcp-connections/` to list their
    /// tools; a server that cannot start fails the load with its error, or with
    /// [`LoadOptions::keep_failed_connections`] is recorded in [`Agent::failed_connections`].
    pub async fn load_with(
        mut definition: AgentDefinition,
        provider: Arc<dyn Provider>,
        model: String,
        options: LoadOptions,
    ) -> Result<Agent, LoadError> {
        if options.live_root.is_some() {
            root_the_definition(&mut definition)?;
        }
        let skills = crate::skills::load_all(&definition.skills).await?;
        let skills_tree = if skills.is_empty() {
            None
        } else {
            Some(skills_mount(&skills)?)
        };
        let env = options.env.clone().unwrap_or_else(process_env);
        let root = match (&definition.config.root, &options.live_root) {
            (Some(mounts), _) => {
                let root = build_root(mounts, &definition.agent_dir).await?;
                let root = match &skills_tree {
                    None => root,
                    Some(skills) => with_skills_mount(root, skills.clone()),
                };
                Some(match root.session_view() {
                    None => AgentRoot::Static(root),
                    // Every session gets its own view, built at its first turn and kept.
                    Some(_) => AgentRoot::Live {
                        root: LiveRoot::per_session(move |_: &RootContext| {
                            root.session_view().unwrap_or_else(|| root.clone())
                        }),
                        skills: None,
                    },
                })
            }
            (None, Some(live)) => Some(AgentRoot::Live {
                root: live.clone(),
                skills: skills_tree,
            }),
            (None, None) => None,
        };
        let rooted = root.is_some();
        let mut tools = ToolRegistry::new();
        for native in &definition.native_tools {
            if let Some(tool) = native_tool(*native, &definition, &env)? {
                tools.register(tool)?;
            }
        }
        for tool in &definition.tools {
            if tool.execution == Execution::Server {
                let built = AuthoredTool::new(tool).map_err(|source| LoadError::AuthoredTool {
                    tool: tool.name.clone(),
                    source,
                })?;
                tools.register(Arc::new(built))?;
            }
        }
        let state = options
            .state_root
            .clone()
            .unwrap_or_else(|| StateLayout::for_project(&definition.project_dir));
        let auth = McpAuth {
            dir: state.mcp_auth_dir(LOCAL_PRINCIPAL),
            login: options.mcp_login.clone(),
            shared: None,
        };
        let connections = Connections::new(
            &definition.mcp_connections,
            &definition.host_connections,
            &definition.agent_dir,
            &env,
            Some(&auth),
        );
        if let Some(redirect_uri) = &options.mcp_redirect_uri {
            for connection in connections.model.values() {
                connection.serve_principals(
                    state.clone(),
                    redirect_uri.clone(),
                    options.shared.mcp_credentials.clone(),
                );
            }
        }
        let mut failed_connections = BTreeMap::new();
        for connection in connections.model.values() {
            let config = connection.config();
            if let McpTransport::Peer { agent, url, .. } = &config.transport {
                let description = config.description.as_deref();
                let tool = match (url, &options.peers) {
                    (Some(_), _) => {
                        PeerTool::remote(connection.clone(), agent, description, state.clone())
                    }
                    (None, Some(peers)) => PeerTool::local(
                        connection.name(),
                        agent,
                        description,
                        peers.clone(),
                        state.clone(),
                    ),
                    (None, None) => {
                        connections.shutdown().await;
                        return Err(LoadError::PeerNeedsServer {
                            file: config.file.clone(),
                            agent: agent.clone(),
                        });
                    }
                };
                tools.register(Arc::new(tool))?;
                continue;
            }
            match McpTool::all(connection).await {
                Ok(mcp_tools) => {
                    for tool in mcp_tools {
                        tools.register(Arc::new(tool))?;
                    }
                }
                Err(err) if options.keep_failed_connections => {
                    tools.mark_unavailable(connection.name(), err.to_string());
                    failed_connections.insert(connection.name().to_string(), err);
                }
                Err(err) => {
                    connections.shutdown().await;
                    return Err(err.into());
                }
            }
        }
        let config = definition.artifacts.clone().unwrap_or_default();
        let artifacts = match &options.shared.artifacts {
            Some(backend) => ArtifactStore::with_backend(backend.clone(), config)?,
            None => ArtifactStore::open(state.artifacts_dir(), config)?,
        };
        if artifacts.config().agent_tool {
            tools.register(Arc::new(TagArtifactTool::new(artifacts.clone())))?;
        }
        let summarizer = match &definition.config.context.compaction_model {
            Some(spec) => {
                let (provider, model) = open_spec(&definition, &options, &env, spec)
                    .map_err(|source| LoadError::CompactionModel { source })?;
                Some(Summarizer { provider, model })
            }
            None => None,
        };
        let model_id = model.clone();
        let mut harness = Harness {
            agent: definition.name.clone(),
            provider,
            model,
            system: system_prompt(&definition, &skills, rooted),
            params: definition.config.model_params.clone(),
            tools,
            max_steps: definition.max_steps(),
            approval_timeout: definition.approval_timeout(),
            context: ContextBudget::new(&model_id, &definition.config.context, summarizer),
            prices: Arc::new(folio_model::PriceTable::new(definition.prices.clone())),
            variant: None,
        };
        let loader = Loader {
            options: &options,
            env: &env,
            rooted,
        };
        let mut variants = BTreeMap::new();
        for variant in &definition.variants {
            let loaded = loader.variant(&definition, &harness, &skills, variant)?;
            variants.insert(variant.name.clone(), loaded);
        }
        if definition.native_tools.contains(&NativeTool::Task) {
            let subagents = load_subagents(&definition, &harness, &options, &env)?;
            harness.tools.register(Arc::new(TaskTool::new(subagents)))?;
        }
        Ok(Agent {
            hooks: HookDispatcher::new(&definition.hooks),
            definition: Arc::new(definition),
            root,
            harness,
            skills: Arc::new(skills),
            connections,
            failed_connections,
            artifacts,
            memory_dir: state.memory_dir(),
            unconfined_files: options.unconfined_files,
            variants,
        })
    }

    /// The harness the turns of a session assigned `variant` run with: the variant's, or the
    /// agent's own without a variant or when the variant is no longer defined.
    pub fn harness_for(&self, variant: Option<&str>) -> &Harness {
        match variant.and_then(|name| self.variants.get(name)) {
            Some(variant) => &variant.harness,
            None => &self.harness,
        }
    }

    /// Tries again to start the servers of [`Agent::failed_connections`]; returns this agent with
    /// the tools of those that started offered to the model (from its next turn) and the latest
    /// error of the others. Subagents keep the tools they were loaded with.
    pub async fn reconnect(&self) -> Agent {
        let mut agent = self.clone();
        for name in self.failed_connections.keys() {
            let Some(connection) = self.connections.model.get(name) else {
                continue;
            };
            let started = match McpTool::all(connection).await {
                Ok(mcp_tools) => mcp_tools.into_iter().try_for_each(|tool| {
                    let tool: Arc<dyn crate::tools::Tool> = Arc::new(tool);
                    agent.harnesses_mut().try_for_each(|harness| {
                        harness
                            .tools
                            .register(tool.clone())
                            .map_err(|duplicate| McpError::Start {
                                server: name.clone(),
                                reason: duplicate.into(),
                            })
                    })
                }),
                Err(err) => Err(err),
            };
            match started {
                Ok(()) => {
                    for harness in agent.harnesses_mut() {
                        harness.tools.mark_available(name);
                    }
                    agent.failed_connections.remove(name);
                }
                Err(err) => {
                    for harness in agent.harnesses_mut() {
                        harness.tools.mark_unavailable(name, err.to_string());
                    }
                    agent.failed_connections.insert(name.clone(), err);
                }
            }
        }
        agent
    }

    /// The agent's harness and every variant's.
    fn harnesses_mut(&mut self) -> impl Iterator<Item = &mut Harness> {
        std::iter::once(&mut self.harness).chain(
            self.variants
                .values_mut()
                .map(|variant| &mut variant.harness),
        )
    }

    /// The host connection `name` (`host-connections/<name>.toml`), for host code: hooks,
    /// tools written in Rust, servers. Never offered to the model; starts on first use.
    pub fn host_connection(&self, name: &str) -> Option<Arc<McpConnection>> {
        self.connections.host.get(name).cloned()
    }

    /// Stops every MCP server this agent started.
    pub async fn shutdown(&self) {
        self.connections.shutdown().await;
    }

    /// The FileSystem one turn of `session` binds: the authored root (`[root]`, or the live
    /// root built for `session`) plus a fresh `/tmp`, or the host
    /// workspace (whose `SemanticSearch` index is built when the model searches, not per turn).
    /// The host workspace directory must exist; its `AGENTS.md`, skills, seeds and `memory/`
    /// link are written at its first need ([`TurnFs::prepare`]), not here.
    ///
    /// Sessions are confined by default (docs/filesystem.md): the host-default tree reaches only the
    /// session workspace and its `memory/` link — absolute paths or `..` leaving them are
    /// refused and links are not followed out — so one principal's session cannot read
    /// another's state, tokens or the host. `unconfined_files` restores the whole host disk for
    /// a single user.
    pub async fn bind_turn_fs(
        &self,
        workspace: &Path,
        session: &TurnSession<'_>,
    ) -> Result<TurnFs, BindError> {
        let root = match &self.root {
            Some(AgentRoot::Static(root)) => Some(root.clone()),
            Some(AgentRoot::Live { root, skills }) => {
                // The host is the LiveRoot's own, else the session's host workspace.
                let host = match root.host() {
                    Some(host) => host.clone(),
                    None => RootHost::workspace(workspace)?,
                };
                let built = root.resolve(&RootContext {
                    session_id: session.session_id.to_string(),
                    agent_name: self.definition.name.clone(),
                    continuation_key: session.continuation_key.map(str::to_string),
                    principal: session.principal.to_string(),
                    host: Some(host),
                });
                Some(match skills {
                    Some(skills) => with_skills_mount(built, skills.clone()),
                    None => built,
                })
            }
            None => None,
        };
        if let Some(root) = root {
            return Ok(TurnFs {
                fs: bind_turn_root(root),
                scratch: ScratchMode::Rooted,
                prepare: None,
            });
        }
        // The confined tree resolves the memory folder now; the link to it comes with the rest.
        std::fs::create_dir_all(&self.memory_dir).map_err(|source| PrepareError {
            workspace: workspace.to_path_buf(),
            what: "memory folder",
            source,
        })?;
        let fs = if self.unconfined_files {
            local_fs(workspace)
        } else {
            workspace_fs(
                workspace,
                std::slice::from_ref(&self.memory_dir),
                Some(workspace_quota(&self.definition.limits)),
            )?
        };
        // A variant's session workspace gets the variant's instructions and skills.
        let (definition, skills) = match session.variant.and_then(|v| self.variants.get(v)) {
            Some(variant) => (variant.definition.clone(), variant.skills.clone()),
            None => (self.definition.clone(), self.skills.clone()),
        };
        Ok(TurnFs {
            fs,
            scratch: ScratchMode::Host,
            prepare: Some(LazyWorkspace::new(
                definition,
                skills,
                workspace.to_path_buf(),
                self.memory_dir.clone(),
            )),
        })
    }
}

/// The built-in tool `native` as the agent's manifest configures it; `None` for a tool that
/// needs a backend the manifest does not configure, and for `Task` (registered once the
/// subagents, which inherit every other tool, exist).
fn native_tool(
    native: NativeTool,
    definition: &AgentDefinition,
    env: &EnvLookup,
) -> Result<Option<Arc<dyn crate::tools::Tool>>, LoadError> {
    let tool: Arc<dyn crate::tools::Tool> = match native {
        NativeTool::File(file) => Arc::new(file),
        NativeTool::Shell => Arc::new(ShellTool::new(sandbox_policy(definition))),
        NativeTool::WebFetch => Arc::new(WebFetchTool::new()?),
        NativeTool::UpdateTodos => Arc::new(TodosTool::Update),
        NativeTool::ReadTodos => Arc::new(TodosTool::Read),
        NativeTool::SetReminder => Arc::new(crate::tools::SetReminderTool),
        NativeTool::Storage(op) => Arc::new(crate::tools::StorageTool(op)),
        NativeTool::WebSearch => {
            let tools = definition.config.tools.as_ref();
            let Some(config) = tools.and_then(|t| t.web_search()) else {
                return Ok(None);
            };
            Arc::new(WebSearchTool::new(
                config.clone(),
                &definition.agent_dir,
                env.clone(),
            )?)
        }
        NativeTool::ReadLints => {
            let tools = definition.config.tools.as_ref();
            let Some(config) = tools.and_then(|t| t.read_lints()) else {
                return Ok(None);
            };
            Arc::new(ReadLintsTool::new(config.clone(), &definition.agent_dir))
        }
        NativeTool::Task => return Ok(None),
    };
    Ok(Some(tool))
}

/// What loading an agent's variants shares with loading the agent.
struct Loader<'a> {
    options: &'a LoadOptions,
    env: &'a EnvLookup,
    rooted: bool,
}

impl Loader<'_> {
    /// The variant `variant` of the agent whose harness (before `Task`) is `base`: the
    /// definition with its instructions, built-in tools and skills; the harness with its model,
    /// merged parameters, system prompt and tools (`Task` again over its own harness).
    fn variant(
        &self,
        definition: &AgentDefinition,
        base: &Harness,
        skills: &[SkillContent],
        variant: &folio_project::VariantDefinition,
    ) -> Result<AgentVariant, LoadError> {
        let mut changed = definition.clone();
        if let Some(instructions) = &variant.instructions {
            changed.instructions = instructions.clone();
        }
        if let Some(names) = &variant.skills {
            changed.skills.retain(|skill| names.contains(&skill.name));
        }
        let skills: Vec<SkillContent> = match &variant.skills {
            Some(names) => skills
                .iter()
                .filter(|skill| names.contains(&skill.name))
                .cloned()
                .collect(),
            None => skills.to_vec(),
        };
        let mut harness = base.clone();
        if let Some(natives) = &variant.native_tools {
            for native in &definition.native_tools {
                harness.tools.remove(native.tool_name());
            }
            for native in natives {
                if let Some(tool) = native_tool(*native, definition, self.env)? {
                    harness.tools.register(tool)?;
                }
            }
            changed.native_tools = natives.clone();
        }
        if let Some(spec) = &variant.model {
            let (provider, model) =
                open_spec(definition, self.options, self.env, spec).map_err(|source| {
                    LoadError::VariantModel {
                        name: variant.name.clone(),
                        source,
                    }
                })?;
            harness.context = ContextBudget::new(
                &model,
                &definition.config.context,
                base.context.summarizer.clone(),
            );
            harness.provider = provider;
            harness.model = model;
        }
        harness.params.extend(
            variant
                .model_params
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        harness.system = system_prompt(&changed, &skills, self.rooted);
        harness.variant = Some(variant.name.clone());
        if changed.native_tools.contains(&NativeTool::Task) {
            let subagents = load_subagents(definition, &harness, self.options, self.env)?;
            harness.tools.register(Arc::new(TaskTool::new(subagents)))?;
        }
        Ok(AgentVariant {
            definition: Arc::new(changed),
            harness,
            skills: Arc::new(skills),
        })
    }
}

/// Makes `definition` run under a live root as it would under `[root]`: the rooted tool set,
/// and the fail-closed rules of docs/tools.md (no `[root]` too, no shell/task/readLints, no
/// `local.sandbox`).
fn root_the_definition(definition: &mut AgentDefinition) -> Result<(), LoadError> {
    let config = &definition.config;
    let refuse = |reason: String| Err(LoadError::LiveRoot { reason });
    if config.root.is_some() {
        return refuse("agent.toml has [root] too: keep one (remove [root], or load the agent without a live root)".into());
    }
    let tools = config.tools.as_ref();
    if let Some(name) = tools
        .and_then(|t| t.allowlist())
        .into_iter()
        .flatten()
        .find(|name| ROOT_FORBIDDEN.contains(&name.as_str()))
    {
        return refuse(format!(
            "agent.toml tools: \"{name}\" needs the host disk and cannot run under a root: remove it"
        ));
    }
    if config.local.sandbox.is_some() {
        return refuse(
            "agent.toml local.sandbox: the Shell sandbox does not apply under a root: remove it"
                .into(),
        );
    }
    definition.native_tools = resolve(
        tools.and_then(|t| t.allowlist()),
        true,
        !definition.subagents.is_empty(),
        Backends::of(tools),
    )
    .tools;
    Ok(())
}

/// The `Shell` sandbox `[local]` asks for (`None`: unconfined).
fn sandbox_policy(definition: &AgentDefinition) -> Option<SandboxPolicy> {
    let local = &definition.config.local;
    if local.sandbox != Some(true) {
        return None;
    }
    let read = local
        .sandbox_read
        .iter()
        .flatten()
        .map(|path| definition.project_dir.join(path))
        .collect();
    Some(SandboxPolicy {
        read,
        network: local.sandbox_network.unwrap_or(false),
    })
}

/// The model client settings of an agent's `[provider]` section.
pub fn provider_config(section: &ProviderSection) -> ProviderConfig {
    let defaults = ProviderConfig::default();
    let millis = |value: Option<std::num::NonZeroU64>, default: std::time::Duration| {
        value.map_or(default, |ms| std::time::Duration::from_millis(ms.get()))
    };
    ProviderConfig {
        base_url: section.base_url.clone(),
        api_key_env: section.api_key_env.clone(),
        stream: section.stream.unwrap_or(true),
        cache: section.cache.unwrap_or(false),
        api: section.api.map(|api| match api {
            ProviderApi::Chat => folio_model::OpenAiApi::Chat,
            ProviderApi::Responses => folio_model::OpenAiApi::Responses,
        }),
        timeouts: folio_model::Timeouts {
            connect: millis(section.connect_timeout_ms, defaults.timeouts.connect),
            first_byte: millis(section.timeout_ms, defaults.timeouts.first_byte),
            idle: millis(section.timeout_ms, defaults.timeouts.idle),
        },
        retry: folio_model::RetryPolicy {
            max_attempts: section
                .max_retries
                .map_or(defaults.retry.max_attempts, |retries| {
                    retries.saturating_add(1)
                }),
            ..defaults.retry
        },
    }
}

/// Opens the model `spec` names (`provider:model`) with the agent's `[provider]` settings, or
/// through [`LoadOptions::open_model`] when the caller opens models itself.
fn open_spec(
    definition: &AgentDefinition,
    options: &LoadOptions,
    env: &EnvLookup,
    spec: &str,
) -> Result<(Arc<dyn Provider>, String), ModelError> {
    match &options.open_model {
        Some(open) => open(spec),
        None => {
            let config = provider_config(&definition.config.provider);
            open_provider(spec, &config, &|name: &str| env(name))
        }
    }
}

/// Each subagent's harness: its instructions, its model (or the parent's), the parent's tools
/// (the registry before `Task` is added) and step limit.
fn load_subagents(
    definition: &AgentDefinition,
    parent: &Harness,
    options: &LoadOptions,
    env: &EnvLookup,
) -> Result<Vec<Subagent>, LoadError> {
    let mut subagents = Vec::new();
    for sub in &definition.subagents {
        let (provider, model) = match &sub.model {
            None => (parent.provider.clone(), parent.model.clone()),
            Some(spec) => open_spec(definition, options, env, spec).map_err(|source| {
                LoadError::SubagentModel {
                    id: sub.id.clone(),
                    source,
                }
            })?,
        };
        subagents.push(Subagent {
            definition: sub.clone(),
            harness: Harness {
                provider,
                model,
                system: sub.instructions.trim_end().to_string(),
                max_steps: sub.max_steps.unwrap_or(parent.max_steps),
                ..parent.clone()
            },
        });
    }
    Ok(subagents)
}

/// The system prompt: the instructions, the skills catalog (where `Read` finds each skill), and
/// on the host default the agent-tool catalog.
fn system_prompt(definition: &AgentDefinition, skills: &[SkillContent], rooted: bool) -> String {
    let mut parts = vec![definition.instructions.trim_end().to_string()];
    let base = if rooted {
        ROOT_SKILLS_MOUNT
    } else {
        HOST_SKILLS_DIR
    };
    parts.extend(catalog(skills, base));
    if !rooted {
        parts.extend(agent_tool_catalog(definition));
    }
    parts.join("\n\n")
}
