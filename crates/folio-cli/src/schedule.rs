//! `folio schedule list|run`: the agent's schedules with their next slots and last outcome, and
//! one run fired now.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::bail;
use chrono::Utc;
use folio_protocol::{ScheduleStatus, SlotOutcomeKind};
use folio_session::schedule::{Scheduler, SystemClock, schedule_principal, statuses_on_disk};
use folio_session::{LogBuffer, SessionManager, StateRoot};

use crate::run::{follow_session, settle};
use crate::serve::{load_agent, runtime};

/// Arguments of `folio schedule`.
#[derive(Debug, clap::Args)]
pub(crate) struct ScheduleArgs {
    #[command(subcommand)]
    command: ScheduleCommand,
}

/// What `folio schedule` does.
#[derive(Debug, clap::Subcommand)]
enum ScheduleCommand {
    /// Each schedule: cron, zone, policies, the next 5 slots (local and UTC), the last outcome.
    List(ListArgs),
    /// Fire one schedule now, outside its cron, and follow its task session.
    Run(RunArgs),
}

/// Where the project and its sessions are.
#[derive(Debug, clap::Args)]
struct Place {
    /// The agent project (a folder holding `agent/`).
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Where sessions and slot logs are stored (default `<dir>/.folio/state`).
    #[arg(long)]
    state_root: Option<PathBuf>,
}

impl Place {
    fn state(&self) -> StateRoot {
        match &self.state_root {
            Some(path) => StateRoot::new(path),
            None => StateRoot::for_project(&self.dir),
        }
    }
}

/// Arguments of `folio schedule list`.
#[derive(Debug, clap::Args)]
struct ListArgs {
    #[command(flatten)]
    place: Place,
    /// Print `GET /v1/schedules`'s `schedules` as JSON.
    #[arg(long)]
    json: bool,
}

/// Arguments of `folio schedule run`.
#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The schedule (its file name without `.md`).
    name: String,
    #[command(flatten)]
    place: Place,
    /// `provider:model`, overriding `agent.toml` and `FOLIO_MODEL`.
    #[arg(long)]
    model: Option<String>,
    /// Print the result as JSON (the trajectory shape).
    #[arg(long)]
    json: bool,
}

/// Runs `folio schedule …`.
pub(crate) fn schedule(args: ScheduleArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        ScheduleCommand::List(args) => list(args),
        ScheduleCommand::Run(args) => runtime()?.block_on(run(args)),
    }
}

fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let discovery = folio_project::discover(&args.place.dir);
    for diagnostic in &discovery.diagnostics {
        eprintln!("{diagnostic}");
    }
    let Some(definition) = discovery.definition else {
        bail!(
            "{} has errors (listed above): fix them and list again",
            args.place.dir.display()
        );
    };
    let statuses = statuses_on_disk(&args.place.state(), &definition.schedules, Utc::now())?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&statuses)?);
    } else if statuses.is_empty() {
        println!("no schedules (add agent/schedules/<name>.md)");
    } else {
        for status in &statuses {
            print!("{}", describe(status));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One schedule for a person: a header line, the next slots, the last outcome.
fn describe(status: &ScheduleStatus) -> String {
    let mut out = format!(
        "{}: \"{}\" in {} (overlap {}, catch_up {}, jitter {}s){}\n",
        status.name,
        status.cron,
        status.timezone,
        status.overlap,
        status.catch_up,
        status.jitter_secs,
        if status.enabled { "" } else { " disabled" }
    );
    for next in &status.next {
        out.push_str(&format!(
            "  next: {}  ({})\n",
            next.local,
            next.utc.format("%Y-%m-%dT%H:%M:%SZ")
        ));
    }
    let last = match &status.last {
        None => "never ran".to_string(),
        Some(last) => {
            let kind = match last.outcome {
                SlotOutcomeKind::Fired => "fired",
                SlotOutcomeKind::Skipped => "skipped",
                SlotOutcomeKind::Abandoned => "abandoned",
                SlotOutcomeKind::Failed => "failed",
            };
            let detail = last
                .session_id
                .as_deref()
                .or(last.reason.as_deref())
                .unwrap_or_default();
            format!("{kind} {} {detail}", last.slot.format("%Y-%m-%dT%H:%M:%SZ"))
        }
    };
    out.push_str(&format!("  last: {}\n", last.trim_end()));
    out
}

async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let state = args.place.state();
    let (agent, _) = load_agent(
        &args.place.dir,
        &crate::serve::ModelChoice {
            spec: args.model.clone(),
            record: None,
        },
        &state,
        false,
        None,
        None,
        Default::default(),
    )
    .await?;
    let agent = Arc::new(agent);
    let manager = SessionManager::open(state.clone(), agent.clone(), LogBuffer::new())
        .await
        .map_err(anyhow::Error::msg)?;
    let scheduler = Scheduler::open(
        &state,
        &agent.definition.schedules,
        Arc::new(manager.clone()),
        Arc::new(SystemClock::new()),
    )?;
    let ran = async {
        let fired = scheduler.fire_now(&args.name).await?;
        let Some(session_id) = fired.session_id else {
            bail!(
                "schedule {} did not start: {}",
                args.name,
                fired.reason.unwrap_or_default()
            );
        };
        let events = follow_session(
            &manager,
            &schedule_principal(&args.name),
            &session_id,
            false,
        )
        .await?;
        Ok((session_id, events))
    }
    .await;
    settle(&manager, &agent, ran, args.json).await
}
