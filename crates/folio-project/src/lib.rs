//! Agent folders as data: discovery, every manifest kind, diagnostics, the tool allowlist and
//! the agent description — no processes, network or MCP.
//!
//! An agent is a folder. [`discover`] reads a project directory (holding `agent/`) into an
//! [`AgentDefinition`] plus [`Diagnostic`]s: every fail-closed rule is an error naming the file,
//! the field and the rule, and the definition is absent when any error was found. The
//! definition holds manifest data only ([`ToolDefinition`], [`McpServerConfig`],
//! [`SubagentDefinition`], [`HookDefinition`], [`Skill`], …); `folio-agent` builds the running
//! objects from it. [`describe`] turns a definition into the JSON of `folio info --json` and
//! `GET /v1/agent`, and [`schemas`] lists the JSON Schema of every agent-folder file kind.
//! [`discover_evals`] reads `evals/` (beside `agent/`) into [`EvalDefinition`]s whose steps hold
//! [`Assertion`]s, with diagnostics of the same shape; [`eval_from_session`] writes one from a
//! recorded session ([`write_new_eval`] stores it, never replacing a file).
//!
//! ```
//! let project = tempfile::tempdir()?;
//! let agent = project.path().join("agent");
//! std::fs::create_dir_all(agent.join("tools"))?;
//! std::fs::write(agent.join("instructions.md"), "You answer questions about the weather.")?;
//! std::fs::write(agent.join("agent.toml"), "name = \"weather\"\nmax_stesp = 5\n")?;
//!
//! let found = folio_project::discover(project.path());
//! for diagnostic in &found.diagnostics {
//!     println!("{diagnostic}");
//! }
//! assert!(found.has_errors());
//! assert_eq!(
//!     found.diagnostics[0].to_string(),
//!     "error: agent/agent.toml:2: column 1: unknown key `max_stesp` (did you mean `max_steps`?)"
//! );
//!
//! std::fs::write(agent.join("agent.toml"), "name = \"weather\"\nmax_steps = 5\n")?;
//! let definition = folio_project::discover(project.path()).definition.expect("no errors");
//! assert_eq!((definition.name.as_str(), definition.max_steps()), ("weather", 5));
//! # Ok::<(), std::io::Error>(())
//! ```

mod allowlist;
mod artifacts;
mod channels;
mod config;
mod diagnostic;
mod discovery;
mod eval_assertions;
mod eval_writer;
mod evals;
mod hooks;
mod info;
mod limits;
mod mcp;
mod naming;
mod report;
mod schedule;
mod schema_check;
mod schemas;
mod skills;
mod subagents;
mod tools;
mod tools_config;
mod variants;

pub use allowlist::{
    ALLOWLIST_NAMES, Backends, FileTool, NativeTool, ROOT_FORBIDDEN, Resolved, StorageOp, resolve,
};
pub use artifacts::{ArtifactKind, ArtifactKindManifest, ArtifactsConfig, ArtifactsManifest};
pub use channels::{
    AuthRule, BearerAuth, ChannelManifest, ChannelSummary, DeliverConfig, GithubApp, GithubBanner,
    GithubChannel, GithubCheck, HmacAuth, HmacProvider, SlackChannel, SlackReplyMode,
    WebhookChannel, WebhookRoute,
};
pub use config::{
    AgentConfig, ConcurrencySection, ContextSection, Effect, Execution, GeneratedSkillManifest,
    LocalSection, MountSpec, ProjectConfig, ProviderApi, ProviderSection, ScheduleFrontmatter,
    SkillFrontmatter, StoreSection, TelemetryDestination, TelemetrySection, ToolManifest,
};
pub use diagnostic::{Diagnostic, Severity};
pub use discovery::{AgentDefinition, Discovery, ScheduleSummary, discover};
pub use eval_assertions::{
    ASSERTION_KINDS, ArgMode, Assertion, DEFAULT_COMMAND_TIMEOUT_SECS, ExpectedCall, FileCheck,
    JsonPathError, OrderMode, PathStep, check_json_path, parse_json_path,
};
pub use eval_writer::{
    FROM_SESSION_DIR, SaveCaseError, eval_from_session, session_case_path, write_new_eval,
    write_session_eval,
};
pub use evals::{
    ApprovalAnswer, CaseDefinition, DEFAULT_EVAL_TIMEOUT_SECS, EVAL_SUFFIX, EVALS_DEFAULTS_FILE,
    EVALS_DIR, EvalDefaults, EvalDefinition, EvalDiscovery, StepDefinition, discover_evals,
    eval_id,
};
pub use hooks::{HookCommand, HookDefinition, HookManifest};
pub use info::{describe, diagnostic_info};
pub use limits::{Limits, PrincipalLimits};
pub use mcp::{
    McpConnectionManifest, McpJwtAlgorithm, McpOAuth, McpOAuthGrant, McpServerConfig, McpTransport,
};
pub use naming::slug_problem;
pub use report::{UnsetVariable, expand_template};
pub use schedule::{
    CATCH_UP_VALUES, Cadence, CadenceError, CatchUp, DEFAULT_CATCH_UP_LIMIT, DelayError,
    OVERLAP_VALUES, Overlap, parse_delay,
};
pub use schema_check::{InvalidSchema, compile_schema};
pub use schemas::{SCHEMA_BASE_URL, SchemaFile, schema_name_for, schema_url, schemas};
pub use skills::{MIN_DESCRIPTION_CHARS, ROOT_SKILLS_MOUNT, Skill, SkillForm, SkillGenerator};
pub use subagents::{SubagentDefinition, SubagentManifest};
pub use tools::{DEFAULT_TOOL_TIMEOUT_SECS, ToolDefinition, approval_timeout};
pub use tools_config::{
    LintCommand, LintFormat, ReadLintsConfig, SearchProvider, ToolsSection, ToolsTable,
    WebSearchConfig,
};
pub use variants::{AssignKey, AssignReason, VARIANTS_DIR, VariantDefinition, assign_variant};
