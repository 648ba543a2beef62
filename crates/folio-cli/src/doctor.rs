//! `folio doctor`: checks what a new user's machine needs to build and serve an agent — the
//! agent folder, its model's key, Node.js for MCP servers from npm, git for GitHub checkouts,
//! the state root's permissions, the serve port — and says how to fix each problem.
//!
//! A check is `ok`, `warn` (something a feature needs is missing; the rest works) or `fail`
//! (a run or serve of this project would fail); the command exits 1 when any check fails.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use folio_model::{ModelError, open_provider};
use folio_project::{AgentDefinition, McpTransport, Severity, discover};
use serde::Serialize;

use crate::model::model_spec;
use crate::serve::base_root;

/// The oldest Node.js major version the MCP servers published on npm run on.
const NODE_MIN_MAJOR: u32 = 18;

/// Arguments of `folio doctor`.
#[derive(Debug, clap::Args)]
pub(crate) struct DoctorArgs {
    /// The agent project to check (a folder holding `agent/`).
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// The model `run` and `serve` would get with `--model` (default: `FOLIO_MODEL`, else
    /// agent.toml's `model`).
    #[arg(long)]
    model: Option<String>,
    /// The state root `folio serve` would use (default `<dir>/.folio/state`).
    #[arg(long)]
    state_root: Option<PathBuf>,
    /// The address `folio serve` would listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// The port `folio serve` would listen on.
    #[arg(long, default_value_t = 3000)]
    port: u16,
    /// Print the checks as a JSON array.
    #[arg(long)]
    json: bool,
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Status {
    /// Ready.
    Ok,
    /// A feature that needs this will not work; everything else does.
    Warn,
    /// Running or serving this project would fail.
    Fail,
}

/// One line of the report: what was checked, what was found, and how to fix it.
#[derive(Debug, Serialize)]
struct Check {
    /// The thing checked (`agent`, `model`, `node`, …).
    check: &'static str,
    /// How it came out.
    status: Status,
    /// What was found.
    detail: String,
    /// What to do, when not ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

impl Check {
    fn ok(check: &'static str, detail: impl Into<String>) -> Self {
        Check {
            check,
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    fn problem(
        check: &'static str,
        status: Status,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Check {
            check,
            status,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

/// Runs `folio doctor`.
pub(crate) fn doctor(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let mut checks = vec![Check::ok("folio", format!("folio {}", crate::VERSION))];
    let definition = check_agent(&args.dir, &mut checks);
    checks.push(check_model(
        definition.as_ref(),
        &args.dir,
        args.model.as_deref(),
    ));
    checks.push(check_node(definition.as_ref()));
    checks.push(check_git());
    checks.push(check_state_root(&base_root(
        args.state_root.as_deref(),
        &args.dir,
    )));
    checks.push(check_port(&args.host, args.port));
    if args.json {
        println!("{}", serde_json::to_string_pretty(&checks)?);
    } else {
        for check in &checks {
            let status = match check.status {
                Status::Ok => "ok",
                Status::Warn => "warn",
                Status::Fail => "FAIL",
            };
            println!("{status:<5} {:<11}{}", check.check, check.detail);
            if let Some(fix) = &check.fix {
                println!("{:17}fix: {fix}", "");
            }
        }
    }
    let failed = checks.iter().any(|check| check.status == Status::Fail);
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Discovers the agent under `dir`, pushing the `agent` check; the definition when it loads.
fn check_agent(dir: &Path, checks: &mut Vec<Check>) -> Option<AgentDefinition> {
    if !dir.join("agent").is_dir() {
        checks.push(Check::problem(
            "agent",
            Status::Warn,
            format!("no agent/ folder in {}", dir.display()),
            "run `folio init` to scaffold one, or pass --dir with an agent project",
        ));
        return None;
    }
    let discovery = discover(dir);
    let errors = discovery
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    match discovery.definition {
        Some(definition) => {
            checks.push(Check::ok("agent", format!("{} loads", definition.name)));
            Some(definition)
        }
        None => {
            checks.push(Check::problem(
                "agent",
                Status::Fail,
                format!("{errors} error(s) in {}", dir.join("agent").display()),
                format!(
                    "run `folio validate --dir {}` and fix each line",
                    dir.display()
                ),
            ));
            None
        }
    }
}

/// Whether the agent's model opens: its spec parses, its fixture exists, its key is set.
fn check_model(definition: Option<&AgentDefinition>, dir: &Path, model: Option<&str>) -> Check {
    let env = |name: &str| std::env::var(name).ok();
    let Some(definition) = definition else {
        let keys: Vec<&str> = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]
            .into_iter()
            .filter(|var| env(var).is_some_and(|value| !value.is_empty()))
            .collect();
        return if keys.is_empty() {
            Check::problem(
                "model",
                Status::Warn,
                "no OPENAI_API_KEY or ANTHROPIC_API_KEY set",
                "replay fixtures and local servers (ollama:, llama-cpp:) need no key; export OPENAI_API_KEY or ANTHROPIC_API_KEY for a hosted model",
            )
        } else {
            Check::ok("model", format!("{} set", keys.join(", ")))
        };
    };
    let spec = match model_spec(definition, dir, model) {
        Ok(spec) => spec,
        Err(err) => {
            return Check::problem(
                "model",
                Status::Fail,
                err.to_string(),
                "set model in agent/agent.toml (e.g. replay:evals/fixtures/demo.jsonl)",
            );
        }
    };
    let config = folio_agent::provider_config(&definition.config.provider);
    match open_provider(&spec, &config, &env) {
        Ok(_) => Check::ok("model", format!("{spec} opens")),
        Err(ModelError::MissingKey { var }) => Check::problem(
            "model",
            Status::Fail,
            format!("{spec} needs {var}, which is not set"),
            format!(
                "export {var}=… (or name another variable with api_key_env in agent.toml [provider]), or pass --model replay:<fixture> to run offline"
            ),
        ),
        Err(err) => Check::problem(
            "model",
            Status::Fail,
            format!("{spec}: {err}"),
            "fix model or [provider] in agent/agent.toml, or pass --model to run and serve",
        ),
    }
}

/// Node.js, which MCP servers started with `npx`/`node` need: a failure only when the agent
/// has such a connection.
fn check_node(definition: Option<&AgentDefinition>) -> Check {
    let needs_node = definition.is_some_and(|definition| {
        definition
            .mcp_connections
            .iter()
            .chain(&definition.host_connections)
            .any(|connection| {
                matches!(&connection.transport, McpTransport::Stdio { command, .. }
                    if matches!(command.as_str(), "npx" | "node" | "npm"))
            })
    });
    let missing = if needs_node {
        Status::Fail
    } else {
        Status::Warn
    };
    let install = format!(
        "install Node.js {NODE_MIN_MAJOR} or newer (https://nodejs.org or your package manager)"
    );
    match version_of("node", &["--version"]) {
        None => Check::problem(
            "node",
            missing,
            "node not found: MCP servers from npm (npx …) cannot start",
            install,
        ),
        Some(version) => {
            let major = version
                .trim_start_matches('v')
                .split('.')
                .next()
                .and_then(|major| major.parse::<u32>().ok());
            match major {
                Some(major) if major >= NODE_MIN_MAJOR => Check::ok("node", version),
                _ => Check::problem(
                    "node",
                    missing,
                    format!("node {version} is older than {NODE_MIN_MAJOR}"),
                    install,
                ),
            }
        }
    }
}

/// git, which GitHub channels use to check out a pull request's head.
fn check_git() -> Check {
    match version_of("git", &["--version"]) {
        Some(version) => Check::ok("git", version),
        None => Check::problem(
            "git",
            Status::Warn,
            "git not found: GitHub channels cannot check out pull requests",
            "install git, or set checkout = false in the GitHub channel",
        ),
    }
}

/// The state root: writable by this user and not writable by others (sessions hold
/// transcripts and stored credentials); a missing root must be creatable.
fn check_state_root(root: &folio_session::StateRoot) -> Check {
    let path = root.path();
    let Some(existing) = path.ancestors().find(|dir| dir.exists()) else {
        return Check::problem(
            "state",
            Status::Fail,
            format!("no folder of {} exists", path.display()),
            "pass --state-root with a folder you own",
        );
    };
    let probe = tempfile::Builder::new()
        .prefix(".folio-doctor")
        .tempfile_in(existing);
    if let Err(err) = probe {
        return Check::problem(
            "state",
            Status::Fail,
            format!("cannot write in {}: {err}", existing.display()),
            format!(
                "make {} writable by this user, or pass --state-root",
                existing.display()
            ),
        );
    }
    if existing != path {
        return Check::ok(
            "state",
            format!("{} (created on first use)", path.display()),
        );
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).map_or(0, |meta| meta.permissions().mode());
    if mode & 0o022 != 0 {
        return Check::problem(
            "state",
            Status::Warn,
            format!(
                "{} is writable by other users (mode {:o})",
                path.display(),
                mode & 0o777
            ),
            format!("chmod go-w {}", path.display()),
        );
    }
    Check::ok("state", path.display().to_string())
}

/// Whether `folio serve` gets the port it prefers (it moves to the next free one otherwise).
fn check_port(host: &str, port: u16) -> Check {
    match TcpListener::bind((host, port)) {
        Ok(_) => Check::ok("port", format!("{host}:{port} is free")),
        Err(err) => Check::problem(
            "port",
            Status::Warn,
            format!("cannot listen on {host}:{port}: {err}"),
            "folio serve moves to the next free port; pass --port to choose one",
        ),
    }
}

/// The first line `program ARGS` prints, or `None` when it cannot run or fails.
fn version_of(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    output.status.success().then(|| {
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string()
    })
}
