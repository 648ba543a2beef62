//! `folio run`: one real turn in a fresh chat session stored under the state root.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use folio_agent::agent::LoadOptions;
use folio_agent::{Agent, discover};
use folio_model::{ProviderConfig, RecordingProvider, open_provider};
use folio_protocol::{RunResult, SessionMode};
use folio_server::{Session, StateRoot};
use tokio_util::sync::CancellationToken;

use crate::render::print_event;
use crate::trajectory::{exit_code, print_result};

/// How long `run` waits for hooks still observing the turn before it exits.
const HOOK_FLUSH: std::time::Duration = std::time::Duration::from_secs(30);

/// Arguments of `folio run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The agent project (a folder holding `agent/`).
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// The user message of the turn.
    #[arg(long)]
    message: String,
    /// Print the result as JSON (the trajectory shape).
    #[arg(long)]
    json: bool,
    /// `provider:model`, overriding `agent.toml` and `FOLIO_MODEL`.
    #[arg(long)]
    model: Option<String>,
    /// Record every model exchange to this JSONL fixture (for `replay:`).
    #[arg(long)]
    record: Option<PathBuf>,
    /// Where sessions are stored (default `<dir>/.folio/state`).
    #[arg(long)]
    state_root: Option<PathBuf>,
}

/// Runs the command on a fresh tokio runtime.
pub(crate) fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(run_async(args))
}

async fn run_async(args: RunArgs) -> anyhow::Result<ExitCode> {
    let discovery = discover(&args.dir);
    for diagnostic in &discovery.diagnostics {
        eprintln!("{diagnostic}");
    }
    let Some(definition) = discovery.definition else {
        bail!(
            "{} has errors (listed above): fix them and run again",
            args.dir.display()
        );
    };
    let env = |name: &str| std::env::var(name).ok();
    let spec = args
        .model
        .clone()
        .or_else(|| env("FOLIO_MODEL").filter(|m| !m.is_empty()))
        .or_else(|| definition.config.model.clone())
        .context(
            "no model configured: set model in agent/agent.toml, pass --model, or set FOLIO_MODEL",
        )?;
    let spec = resolve_replay_path(&spec, &args.dir);
    let config = ProviderConfig {
        base_url: definition.config.provider.base_url.clone(),
        api_key_env: definition.config.provider.api_key_env.clone(),
        ..ProviderConfig::default()
    };
    let (mut provider, model) = open_provider(&spec, &config, &env)?;
    if let Some(fixture) = &args.record {
        // A fixture holds one session's exchanges: start it empty.
        std::fs::write(fixture, "")
            .with_context(|| format!("cannot create the fixture {}", fixture.display()))?;
        provider = Arc::new(RecordingProvider::new(provider, fixture));
    }
    let state = match &args.state_root {
        Some(path) => StateRoot::new(path),
        None => StateRoot::for_project(&args.dir),
    };
    let options = LoadOptions {
        state_root: Some(state.path().to_path_buf()),
        ..LoadOptions::default()
    };
    let agent = Agent::load_with(definition, provider, model, options)
        .await
        .map_err(anyhow::Error::msg)?;
    let mut session = Session::create(&state, SessionMode::Chat, "cli", "local", None)?;
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
        }
    });
    let ran = session
        .run_turn(&agent, &args.message, cancel, &print_event)
        .await;
    // Hooks observe the turn in the background: let them finish before the process exits.
    if !agent.hooks.flush(HOOK_FLUSH).await {
        eprintln!("warning: hooks still running after {HOOK_FLUSH:?} were stopped");
    }
    agent.shutdown().await;
    ran?;
    let result = RunResult::from_events(&session.events);
    print_result(&result, args.json)?;
    eprintln!(
        "session {} (events: {})",
        session.meta.session_id,
        session.log.path().display()
    );
    Ok(exit_code(&result))
}

/// A relative `replay:` fixture path is taken relative to the project directory.
fn resolve_replay_path(spec: &str, project: &std::path::Path) -> String {
    match spec.strip_prefix("replay:") {
        Some(path)
            if !std::path::Path::new(path).is_absolute()
                && !std::path::Path::new(path).exists() =>
        {
            format!("replay:{}", project.join(path).display())
        }
        _ => spec.to_string(),
    }
}
