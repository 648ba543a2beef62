//! `folio serve`: one agent (`--dir` is a project) or every child project of `--dir`, over HTTP.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use folio_agent::mcp::McpTransport;
use folio_agent::peers::PeerDirectory;
use folio_agent::{Agent, discover};
use folio_agent::{LoadOptions, SharedBackends};
use folio_auth::Auth;
use folio_channels::{ChannelOptions, Channels};
use folio_model::{Provider, SessionRecordingProvider};
use folio_server::Browsers;
use folio_server::http::{HttpConfig, Layout, MCP_AUTH_CALLBACK, Mount, router_with};
use folio_session::schedule::{Clock, Scheduler, SystemClock};
use folio_session::{
    DEFAULT_LEASE_TTL, FaultPoint, LogBuffer, SessionManager, StateRoot, WorkspaceRoot,
    session_fixture,
};

use crate::model::open_model;

/// Arguments of `folio serve` (and `folio dev`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ServeArgs {
    /// A project (served alone) or a folder of projects (each served under its slug).
    #[arg(long, default_value = ".")]
    pub(crate) dir: PathBuf,
    /// `single`: the one agent's routes at the root instead of under `/<slug>`.
    #[arg(long, value_parser = ["single", "multi"])]
    mode: Option<String>,
    /// Preferred port (`0` picks a free one; a busy port → the next free one).
    #[arg(long, default_value_t = 3000)]
    port: u16,
    /// Interface to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Where sessions are stored (default `<dir>/.folio/state`; a slugged agent uses
    /// `<state-root>/<slug>`). Eval runs are read from `<state-root>/<slug>/evals/` in either
    /// mode, where `folio eval` writes them.
    #[arg(long)]
    state_root: Option<PathBuf>,
    /// Where new sessions' host workspaces go (`<dir>/<session id>`; a slugged agent uses
    /// `<dir>/<slug>`) instead of the state root: a filesystem every server sharing the
    /// sessions mounts. A turn of a session made under another workspace root is refused.
    #[arg(long)]
    workspace_root: Option<PathBuf>,
    /// Development mode (the playground lists every principal's runs on loopback).
    #[arg(long)]
    pub(crate) dev: bool,
    /// Require `Authorization: Bearer <S>` (principal `bearer`).
    #[arg(long)]
    bearer_token: Option<String>,
    /// TOML `principal = "token"` pairs, one principal per token.
    #[arg(long)]
    tokens_file: Option<PathBuf>,
    /// No authentication (principal `anonymous`).
    #[arg(long)]
    allow_anonymous: bool,
    /// Do not serve the playground.
    #[arg(long)]
    no_playground: bool,
    /// A session store shared by every server serving these sessions:
    /// postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE (migrated at start). Default: the
    /// embedded disk store under the state root.
    #[arg(long, env = "FOLIO_STORE")]
    store: Option<String>,
    /// With --store: how long a server's lease on a running turn lives unless renewed, in
    /// milliseconds; a dead server's turns are taken over after it.
    #[arg(long, default_value_t = DEFAULT_LEASE_TTL.as_millis() as u64, value_parser = clap::value_parser!(u64).range(300..=600_000))]
    lease_ttl_ms: u64,
    /// `provider:model`, overriding `agent.toml` and `FOLIO_MODEL`.
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// The URL clients reach the server at behind a proxy (e.g. `https://folio.example.com`):
    /// its host is accepted in `Host` and its origin in `Origin`.
    #[arg(long)]
    public_url: Option<String>,
    /// A further `Host` value to answer (`name` or `name:port`); loopback names and the
    /// listening address are always accepted. Repeatable.
    #[arg(long = "allowed-host")]
    allowed_hosts: Vec<String>,
    /// A web origin whose pages may call the server (`scheme://host[:port]`); same-origin pages
    /// always may. Repeatable.
    #[arg(long = "allowed-origin")]
    allowed_origins: Vec<String>,
    /// Single-user opt-out: session file tools reach the whole host disk instead of only the
    /// session workspace. Refused with more than one principal or a non-loopback listener.
    #[arg(long)]
    pub(crate) unconfined_files: bool,
    /// Record every session's model exchanges as a replay fixture
    /// `<DIR>/<slug>/<session id>.jsonl` (what `folio run --record` writes), appended as each
    /// model call completes; `folio eval --from-session ID` turns it into an offline eval.
    #[arg(long, value_name = "DIR", env = RECORD_DIR_ENV)]
    record_dir: Option<PathBuf>,
}

/// The environment variable `folio serve` and `folio eval` read `--record-dir` from.
pub(crate) const RECORD_DIR_ENV: &str = "FOLIO_RECORD_DIR";

/// The model an agent is served with: `--model` (else the agent's), each session's exchanges
/// recorded under `record` (`<record-dir>/<slug>`) when set.
#[derive(Debug, Clone)]
pub(crate) struct ModelChoice {
    /// `provider:model`, overriding `agent.toml` and `FOLIO_MODEL`.
    pub(crate) spec: Option<String>,
    /// Where each session's fixture goes (`<session id>.jsonl`).
    pub(crate) record: Option<PathBuf>,
}

/// Where `--record-dir` keeps the fixtures of the agent `slug`: `<record_dir>/<slug>`. The slug
/// is a directory's name (validated in the multi-agent layout); anything but one plain path
/// component is refused, so no agent writes outside `record_dir`.
pub(crate) fn agent_record_dir(record_dir: &Path, slug: &str) -> anyhow::Result<PathBuf> {
    let mut components = Path::new(slug).components();
    match (components.next(), components.next()) {
        (Some(std::path::Component::Normal(_)), None) => Ok(record_dir.join(slug)),
        _ => bail!(
            "cannot record the sessions of agent {slug:?} under {}: its folder name is not one plain path component (rename the folder)",
            record_dir.display()
        ),
    }
}

/// Creates `dir` (and missing parents) readable by the owner only: fixtures hold whole
/// conversations. An existing folder keeps its mode.
fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create the record folder {}", dir.display()))
}

/// `provider`, writing each session's exchanges to its fixture in `agent_dir`
/// ([`session_fixture`]).
fn record_sessions(provider: Arc<dyn Provider>, agent_dir: &Path) -> Arc<dyn Provider> {
    let agent_dir = agent_dir.to_path_buf();
    Arc::new(SessionRecordingProvider::new(
        provider,
        Arc::new(move |id: &str| session_fixture(&agent_dir, id)),
    ))
}

/// One agent project found under `--dir`.
pub(crate) struct Project {
    pub(crate) slug: String,
    pub(crate) dir: PathBuf,
    pub(crate) manager: SessionManager,
    pub(crate) state: StateRoot,
    /// Fires the agent's schedules while the server runs.
    pub(crate) scheduler: Scheduler,
    /// Its model (and where its sessions are recorded), for a reload.
    pub(crate) model: ModelChoice,
    /// Where MCP authorization servers send a principal's browser back (`<agent URL>` +
    /// `/v1/mcp-auth/callback`).
    pub(crate) mcp_redirect_uri: String,
}

/// The state root `--state-root` names (or `<project>/.folio/state`), before the layout adds
/// a slug; `folio eval --state-root` means the same.
pub(crate) fn base_root(state_root: Option<&Path>, dir: &Path) -> StateRoot {
    match state_root {
        Some(root) => StateRoot::new(root),
        None => StateRoot::for_project(dir),
    }
}

/// The state root of one agent's sessions: [`base_root`], plus `/<slug>` in the multi-agent
/// layout. Its eval runs are under the slug in both layouts
/// ([`folio_store_disk::eval_runs_root`]).
fn state_root(args: &ServeArgs, layout: Layout, dir: &Path, slug: &str) -> StateRoot {
    let root = base_root(args.state_root.as_deref(), dir);
    match layout {
        Layout::Single => root,
        Layout::Multi => root.for_agent(slug),
    }
}

/// Runs `folio serve` until SIGINT/SIGTERM.
pub(crate) fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        let server = start(&args).await?;
        server.run(None).await
    })
}

pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// A bound, not yet serving, server.
pub(crate) struct Server {
    pub(crate) projects: Vec<Project>,
    /// The mounted agents, where same-server peer connections find their peer.
    pub(crate) peers: PeerDirectory,
    listener: tokio::net::TcpListener,
    app: axum::Router,
}

/// Whether `dir` holds an agent project.
fn is_project(dir: &Path) -> bool {
    ["agent", "bot", "folio.toml"]
        .iter()
        .any(|name| dir.join(name).exists())
}

/// The slug an agent is mounted under: its directory's name (docs/agent-folder.md), which must be
/// a valid slug in the multi-agent layout.
pub(crate) fn slug_for(dir: &Path, layout: Layout) -> anyhow::Result<String> {
    let name = dir
        .canonicalize()
        .with_context(|| format!("cannot read {}", dir.display()))?
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match (layout, folio_project::slug_problem(&name)) {
        (Layout::Multi, Some(problem)) => bail!(
            "cannot mount {}: {problem} (or serve this one project with --mode single)",
            dir.display()
        ),
        _ => Ok(name),
    }
}

/// Discovers and loads the agent of `dir`, printing its diagnostics; `peers` are the agents of
/// the same server (`None` outside `folio serve`: a same-server peer connection is an error);
/// with `mcp_redirect_uri` (the server's MCP OAuth callback), each principal calls HTTP MCP
/// servers with its own tokens and a call that needs authorization parks its turn; `shared`
/// keeps artifacts and the principals' MCP tokens in a shared session store instead of the
/// state root.
pub(crate) async fn load_agent(
    dir: &Path,
    model: &ModelChoice,
    state: &StateRoot,
    unconfined_files: bool,
    peers: Option<&PeerDirectory>,
    mcp_redirect_uri: Option<&str>,
    shared: SharedBackends,
) -> anyhow::Result<(Agent, Vec<folio_protocol::DiagnosticInfo>)> {
    let discovery = discover(dir);
    for diagnostic in &discovery.diagnostics {
        eprintln!("{diagnostic}");
    }
    let diagnostics = discovery
        .diagnostics
        .iter()
        .map(folio_project::diagnostic_info)
        .collect();
    let Some(definition) = discovery.definition else {
        bail!(
            "{} has errors (listed above): fix them and serve again",
            dir.display()
        );
    };
    let (provider, model_id) = open_model(&definition, dir, model.spec.as_deref())?;
    let provider = match &model.record {
        Some(agent_dir) => record_sessions(provider, agent_dir),
        None => provider,
    };
    let options = LoadOptions {
        state_root: Some(state.clone()),
        unconfined_files,
        // A connection that cannot start is shown as failed and retried, not fatal.
        keep_failed_connections: true,
        peers: peers.cloned(),
        mcp_redirect_uri: mcp_redirect_uri.map(str::to_string),
        shared,
        ..LoadOptions::default()
    };
    let agent = Agent::load_with(definition, provider, model_id, options)
        .await
        .map_err(anyhow::Error::msg)?;
    Ok((agent, diagnostics))
}

/// `--unconfined-files` is a single-user opt-out: refused when several principals share the
/// server or it listens beyond loopback.
fn check_unconfined(args: &ServeArgs, auth: &Auth) -> anyhow::Result<()> {
    if !args.unconfined_files {
        return Ok(());
    }
    if let Auth::Tokens(tokens) = auth
        && tokens.len() > 1
    {
        bail!(
            "--unconfined-files is for a single user, but --tokens-file names {} principals: drop the flag",
            tokens.len()
        );
    }
    let loopback = args.host == "localhost"
        || args
            .host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if !loopback {
        bail!(
            "--unconfined-files is for a single user on this machine, but --host {} listens beyond loopback: drop the flag or listen on 127.0.0.1",
            args.host
        );
    }
    Ok(())
}

/// Each principal's own quotas (`limits = { … }` of its entry in the tokens file).
fn principal_limits(
    tokens_file: Option<&Path>,
) -> anyhow::Result<BTreeMap<String, folio_project::PrincipalLimits>> {
    let Some(path) = tokens_file else {
        return Ok(BTreeMap::new());
    };
    let mut own = BTreeMap::new();
    for entry in folio_auth::read_tokens_file(path).map_err(anyhow::Error::msg)? {
        if let Some(limits) = entry.limits {
            let limits: folio_project::PrincipalLimits = toml::Value::Table(limits)
                .try_into()
                .with_context(|| {
                    format!(
                        "tokens file {}: {}.limits (keys: sessions, running_turns, messages_per_minute, tool_calls_per_turn, storage_bytes)",
                        path.display(),
                        entry.principal
                    )
                })?;
            own.insert(entry.principal, limits);
        }
    }
    Ok(own)
}

/// Loads every agent, opens its sessions (recovering from a crash) and binds the port.
pub(crate) async fn start(args: &ServeArgs) -> anyhow::Result<Server> {
    let auth = Auth::from_flags(
        args.bearer_token.as_deref(),
        args.tokens_file.as_deref(),
        args.allow_anonymous,
    )
    .map_err(anyhow::Error::msg)?;
    check_unconfined(args, &auth)?;
    let own_limits = principal_limits(args.tokens_file.as_deref())?;
    let layout = match args.mode.as_deref() {
        Some("single") => Layout::Single,
        _ => Layout::Multi,
    };
    let dirs: Vec<PathBuf> = if is_project(&args.dir) {
        vec![args.dir.clone()]
    } else {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&args.dir)
            .with_context(|| format!("cannot read {}", args.dir.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir() && is_project(p))
            .collect();
        dirs.sort();
        dirs
    };
    if dirs.is_empty() {
        bail!(
            "{} holds no agent project (a folder with agent/): run folio init or pass --dir",
            args.dir.display()
        );
    }
    if layout == Layout::Single && dirs.len() > 1 {
        bail!(
            "--mode single serves one agent, but {} holds {}: pass --dir of one project",
            args.dir.display(),
            dirs.len()
        );
    }
    let store = match &args.store {
        None => None,
        Some(url) => Some(open_store(url, dirs.len()).await?),
    };
    let fault = fault_point()?;
    let clock = schedule_clock()?;
    // Bound first: channels link to sessions under the address clients reach.
    let listener = bind(&args.host, args.port).await?;
    let addr = listener.local_addr()?;
    let public = args
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}"));
    let mut projects = Vec::new();
    let mut mounts = Vec::new();
    let mut channel_routes = Vec::new();
    let peers = PeerDirectory::new();
    for dir in dirs {
        let slug = slug_for(&dir, layout)?;
        let state = state_root(args, layout, &dir, &slug);
        if store.is_none() {
            let marker = folio_store_disk::copy_marker(&state).with_context(|| {
                format!("cannot read the copy marker of {}", state.path().display())
            })?;
            crate::store_copy::refuse_unfinished_copy(&state.path().display().to_string(), marker)?;
        }
        let base_url = match layout {
            Layout::Multi => format!("{}/{slug}", public.trim_end_matches('/')),
            Layout::Single => public.clone(),
        };
        let mcp_redirect_uri = format!("{}{MCP_AUTH_CALLBACK}", base_url.trim_end_matches('/'));
        let model = ModelChoice {
            spec: args.model.clone(),
            record: match &args.record_dir {
                Some(record_dir) => {
                    let agent_dir = agent_record_dir(record_dir, &slug)?;
                    create_private_dir(&agent_dir)?;
                    Some(agent_dir)
                }
                None => None,
            },
        };
        let (agent, diagnostics) = load_agent(
            &dir,
            &model,
            &state,
            args.unconfined_files,
            Some(&peers),
            Some(&mcp_redirect_uri),
            store
                .as_ref()
                .map(folio_session::shared_backends)
                .unwrap_or_default(),
        )
        .await?;
        let manager = match &store {
            None => SessionManager::open(state.clone(), Arc::new(agent), LogBuffer::new()).await,
            Some(store) => {
                SessionManager::open_on_store(
                    state.clone(),
                    Arc::new(agent),
                    LogBuffer::new(),
                    store.clone(),
                    std::time::Duration::from_millis(args.lease_ttl_ms),
                )
                .await
            }
        }
        .map_err(anyhow::Error::msg)?;
        manager.set_fault(fault);
        manager.set_clock(clock.clone());
        manager.set_principal_limits(own_limits.clone());
        if let Some(agent_dir) = &model.record {
            manager.set_record_dir(agent_dir.clone());
        }
        folio_server::host::serve_host_api(&manager, state.path()).await?;
        if let Some(dir) = &args.workspace_root {
            let root = WorkspaceRoot::open(dir).map_err(anyhow::Error::msg)?;
            manager.set_workspace_root(match layout {
                Layout::Single => root,
                Layout::Multi => root.for_agent(&slug).map_err(anyhow::Error::msg)?,
            });
        }
        let channels = Channels::open(
            &manager,
            ChannelOptions {
                env: std::sync::Arc::new(|name: &str| std::env::var(name).ok()),
                caller_auth: auth.clone(),
                base_url,
            },
        )?;
        channels.resume().await?;
        channel_routes.push((slug.clone(), channels.router()));
        let scheduler = Scheduler::open(
            &state,
            &manager.agent().definition.schedules,
            Arc::new(manager.clone()),
            clock.clone(),
        )?;
        tokio::spawn(scheduler.clone().run(manager.shutdown_token()));
        tokio::spawn(manager.clone().reminders().clone().run());
        tokio::spawn(manager.clone().retention().clone().run());
        mounts.push(Mount {
            slug: slug.clone(),
            manager: manager.clone(),
            diagnostics,
            evals: folio_store_disk::eval_runs_root(
                &base_root(args.state_root.as_deref(), &dir),
                &slug,
            ),
        });
        peers.mount(&slug, Arc::new(manager.peers().clone()));
        projects.push(Project {
            slug,
            dir,
            manager,
            state,
            scheduler,
            model,
            mcp_redirect_uri,
        });
    }
    check_peers(&projects, &peers)?;
    let browsers = Browsers::from_flags(
        addr,
        args.public_url.as_deref(),
        &args.allowed_hosts,
        &args.allowed_origins,
    )?;
    let app = router_with(
        mounts,
        HttpConfig {
            auth,
            layout,
            playground: !args.no_playground,
            dev: args.dev,
            browsers,
            ..HttpConfig::default()
        },
        channel_routes,
    );
    let base = format!("http://{addr}");
    println!("folio: listening on {base}");
    for project in &projects {
        let url = match layout {
            Layout::Multi => format!("{base}/{}", project.slug),
            Layout::Single => base.clone(),
        };
        let playground = if args.no_playground {
            String::new()
        } else {
            format!(" (playground: {url}/playground)")
        };
        println!("agent {}: {url}{playground}", project.slug);
    }
    Ok(Server {
        projects,
        peers,
        listener,
        app,
    })
}

/// Opens (and migrates) the shared session store `url` for `agents` agents.
async fn open_store(
    url: &str,
    agents: usize,
) -> anyhow::Result<Arc<dyn folio_store::SessionStore>> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        bail!(
            "--store {url}: the shared store is PostgreSQL (postgres://USER@HOST:PORT/DATABASE); omit --store for the embedded disk store"
        );
    }
    if agents > 1 {
        bail!(
            "--store serves one agent per database, but --dir holds {agents}: serve each project with its own --dir and database"
        );
    }
    let store = folio_store_postgres::PgStore::open(url, folio_store_postgres::PgOptions::default())
        .await
        .with_context(|| "cannot open the session store (check that PostgreSQL runs and the URL names a database you may use; `folio store check --store URL` says more)")?;
    let marker = folio_store::SessionStore::copy_marker(&store).await?;
    crate::store_copy::refuse_unfinished_copy(&store.location(), marker)?;
    Ok(Arc::new(store))
}

/// Refuses to serve when a same-server peer connection names an agent this server does not
/// mount, naming the connection and the slug.
fn check_peers(projects: &[Project], peers: &PeerDirectory) -> anyhow::Result<()> {
    let mounted = peers.slugs();
    for project in projects {
        let agent = project.manager.agent();
        for config in &agent.definition.mcp_connections {
            if let McpTransport::Peer {
                agent: peer,
                url: None,
                ..
            } = &config.transport
                && !mounted.contains(peer)
            {
                bail!(
                    "agent {}: {}: peer agent \"{peer}\" is not mounted in this server (mounted: {}): serve the folder that holds both projects, fix the slug, or add url = \"http://<server>/{peer}/v1/mcp\" for a peer on another server",
                    project.slug,
                    config.file.display(),
                    mounted.join(", ")
                );
            }
        }
    }
    Ok(())
}

/// Binds `host:port`, or the next free port when it is busy; port 0 picks any free port.
async fn bind(host: &str, port: u16) -> anyhow::Result<tokio::net::TcpListener> {
    let last = if port == 0 {
        0
    } else {
        port.saturating_add(100)
    };
    let mut candidate = port;
    loop {
        match tokio::net::TcpListener::bind((host, candidate)).await {
            Ok(listener) => {
                if candidate != port {
                    eprintln!("folio: port {port} is busy; using {candidate}");
                }
                return Ok(listener);
            }
            Err(err) if err.kind() == std::io::ErrorKind::AddrInUse && candidate < last => {
                candidate += 1;
            }
            Err(err) => bail!("cannot listen on {host}:{candidate}: {err}"),
        }
    }
}

impl Server {
    /// Serves until SIGINT/SIGTERM (or `stop` fires), then shuts down gracefully: running
    /// turns are recorded as interrupted and logs synced.
    pub(crate) async fn run(
        self,
        stop: Option<tokio_util::sync::CancellationToken>,
    ) -> anyhow::Result<ExitCode> {
        let managers: Vec<SessionManager> =
            self.projects.iter().map(|p| p.manager.clone()).collect();
        let shutdown = async move {
            let stop = stop.unwrap_or_default();
            tokio::select! {
                () = signal() => {}
                () = stop.cancelled() => {}
            }
            eprintln!("folio: shutting down");
            for manager in &managers {
                manager.shutdown().await;
            }
        };
        axum::serve(
            folio_server::no_delay(self.listener),
            self.app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(shutdown)
        .await
        .context("the server failed")?;
        Ok(ExitCode::SUCCESS)
    }
}

async fn signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The crash-test fault point armed by `FOLIO_FAULT` (unset: none). Crash tests set it to make
/// the process abort between two durable steps; nothing else arms it.
fn fault_point() -> anyhow::Result<Option<FaultPoint>> {
    match std::env::var("FOLIO_FAULT") {
        Ok(name) => {
            let point = name.parse::<FaultPoint>()?;
            eprintln!(
                "folio: FOLIO_FAULT={point} is set: this server aborts at that point (crash test)"
            );
            Ok(Some(point))
        }
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => {
            anyhow::bail!("FOLIO_FAULT is not valid UTF-8: unset it")
        }
    }
}

/// The clock of schedules and reminders: the system clock, or (end-to-end tests only) one that
/// starts at `FOLIO_TEST_CLOCK_START` (RFC 3339) and runs in real time from there.
fn schedule_clock() -> anyhow::Result<Arc<dyn Clock>> {
    match std::env::var("FOLIO_TEST_CLOCK_START") {
        Ok(start) => {
            let start = start
                .parse::<chrono::DateTime<chrono::Utc>>()
                .with_context(|| {
                    format!("FOLIO_TEST_CLOCK_START={start} is not an RFC 3339 instant: unset it")
                })?;
            eprintln!(
                "folio: FOLIO_TEST_CLOCK_START is set: schedules run on a clock starting at {start} (test)"
            );
            Ok(Arc::new(SystemClock::starting_at(start)))
        }
        Err(std::env::VarError::NotPresent) => Ok(Arc::new(SystemClock::new())),
        Err(std::env::VarError::NotUnicode(_)) => {
            anyhow::bail!("FOLIO_TEST_CLOCK_START is not valid UTF-8: unset it")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_paths_stay_inside_the_record_dir() {
        let root = Path::new("/rec");
        assert_eq!(
            agent_record_dir(root, "reviewer").unwrap(),
            Path::new("/rec/reviewer")
        );
        for slug in ["..", ".", "", "a/b", "/etc", "../x"] {
            assert!(agent_record_dir(root, slug).is_err(), "{slug:?}");
        }
        let agent = Path::new("/rec/reviewer");
        let id = "ses_01ARZ3NDEKTSV4RRFFQ69G5FAV";
        assert_eq!(
            session_fixture(agent, id).unwrap(),
            Path::new("/rec/reviewer/ses_01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl")
        );
        for hostile in [
            "../../etc/passwd",
            "ses_../../../../../../../tmp",
            "ses_01ARZ3NDEKTSV4RRFFQ69G5FA/",
            "/abs",
            "",
        ] {
            assert_eq!(session_fixture(agent, hostile), None, "{hostile:?}");
        }
    }
}
