//! `folio mcp login` / `folio mcp logout`: OAuth for an agent's streamable-HTTP MCP connections.
//! `login` opens the connection, running the authorization flow when the server asks for it
//! (the URL is printed, and opened with `$BROWSER` when set; the code comes back to a loopback
//! redirect), and stores the tokens under the state root (`mcp-auth/local/<connection>.json`,
//! mode 0600) where `run` and `serve` find them; `logout` deletes them.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use folio_agent::StateLayout;
use folio_agent::mcp::{LOCAL_PRINCIPAL, McpAuth, McpConnection, McpLogin, process_env};
use folio_project::{AgentDefinition, McpServerConfig, discover};

/// The `folio mcp` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum McpCommand {
    /// Authorize Folio with an OAuth-protected MCP server and store the tokens.
    Login(McpArgs),
    /// Delete the stored tokens of a connection.
    Logout(McpArgs),
}

/// Arguments of `folio mcp login` and `folio mcp logout`.
#[derive(Debug, clap::Args)]
pub(crate) struct McpArgs {
    /// The connection (the file name of `mcp-connections/<name>.toml` or `host-connections/`).
    connection: String,
    /// The agent project (a folder holding `agent/`).
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Where the tokens are stored (default `<dir>/.folio/state`).
    #[arg(long)]
    state_root: Option<PathBuf>,
}

/// Runs a `folio mcp` subcommand.
pub(crate) fn mcp(command: McpCommand) -> anyhow::Result<ExitCode> {
    let (args, login) = match command {
        McpCommand::Login(args) => (args, true),
        McpCommand::Logout(args) => (args, false),
    };
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
    let config = connection(&definition, &args.connection)?;
    let state = match &args.state_root {
        Some(path) => StateLayout::new(path),
        None => StateLayout::for_project(&args.dir),
    };
    let auth = McpAuth {
        dir: state.mcp_auth_dir(LOCAL_PRINCIPAL),
        login: Some(McpLogin::from_env()),
        shared: None,
    };
    let file = auth.file(&config.name);
    if !login {
        match std::fs::remove_file(&file) {
            Ok(()) => eprintln!("logged out of MCP server \"{}\"", config.name),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                eprintln!("no stored tokens for MCP server \"{}\"", config.name)
            }
            Err(err) => bail!("cannot delete {}: {err}", file.display()),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let connection = McpConnection::new(config.clone(), &definition.agent_dir, process_env())
            .with_auth(auth);
        let tools = connection.list_tools().await;
        connection.shutdown().await;
        let tools = tools?;
        eprintln!(
            "MCP server \"{}\" is authorized ({} tools); tokens in {}",
            config.name,
            tools.len(),
            file.display()
        );
        Ok(ExitCode::SUCCESS)
    })
}

/// The manifest of connection `name`, or which ones exist.
fn connection(definition: &AgentDefinition, name: &str) -> anyhow::Result<McpServerConfig> {
    let all = || {
        definition
            .mcp_connections
            .iter()
            .chain(&definition.host_connections)
    };
    match all().find(|config| config.name == name) {
        Some(config) => Ok(config.clone()),
        None => bail!(
            "no MCP connection \"{name}\" in this agent (it has: {}); name a file of agent/mcp-connections/ or agent/host-connections/",
            all()
                .map(|config| config.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
