//! An agent whose FileSystem is built per session from the session's continuation key: each
//! tenant (`acme` in the key `acme:ticket-7`) gets its own folder under a tenants directory as
//! its root, so a session of one tenant never sees another tenant's files.
//!
//! The key comes from whoever opens the session: a channel, in-process code, or the
//! `continuationKey` of `POST /v1/session` ([`app`] serves the agent over HTTP). An HTTP caller
//! can send any key, so the root is the tenant's folder only when the session's principal may
//! reach that tenant ([`Tenants::may_reach`]): its own tenant, or any for `local`.
//!
//! ```no_run
//! # async fn run() -> anyhow::Result<()> {
//! use folio_example_tenant_root::{ModelSpec, Tenants, open};
//! use folio_protocol::CreateSession;
//! use folio_session::SessionOptions;
//!
//! let tenants = Tenants::new("/srv/tenants");
//! let (manager, _agent) = open(
//!     std::path::Path::new("examples/tenant-root"),
//!     tenants,
//!     std::path::Path::new("/tmp/tenant-state"),
//!     ModelSpec {
//!         spec: "openai:gpt-4.1-mini",
//!         base_url: None,
//!         env: &|name: &str| std::env::var(name).ok(),
//!     },
//! )
//! .await?;
//! let options = SessionOptions {
//!     continuation_key: Some("acme:ticket-7".into()),
//!     ..SessionOptions::default()
//! };
//! manager
//!     .sessions()
//!     .create_with("local", "example", CreateSession::message("What do my notes say?"), options)
//!     .await?;
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use folio_agent::{Agent, LiveRoot, LoadOptions, RootContext, discover};
use folio_auth::Auth;
use folio_fs::{FileSystem, empty_fs, host_dir};
use folio_model::{ProviderConfig, open_provider};
use folio_protocol::EventBody;
use folio_server::http::{HttpConfig, Layout, Mount, router};
use folio_session::{LogBuffer, SessionManager, StateRoot};

/// The folder holding one folder per tenant.
#[derive(Debug, Clone)]
pub struct Tenants {
    dir: PathBuf,
}

impl Tenants {
    /// Tenants under `dir` (each tenant's folder is created at its first session).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Tenants { dir: dir.into() }
    }

    /// The tenant a continuation key names: its part before the first `:`, when that is a
    /// plain name (`[A-Za-z0-9_-]+`, so it can never name a path outside the tenants folder).
    pub fn tenant_of(key: &str) -> Option<&str> {
        let tenant = key.split(':').next()?;
        let plain = !tenant.is_empty()
            && tenant
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        plain.then_some(tenant)
    }

    /// Whether a session of `principal` may work in `tenant`'s folder: a tenant's own
    /// principal (a bearer token per tenant, `--tokens-file` style) reaches only that tenant;
    /// `local` (the machine's own user, and in-process callers) reaches every tenant.
    pub fn may_reach(principal: &str, tenant: &str) -> bool {
        principal == LOCAL || principal == tenant
    }

    /// The root of one session: its tenant's folder, or an empty read-only tree when the
    /// session has no tenant (no key, a key that names none, a tenant its principal may not
    /// reach, or a folder that cannot be made).
    pub fn root_for(&self, ctx: &RootContext) -> Arc<dyn FileSystem> {
        let Some(tenant) = ctx.continuation_key.as_deref().and_then(Tenants::tenant_of) else {
            return empty_fs();
        };
        if !Tenants::may_reach(&ctx.principal, tenant) {
            return empty_fs();
        }
        let dir = self.dir.join(tenant);
        match std::fs::create_dir_all(&dir).map(|()| host_dir(&dir, false)) {
            Ok(Ok(root)) => root,
            _ => empty_fs(),
        }
    }

    /// The live root: [`Tenants::root_for`], built once per session.
    pub fn live_root(self) -> LiveRoot {
        LiveRoot::per_session(move |ctx| self.root_for(ctx))
    }
}

/// The principal of the machine's own user (local-dev-strict callers, in-process code).
pub const LOCAL: &str = "local";

/// The agent's HTTP API (`POST /v1/session` with `continuationKey`, streams, …) at the root
/// of the router, behind `auth`; serve it with `axum::serve`.
pub fn app(manager: SessionManager, auth: Auth) -> axum::Router {
    let mount = Mount {
        slug: "tenant-support".into(),
        evals: manager.state().clone(),
        manager,
        diagnostics: Vec::new(),
    };
    let config = HttpConfig {
        auth,
        layout: Layout::Single,
        playground: false,
        ..HttpConfig::default()
    };
    router(vec![mount], config)
}

/// Where the agent's model is: `provider:model`, an optional base URL, and the lookup of its
/// key variable (the process environment in `main`).
pub struct ModelSpec<'a> {
    /// `provider:model`, e.g. `openai:gpt-4.1-mini`.
    pub spec: &'a str,
    /// The API base URL, when not the provider's own.
    pub base_url: Option<&'a str>,
    /// Looks up the provider's key variable (`OPENAI_API_KEY`, …).
    pub env: &'a (dyn Fn(&str) -> Option<String> + Sync),
}

/// Loads the agent folder `project` on `model` with the tenants' live root, and opens its
/// sessions under `state`.
pub async fn open(
    project: &Path,
    tenants: Tenants,
    state: &Path,
    model: ModelSpec<'_>,
) -> anyhow::Result<(SessionManager, Arc<Agent>)> {
    let discovery = discover(project);
    let definition = discovery.definition.with_context(|| {
        let diagnostics: Vec<String> = discovery
            .diagnostics
            .iter()
            .map(|d| d.to_string())
            .collect();
        format!(
            "{} is not an agent folder (fix these and run again):\n{}",
            project.display(),
            diagnostics.join("\n")
        )
    })?;
    let config = ProviderConfig {
        base_url: model.base_url.map(str::to_string),
        ..ProviderConfig::default()
    };
    let (provider, model) = open_provider(model.spec, &config, model.env)?;
    let state = StateRoot::new(state);
    let options = LoadOptions {
        state_root: Some(state.clone()),
        live_root: Some(tenants.live_root()),
        ..LoadOptions::default()
    };
    let agent = Arc::new(Agent::load_with(definition, provider, model, options).await?);
    let manager = SessionManager::open(state, agent.clone(), LogBuffer::new()).await?;
    Ok((manager, agent))
}

/// Waits for the turn running in `principal`'s session `id` and answers its reply.
pub async fn reply(manager: &SessionManager, principal: &str, id: &str) -> anyhow::Result<String> {
    let mut stream = manager.events().stream(principal, id, 0).await?;
    while let Some(event) = stream.rx.recv().await {
        match event.as_deref().map(|e| &e.body) {
            Some(EventBody::TurnCompleted(done)) => return Ok(done.reply.clone()),
            Some(EventBody::TurnFailed(failed)) => {
                anyhow::bail!("the turn of session {id} failed: {}", failed.message)
            }
            _ => {}
        }
    }
    anyhow::bail!("session {id} ended before its turn did")
}
