//! In-memory trees: [`empty_fs`] (nothing, read-only) and [`temp_fs`] (a writable map of files).
//!
//! A [`TempFs`] is a sorted map from normalized absolute path to bytes; directories are implied by
//! the files under them (so a directory with no files does not exist). Walk verbs iterate the map
//! in key order, which is already the contract order of full paths. `glob` and `grep` are lazy:
//! they hold a cursor into the map and take the lock only for short, synchronous steps, so a
//! consumer that stops early stops the work, and `grep` searches one file at a time.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::SystemTime;

use futures::StreamExt;
use futures::stream;

use crate::limits::check_write_path;
use crate::{
    Content, DirEntry, FileInfo, FileKind, FileSystem, FsStream, GrepQuery, GrepResult,
    LineMatcher, PathError, PathFilter, SearchQuery, SearchResult, basename, normalize_fs_path,
    parent,
};

/// How many glob matches one lock acquisition may collect.
const GLOB_BATCH: usize = 64;

/// A tree with no files: every read misses and every write is refused.
pub fn empty_fs() -> Arc<dyn FileSystem> {
    Arc::new(EmptyFs)
}

/// An in-memory tree holding `files` (`path → contents`); paths are normalized.
///
/// Accepts anything that iterates `(path, contents)` pairs: `[("/a.txt", "x")]`,
/// `Vec<(String, String)>`, a `BTreeMap<String, Vec<u8>>`, …
///
/// # Panics
///
/// When the fixture is inconsistent (a path that is both a file and a directory, such as `/a`
/// and `/a/b`, or the root `/` as a file). Use [`TempFs::try_from_files`] for untrusted input.
pub fn temp_fs<I, P, C>(files: I) -> Arc<dyn FileSystem>
where
    I: IntoIterator<Item = (P, C)>,
    P: AsRef<str>,
    C: AsRef<[u8]>,
{
    match TempFs::try_from_files(files) {
        Ok(tree) => Arc::new(tree),
        Err(err) => panic!("temp_fs: inconsistent fixture: {err}"),
    }
}

/// The tree behind [`empty_fs`].
#[derive(Debug, Clone, Copy, Default)]
pub struct EmptyFs;

#[async_trait::async_trait]
impl FileSystem for EmptyFs {
    fn list(&self, _prefix: &str) -> FsStream<DirEntry> {
        stream::empty().boxed()
    }

    async fn stat(&self, path: &str) -> Result<FileInfo, PathError> {
        let path = normalize_fs_path(path);
        Ok(if path == "/" {
            directory_info(path)
        } else {
            FileInfo::missing(path)
        })
    }

    fn glob(&self, pattern: &str, dir: Option<&str>) -> FsStream<DirEntry> {
        let dir = normalize_fs_path(dir.unwrap_or("/"));
        match PathFilter::for_glob(pattern, &dir) {
            Ok(_) => stream::empty().boxed(),
            Err(err) => stream::iter([Err(err)]).boxed(),
        }
    }

    async fn read(&self, path: &str) -> Result<Content, PathError> {
        Err(PathError::FileNotFound {
            path: normalize_fs_path(path),
        })
    }

    fn grep(&self, query: GrepQuery) -> FsStream<GrepResult> {
        let scope = normalize_fs_path(query.path.as_deref().unwrap_or("/"));
        match LineMatcher::new(&query, &scope) {
            Ok(_) => stream::empty().boxed(),
            Err(err) => stream::iter([Err(err)]).boxed(),
        }
    }

    async fn write(&self, path: &str, _contents: &str) -> Result<(), PathError> {
        Err(PathError::ReadOnlyMount {
            path: normalize_fs_path(path),
        })
    }

    async fn delete(&self, path: &str) -> Result<(), PathError> {
        Err(PathError::ReadOnlyMount {
            path: normalize_fs_path(path),
        })
    }

    fn search(&self, _query: SearchQuery) -> FsStream<SearchResult> {
        stream::empty().boxed()
    }
}

/// One stored file.
#[derive(Debug, Clone)]
struct Stored {
    bytes: Arc<[u8]>,
    modified: SystemTime,
}

type Files = Arc<RwLock<BTreeMap<String, Stored>>>;

/// The tree behind [`temp_fs`]: an in-memory map of files, readable and writable; clones share
/// the same files.
#[derive(Debug, Clone, Default)]
pub struct TempFs {
    files: Files,
}

impl TempFs {
    /// An empty writable tree (the per-turn `/tmp` scratch, for instance).
    pub fn new() -> Self {
        TempFs::default()
    }

    /// A tree holding `files`, or the `write failed` error of the first inconsistent path (one
    /// that is both a file and a directory, or the root).
    pub fn try_from_files<I, P, C>(files: I) -> Result<Self, PathError>
    where
        I: IntoIterator<Item = (P, C)>,
        P: AsRef<str>,
        C: AsRef<[u8]>,
    {
        let tree = TempFs::new();
        {
            let mut map = tree.files.write().unwrap_or_else(PoisonError::into_inner);
            for (path, contents) in files {
                let path = normalize_fs_path(path.as_ref());
                insert(&mut map, path, contents.as_ref())?;
            }
        }
        Ok(tree)
    }

    /// Creates or overwrites file `path` with raw bytes (for images and other binary fixtures).
    pub fn write_bytes(&self, path: &str, bytes: &[u8]) -> Result<(), PathError> {
        let path = normalize_fs_path(path);
        check_write_path(&path)?;
        insert(&mut self.write_lock(), path, bytes)
    }

    /// A copy of every file, by path.
    pub fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        self.read_lock()
            .iter()
            .map(|(path, stored)| (path.clone(), stored.bytes.to_vec()))
            .collect()
    }

    fn read_lock(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Stored>> {
        self.files.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_lock(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Stored>> {
        self.files.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The key prefix of everything under directory `dir` (`/` for the root, `dir/` otherwise).
fn dir_prefix(dir: &str) -> String {
    if dir == "/" {
        "/".to_string()
    } else {
        format!("{dir}/")
    }
}

/// Whether `path` is an (implied) directory of `map`.
fn is_dir(map: &BTreeMap<String, Stored>, path: &str) -> bool {
    if path == "/" {
        return true;
    }
    let prefix = dir_prefix(path);
    map.range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
        .next()
        .is_some_and(|(key, _)| key.starts_with(&prefix))
}

fn write_failed(path: impl Into<String>) -> PathError {
    PathError::WriteFailed {
        path: path.into(),
        message: None,
    }
}

/// Stores `bytes` at normalized `path`, refusing the root, directories, and paths under a file.
fn insert(map: &mut BTreeMap<String, Stored>, path: String, bytes: &[u8]) -> Result<(), PathError> {
    if path == "/" || is_dir(map, &path) {
        return Err(write_failed(path));
    }
    let mut ancestor = parent(&path);
    while ancestor != "/" {
        if map.contains_key(ancestor) {
            return Err(write_failed(path));
        }
        ancestor = parent(ancestor);
    }
    map.insert(
        path,
        Stored {
            bytes: bytes.into(),
            modified: SystemTime::now(),
        },
    );
    Ok(())
}

fn directory_info(path: String) -> FileInfo {
    FileInfo {
        path,
        kind: FileKind::Directory,
        size: None,
        modified: None,
    }
}

/// The first file after `cursor` (or from the start of `prefix` when `None`) whose key starts
/// with `prefix`.
fn next_file<'a>(
    map: &'a BTreeMap<String, Stored>,
    prefix: &str,
    cursor: Option<&str>,
) -> Option<(&'a String, &'a Stored)> {
    let lower = match cursor {
        Some(cursor) => Bound::Excluded(cursor),
        None => Bound::Included(prefix),
    };
    map.range::<str, _>((lower, Bound::Unbounded))
        .next()
        .filter(|(key, _)| key.starts_with(prefix))
}

/// The direct children of directory `dir`, sorted by full path; skips each subdirectory's subtree
/// with one range seek instead of visiting its files.
fn children(map: &BTreeMap<String, Stored>, dir: &str) -> Vec<DirEntry> {
    let prefix = dir_prefix(dir);
    let mut entries = BTreeSet::new();
    let mut lower: Bound<String> = Bound::Included(prefix.clone());
    loop {
        let next = map
            .range::<str, _>((lower.as_ref().map(String::as_str), Bound::Unbounded))
            .next();
        let Some((key, _)) = next.filter(|(key, _)| key.starts_with(&prefix)) else {
            break;
        };
        let rest = &key[prefix.len()..];
        match rest.find('/') {
            Some(slash) => {
                let child = &key[..prefix.len() + slash];
                entries.insert(DirEntry::dir(child));
                // `0` is the byte after `/`: the first key past the whole subtree `child/…`.
                lower = Bound::Included(format!("{child}0"));
            }
            None => {
                entries.insert(DirEntry::file(key.clone()));
                lower = Bound::Excluded(key.clone());
            }
        }
    }
    // Children are unique by path (a path is a file or a directory, never both), and the set's
    // order is by path first.
    entries.into_iter().collect()
}

/// The path of `file` relative to grep scope `scope` (a directory, or the file itself).
fn relative_to(file: &str, scope: &str) -> String {
    if file == scope {
        basename(file).to_string()
    } else if scope == "/" {
        file[1..].to_string()
    } else {
        file[scope.len() + 1..].to_string()
    }
}

#[async_trait::async_trait]
impl FileSystem for TempFs {
    fn list(&self, prefix: &str) -> FsStream<DirEntry> {
        let dir = normalize_fs_path(prefix);
        let entries = children(&self.read_lock(), &dir);
        stream::iter(entries.into_iter().map(Ok)).boxed()
    }

    async fn stat(&self, path: &str) -> Result<FileInfo, PathError> {
        let path = normalize_fs_path(path);
        let map = self.read_lock();
        Ok(match map.get(&path) {
            Some(stored) => FileInfo {
                size: Some(stored.bytes.len() as u64),
                modified: Some(stored.modified),
                kind: FileKind::File,
                path,
            },
            None if is_dir(&map, &path) => directory_info(path),
            None => FileInfo::missing(path),
        })
    }

    fn glob(&self, pattern: &str, dir: Option<&str>) -> FsStream<DirEntry> {
        let dir = normalize_fs_path(dir.unwrap_or("/"));
        let filter = match PathFilter::for_glob(pattern, &dir) {
            Ok(filter) => filter,
            Err(err) => return stream::iter([Err(err)]).boxed(),
        };
        let dir_len = if dir == "/" { 1 } else { dir.len() + 1 };
        let base = PathFilter::literal_base(pattern);
        let prefix = if base.is_empty() {
            dir_prefix(&dir)
        } else {
            format!("{}{base}/", dir_prefix(&dir))
        };
        let state = GlobState {
            files: self.files.clone(),
            filter,
            prefix,
            dir_len,
            cursor: None,
            buffer: VecDeque::new(),
            exhausted: false,
        };
        stream::unfold(state, |mut state| async move {
            let entry = state.next()?;
            Some((Ok(entry), state))
        })
        .boxed()
    }

    async fn read(&self, path: &str) -> Result<Content, PathError> {
        let path = normalize_fs_path(path);
        let bytes = self
            .read_lock()
            .get(&path)
            .map(|stored| stored.bytes.clone());
        match bytes {
            Some(bytes) => Ok(Content::from_bytes(bytes.to_vec())),
            None => Err(PathError::FileNotFound { path }),
        }
    }

    fn grep(&self, query: GrepQuery) -> FsStream<GrepResult> {
        let scope = normalize_fs_path(query.path.as_deref().unwrap_or("/"));
        let matcher = match LineMatcher::new(&query, &scope) {
            Ok(matcher) => matcher,
            Err(err) => return stream::iter([Err(err)]).boxed(),
        };
        if query.max_results == Some(0) {
            return stream::empty().boxed();
        }
        let single_file = self.read_lock().contains_key(&scope);
        let state = GrepState {
            files: self.files.clone(),
            matcher,
            searcher: LineMatcher::searcher(),
            prefix: if single_file {
                scope.clone()
            } else {
                dir_prefix(&scope)
            },
            single_file,
            scope,
            cursor: None,
            buffer: VecDeque::new(),
            remaining: query.max_results,
            exhausted: false,
        };
        stream::unfold(state, |mut state| async move {
            let hit = state.next()?;
            Some((Ok(hit), state))
        })
        .boxed()
    }

    async fn write(&self, path: &str, contents: &str) -> Result<(), PathError> {
        self.write_bytes(path, contents.as_bytes())
    }

    async fn delete(&self, path: &str) -> Result<(), PathError> {
        let path = normalize_fs_path(path);
        let mut map = self.write_lock();
        if map.remove(&path).is_some() {
            Ok(())
        } else if is_dir(&map, &path) {
            Err(write_failed(path))
        } else {
            Err(PathError::FileNotFound { path })
        }
    }

    fn search(&self, _query: SearchQuery) -> FsStream<SearchResult> {
        stream::empty().boxed()
    }
}

/// A lazy glob: a cursor into the map plus a small buffer of matches.
struct GlobState {
    files: Files,
    filter: PathFilter,
    /// Key prefix every candidate starts with (the glob dir plus the pattern's literal base).
    prefix: String,
    /// Bytes to cut from a key to get the path relative to the glob dir.
    dir_len: usize,
    cursor: Option<String>,
    buffer: VecDeque<DirEntry>,
    exhausted: bool,
}

impl GlobState {
    fn next(&mut self) -> Option<DirEntry> {
        if self.buffer.is_empty() && !self.exhausted {
            let map = self.files.read().unwrap_or_else(PoisonError::into_inner);
            while self.buffer.len() < GLOB_BATCH {
                let Some((key, _)) = next_file(&map, &self.prefix, self.cursor.as_deref()) else {
                    self.exhausted = true;
                    break;
                };
                if self.filter.matches(&key[self.dir_len..]) {
                    self.buffer.push_back(DirEntry::file(key.clone()));
                }
                self.cursor = Some(key.clone());
            }
        }
        self.buffer.pop_front()
    }
}

/// A lazy grep: one file at a time, hits of the current file buffered.
struct GrepState {
    files: Files,
    matcher: LineMatcher,
    searcher: grep_searcher::Searcher,
    /// Key prefix of candidate files (or the one file's path).
    prefix: String,
    single_file: bool,
    scope: String,
    cursor: Option<String>,
    buffer: VecDeque<GrepResult>,
    remaining: Option<usize>,
    exhausted: bool,
}

impl GrepState {
    fn next(&mut self) -> Option<GrepResult> {
        loop {
            if let Some(hit) = self.buffer.pop_front() {
                return Some(hit);
            }
            if self.exhausted || self.remaining == Some(0) {
                return None;
            }
            let (path, bytes) = {
                let map = self.files.read().unwrap_or_else(PoisonError::into_inner);
                let next = if self.single_file {
                    self.exhausted = true;
                    map.get_key_value(&self.prefix)
                } else {
                    next_file(&map, &self.prefix, self.cursor.as_deref())
                };
                match next {
                    Some((key, stored)) => (key.clone(), stored.bytes.clone()),
                    None => {
                        self.exhausted = true;
                        return None;
                    }
                }
            };
            self.cursor = Some(path.clone());
            if !self.matcher.wants_file(&relative_to(&path, &self.scope)) {
                continue;
            }
            let hits = self
                .matcher
                .search_slice(&mut self.searcher, &path, &bytes, self.remaining);
            if let Some(remaining) = &mut self.remaining {
                *remaining = remaining.saturating_sub(hits.len());
            }
            self.buffer.extend(hits);
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::TryStreamExt;

    use super::*;

    #[tokio::test]
    async fn children_are_sorted_by_full_path() {
        let fs = TempFs::try_from_files([("/a/b", "1"), ("/a-c", "2"), ("/a.txt", "3")]).unwrap();
        let got: Vec<DirEntry> = fs.list("/").try_collect().await.unwrap();
        assert_eq!(
            got,
            [
                DirEntry::dir("/a"),
                DirEntry::file("/a-c"),
                DirEntry::file("/a.txt")
            ]
        );
    }

    #[test]
    fn inconsistent_fixtures_are_refused() {
        let err = TempFs::try_from_files([("/a", "1"), ("/a/b", "2")]).unwrap_err();
        assert_eq!(err.to_string(), "write failed: /a/b");
        let err = TempFs::try_from_files([("/a/b", "1"), ("/a", "2")]).unwrap_err();
        assert_eq!(err.to_string(), "write failed: /a");
        let err = TempFs::try_from_files([("/", "1")]).unwrap_err();
        assert_eq!(err.to_string(), "write failed: /");
    }

    #[tokio::test]
    async fn empty_fs_misses_and_refuses() {
        let fs = empty_fs();
        assert_eq!(
            fs.read("/a").await.unwrap_err().to_string(),
            "not found: /a"
        );
        assert_eq!(
            fs.write("/a", "x").await.unwrap_err().to_string(),
            "read-only mount: /a"
        );
        assert_eq!(
            fs.delete("/a/../b").await.unwrap_err().to_string(),
            "read-only mount: /b"
        );
        assert_eq!(fs.stat("/").await.unwrap().kind, FileKind::Directory);
        assert_eq!(fs.stat("/x").await.unwrap().kind, FileKind::Missing);
        assert!(
            fs.list("/")
                .try_collect::<Vec<_>>()
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            fs.grep(GrepQuery::new("x"))
                .try_collect::<Vec<_>>()
                .await
                .unwrap()
                .is_empty()
        );
    }
}
