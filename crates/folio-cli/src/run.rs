//! `folio run`: one real turn in a fresh chat session stored under the state root.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use folio_agent::LoadOptions;
use folio_agent::{Agent, discover};
use folio_model::RecordingProvider;
use folio_protocol::{
    ActionApprovalRequested, ApprovalDecision, ApprovalRequest, CreateSession, EventBody, RunResult,
};
use folio_session::{LogBuffer, SessionManager, StateRoot};

use crate::model::open_model;
use crate::render::print_event;
use crate::trajectory::{exit_code, print_result};

/// The principal of a local `folio run`.
const PRINCIPAL: &str = "local";
/// Why `run` denies a call that needs approval.
const NO_APPROVER: &str =
    "folio run has no one to ask; serve the agent (folio serve) to approve calls";
/// Why `run` declines an MCP server's question (elicitation).
const NO_ANSWERER: &str = "folio run has no one to ask; serve the agent (folio serve) to answer an MCP server's questions, or pass --accept-elicitation-defaults to accept their defaults";

/// How long `run` waits for hooks still observing the turn before it exits.
const HOOK_FLUSH: std::time::Duration = std::time::Duration::from_secs(30);

/// Arguments of `folio run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The agent project (a folder holding `agent/`).
    #[arg(long, default_value = ".")]
    pub(crate) dir: PathBuf,
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
    /// Answer an MCP server's question (elicitation) by accepting its schema's defaults;
    /// without it `run` declines, since no one can be asked.
    #[arg(long)]
    accept_elicitation_defaults: bool,
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
    let (mut provider, model) = open_model(&definition, &args.dir, args.model.as_deref())?;
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
        state_root: Some(state.clone()),
        // A server that needs OAuth: print (and open) the authorization URL and wait for it.
        mcp_login: Some(folio_agent::mcp::McpLogin::from_env()),
        ..LoadOptions::default()
    };
    let agent = Agent::load_with(definition, provider, model, options)
        .await
        .map_err(anyhow::Error::msg)?;
    let agent = Arc::new(agent);
    let manager = SessionManager::open(state.clone(), agent.clone(), LogBuffer::new())
        .await
        .map_err(anyhow::Error::msg)?;
    // The run's tools and hooks reach their session as under `folio serve`.
    folio_server::host::serve_host_api(&manager, state.path()).await?;
    let ran = run_session(&manager, &args.message, args.accept_elicitation_defaults).await;
    settle(&manager, &agent, ran, args.json).await
}

/// Ends a local run of `session_id`: shuts the manager down, lets hooks finish, prints the
/// result (as JSON with `json`) and says where the events are; the exit code follows the result.
pub(crate) async fn settle(
    manager: &SessionManager,
    agent: &Agent,
    ran: anyhow::Result<(String, Vec<folio_protocol::Event>)>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    manager.shutdown().await;
    // Hooks observe the turn in the background: let them finish before the process exits.
    if !agent.hooks.flush(HOOK_FLUSH).await {
        eprintln!("warning: hooks still running after {HOOK_FLUSH:?} were stopped");
    }
    agent.shutdown().await;
    let (session_id, events) = ran?;
    let result = RunResult::from_events(&events);
    // The reply already streamed to stderr; when stdout is that same terminal, print it once.
    if json || !crate::render::stdout_is_stderr_terminal() {
        print_result(&result, json)?;
    }
    eprintln!(
        "session {session_id} (events: {})",
        manager.state().trace_path(&session_id).display()
    );
    Ok(exit_code(&result))
}

/// Creates the session through the same `SessionManager` as `folio serve`, prints its events
/// until the turn has settled, and returns the session id and its whole log.
async fn run_session(
    manager: &SessionManager,
    message: &str,
    accept_elicitation_defaults: bool,
) -> anyhow::Result<(String, Vec<folio_protocol::Event>)> {
    let accepted = manager
        .sessions()
        .create(PRINCIPAL, "cli", CreateSession::message(message))
        .await?;
    let events = follow_session(
        manager,
        PRINCIPAL,
        &accepted.session_id,
        accept_elicitation_defaults,
    )
    .await?;
    Ok((accepted.session_id, events))
}

/// Prints the events of `principal`'s session `id` until its turn has settled and returns its
/// whole log. Ctrl-C stops the turn; a call that needs approval is denied and an MCP server's
/// question declined (or, with `accept_elicitation_defaults`, accepted with its defaults), since
/// no person can answer here.
pub(crate) async fn follow_session(
    manager: &SessionManager,
    principal: &str,
    id: &str,
    accept_elicitation_defaults: bool,
) -> anyhow::Result<Vec<folio_protocol::Event>> {
    let mut stream = manager.events().stream(principal, id, 0).await?;
    let mut interrupt = std::pin::pin!(tokio::signal::ctrl_c());
    let mut turn_ended = false;
    let mut interrupted = false;
    loop {
        let next = tokio::select! {
            next = stream.rx.recv() => next,
            _ = &mut interrupt, if !turn_ended && !interrupted => {
                interrupted = true;
                manager.turns().stop(principal, id).await?;
                continue;
            }
        };
        let Some(item) = next else { break };
        let Some(event) = item else { continue };
        print_event(&event);
        match &event.body {
            EventBody::ActionApprovalRequested(requested) => {
                manager
                    .approvals()
                    .resolve(
                        principal,
                        id,
                        &requested.call_id,
                        answer(requested, accept_elicitation_defaults),
                    )
                    .await?;
            }
            EventBody::TurnCompleted(_) | EventBody::TurnFailed(_) => turn_ended = true,
            EventBody::SessionWaiting(_)
            | EventBody::SessionCompleted(_)
            | EventBody::SessionFailed(_)
                if turn_ended =>
            {
                break;
            }
            _ => {}
        }
    }
    Ok(manager.events().read(principal, id).await?)
}

/// `run`'s answer to a parked call or question: calls are denied; a question is declined, or
/// accepted with its schema's defaults when asked to and the defaults fill it.
fn answer(
    requested: &ActionApprovalRequested,
    accept_elicitation_defaults: bool,
) -> ApprovalRequest {
    let Some(elicitation) = &requested.elicitation else {
        return ApprovalRequest::refusal(requested, NO_APPROVER);
    };
    if !accept_elicitation_defaults {
        return ApprovalRequest::refusal(requested, NO_ANSWERER);
    }
    match folio_agent::mcp::elicitation_content(&elicitation.requested_schema, None) {
        Ok(content) => ApprovalRequest {
            decision: ApprovalDecision::Accept,
            reason: Some(
                "accepted with the schema's defaults (--accept-elicitation-defaults)".into(),
            ),
            content: Some(content),
        },
        Err(why) => ApprovalRequest::refusal(
            requested,
            &format!("its defaults do not answer it ({why}); serve the agent to answer it"),
        ),
    }
}
