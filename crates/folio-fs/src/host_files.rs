//! [`host_fs`]: a remote, etag-versioned file API ([`HostFilesApi`]) as a tree rooted at `/`, and
//! [`MemoryHostFiles`], an in-memory implementation of that API for tests.
//!
//! Remote keys are relative posix paths (`notes/a.md`); `scope` is the key prefix the tree
//! exposes, so with scope `notes` the tree path `/a.md` is the key `notes/a.md`. Directories are
//! implied by the keys. After a successful read or write of a path, the next write to it is
//! compare-and-swap on the etag seen then. A write without a cached etag (a blind write) is
//! unconditional, as in the seed's `hostFs`, or with [`BlindWrites::CreateOnly`] creates the
//! file only when it does not exist, so nothing the tree never read is overwritten.
//!
//! The etag cache is what a handle has seen: [`FileSystem::session_view`] gives each session a
//! handle with its own cache over the same files, so one session's read never vouches for
//! another's write.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use futures::StreamExt;

use crate::limits::check_write_path;
use crate::{
    Content, DirEntry, FileInfo, FileKind, FileSystem, FsStream, GrepQuery, GrepResult,
    LineMatcher, PathError, PathFilter, SearchQuery, SearchResult, is_within, normalize_fs_path,
};

/// A failure reported by a remote file API; `message` is shown to a person as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HostFilesError {
    /// A one-line description.
    pub message: String,
}

/// One remote file as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFileMeta {
    /// The file's key (relative posix path, no leading slash).
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// Last modification time, where the API knows it.
    pub modified: Option<SystemTime>,
}

/// The answer of a conditional put.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutOutcome {
    /// Stored; the file's new etag.
    Stored {
        /// The etag of the stored version.
        etag: String,
    },
    /// The `if_match` etag no longer names the current version (or the file is gone).
    PreconditionFailed,
}

/// A remote file store with etag versions: the host's files behind `host_fs`.
#[async_trait::async_trait]
pub trait HostFilesApi: Send + Sync + 'static {
    /// Every file whose key equals `prefix` or lies under it (segment-wise); `""` means all.
    async fn list(&self, prefix: &str) -> Result<Vec<HostFileMeta>, HostFilesError>;
    /// A file's bytes and current etag; `None` when there is no such file.
    async fn get(&self, key: &str) -> Result<Option<(Vec<u8>, String)>, HostFilesError>;
    /// Stores `bytes` at `key`; with `if_match`, only when the current etag equals it.
    async fn put(
        &self,
        key: &str,
        bytes: Vec<u8>,
        if_match: Option<&str>,
    ) -> Result<PutOutcome, HostFilesError>;
    /// Stores `bytes` at `key` only when there is no file there, atomically
    /// (`PreconditionFailed` when there is one).
    async fn create(&self, key: &str, bytes: Vec<u8>) -> Result<PutOutcome, HostFilesError>;
    /// Removes `key`; `false` when there was no such file.
    async fn delete(&self, key: &str) -> Result<bool, HostFilesError>;
}

/// An in-memory [`HostFilesApi`], for tests and fixtures.
#[derive(Debug, Default)]
pub struct MemoryHostFiles {
    files: Mutex<BTreeMap<String, (Vec<u8>, String)>>,
    versions: AtomicU64,
}

impl MemoryHostFiles {
    /// An empty store.
    pub fn new() -> Self {
        MemoryHostFiles::default()
    }

    /// Stores `bytes` at `key` unconditionally, as another client would; returns the new etag.
    pub fn insert(&self, key: &str, bytes: impl Into<Vec<u8>>) -> String {
        let etag = self.next_etag();
        self.lock()
            .insert(key.to_string(), (bytes.into(), etag.clone()));
        etag
    }

    fn next_etag(&self) -> String {
        format!("\"v{}\"", self.versions.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (Vec<u8>, String)>> {
        // A panic while holding the lock cannot leave the map half-updated: recover it.
        self.files
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait::async_trait]
impl HostFilesApi for MemoryHostFiles {
    async fn list(&self, prefix: &str) -> Result<Vec<HostFileMeta>, HostFilesError> {
        let prefix = prefix.trim_matches('/');
        Ok(self
            .lock()
            .iter()
            .filter(|(key, _)| key_within(key, prefix))
            .map(|(key, (bytes, _))| HostFileMeta {
                key: key.clone(),
                size: bytes.len() as u64,
                modified: None,
            })
            .collect())
    }

    async fn get(&self, key: &str) -> Result<Option<(Vec<u8>, String)>, HostFilesError> {
        Ok(self.lock().get(key).cloned())
    }

    async fn put(
        &self,
        key: &str,
        bytes: Vec<u8>,
        if_match: Option<&str>,
    ) -> Result<PutOutcome, HostFilesError> {
        let etag = self.next_etag();
        let mut files = self.lock();
        if let Some(expected) = if_match {
            match files.get(key) {
                Some((_, current)) if current == expected => {}
                _ => return Ok(PutOutcome::PreconditionFailed),
            }
        }
        files.insert(key.to_string(), (bytes, etag.clone()));
        Ok(PutOutcome::Stored { etag })
    }

    async fn create(&self, key: &str, bytes: Vec<u8>) -> Result<PutOutcome, HostFilesError> {
        let etag = self.next_etag();
        let mut files = self.lock();
        if files.contains_key(key) {
            return Ok(PutOutcome::PreconditionFailed);
        }
        files.insert(key.to_string(), (bytes, etag.clone()));
        Ok(PutOutcome::Stored { etag })
    }

    async fn delete(&self, key: &str) -> Result<bool, HostFilesError> {
        Ok(self.lock().remove(key).is_some())
    }
}

/// Whether `key` equals `prefix` or lies under it, by segment (`""` contains everything).
fn key_within(key: &str, prefix: &str) -> bool {
    prefix.is_empty()
        || key
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// A remote file API as a tree rooted at `/`, exposing the keys under `scope`; `search` is empty.
pub fn host_fs(files: Arc<dyn HostFilesApi>, scope: &str) -> Arc<dyn FileSystem> {
    Arc::new(HostFs::new(files, scope))
}

/// What a [`HostFs`] does with a write to a path it holds no etag for (never read or written
/// through this handle, or deleted since).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlindWrites {
    /// Store it unconditionally, replacing whatever is there (the seed's `hostFs`).
    #[default]
    Overwrite,
    /// Create the file only when none is there; an existing file must be read first, so a
    /// version the writer never saw is never overwritten.
    CreateOnly,
}

/// The tree built by [`host_fs`].
pub struct HostFs {
    files: Arc<dyn HostFilesApi>,
    scope: String,
    etags: Arc<Mutex<HashMap<String, String>>>,
    blind_writes: BlindWrites,
}

/// Why a compare-and-swap write was refused: another writer stored a newer version.
const CHANGED_REMOTELY: &str =
    "the file changed remotely since it was last read; read it again before writing";

/// Why a blind write was refused under [`BlindWrites::CreateOnly`].
const NOT_READ: &str =
    "the file exists and was not read in this session; read it before writing it";

impl HostFs {
    /// A tree over the keys of `files` under `scope` (see [`host_fs`]).
    pub fn new(files: Arc<dyn HostFilesApi>, scope: &str) -> Self {
        HostFs {
            files,
            scope: normalize_fs_path(scope).trim_start_matches('/').to_string(),
            etags: Arc::default(),
            blind_writes: BlindWrites::default(),
        }
    }

    /// The same tree with `policy` for writes to paths it has not read.
    pub fn with_blind_writes(mut self, policy: BlindWrites) -> Self {
        self.blind_writes = policy;
        self
    }

    /// The remote key of normalized tree path `path` (`/` is the scope itself).
    fn key(&self, path: &str) -> String {
        let rel = path.trim_start_matches('/');
        match (self.scope.is_empty(), rel.is_empty()) {
            (true, _) => rel.to_string(),
            (false, true) => self.scope.clone(),
            (false, false) => format!("{}/{rel}", self.scope),
        }
    }

    /// The tree path of remote key `key` (under the scope).
    fn tree_path(scope: &str, key: &str) -> String {
        let rel = if scope.is_empty() {
            key
        } else {
            key.strip_prefix(scope).unwrap_or(key)
        };
        normalize_fs_path(rel)
    }

    fn etags(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.etags
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every file (tree path, meta) under normalized tree path `dir`, sorted by path.
    async fn files_under(&self, dir: &str) -> Result<Vec<(String, HostFileMeta)>, PathError> {
        let listed = self
            .files
            .list(&self.key(dir))
            .await
            .map_err(|err| remote_error(dir, err))?;
        let mut files: Vec<(String, HostFileMeta)> = listed
            .into_iter()
            .filter(|meta| key_within(&meta.key, &self.scope))
            .map(|meta| (Self::tree_path(&self.scope, &meta.key), meta))
            .filter(|(path, _)| path != "/" && is_within(path, dir))
            .collect();
        files.sort_by(|a, b| a.0.cmp(&b.0));
        files.dedup_by(|a, b| a.0 == b.0);
        Ok(files)
    }
}

fn remote_error(path: &str, err: HostFilesError) -> PathError {
    PathError::Other {
        path: path.to_string(),
        message: format!("host files: {path}: {}", err.message),
    }
}

/// Every file and implied directory strictly under `dir`, sorted and unique.
fn entries_under(dir: &str, files: &[(String, HostFileMeta)]) -> Vec<DirEntry> {
    let mut entries: BTreeSet<DirEntry> = BTreeSet::new();
    for (path, _) in files {
        if path == dir {
            continue;
        }
        entries.insert(DirEntry::file(path.clone()));
        let mut ancestor = crate::parent(path);
        while ancestor != dir && is_within(ancestor, dir) {
            entries.insert(DirEntry::dir(ancestor));
            ancestor = crate::parent(ancestor);
        }
    }
    // Byte order of the path; a path cannot be both a file and a directory here.
    let mut entries: Vec<DirEntry> = entries.into_iter().collect();
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    entries.dedup_by(|a, b| a.path == b.path);
    entries
}

/// The path of `path` relative to `dir` (no leading slash).
fn relative_to<'a>(path: &'a str, dir: &str) -> &'a str {
    if dir == "/" {
        &path[1..]
    } else {
        path[dir.len()..].trim_start_matches('/')
    }
}

#[async_trait::async_trait]
impl FileSystem for HostFs {
    fn list(&self, prefix: &str) -> FsStream<DirEntry> {
        let dir = normalize_fs_path(prefix);
        let this = self.shallow();
        futures::stream::once(async move {
            let files = match this.files_under(&dir).await {
                Ok(files) => files,
                Err(err) => return futures::stream::iter(vec![Err(err)]),
            };
            let children: Vec<Result<DirEntry, PathError>> = entries_under(&dir, &files)
                .into_iter()
                .filter(|entry| crate::parent(&entry.path) == dir)
                .map(Ok)
                .collect();
            futures::stream::iter(children)
        })
        .flatten()
        .boxed()
    }

    async fn stat(&self, path: &str) -> Result<FileInfo, PathError> {
        let path = normalize_fs_path(path);
        let files = self.files_under(&path).await?;
        if let Some((_, meta)) = files.iter().find(|(p, _)| *p == path) {
            return Ok(FileInfo {
                path,
                kind: FileKind::File,
                size: Some(meta.size),
                modified: meta.modified,
            });
        }
        if path == "/" || !files.is_empty() {
            return Ok(FileInfo {
                path,
                kind: FileKind::Directory,
                size: None,
                modified: None,
            });
        }
        Ok(FileInfo::missing(path))
    }

    fn glob(&self, pattern: &str, dir: Option<&str>) -> FsStream<DirEntry> {
        let dir = normalize_fs_path(dir.unwrap_or("/"));
        let pattern = pattern.to_string();
        let this = self.shallow();
        futures::stream::once(async move {
            let result = async {
                let filter = PathFilter::for_glob(&pattern, &dir)?;
                let files = this.files_under(&dir).await?;
                Ok::<_, PathError>(
                    files
                        .into_iter()
                        .filter(|(path, _)| path != &dir)
                        .filter(|(path, _)| filter.matches(relative_to(path, &dir)))
                        .map(|(path, _)| Ok(DirEntry::file(path)))
                        .collect::<Vec<_>>(),
                )
            }
            .await;
            futures::stream::iter(result.unwrap_or_else(|err| vec![Err(err)]))
        })
        .flatten()
        .boxed()
    }

    async fn read(&self, path: &str) -> Result<Content, PathError> {
        let path = normalize_fs_path(path);
        let key = self.key(&path);
        match self.files.get(&key).await {
            Ok(Some((bytes, etag))) => {
                self.etags().insert(path, etag);
                Ok(Content::from_bytes(bytes))
            }
            Ok(None) => {
                // Seen missing: a later write creates it, instead of matching a gone version.
                self.etags().remove(&path);
                Err(PathError::FileNotFound { path })
            }
            Err(err) => Err(remote_error(&path, err)),
        }
    }

    fn grep(&self, query: GrepQuery) -> FsStream<GrepResult> {
        let scope = normalize_fs_path(query.path.as_deref().unwrap_or("/"));
        let this = self.shallow();
        let matcher = match LineMatcher::new(&query, &scope) {
            Ok(matcher) => matcher,
            Err(err) => return futures::stream::iter([Err(err)]).boxed(),
        };
        let limit = query.max_results;
        futures::stream::once(async move {
            let files = match this.files_under(&scope).await {
                Ok(files) => files,
                Err(err) => return futures::stream::iter(vec![Err(err)]).boxed(),
            };
            let wanted: Vec<String> = files
                .into_iter()
                .map(|(path, _)| path)
                .filter(|path| {
                    let rel = if *path == scope {
                        crate::basename(path)
                    } else {
                        relative_to(path, &scope)
                    };
                    matcher.wants_file(rel)
                })
                .collect();
            let state = (
                this,
                matcher,
                LineMatcher::searcher(),
                wanted.into_iter(),
                limit,
            );
            futures::stream::unfold(
                state,
                |(this, matcher, mut searcher, mut paths, left)| async move {
                    if left == Some(0) {
                        return None;
                    }
                    loop {
                        let path = paths.next()?;
                        let bytes = match this.files.get(&this.key(&path)).await {
                            Ok(Some((bytes, _))) => bytes,
                            Ok(None) => continue,
                            Err(err) => {
                                let batch = vec![Err(remote_error(&path, err))];
                                return Some((batch, (this, matcher, searcher, paths, Some(0))));
                            }
                        };
                        let hits = matcher.search_slice(&mut searcher, &path, &bytes, left);
                        if hits.is_empty() {
                            continue;
                        }
                        let left = left.map(|n| n.saturating_sub(hits.len()));
                        let batch: Vec<Result<GrepResult, PathError>> =
                            hits.into_iter().map(Ok).collect();
                        return Some((batch, (this, matcher, searcher, paths, left)));
                    }
                },
            )
            .flat_map(futures::stream::iter)
            .boxed()
        })
        .flatten()
        .boxed()
    }

    async fn write(&self, path: &str, contents: &str) -> Result<(), PathError> {
        let path = normalize_fs_path(path);
        check_write_path(&path)?;
        if path == "/" {
            return Err(PathError::WriteFailed {
                path,
                message: Some("is a directory".to_string()),
            });
        }
        let key = self.key(&path);
        if !self
            .files_under(&path)
            .await?
            .iter()
            .all(|(p, _)| *p == path)
        {
            return Err(PathError::WriteFailed {
                path,
                message: Some("is a directory".to_string()),
            });
        }
        let cached = self.etags().get(&path).cloned();
        let bytes = contents.as_bytes().to_vec();
        let put = match (&cached, self.blind_writes) {
            (Some(etag), _) => self.files.put(&key, bytes, Some(etag)).await,
            (None, BlindWrites::Overwrite) => self.files.put(&key, bytes, None).await,
            (None, BlindWrites::CreateOnly) => self.files.create(&key, bytes).await,
        };
        match put {
            Ok(PutOutcome::Stored { etag }) => {
                self.etags().insert(path, etag);
                Ok(())
            }
            Ok(PutOutcome::PreconditionFailed) => {
                // The cache is left as it is: writes keep failing until a read sees the
                // current version.
                let why = if cached.is_some() {
                    CHANGED_REMOTELY
                } else {
                    NOT_READ
                };
                Err(PathError::WriteFailed {
                    path,
                    message: Some(why.to_string()),
                })
            }
            Err(err) => Err(PathError::WriteFailed {
                path,
                message: Some(err.message),
            }),
        }
    }

    async fn delete(&self, path: &str) -> Result<(), PathError> {
        let path = normalize_fs_path(path);
        let key = self.key(&path);
        match self.files.delete(&key).await {
            Ok(true) => {
                self.etags().remove(&path);
                Ok(())
            }
            Ok(false) => Err(PathError::FileNotFound { path }),
            Err(err) => Err(remote_error(&path, err)),
        }
    }

    fn search(&self, _query: SearchQuery) -> FsStream<SearchResult> {
        futures::stream::empty().boxed()
    }

    fn session_view(&self) -> Option<Arc<dyn FileSystem>> {
        Some(Arc::new(HostFs {
            files: Arc::clone(&self.files),
            scope: self.scope.clone(),
            etags: Arc::default(),
            blind_writes: self.blind_writes,
        }))
    }
}

impl HostFs {
    /// A handle sharing this tree's API and etag cache, for 'static streams.
    fn shallow(&self) -> HostFs {
        HostFs {
            files: Arc::clone(&self.files),
            scope: self.scope.clone(),
            etags: Arc::clone(&self.etags),
            blind_writes: self.blind_writes,
        }
    }
}
