//! The `folio` command: wires the Folio crates into one binary.
//!
//! Exit status: 0 on success, 1 when the work failed (a failed turn, a validation error),
//! 2 for bad usage. Errors are one line on stderr; results go to stdout.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod call;
mod chat;
mod completions;
mod dev;
mod doctor;
mod eval;
mod github;
mod help;
mod host;
mod info;
mod init;
mod mcp;
mod model;
mod reference;
mod render;
mod run;
mod schedule;
mod schema;
mod schema_ts;
mod serve;
mod store;
mod store_copy;
mod telemetry;
mod trajectory;
mod validate;

/// What `folio --version` prints: the crate version and the commit it was built from.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("FOLIO_COMMIT"), ")");

/// Build, test and serve filesystem-first LLM agents.
#[derive(Debug, Parser)]
#[command(
    name = "folio",
    version = VERSION,
    about,
    arg_required_else_help = true,
    disable_help_subcommand = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// How log lines are written on stderr: `text`, or `json` (one object per line, with
    /// `session_id`, `turn_id` and `trace_id` inside a turn).
    #[arg(long, global = true, value_enum, default_value_t)]
    log_format: folio_telemetry::LogFormat,
}

/// The `folio` commands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Run one turn in a fresh chat session: events to stderr, the result to stdout.
    Run(run::RunArgs),
    /// Summarize a saved event log in the same shape as `run --json`.
    Trajectory(TrajectoryArgs),
    /// Check the agent folder: one line per problem; exit 1 on errors.
    Validate(validate::ValidateArgs),
    /// Show what discovery found: agent, model, tools, skills, channels, schedules.
    Info(info::InfoArgs),
    /// Call an authored tool directly, without a model; prints {ok, result, isError}.
    Call(call::CallArgs),
    /// Scaffold a project from a template.
    Init(init::InitArgs),
    /// Serve one agent or every child project over HTTP.
    Serve(serve::ServeArgs),
    /// `serve --dev` that reloads an agent when its files change.
    Dev(serve::ServeArgs),
    /// Talk to a running agent, following the stream (a REPL without --message).
    Chat(chat::ChatArgs),
    /// Print a command's help, or its arguments as JSON with --json.
    Help(help::HelpArgs),
    /// List the agent's schedules (next slots, last outcome), or fire one now.
    Schedule(schedule::ScheduleArgs),
    /// Write the JSON Schema of every agent-folder file kind (editors check agent files with them).
    Schema(schema::SchemaArgs),
    /// Run the evals under evals/ and report them; exit 1 when any case fails.
    Eval(eval::EvalArgs),
    /// GitHub channel tools: `replay` turns a PR or a saved payload into a signed delivery.
    #[command(subcommand)]
    Github(github::GithubCommand),
    /// OAuth for MCP connections: `login` authorizes and stores tokens, `logout` deletes them.
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// Look after a session store: `migrate` a PostgreSQL schema, `check` it, show `stats`,
    /// `copy` a store into another (disk ↔ PostgreSQL, or a backup).
    #[command(subcommand)]
    Store(store::StoreCommand),
    /// The host API from inside a session's tool or hook: storage, files, reminders,
    /// artifacts, host connections, telemetry (prints JSON).
    #[command(subcommand)]
    Host(host::HostCommand),
    /// Check what this machine needs (agent, model key, Node.js, git, state root, port) and
    /// say how to fix each problem; exit 1 when a run or serve would fail.
    Doctor(doctor::DoctorArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completions(completions::CompletionsArgs),
    /// Print the folio(1) man page, or write every command's page with --out DIR.
    Man(completions::ManArgs),
}

/// Arguments of `folio trajectory`.
#[derive(Debug, clap::Args)]
struct TrajectoryArgs {
    /// The event log (`<state-root>/traces/<sessionId>.ndjson`).
    #[arg(long)]
    events: PathBuf,
    /// Print the result as JSON (exactly what `run --json` printed).
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(
        cli.command,
        Command::Serve(_) | Command::Dev(_) | Command::Chat(_)
    ) {
        // A one-shot command piped into `head` should end quietly when the pipe closes, like
        // other Unix tools, instead of failing on a broken pipe. Servers keep ignoring SIGPIPE.
        // SAFETY: restoring the default disposition of one signal before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let project = match &cli.command {
        Command::Run(args) => Some(args.dir.as_path()),
        Command::Serve(args) | Command::Dev(args) => Some(args.dir.as_path()),
        _ => None,
    };
    let telemetry = match telemetry::install(cli.log_format, project) {
        Ok(telemetry) => telemetry,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Trajectory(args) => trajectory::trajectory(&args.events, args.json),
        Command::Validate(args) => validate::validate(args),
        Command::Info(args) => info::info(args),
        Command::Call(args) => call::call(args),
        Command::Init(args) => init::init(args),
        Command::Serve(args) => serve::serve(args),
        Command::Dev(mut args) => {
            args.dev = true;
            dev::dev(args)
        }
        Command::Chat(args) => chat::chat(args),
        Command::Help(args) => help::help(Cli::command(), args),
        Command::Schema(args) => schema::schema(Cli::command(), args),
        Command::Eval(args) => eval::eval(args),
        Command::Schedule(args) => schedule::schedule(args),
        Command::Github(command) => github::github(command),
        Command::Mcp(command) => mcp::mcp(command),
        Command::Store(command) => store::store(command),
        Command::Host(command) => host::host(command),
        Command::Doctor(args) => doctor::doctor(args),
        Command::Completions(args) => completions::completions(Cli::command(), args),
        Command::Man(args) => completions::man(Cli::command(), args),
    };
    telemetry.shutdown();
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", one_line(&err));
            ExitCode::from(1)
        }
    }
}

/// An error and its causes on one line, skipping a cause its parent's message already quotes.
fn one_line(err: &anyhow::Error) -> String {
    let mut message = err.to_string();
    for cause in err.chain().skip(1) {
        let cause = cause.to_string();
        if !message.contains(&cause) {
            message.push_str(": ");
            message.push_str(&cause);
        }
    }
    message
}
