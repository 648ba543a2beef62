//! The authored root of `[root]` in `agent.toml`: a `union_fs` of host directories, in-memory
//! trees, object stores and overlays, each optionally indexed for `SemanticSearch`; and the per-turn binding
//! that adds an empty `/tmp` scratch mount (docs/filesystem.md); and [`LiveRoot`], a root built
//! per session by a factory through the Rust API.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use folio_fs::{
    Content, FileSystem, HostFileMeta, HostFilesApi, HostFilesError, PathError, PutOutcome, TempFs,
    host_dir, indexed, overlay_fs, temp_fs, union_fs,
};
use folio_object_store::MountError;
use futures::StreamExt;

use folio_project::{MountSpec, ROOT_SKILLS_MOUNT, UnsetVariable};

/// A mount of `[root]` that could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("agent.toml [root] \"{mount}\": {reason}")]
pub struct RootError {
    /// The mount path.
    pub mount: String,
    /// What failed and what to do.
    #[source]
    pub reason: MountFailure,
}

/// Why one mount of `[root]` (or a layer of its overlay) could not be built, with the cause.
///
/// [`RootError`] is public API that has always been `Clone`, `PartialEq` and `Eq` (an embedder
/// may keep or compare the errors [`check_root`] returns), and it stays so: the object-store
/// error, whose `object_store` and `url` causes are neither `Clone` nor `PartialEq`, is kept
/// behind an `Arc` (a caller still reaches it, and its own source, by matching
/// [`MountFailure::ObjectStore`]), and two object-store failures are equal when they are the
/// same error or say the same thing. Every other variant compares its cause structurally.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MountFailure {
    /// A `host` mount names a directory that does not exist.
    #[error(
        "host directory {} does not exist (paths are relative to {})",
        dir.display(),
        agent_dir.display()
    )]
    HostMissing {
        /// The directory, joined to the agent's folder.
        dir: PathBuf,
        /// The agent's folder, which `host` paths are relative to.
        agent_dir: PathBuf,
    },
    /// A tree could not be built: a host directory that cannot be confined, an in-memory tree
    /// whose files clash, or an index that cannot be built.
    #[error(transparent)]
    Tree(#[from] PathError),
    /// An object-store mount names no supported store, has an unknown option, or could not be
    /// opened.
    #[error(transparent)]
    ObjectStore(Arc<MountError>),
    /// An object-store option's `${NAME}` template names a variable that is not set.
    #[error("option \"{key}\": {source} (set it, or write the value itself)")]
    UnsetOption {
        /// The option's name.
        key: String,
        /// The variable that is not set.
        #[source]
        source: UnsetVariable,
    },
}

impl From<MountError> for MountFailure {
    fn from(err: MountError) -> MountFailure {
        MountFailure::ObjectStore(Arc::new(err))
    }
}

impl PartialEq for MountFailure {
    fn eq(&self, other: &MountFailure) -> bool {
        match (self, other) {
            (
                MountFailure::HostMissing { dir, agent_dir },
                MountFailure::HostMissing {
                    dir: other_dir,
                    agent_dir: other_agent_dir,
                },
            ) => dir == other_dir && agent_dir == other_agent_dir,
            (MountFailure::Tree(err), MountFailure::Tree(other)) => err == other,
            (MountFailure::ObjectStore(err), MountFailure::ObjectStore(other)) => {
                Arc::ptr_eq(err, other) || err.to_string() == other.to_string()
            }
            (
                MountFailure::UnsetOption { key, source },
                MountFailure::UnsetOption {
                    key: other_key,
                    source: other_source,
                },
            ) => key == other_key && source == other_source,
            _ => false,
        }
    }
}

impl Eq for MountFailure {}

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

async fn build_mount(
    spec: &MountSpec,
    agent_dir: &Path,
) -> Result<Arc<dyn FileSystem>, MountFailure> {
    let (tree, index) = match spec {
        MountSpec::Host {
            host,
            read_only,
            index,
        } => {
            let dir = agent_dir.join(host);
            if !dir.is_dir() {
                return Err(MountFailure::HostMissing {
                    dir,
                    agent_dir: agent_dir.to_path_buf(),
                });
            }
            (host_dir(&dir, *read_only)?, *index)
        }
        MountSpec::Temp { temp, index } => {
            let tree = TempFs::try_from_files(temp.iter())?;
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
            )?;
            let mut settings = Vec::new();
            for (key, value) in options {
                let value =
                    folio_project::expand_template(value, &|name: &str| std::env::var(name).ok())
                        .map_err(|source| MountFailure::UnsetOption {
                        key: key.clone(),
                        source,
                    })?;
                settings.push((key.clone(), value));
            }
            let tree = folio_object_store::object_store_fs(object_store, settings)?;
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
        return indexed(tree).await.map_err(MountFailure::Tree);
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
                        reason: err.into(),
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
/// `RootContext {sessionId, agentName, continuationKey, host}`, plus the principal).
#[derive(Clone)]
pub struct RootContext {
    /// The session the root is for.
    pub session_id: String,
    /// The agent's name.
    pub agent_name: String,
    /// The session's continuation key (a thread, an issue, a tenant's conversation): the one
    /// a channel opened it with, or the `continuationKey` its creator sent.
    pub continuation_key: Option<String>,
    /// The principal that owns the session (Folio): who chose its continuation key. A caller
    /// of `POST /v1/session` picks any key, so a factory that maps keys to tenants' data checks
    /// that this principal may reach that tenant.
    pub principal: String,
    /// What the host offers the factory: the [`LiveRoot::with_host`] host when one was given,
    /// else the session's own host workspace as [`RootHost::files`] (always filled when the
    /// root is resolved for a turn).
    pub host: Option<RootHost>,
}

/// What the host offers a live root factory (the seed's `host {files, reminders?}`; Folio
/// offers the files).
#[derive(Clone)]
pub struct RootHost {
    /// A remote, etag-versioned file API (a tree over it: [`folio_fs::host_fs`]).
    pub files: Arc<dyn HostFilesApi>,
}

impl RootHost {
    /// The session's host workspace directory `workspace` as the host's files: keys are
    /// workspace-relative paths, confined to it like the host-default tree (no `..`, no links
    /// out); etags are the SHA-256 of the contents, and a conditional put compares and writes
    /// under one lock, so two writers in this process never overwrite a newer version. Only
    /// text (UTF-8) contents can be put.
    pub fn workspace(workspace: &Path) -> Result<RootHost, folio_fs::PathError> {
        std::fs::create_dir_all(workspace).map_err(|err| folio_fs::PathError::WriteFailed {
            path: workspace.display().to_string(),
            message: Some(err.to_string()),
        })?;
        Ok(RootHost {
            files: Arc::new(WorkspaceFiles {
                tree: host_dir(workspace, false)?,
                writing: tokio::sync::Mutex::new(()),
            }),
        })
    }
}

/// A host workspace as a [`HostFilesApi`] (see [`RootHost::workspace`]), over the confined
/// `host_dir` tree.
struct WorkspaceFiles {
    tree: Arc<dyn FileSystem>,
    /// Held across a conditional put's compare and write.
    writing: tokio::sync::Mutex<()>,
}

impl WorkspaceFiles {
    /// The tree path of `key`.
    fn path(key: &str) -> String {
        format!("/{}", key.trim_start_matches('/'))
    }

    /// The bytes at `key` and their etag; `None` when there is no such file.
    async fn current(&self, key: &str) -> Result<Option<(Vec<u8>, String)>, HostFilesError> {
        let path = WorkspaceFiles::path(key);
        if self.tree.stat(&path).await.map_err(failed)?.kind != folio_fs::FileKind::File {
            return Ok(None);
        }
        let bytes = match self.tree.read(&path).await.map_err(failed)? {
            Content::Text(text) => text.into_bytes(),
            Content::Image { bytes, .. } => bytes,
        };
        let etag = format!("\"{}\"", hex_sha256(&bytes));
        Ok(Some((bytes, etag)))
    }
}

/// What must hold of the current file for [`WorkspaceFiles::write_if`] to write.
enum Precondition<'a> {
    /// Nothing: write whatever is there.
    None,
    /// Its etag equals this one.
    Matches(&'a str),
    /// There is no file.
    Absent,
}

impl WorkspaceFiles {
    /// Writes `bytes` (text only) at `key` when `precondition` holds of the current file,
    /// comparing and writing under one lock.
    async fn write_if(
        &self,
        key: &str,
        bytes: Vec<u8>,
        precondition: Precondition<'_>,
    ) -> Result<PutOutcome, HostFilesError> {
        let text = String::from_utf8(bytes).map_err(|_| HostFilesError {
            message: format!(
                "{key}: only text (UTF-8) can be written to the session workspace through RootContext.host.files"
            ),
        })?;
        let _writing = self.writing.lock().await;
        let holds = match precondition {
            Precondition::None => true,
            Precondition::Matches(expected) => {
                matches!(self.current(key).await?, Some((_, etag)) if etag == expected)
            }
            Precondition::Absent => self.current(key).await?.is_none(),
        };
        if !holds {
            return Ok(PutOutcome::PreconditionFailed);
        }
        self.tree
            .write(&WorkspaceFiles::path(key), &text)
            .await
            .map_err(failed)?;
        Ok(PutOutcome::Stored {
            etag: format!("\"{}\"", hex_sha256(text.as_bytes())),
        })
    }
}

fn failed(err: folio_fs::PathError) -> HostFilesError {
    HostFilesError {
        message: err.to_string(),
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[async_trait::async_trait]
impl HostFilesApi for WorkspaceFiles {
    async fn list(&self, prefix: &str) -> Result<Vec<HostFileMeta>, HostFilesError> {
        let prefix = WorkspaceFiles::path(prefix);
        let mut entries = self.tree.glob("**", None);
        let mut files = Vec::new();
        while let Some(entry) = entries.next().await {
            let entry = entry.map_err(failed)?;
            if !folio_fs::is_within(&entry.path, &prefix) {
                continue;
            }
            let info = self.tree.stat(&entry.path).await.map_err(failed)?;
            files.push(HostFileMeta {
                key: entry.path.trim_start_matches('/').to_string(),
                size: info.size.unwrap_or(0),
                modified: info.modified,
            });
        }
        Ok(files)
    }

    async fn get(&self, key: &str) -> Result<Option<(Vec<u8>, String)>, HostFilesError> {
        self.current(key).await
    }

    async fn put(
        &self,
        key: &str,
        bytes: Vec<u8>,
        if_match: Option<&str>,
    ) -> Result<PutOutcome, HostFilesError> {
        let precondition = match if_match {
            Some(etag) => Precondition::Matches(etag),
            None => Precondition::None,
        };
        self.write_if(key, bytes, precondition).await
    }

    async fn create(&self, key: &str, bytes: Vec<u8>) -> Result<PutOutcome, HostFilesError> {
        self.write_if(key, bytes, Precondition::Absent).await
    }

    async fn delete(&self, key: &str) -> Result<bool, HostFilesError> {
        let _writing = self.writing.lock().await;
        let path = WorkspaceFiles::path(key);
        if self.tree.stat(&path).await.map_err(failed)?.kind != folio_fs::FileKind::File {
            return Ok(false);
        }
        self.tree.delete(&path).await.map_err(failed)?;
        Ok(true)
    }
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
///     principal: "local".into(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_session_workspace_as_host_files_compares_before_it_writes() {
        let dir = tempfile::tempdir().unwrap();
        let files = RootHost::workspace(dir.path()).unwrap().files;
        let stored = |outcome: PutOutcome| match outcome {
            PutOutcome::Stored { etag } => etag,
            PutOutcome::PreconditionFailed => panic!("refused a write whose precondition held"),
        };
        let first = stored(files.create("notes/a.md", b"one\n".to_vec()).await.unwrap());
        assert_eq!(
            files.create("notes/a.md", b"two\n".to_vec()).await.unwrap(),
            PutOutcome::PreconditionFailed,
            "create never replaces a file"
        );
        let second = stored(
            files
                .put("notes/a.md", b"two\n".to_vec(), Some(&first))
                .await
                .unwrap(),
        );
        assert_ne!(first, second);
        assert_eq!(
            files
                .put("notes/a.md", b"three\n".to_vec(), Some(&first))
                .await
                .unwrap(),
            PutOutcome::PreconditionFailed,
            "a stale etag is refused"
        );
        assert_eq!(
            files.get("notes/a.md").await.unwrap(),
            Some((b"two\n".to_vec(), second))
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes/a.md")).unwrap(),
            "two\n"
        );
        stored(files.put("b.md", b"blind\n".to_vec(), None).await.unwrap());
        let keys: Vec<String> = files
            .list("")
            .await
            .unwrap()
            .into_iter()
            .map(|meta| meta.key)
            .collect();
        assert_eq!(keys, ["b.md", "notes/a.md"]);
        assert!(files.delete("b.md").await.unwrap());
        assert!(!files.delete("b.md").await.unwrap());
        assert!(
            files.put("c.bin", vec![0xff, 0xfe], None).await.is_err(),
            "only text is written"
        );
    }
}
