//! Project discovery: a project folder → an [`AgentDefinition`] plus diagnostics, with every
//! fail-closed rule of docs/tools.md reported as an error that names the file, the field and the rule.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::allowlist::{self, ALLOWLIST_NAMES, ROOT_FORBIDDEN};
use crate::artifacts::{self, ArtifactsConfig};
use crate::channels::{ChannelSummary, discover_channels};
use crate::config::{
    AgentConfig, Execution, LocalSection, MountSpec, ProjectConfig, ScheduleFrontmatter,
};
use crate::diagnostic::{Diagnostic, Severity};
use crate::hooks::{self, HookDefinition};
use crate::mcp::{self, McpServerConfig};
use crate::naming::nearest_key;
use crate::report::Report;
use crate::schedule::{
    CATCH_UP_VALUES, Cadence, CatchUp, DEFAULT_CATCH_UP_LIMIT, OVERLAP_VALUES, Overlap,
};
use crate::skills::{self, ROOT_SKILLS_MOUNT, Skill};
use crate::subagents::{self, SubagentDefinition};
use crate::tools::{self, ToolDefinition};
use crate::variants::{VariantContext, VariantDefinition, discover_variants};
use folio_protocol::ModelPrice;

/// A discovered agent.
#[derive(Debug, Clone)]
pub struct AgentDefinition {
    /// Display name.
    pub name: String,
    /// What the agent is for.
    pub description: Option<String>,
    /// The project directory.
    pub project_dir: PathBuf,
    /// The `agent/` (or `bot/`) folder.
    pub agent_dir: PathBuf,
    /// The always-on system prompt.
    pub instructions: String,
    /// The parsed `agent.toml`.
    pub config: AgentConfig,
    /// The built-in tools the allowlist grants.
    pub native_tools: Vec<allowlist::NativeTool>,
    /// Authored tools (`tools/<name>.toml`), server and agent execution alike, by name.
    pub tools: Vec<ToolDefinition>,
    /// Skills (`skills/`), by name.
    pub skills: Vec<Skill>,
    /// `sandbox/workspace/`, when present: seed files of every local session workspace.
    pub sandbox_dir: Option<PathBuf>,
    /// Channels (`channels/<id>.toml`): id, kind and typed manifest.
    pub channels: Vec<ChannelSummary>,
    /// Schedules (`schedules/<name>.md`).
    pub schedules: Vec<ScheduleSummary>,
    /// `mcp-connections/<name>.toml`: MCP servers whose tools the model sees.
    pub mcp_connections: Vec<McpServerConfig>,
    /// `host-connections/<name>.toml`: MCP servers only host code may call.
    pub host_connections: Vec<McpServerConfig>,
    /// `subagents/<id>/`: what `Task` delegates to.
    pub subagents: Vec<SubagentDefinition>,
    /// `hooks/**/*.toml`: event observers.
    pub hooks: Vec<HookDefinition>,
    /// `artifacts.toml`, when present.
    pub artifacts: Option<ArtifactsConfig>,
    /// `[prices]` of `folio.toml`: model id (or id prefix) → price, over Folio's defaults.
    pub prices: BTreeMap<String, ModelPrice>,
    /// The A/B experiment's name (`experiment`, default: the agent's name).
    pub experiment: String,
    /// The A/B variants (`[variants.<name>]`, `variants/<name>.toml`), by name.
    pub variants: Vec<VariantDefinition>,
    /// `[limits]` of `folio.toml`, defaults filled in.
    pub limits: crate::Limits,
}

/// A schedule as discovery sees it: when its slots are and what each run does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleSummary {
    /// The file name: the schedule name.
    pub name: String,
    /// The cron expression in its time zone.
    pub cadence: Cadence,
    /// What a slot does while the previous run is still going.
    pub overlap: Overlap,
    /// What happens at start with the slots missed while no server ran.
    pub catch_up: CatchUp,
    /// Each slot fires up to this many seconds late (a fixed amount per slot).
    pub jitter_secs: u32,
    /// Whether the schedule fires at all.
    pub enabled: bool,
    /// The first message of each task session it opens.
    pub prompt: String,
}

/// The entries of an agent folder that discovery reads (anything else is warned about).
const AGENT_ENTRIES: &[&str] = &[
    "agent.toml",
    "instructions.md",
    "instructions",
    "tools",
    "skills",
    "mcp-connections",
    "host-connections",
    "subagents",
    "channels",
    "hooks",
    "schedules",
    "artifacts.toml",
    "sandbox",
    "variants",
    "lib",
];

impl AgentDefinition {
    /// Whether the agent runs on an authored `[root]` instead of the host disk.
    pub fn is_rooted(&self) -> bool {
        self.config.root.is_some()
    }

    /// Model calls per turn before the turn fails.
    pub fn max_steps(&self) -> u32 {
        self.config.max_steps.unwrap_or(50)
    }

    /// The agent's default approval timeout (`[approvals] timeout`; checked by discovery).
    pub fn approval_timeout(&self) -> Option<std::time::Duration> {
        let timeout = self.config.approvals.timeout.as_deref()?;
        crate::approval_timeout(timeout).ok()
    }
}

/// What discovery produced: the definition (when there were no errors) and every diagnostic.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The agent, absent when any error was found.
    pub definition: Option<AgentDefinition>,
    /// Errors and warnings, errors first.
    pub diagnostics: Vec<Diagnostic>,
}

impl Discovery {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }
}

/// Discovers the agent in `project_dir`.
pub fn discover(project_dir: &Path) -> Discovery {
    let project_dir = project_dir.to_path_buf();
    let mut findings = Report::new(&project_dir);
    let definition = discover_into(&project_dir, &mut findings);
    let mut diagnostics = findings.diagnostics;
    diagnostics.sort_by_key(|d| d.severity);
    let failed = diagnostics.iter().any(|d| d.severity == Severity::Error);
    Discovery {
        definition: if failed { None } else { definition },
        diagnostics,
    }
}

fn discover_into(project_dir: &Path, findings: &mut Report) -> Option<AgentDefinition> {
    if !project_dir.is_dir() {
        findings.error(
            project_dir,
            "not a directory: pass --dir with an agent project (a folder holding agent/)".into(),
        );
        return None;
    }
    let project_file = project_dir.join("folio.toml");
    let project: ProjectConfig = findings.parse_optional(&project_file).unwrap_or_default();
    for (model, price) in &project.prices {
        if !price.is_valid() {
            findings.error(
                &project_file,
                format!("prices.\"{model}\": every rate must be a number of US dollars per million tokens, zero or more"),
            );
        }
    }
    for key in project.limits.zero_keys() {
        findings.error(
            &project_file,
            format!("limits.{key}: must be 1 or more (leave it out for the default)"),
        );
    }
    let agent_dir = ["agent", "bot"]
        .iter()
        .map(|name| project_dir.join(name))
        .find(|dir| dir.is_dir());
    let Some(agent_dir) = agent_dir else {
        findings.error(
            &project_dir.join("agent"),
            "no agent/ folder: create agent/instructions.md (or run `folio init`)".into(),
        );
        return None;
    };
    let manifest = agent_dir.join("agent.toml");
    let config: AgentConfig = findings.parse_optional(&manifest).unwrap_or_default();
    let instructions = read_instructions(&agent_dir, findings);
    check_config(&config, &manifest, findings);
    check_entries(&agent_dir, findings);
    let dir_name = project_dir
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "agent".to_string());
    let name = config.name.clone().or(project.name).unwrap_or(dir_name);
    let prices = project.prices;
    let limits = project.limits;
    let tools = tools::discover_authored_tools(&agent_dir, &name, findings);
    let skills = skills::discover_skills(&agent_dir, findings);
    if !skills.is_empty()
        && let Some(mount) = config
            .root
            .iter()
            .flat_map(|root| root.keys())
            .find(|mount| {
                folio_path::is_within(&folio_path::normalize_fs_path(mount), ROOT_SKILLS_MOUNT)
            })
    {
        findings.error(
            &manifest,
            format!("root: mount \"{mount}\" collides with the read-only {ROOT_SKILLS_MOUNT} mount of the agent's skills (move the mount)"),
        );
    }
    if config.root.is_some() {
        for tool in tools.iter().filter(|t| t.execution == Execution::Agent) {
            findings.warning(
                &agent_dir.join("tools").join(format!("{}.toml", tool.name)),
                "execution: \"agent\" tools run through Shell in a host workspace; with [root] the model cannot run them".into(),
            );
        }
    }
    let channels = discover_channels(&agent_dir, findings);
    let schedules = discover_schedules(&agent_dir, findings);
    let sandbox_dir = Some(agent_dir.join("sandbox").join("workspace")).filter(|d| d.is_dir());
    if agent_dir.join("sandbox").is_dir() && sandbox_dir.is_none() {
        findings.warning(
            &agent_dir.join("sandbox"),
            "sandbox: only sandbox/workspace/ is read (its files seed every local session workspace)".into(),
        );
    }
    if sandbox_dir.is_some() && config.root.is_some() {
        findings.warning(
            &agent_dir.join("sandbox"),
            "sandbox: seed files are copied into local session workspaces only; with [root] they are ignored".into(),
        );
    }
    // MCP connections, host connections, subagents, hooks and artifacts.toml are read by
    // their own modules.
    let mcp_connections = mcp::discover_connections(&agent_dir, "mcp-connections", findings);
    let host_connections = mcp::discover_connections(&agent_dir, "host-connections", findings);
    let subagents = subagents::discover_subagents(&agent_dir, findings);
    let hooks = hooks::discover_hooks(&agent_dir, findings);
    let artifacts = artifacts::discover_artifacts(&agent_dir, findings);
    let has_subagents = !subagents.is_empty();
    let tools_section = config.tools.as_ref();
    let resolved = allowlist::resolve(
        tools_section.and_then(|t| t.allowlist()),
        config.root.is_some(),
        has_subagents,
        allowlist::Backends::of(tools_section),
    );
    for warning in resolved.warnings {
        findings.warning(&manifest, format!("tools: {warning}"));
    }
    let variants = discover_variants(
        &VariantContext {
            agent_dir: &agent_dir,
            manifest: &manifest,
            config: &config,
            skills: &skills,
            has_subagents,
        },
        findings,
    );
    let experiment = config.experiment.clone().unwrap_or_else(|| name.clone());
    Some(AgentDefinition {
        name,
        description: config.description.clone(),
        project_dir: project_dir.to_path_buf(),
        agent_dir,
        instructions: instructions?,
        config,
        native_tools: resolved.tools,
        tools,
        skills,
        sandbox_dir,
        channels,
        schedules,
        mcp_connections,
        host_connections,
        subagents,
        hooks,
        artifacts,
        prices,
        experiment,
        variants,
        limits,
    })
}

fn read_instructions(agent_dir: &Path, findings: &mut Report) -> Option<String> {
    let single = agent_dir.join("instructions.md");
    if single.is_file() {
        return match std::fs::read_to_string(&single) {
            Ok(text) => Some(text),
            Err(err) => {
                findings.error(&single, format!("cannot read: {err}"));
                None
            }
        };
    }
    let folder = agent_dir.join("instructions");
    let mut parts: Vec<PathBuf> = std::fs::read_dir(&folder)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "md"))
                .collect()
        })
        .unwrap_or_default();
    if parts.is_empty() {
        findings.error(
            &single,
            "missing: the root agent needs always-on instructions (create instructions.md)".into(),
        );
        return None;
    }
    parts.sort();
    let mut text = String::new();
    for part in parts {
        match std::fs::read_to_string(&part) {
            Ok(chunk) => {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&chunk);
            }
            Err(err) => findings.error(&part, format!("cannot read: {err}")),
        }
    }
    Some(text)
}

/// `[local]` settings Folio does not honour are errors, never silently ignored (**Folio**):
///
/// - `cwd` (the seed's parent directory for session workspaces): a session's workspace is
///   `<state-root>/sessions/<id>/workspace`, where its metadata, log and peer pairings live and
///   are deleted with it; `--state-root` chooses where.
/// - `workspace_dir` (the seed's one fixed workspace): sessions are confined to their own
///   workspace so one principal's session cannot read another's; shared files belong in
///   `sandbox/workspace/` (copied into every session) or `memory/` (linked into every session).
/// - `sandbox_read` / `sandbox_network` without `sandbox = true`: they tune a sandbox that is off.
fn check_local(local: &LocalSection, manifest: &Path, findings: &mut Report) {
    if local.cwd.is_some() {
        findings.error(
            manifest,
            "local.cwd: not supported; each session's workspace is <state-root>/sessions/<id>/workspace (choose the state root with --state-root): remove local.cwd".into(),
        );
    }
    if local.workspace_dir.is_some() {
        findings.error(
            manifest,
            "local.workspace_dir: not supported; sessions never share a workspace (one session could read another's files): put shared files in agent/sandbox/workspace/ (copied into every session) or memory/, and remove local.workspace_dir".into(),
        );
    }
    if local.sandbox != Some(true) {
        let tuning = [
            ("local.sandbox_read", local.sandbox_read.is_some()),
            ("local.sandbox_network", local.sandbox_network.is_some()),
        ];
        for (field, set) in tuning {
            if set {
                findings.error(
                    manifest,
                    format!("{field}: has no effect without local.sandbox = true (the Shell sandbox is off): set sandbox = true or remove {field}"),
                );
            }
        }
    }
}

/// The fail-closed rules and allowlist validity of `agent.toml`.
fn check_config(config: &AgentConfig, manifest: &Path, findings: &mut Report) {
    if let Some(runtime) = config.runtime.as_deref().filter(|r| *r != "local") {
        findings.error(
            manifest,
            format!(
                "runtime: \"{runtime}\" is not supported; Folio runs turns locally (remove runtime or set it to \"local\")"
            ),
        );
    }
    if config.max_steps == Some(0) {
        findings.error(manifest, "max_steps: must be at least 1".into());
    }
    check_local(&config.local, manifest, findings);
    if config.context.window == Some(0) {
        findings.error(manifest, "context.window: must be at least 1 token".into());
    }
    if config.context.tool_output_tokens == Some(0) {
        findings.error(
            manifest,
            "context.tool_output_tokens: must be at least 1 token (every tool result would be spilled)"
                .into(),
        );
    }
    if let Some(Err(err)) = config
        .approvals
        .timeout
        .as_deref()
        .map(crate::approval_timeout)
    {
        findings.error(manifest, format!("approvals.timeout: {err}"));
    }
    if let Some(at) = config
        .context
        .compact_at
        .filter(|at| !(*at > 0.0 && *at <= 1.0))
    {
        findings.error(
            manifest,
            format!("context.compact_at: {at} is not a fraction of the window (use a number in (0, 1], e.g. 0.8)"),
        );
    }
    let allowlist = config.tools.as_ref().and_then(|t| t.allowlist());
    for name in allowlist.into_iter().flatten() {
        if !ALLOWLIST_NAMES.contains(&name.as_str()) {
            let hint = nearest_key(name, ALLOWLIST_NAMES)
                .map(|near| format!(" (did you mean \"{near}\"?)"))
                .unwrap_or_default();
            findings.error(
                manifest,
                format!(
                    "tools: unknown tool \"{name}\"{hint}; valid names: {}",
                    ALLOWLIST_NAMES.join(", ")
                ),
            );
        }
    }
    if let Some(tools) = &config.tools {
        crate::tools_config::check(tools, config.root.is_some(), manifest, findings);
    }
    let Some(root) = &config.root else {
        return;
    };
    // `local.cwd` and `local.workspace_dir` are refused on their own (`check_local`).
    if config.local.sandbox.is_some() {
        findings.error(
            manifest,
            "local.sandbox: cannot be combined with [root]; an authored root replaces the host workspace (fail closed: remove one of them)".into(),
        );
    }
    for name in allowlist.into_iter().flatten() {
        if ROOT_FORBIDDEN.contains(&name.as_str()) {
            findings.error(
                manifest,
                format!("tools: \"{name}\" cannot be granted with [root]; shell, task and readLints need the host disk (fail closed: remove it or remove [root])"),
            );
        }
    }
    for (mount, spec) in root {
        check_object_store_options(mount, spec, manifest, findings);
        let normalized = folio_path::normalize_fs_path(mount);
        if !mount.starts_with('/') || normalized != *mount {
            findings.error(
                manifest,
                format!(
                    "root: mount \"{mount}\" must be an absolute, normalized path such as \"/repo\""
                ),
            );
        }
        if folio_path::is_within(&normalized, "/tmp") {
            findings.error(
                manifest,
                format!("root: mount \"{mount}\" is under /tmp, which is reserved for turn-local scratch"),
            );
        }
    }
}

/// Warns about `${NAME}` templates in an object-store mount's options (also inside overlay
/// layers) that the environment does not set: the mount would fail to open.
fn check_object_store_options(
    mount: &str,
    spec: &MountSpec,
    manifest: &Path,
    findings: &mut Report,
) {
    match spec {
        MountSpec::ObjectStore { options, .. } => {
            for (key, value) in options {
                if let Err(unset) =
                    crate::report::expand_template(value, &|name: &str| std::env::var(name).ok())
                {
                    findings.warning(
                        manifest,
                        format!("root: mount \"{mount}\" option \"{key}\": {unset}; the mount will fail to open until it is"),
                    );
                }
            }
        }
        MountSpec::Overlay { overlay, .. } => {
            for layer in overlay {
                check_object_store_options(mount, layer, manifest, findings);
            }
        }
        MountSpec::Host { .. } | MountSpec::Temp { .. } => {}
    }
}

/// Warns about entries of the agent folder that discovery does not read (`lib/` is ignored
/// silently), suggesting the nearest known entry.
fn check_entries(agent_dir: &Path, findings: &mut Report) {
    let Ok(entries) = std::fs::read_dir(agent_dir) else {
        return;
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    names.sort();
    for name in names {
        if AGENT_ENTRIES.contains(&name.as_str()) {
            continue;
        }
        let hint = nearest_key(&name, AGENT_ENTRIES)
            .map(|near| format!(" (did you mean `{near}`?)"))
            .unwrap_or_default();
        findings.warning(
            &agent_dir.join(&name),
            format!("entry: `{name}` is not part of the agent folder and is ignored{hint}"),
        );
    }
}

/// The schedule files: cron frontmatter (cron, timezone, policies) and a prompt body; every
/// bad value is an error naming its field.
fn discover_schedules(agent_dir: &Path, findings: &mut Report) -> Vec<ScheduleSummary> {
    let mut schedules = Vec::new();
    for path in files_with_extension(&agent_dir.join("schedules"), "md") {
        let Ok(text) = std::fs::read_to_string(&path) else {
            findings.error(&path, "cannot read the schedule".into());
            continue;
        };
        let Some((front, body)) =
            skills::parse_frontmatter::<ScheduleFrontmatter>(&text, &path, findings)
        else {
            continue;
        };
        if let Some(schedule) = check_schedule(stem_of(&path), front, &body, &path, findings) {
            schedules.push(schedule);
        }
    }
    schedules
}

/// One schedule's frontmatter checked field by field; `None` after reporting every error.
fn check_schedule(
    name: String,
    front: ScheduleFrontmatter,
    body: &str,
    path: &Path,
    findings: &mut Report,
) -> Option<ScheduleSummary> {
    let errors = findings.diagnostics.len();
    if !crate::report::is_slug(&name) {
        findings.error(
            path,
            format!("name: \"{name}\" is not a valid schedule name (rename the file to [A-Za-z0-9][A-Za-z0-9_-]*.md, at most 64 characters)"),
        );
    }
    let cadence = match &front.cron {
        None => {
            findings.error(
                path,
                "cron: missing (frontmatter `cron: \"0 9 * * 1-5\"`: minute hour day month weekday, or @daily)".into(),
            );
            None
        }
        Some(cron) => {
            let timezone = front.timezone.as_deref().unwrap_or("UTC");
            match Cadence::parse(cron, timezone) {
                Ok(cadence) => Some(cadence),
                Err(err) => {
                    findings.error(path, err.to_string());
                    None
                }
            }
        }
    };
    let overlap = match front.overlap.as_deref() {
        None => Some(Overlap::default()),
        Some(value) => Overlap::parse(value).or_else(|| {
            findings.error(path, unknown_value("overlap", value, OVERLAP_VALUES));
            None
        }),
    };
    let limit = front.catch_up_limit.unwrap_or(DEFAULT_CATCH_UP_LIMIT);
    if limit == 0 {
        findings.error(
            path,
            "catch_up_limit: must be at least 1 (use catch_up: \"none\" to run no missed slot)"
                .into(),
        );
    }
    let catch_up = match front.catch_up.as_deref() {
        None | Some("latest") => Some(CatchUp::Latest),
        Some("none") => Some(CatchUp::None),
        Some("all") => Some(CatchUp::All { limit }),
        Some(value) => {
            findings.error(path, unknown_value("catch_up", value, CATCH_UP_VALUES));
            None
        }
    };
    if front.catch_up_limit.is_some() && !matches!(catch_up, Some(CatchUp::All { .. })) {
        findings.warning(
            path,
            "catch_up_limit: only read with catch_up: \"all\" (remove it or set catch_up: \"all\")"
                .into(),
        );
    }
    if body.trim().is_empty() {
        findings.error(
            path,
            "prompt: the body is empty (it is the first message of each run)".into(),
        );
    }
    if findings.diagnostics[errors..]
        .iter()
        .any(|d| d.severity == Severity::Error)
    {
        return None;
    }
    Some(ScheduleSummary {
        name,
        cadence: cadence?,
        overlap: overlap?,
        catch_up: catch_up?,
        jitter_secs: front.jitter_secs.unwrap_or(0),
        enabled: front.enabled.unwrap_or(true),
        prompt: body.trim().to_string(),
    })
}

/// `field: "value" must be one of …`, with the nearest valid value when one is close.
fn unknown_value(field: &str, value: &str, valid: &[&str]) -> String {
    let hint = nearest_key(value, valid)
        .map(|near| format!(" (did you mean \"{near}\"?)"))
        .unwrap_or_default();
    let valid = valid
        .iter()
        .map(|v| format!("\"{v}\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!("{field}: \"{value}\" is not valid{hint}; use one of {valid}")
}

fn stem_of(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The files directly in `dir` ending in `.{extension}`, sorted.
fn files_with_extension(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == extension))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}
