//! The authored root of `[root]` in `agent.toml`: a `union_fs` of host directories, in-memory
//! trees, object stores and overlays, each optionally indexed for `SemanticSearch`; and the per-turn binding
//! that adds an empty `/tmp` scratch mount (docs/filesystem.md); and [`LiveRoot`], a root built
//! per session by a factory through the Rust API.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use folio_fs::{
    FileSystem, HostFilesApi, TempFs, host_dir, indexed, overlay_fs, temp_fs, union_fs,
};

use folio_project::{MountSpec, ROOT_SKILLS_MOUNT};

/// A mount of `[root]` that could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("agent.toml [root] \"{mount}\": {reason}")]
pub struct RootError {
    /// The mount path.
    pub mount: String,
    /// What failed and what to do.
    pub reason: String,
}

/// Builds the authored root from `[root]`; host paths are relative to `agent_dir`.
pub async fn build_root(
    mounts: &BTreeMap<String, MountSpec>,
    agent_dir: &Path,
) -> Result<Arc<dyn FileSystem>, RootError> {
    let mut built = Vec::new();
    for (mount, spec) in mounts {
        let tree = build_mount(spec, agent_dir)
            .await
            .map_err(|reason| RootError {
                mount: mount.clone(),
                reason,
            })?;
        built.push((mount.clone(), tree));
    }
    Ok(union_fs(built))
}

async fn build_mount(spec: &MountSpec, agent_dir: &Path) -> Result<Arc<dyn FileSystem>, String> {
    let (tree, index) = match spec {
        MountSpec::Host {
            host,
            read_only,
            index,
        } => {
            let dir = agent_dir.join(host);
            if !dir.is_dir() {
                return Err(format!(
                    "host directory {} does not exist (paths are relative to {})",
                    dir.display(),
                    agent_dir.display()
                ));
            }
            (
                host_dir(&dir, *read_only).map_err(|e| e.to_string())?,
                *index,
            )
        }
        MountSpec::Temp { temp, index } => {
            let tree = TempFs::try_from_files(temp.iter()).map_err(|e| e.to_string())?;
            (Arc::new(tree) as Arc<dyn FileSystem>, *index)
        }
        MountSpec::ObjectStore {
            object_store,
            read_only,
            options,
            index,
        } => {
            folio_object_store::check_mount(
                object_store,
                options.keys().map(String::as_str),
                *read_only,
            )
            .map_err(|e| e.to_string())?;
            let mut settings = Vec::new();
            for (key, value) in options {
                let value =
                    folio_project::expand_template(value, &|name: &str| std::env::var(name).ok())
                        .map_err(|unset| {
                        format!("option \"{key}\": {unset} (set it, or write the value itself)")
                    })?;
                settings.push((key.clone(), value));
            }
            let tree = folio_object_store::object_store_fs(object_store, settings)
                .map_err(|e| e.to_string())?;
            // One layer of an overlay is that layer, read-only.
            let tree = if *read_only { overlay_fs([tree]) } else { tree };
            (tree, *index)
        }
        MountSpec::Overlay { overlay, index } => {
            let mut layers = Vec::new();
            for layer in overlay {
                layers.push(Box::pin(build_mount(layer, agent_dir)).await?);
            }
            (overlay_fs(layers), *index)
        }
    };
    if index {
        return indexed(tree).await.map_err(|e| e.to_string());
    }
    Ok(tree)
}

/// The object-store mounts of `mounts` (overlay layers included) whose URL or option names
/// are wrong, as [`folio_object_store::check_mount`] finds them without opening anything:
/// what `folio validate` reports.
pub fn check_root(mounts: &BTreeMap<String, MountSpec>) -> Vec<RootError> {
    fn check(mount: &str, spec: &MountSpec, found: &mut Vec<RootError>) {
        match spec {
            MountSpec::ObjectStore {
                object_store,
                read_only,
                options,
                ..
            } => {
                let keys = options.keys().map(String::as_str);
                if let Err(err) = folio_object_store::check_mount(object_store, keys, *read_only) {
                    found.push(RootError {
                        mount: mount.to_string(),
                        reason: err.to_string(),
                    });
                }
            }
            MountSpec::Overlay { overlay, .. } => {
                for layer in overlay {
                    check(mount, layer, found);
                }
            }
            MountSpec::Host { .. } | MountSpec::Temp { .. } => {}
        }
    }
    let mut found = Vec::new();
    for (mount, spec) in mounts {
        check(mount, spec, &mut found);
    }
    found
}

/// The tree a turn binds under an authored root: the root plus a fresh, empty `/tmp`.
/// Built per turn and dropped with it, so no turn reads another turn's scratch.
pub fn bind_turn_root(root: Arc<dyn FileSystem>) -> Arc<dyn FileSystem> {
    let scratch: Vec<(String, String)> = Vec::new();
    union_fs([
        ("/".to_string(), root),
        ("/tmp".to_string(), temp_fs(scratch)),
    ])
}

/// The authored root with the agent's skills mounted read-only at `/skills`.
pub fn with_skills_mount(
    root: Arc<dyn FileSystem>,
    skills: Arc<dyn FileSystem>,
) -> Arc<dyn FileSystem> {
    union_fs([
        ("/".to_string(), root),
        (ROOT_SKILLS_MOUNT.to_string(), skills),
    ])
}

/// What a live root factory is told about the session it builds a root for (the seed's
/// `RootContext {sessionId, agentName, continuationKey, host}`).
#[derive(Clone)]
pub struct RootContext {
    /// The session the root is for.
    pub session_id: String,
    /// The agent's name.
    pub agent_name: String,
    /// The channel's continuation key of the session (a thread, an issue, a tenant's
    /// conversation), when a channel opened it with one.
    pub continuation_key: Option<String>,
    /// What the host offers the factory ([`LiveRoot::with_host`]), when it offers anything.
    pub host: Option<RootHost>,
}

/// What the host offers a live root factory.
#[derive(Clone)]
pub struct RootHost {
    /// A remote, etag-versioned file API (a tree over it: [`folio_fs::host_fs`]).
    pub files: Arc<dyn HostFilesApi>,
}

/// Builds the root of one session from its [`RootContext`].
pub type RootFactory = Arc<dyn Fn(&RootContext) -> Arc<dyn FileSystem> + Send + Sync>;

/// How many sessions' roots a per-session [`LiveRoot`] keeps; past it the least recently
/// resolved is dropped and built again on its session's next turn.
const CACHED_ROOTS: usize = 1024;

/// A root built per session by a factory (the seed's `root: (ctx) => …`), given to
/// [`Agent::load_with`](crate::Agent::load_with) through
/// [`LoadOptions::live_root`](crate::LoadOptions); `[root]` in `agent.toml` is the static form.
///
/// The factory is called at a session's first turn and the handle kept for its later turns
/// ([`LiveRoot::per_session`]), or called before every turn ([`LiveRoot::per_turn`]). The handle
/// is the tree itself, not a snapshot: writes go wherever the factory's tree puts them. Each
/// turn still binds a fresh `/tmp` over it, and the agent's skills at `/skills`.
///
/// ```
/// use std::sync::Arc;
///
/// use folio_agent::{LiveRoot, RootContext};
/// use folio_fs::{Content, FileSystem, temp_fs};
///
/// // One tree per tenant, named by the first part of the continuation key ("acme:ticket-7").
/// let root = LiveRoot::per_session(|ctx: &RootContext| -> Arc<dyn FileSystem> {
///     let tenant = ctx
///         .continuation_key
///         .as_deref()
///         .and_then(|key| key.split(':').next())
///         .unwrap_or("anonymous");
///     temp_fs([("/tenant.md".to_string(), format!("tenant {tenant}"))])
/// });
/// let ctx = RootContext {
///     session_id: "ses_1".into(),
///     agent_name: "support".into(),
///     continuation_key: Some("acme:ticket-7".into()),
///     host: None,
/// };
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let tree = root.resolve(&ctx);
/// let text = tree.read("/tenant.md").await.unwrap();
/// assert_eq!(text, Content::Text("tenant acme".into()));
/// // The same session gets the same handle back.
/// assert!(Arc::ptr_eq(&tree, &root.resolve(&ctx)));
/// # });
/// ```
#[derive(Clone)]
pub struct LiveRoot {
    factory: RootFactory,
    per_turn: bool,
    host: Option<RootHost>,
    cache: Arc<std::sync::Mutex<RootCache>>,
}

/// The handles a per-session live root keeps, oldest first.
#[derive(Default)]
struct RootCache {
    order: std::collections::VecDeque<String>,
    roots: std::collections::HashMap<String, Arc<dyn FileSystem>>,
}

impl LiveRoot {
    /// A root `factory` builds once per session.
    pub fn per_session(
        factory: impl Fn(&RootContext) -> Arc<dyn FileSystem> + Send + Sync + 'static,
    ) -> Self {
        LiveRoot {
            factory: Arc::new(factory),
            per_turn: false,
            host: None,
            cache: Arc::default(),
        }
    }

    /// A root `factory` builds again before every turn.
    pub fn per_turn(
        factory: impl Fn(&RootContext) -> Arc<dyn FileSystem> + Send + Sync + 'static,
    ) -> Self {
        LiveRoot {
            per_turn: true,
            ..LiveRoot::per_session(factory)
        }
    }

    /// Offers `host` to the factory in every [`RootContext::host`].
    pub fn with_host(mut self, host: RootHost) -> Self {
        self.host = Some(host);
        self
    }

    /// The host this root offers its factory.
    pub fn host(&self) -> Option<&RootHost> {
        self.host.as_ref()
    }

    /// The root of `ctx`'s session: built by the factory, or (per session) the handle built
    /// at its first turn.
    pub fn resolve(&self, ctx: &RootContext) -> Arc<dyn FileSystem> {
        if self.per_turn {
            return (self.factory)(ctx);
        }
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(root) = cache.roots.get(&ctx.session_id) {
            return root.clone();
        }
        let root = (self.factory)(ctx);
        if cache.order.len() >= CACHED_ROOTS
            && let Some(oldest) = cache.order.pop_front()
        {
            cache.roots.remove(&oldest);
        }
        cache.order.push_back(ctx.session_id.clone());
        cache.roots.insert(ctx.session_id.clone(), root.clone());
        root
    }
}
