//! `folio info`: what discovery found — agent, model, tools (with schemas), skills, channels,
//! schedules, and each MCP connection's OAuth state (from the stored credentials of principal
//! `local`; never a token) — for a person, or as JSON with `--json`. With `--connect` it also
//! opens each MCP connection and shows the protocol version the server agreed to (opening one
//! starts a stdio server, so it is not the default).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::bail;
use folio_project::{AgentDefinition, McpTransport, NativeTool, discover};
use folio_protocol::{AgentInfo, ConnectionAuth, ConnectionAuthState, ConnectionCheck};

/// Arguments of `folio info`.
#[derive(Debug, clap::Args)]
pub(crate) struct InfoArgs {
    /// The agent project (a folder holding `agent/`).
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Print the description as JSON.
    #[arg(long)]
    json: bool,
    /// Open each MCP connection and show its negotiated protocol version (starts stdio
    /// servers).
    #[arg(long)]
    connect: bool,
    /// Where the MCP tokens are stored (default `<dir>/.folio/state`).
    #[arg(long)]
    state_root: Option<PathBuf>,
}

/// A one-line summary of a transport.
fn transport_line(transport: &McpTransport) -> String {
    match transport {
        McpTransport::Stdio { command, args, .. } => format!("stdio: {command} {}", args.join(" ")),
        McpTransport::Http { url, .. } => format!("http: {url}"),
        McpTransport::Peer {
            agent, url: None, ..
        } => format!("peer agent: {agent}"),
        McpTransport::Peer {
            agent,
            url: Some(url),
            ..
        } => format!("peer agent: {agent} at {url}"),
    }
}

/// The human form of [`folio_project::describe`].
fn info_text(definition: &AgentDefinition, info: &AgentInfo) -> String {
    let mut out = format!("agent: {}\n", definition.name);
    if let Some(description) = &definition.description {
        out.push_str(&format!("description: {description}\n"));
    }
    out.push_str(&format!(
        "model: {}\n",
        definition.config.model.as_deref().unwrap_or("(not set)")
    ));
    out.push_str(&format!(
        "root: {}\n",
        if definition.is_rooted() {
            "authored [root]"
        } else {
            "host workspace"
        }
    ));
    out.push_str(&format!(
        "built-in tools: {}\n",
        definition
            .native_tools
            .iter()
            .map(NativeTool::tool_name)
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let section = |out: &mut String, title: &str, items: Vec<String>| {
        if !items.is_empty() {
            out.push_str(&format!("{title}:\n"));
            for item in items {
                out.push_str(&format!("  {item}\n"));
            }
        }
    };
    section(
        &mut out,
        "authored tools",
        definition
            .tools
            .iter()
            .map(|t| {
                format!(
                    "{} ({}, {}{}): {}",
                    t.name,
                    serde_json::to_value(t.effect)
                        .unwrap_or_default()
                        .as_str()
                        .unwrap_or(""),
                    serde_json::to_value(t.execution)
                        .unwrap_or_default()
                        .as_str()
                        .unwrap_or(""),
                    if t.needs_approval {
                        ", needs approval"
                    } else {
                        ""
                    },
                    t.description
                )
            })
            .collect(),
    );
    section(
        &mut out,
        "skills",
        definition
            .skills
            .iter()
            .map(|s| {
                format!(
                    "{} ({}): {}",
                    s.name,
                    serde_json::to_value(s.form)
                        .unwrap_or_default()
                        .as_str()
                        .unwrap_or(""),
                    s.description.as_deref().unwrap_or("(from its command)")
                )
            })
            .collect(),
    );
    for (title, list) in [
        ("MCP connections", &definition.mcp_connections),
        ("host connections", &definition.host_connections),
    ] {
        section(
            &mut out,
            title,
            list.iter()
                .map(|c| format!("{} ({})", c.name, transport_line(&c.transport)))
                .collect(),
        );
    }
    section(
        &mut out,
        "MCP auth",
        info.connection_auth
            .iter()
            .map(|state| format!("{}: {}", state.name, auth_line(&state.auth)))
            .collect(),
    );
    section(
        &mut out,
        "connection checks",
        info.connection_checks
            .iter()
            .map(|check| match (&check.protocol_version, &check.error) {
                (_, Some(error)) => format!("{}: {error}", check.name),
                (version, None) => format!(
                    "{}: protocol {}, {} tools",
                    check.name,
                    version.as_deref().unwrap_or("(not reported)"),
                    check.tools.unwrap_or_default()
                ),
            })
            .collect(),
    );
    section(
        &mut out,
        "subagents",
        definition
            .subagents
            .iter()
            .map(|s| format!("{}: {}", s.id, s.description))
            .collect(),
    );
    section(
        &mut out,
        "hooks",
        definition
            .hooks
            .iter()
            .map(|h| format!("{} (on {})", h.name, h.events.join(", ")))
            .collect(),
    );
    if let Some(artifacts) = &definition.artifacts {
        out.push_str(&format!(
            "artifacts: {} kind(s), max {}{}\n",
            artifacts.kinds.len(),
            artifacts.max,
            if artifacts.agent_tool {
                ", tag_artifact offered"
            } else {
                ""
            }
        ));
    }
    section(
        &mut out,
        "channels",
        definition
            .channels
            .iter()
            .map(|c| format!("{} ({})", c.id, c.kind))
            .collect(),
    );
    section(
        &mut out,
        "schedules",
        definition
            .schedules
            .iter()
            .map(|s| {
                format!(
                    "{} ({}, {})",
                    s.name,
                    s.cadence.expression(),
                    s.cadence.timezone()
                )
            })
            .collect(),
    );
    if let Some(sandbox) = &info.sandbox {
        out.push_str(&format!("sandbox seeds: {sandbox}\n"));
    }
    out
}

/// A one-line summary of an OAuth state.
fn auth_line(auth: &ConnectionAuth) -> String {
    match auth {
        ConnectionAuth::None => "none".into(),
        ConnectionAuth::TokenStored {
            expires_at,
            expired,
            scopes,
            refreshable,
        } => {
            let expiry = match (expires_at, expired) {
                (Some(at), true) => format!("expired {}", at.to_rfc3339()),
                (Some(at), false) => format!("expires {}", at.to_rfc3339()),
                (None, _) => "no expiry given".into(),
            };
            let scopes = if scopes.is_empty() {
                "no scopes recorded".to_string()
            } else {
                format!("scopes {}", scopes.join(" "))
            };
            let renewal = if *refreshable {
                "refreshable"
            } else {
                "not refreshable"
            };
            format!("token stored ({expiry}; {scopes}; {renewal})")
        }
        ConnectionAuth::NeedsLogin { reason } => format!("needs login ({reason})"),
        ConnectionAuth::ClientCredentials => {
            "client credentials (no token yet; obtained when the server asks)".into()
        }
    }
}

/// Prints what discovery found in `args.dir`.
pub(crate) fn info(args: InfoArgs) -> anyhow::Result<ExitCode> {
    let discovery = discover(&args.dir);
    for diagnostic in &discovery.diagnostics {
        eprintln!("{diagnostic}");
    }
    let Some(definition) = &discovery.definition else {
        bail!(
            "{} has errors (listed above): run `folio validate` and fix them",
            args.dir.display()
        );
    };
    let mut info = folio_project::describe(definition);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| anyhow::anyhow!("cannot start the async runtime: {err}"))?;
    let state = match &args.state_root {
        Some(path) => folio_agent::StateLayout::new(path),
        None => folio_agent::StateLayout::for_project(&definition.project_dir),
    };
    let auth_dir = state.mcp_auth_dir(folio_agent::mcp::LOCAL_PRINCIPAL);
    if args.connect {
        info.connection_checks = runtime.block_on(connection_checks(definition, &auth_dir));
    }
    info.connection_auth = runtime.block_on(connection_auth(definition, &auth_dir));
    if args.json {
        info.diagnostics = discovery
            .diagnostics
            .iter()
            .map(folio_project::diagnostic_info)
            .collect();
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        print!("{}", info_text(definition, &info));
    }
    Ok(ExitCode::SUCCESS)
}

/// Each HTTP MCP connection's OAuth state for principal `local` (after `--connect`, which may
/// have obtained or refreshed tokens).
async fn connection_auth(definition: &AgentDefinition, dir: &Path) -> Vec<ConnectionAuthState> {
    let mut states = Vec::new();
    for config in definition
        .mcp_connections
        .iter()
        .chain(&definition.host_connections)
    {
        if let Some(auth) = folio_agent::mcp::auth_state(config, dir).await {
            states.push(ConnectionAuthState {
                name: config.name.clone(),
                auth,
            });
        }
    }
    states
}

/// Opens every MCP connection of `definition` (as a turn would) and reports what each found.
async fn connection_checks(definition: &AgentDefinition, dir: &Path) -> Vec<ConnectionCheck> {
    let connections = folio_agent::mcp::Connections::new(
        &definition.mcp_connections,
        &definition.host_connections,
        &definition.agent_dir,
        &folio_agent::mcp::process_env(),
        Some(&folio_agent::mcp::McpAuth {
            dir: dir.to_path_buf(),
            login: None,
            shared: None,
        }),
    );
    let mut checks = Vec::new();
    for (name, connection) in connections.model.iter().chain(connections.host.iter()) {
        let check = match connection.list_tools().await {
            Ok(tools) => ConnectionCheck {
                name: name.clone(),
                protocol_version: connection.protocol_version().await,
                tools: Some(tools.len()),
                error: None,
            },
            Err(err) => ConnectionCheck {
                name: name.clone(),
                protocol_version: None,
                tools: None,
                error: Some(err.to_string()),
            },
        };
        checks.push(check);
    }
    connections.shutdown().await;
    checks
}
