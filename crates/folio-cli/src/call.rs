//! `folio call`: a direct, deterministic call of an authored tool without a model
//! (docs/tools.md): the input is validated, the approval gate is skipped.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use folio_agent::tools::{AuthoredTool, ScratchMode, TodoList, Tool, ToolContext};
use folio_project::discover;
use folio_protocol::CallOutput;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Arguments of `folio call`.
#[derive(Debug, clap::Args)]
pub(crate) struct CallArgs {
    /// The authored tool (`agent/tools/<tool>.toml`).
    tool: String,
    /// The tool input, a JSON object.
    #[arg(long)]
    input: String,
    /// The agent project (a folder holding `agent/`).
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Run as in a dry-run session (write tools return their `dry_run_result`).
    #[arg(long)]
    dry_run: bool,
}

/// Runs the call on a fresh tokio runtime and prints `{ok, result, isError}`.
pub(crate) fn call(args: CallArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(call_async(args))
}

async fn call_async(args: CallArgs) -> anyhow::Result<ExitCode> {
    let discovery = discover(&args.dir);
    for diagnostic in &discovery.diagnostics {
        eprintln!("{diagnostic}");
    }
    let Some(definition) = discovery.definition else {
        bail!(
            "{} has errors (listed above): run `folio validate` and fix them",
            args.dir.display()
        );
    };
    let Some(tool) = definition.tools.iter().find(|t| t.name == args.tool) else {
        let names: Vec<&str> = definition.tools.iter().map(|t| t.name.as_str()).collect();
        bail!(
            "no authored tool \"{}\" in {} (authored tools: {})",
            args.tool,
            args.dir.display(),
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        );
    };
    let tool = AuthoredTool::new(tool)
        .with_context(|| format!("tools/{}.toml: input_schema", args.tool))?;
    let input: Value = serde_json::from_str(&args.input)
        .with_context(|| format!("--input is not JSON: {}", args.input))?;
    let workspace = tempfile::Builder::new()
        .prefix("folio-call-")
        .tempdir()
        .context("cannot create a workspace for the call")?;
    let ctx = ToolContext {
        fs: folio_fs::local_fs(workspace.path()),
        workspace: workspace.path().to_path_buf(),
        scratch: ScratchMode::Host,
        cancel: CancellationToken::new(),
        todos: TodoList::default(),
        session_id: "direct".to_string(),
        call_id: format!("call_direct_{}", ulid::Ulid::generate()),
        dry_run: args.dry_run,
        purpose: Some("direct".to_string()),
        continuation_key: None,
        principal: "local".to_string(),
        peer_depth: 0,
        turn_id: None,
        host: None,
    };
    let (result, is_error) = match tool.prepare(input) {
        Err(invalid) => {
            eprintln!("error: {}: {invalid}", args.tool);
            (Value::String(invalid.0), true)
        }
        Ok(input) => match tool.call(input, &ctx).await {
            Ok(output) => (output.to_event_value(), false),
            Err(err) => (Value::String(err.0), true),
        },
    };
    println!(
        "{}",
        serde_json::to_string_pretty(&CallOutput::new(result, is_error))?
    );
    Ok(if is_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
