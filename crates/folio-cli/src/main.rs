//! The `folio` command: wires the Folio crates into one binary.

use clap::{Parser, Subcommand};

/// Build, test and serve filesystem-first LLM agents.
#[derive(Debug, Parser)]
#[command(name = "folio", version, about, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The `folio` commands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Scaffold a project from a template (not yet available).
    Init,
    /// Print discovery diagnostics; exit 1 on any error (not yet available).
    Validate,
    /// Show what discovery found (not yet available).
    Info,
    /// Call an authored tool directly (not yet available).
    Call,
    /// Run one turn in a fresh chat session (not yet available).
    Run,
    /// Talk to a running agent (not yet available).
    Chat,
    /// Serve agents over HTTP (not yet available).
    Serve,
    /// Serve with reload on file changes (not yet available).
    Dev,
    /// Summarize a saved event log (not yet available).
    Trajectory,
    /// Run evals (not yet available).
    Eval,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    anyhow::bail!(
        "`folio {}` is not available in this build yet; see `folio --help` for the command index",
        format!("{:?}", cli.command).to_lowercase()
    )
}
