//! Trees on the host disk: [`host_dir`] (a confined directory rooted at `/`) and [`local_fs`]
//! (host-default semantics, host paths in and out). Both share one implementation; they differ in
//! how a path maps to the disk and in what a symbolic link may reach.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::walk::{Symlinks, Walk, blocking, crosses_symlink, display_join, produce};
use crate::{
    Content, DirEntry, EntryKind, FileInfo, FileKind, FileSystem, FsStream, GrepQuery, GrepResult,
    LineMatcher, Page, PathError, PathFilter, SCAN_BYTE_CAP, SearchQuery, SearchResult,
    normalize_fs_path,
};

/// The message of a write or delete refused because the path leaves a `host_dir` mount.
const ESCAPES: &str = "path escapes the mounted directory";

use crate::limits::READ_BYTE_CAP;
use crate::quota::{WorkspaceQuota, usage_of};

#[derive(Debug)]
enum Mode {
    /// `host_dir`: paths are rooted at `/` = `root` (canonical); nothing may resolve outside it.
    Confined { root: PathBuf, read_only: bool },
    /// `local_fs`: relative paths resolve against `cwd`; yielded paths are host paths. With
    /// `confine` (a session workspace) nothing may resolve outside those canonical roots.
    Local {
        cwd: PathBuf,
        confine: Option<Confine>,
    },
}

/// Where a confined host-default tree may reach.
#[derive(Debug)]
struct Confine {
    /// The roots as given (absolute), for the lexical check of asked paths.
    given: Vec<PathBuf>,
    /// The same roots with links resolved, for the check after resolving.
    roots: Vec<PathBuf>,
    /// What the workspace (the first root) may hold, when limited.
    quota: Option<WorkspaceQuota>,
}

/// A tree on the host disk; built by [`host_dir`] or [`local_fs`].
#[derive(Debug, Clone)]
pub struct HostTree {
    mode: Arc<Mode>,
}

/// A path as asked about: the path yielded and reported in errors, and where it is on disk.
struct Target {
    display: String,
    host: PathBuf,
}

/// A host directory exposed as a tree rooted at `/`, confined to that directory.
///
/// No path, `..`, absolute path or symbolic link can reach outside `dir`: reads of such paths
/// miss (`not found: …`), writes and deletes are refused, and walks never follow directory
/// links. With `read_only`, writes and deletes fail with `read-only mount: …`. Fails when `dir`
/// is not an existing directory.
pub fn host_dir(dir: impl AsRef<Path>, read_only: bool) -> Result<Arc<dyn FileSystem>, PathError> {
    Ok(Arc::new(HostTree::confined(dir.as_ref(), read_only)?))
}

/// The host disk with host-default semantics: relative paths resolve against `cwd`, absolute
/// paths are used as they are, yielded paths are host paths; `search` is empty.
///
/// `list`, `glob` and `grep` do not follow directory links; an exact-path `read` or `stat` does.
pub fn local_fs(cwd: impl Into<PathBuf>) -> Arc<dyn FileSystem> {
    Arc::new(HostTree::local(cwd.into()))
}

/// A session workspace with host-default paths (relative paths resolve against `workspace`,
/// yielded paths are host paths) confined to `workspace` and the directories in `also` (its
/// `memory/` link target): an absolute path or `..` leaving them is refused with
/// `OutsideWorkspace`, and a symbolic link is followed only while it stays inside. With a
/// `quota`, a write that would make `workspace` hold more is refused with `OverQuota`. Fails
/// when `workspace` does not exist.
pub fn workspace_fs(
    workspace: impl Into<PathBuf>,
    also: &[PathBuf],
    quota: Option<WorkspaceQuota>,
) -> Result<Arc<dyn FileSystem>, PathError> {
    Ok(Arc::new(HostTree::workspace(
        workspace.into(),
        also,
        quota,
    )?))
}

impl HostTree {
    /// A confined tree over `dir` (see [`host_dir`]).
    pub fn confined(dir: &Path, read_only: bool) -> Result<Self, PathError> {
        let shown = dir.to_string_lossy().into_owned();
        let root = fs::canonicalize(dir).map_err(|_| PathError::FileNotFound {
            path: shown.clone(),
        })?;
        if !root.is_dir() {
            return Err(PathError::Other {
                path: shown.clone(),
                message: format!("not a directory: {shown}"),
            });
        }
        Ok(HostTree {
            mode: Arc::new(Mode::Confined { root, read_only }),
        })
    }

    /// A host-default tree whose relative paths resolve against `cwd` (see [`local_fs`]).
    pub fn local(cwd: PathBuf) -> Self {
        let cwd = std::path::absolute(&cwd).unwrap_or(cwd);
        HostTree {
            mode: Arc::new(Mode::Local { cwd, confine: None }),
        }
    }

    /// A confined session workspace (see [`workspace_fs`]).
    pub fn workspace(
        workspace: PathBuf,
        also: &[PathBuf],
        quota: Option<WorkspaceQuota>,
    ) -> Result<Self, PathError> {
        let cwd = std::path::absolute(&workspace).unwrap_or(workspace);
        let mut given = Vec::new();
        let mut roots = Vec::new();
        for dir in std::iter::once(&cwd).chain(also) {
            let shown = dir.to_string_lossy().into_owned();
            let root = fs::canonicalize(dir).map_err(|_| PathError::FileNotFound {
                path: shown.clone(),
            })?;
            given.push(PathBuf::from(normalize_fs_path(&shown)));
            roots.push(root);
        }
        Ok(HostTree {
            mode: Arc::new(Mode::Local {
                cwd,
                confine: Some(Confine {
                    given,
                    roots,
                    quota,
                }),
            }),
        })
    }

    /// The canonical roots nothing may resolve outside (`None`: the unconfined host disk).
    fn roots(&self) -> Option<&[PathBuf]> {
        match &*self.mode {
            Mode::Confined { root, .. } => Some(std::slice::from_ref(root)),
            Mode::Local {
                confine: Some(confine),
                ..
            } => Some(&confine.roots),
            Mode::Local { confine: None, .. } => None,
        }
    }

    /// A confined workspace refuses an asked path that leaves it before looking at the disk.
    fn check_inside(&self, target: &Target) -> Result<(), PathError> {
        let Mode::Local {
            confine: Some(confine),
            ..
        } = &*self.mode
        else {
            return Ok(());
        };
        let asked = Path::new(&target.display);
        if confine
            .given
            .iter()
            .chain(&confine.roots)
            .any(|root| asked.starts_with(root))
        {
            Ok(())
        } else {
            Err(PathError::OutsideWorkspace {
                path: target.display.clone(),
            })
        }
    }

    /// The path as the tree's own namespace sees it, which the path limits measure: relative to
    /// the confining root (a workspace or mounted directory), the host path on the open disk.
    fn tree_path<'a>(&self, target: &'a Target) -> &'a str {
        let Mode::Local {
            confine: Some(confine),
            ..
        } = &*self.mode
        else {
            return &target.display;
        };
        confine
            .given
            .iter()
            .chain(&confine.roots)
            .filter_map(|root| root.to_str())
            .find(|root| folio_path::is_within(&target.display, root))
            .map_or(target.display.as_str(), |root| {
                &target.display[root.len()..]
            })
    }

    /// A limited workspace refuses a write that would make it hold more than its quota.
    fn check_quota(&self, target: &Target, bytes: usize) -> Result<(), PathError> {
        let Mode::Local {
            confine:
                Some(Confine {
                    roots,
                    quota: Some(quota),
                    ..
                }),
            ..
        } = &*self.mode
        else {
            return Ok(());
        };
        let Some(workspace) = roots.first() else {
            return Ok(());
        };
        let usage = usage_of(workspace).map_err(|err| write_failed(&target.display, &err))?;
        quota
            .admit(usage.replacing(&target.host, bytes as u64))
            .map_err(|exceeded| PathError::OverQuota {
                path: target.display.clone(),
                exceeded,
            })
    }

    fn target(&self, path: &str) -> Target {
        match &*self.mode {
            Mode::Confined { root, .. } => {
                let display = normalize_fs_path(path);
                let host = root.join(display.trim_start_matches('/'));
                Target { display, host }
            }
            Mode::Local { cwd, .. } => {
                let joined = if Path::new(path).is_absolute() {
                    PathBuf::from(path)
                } else {
                    cwd.join(path)
                };
                let display = normalize_fs_path(&joined.to_string_lossy());
                let host = PathBuf::from(&display);
                Target { display, host }
            }
        }
    }

    /// Where an exact path may be read: the link-resolved location when it stays inside a
    /// confined root, the path itself on the local disk; `None` when it must stay invisible.
    fn visible(&self, host: &Path) -> Option<PathBuf> {
        match self.roots() {
            Some(roots) => fs::canonicalize(host)
                .ok()
                .filter(|resolved| roots.iter().any(|root| resolved.starts_with(root))),
            None => Some(host.to_path_buf()),
        }
    }

    /// The kind a symbolic link met during a walk is listed as (`None`: not listed).
    fn link_kind(&self, link: &Path) -> Option<EntryKind> {
        let resolved = self.visible(link)?;
        let meta = fs::metadata(resolved).ok()?;
        if meta.is_dir() {
            Some(EntryKind::Directory)
        } else if meta.is_file() {
            Some(EntryKind::File)
        } else {
            None
        }
    }

    fn stat_blocking(&self, target: &Target) -> Result<FileInfo, PathError> {
        self.check_inside(target)?;
        let Some(meta) = self
            .visible(&target.host)
            .and_then(|resolved| fs::metadata(resolved).ok())
        else {
            return Ok(FileInfo::missing(target.display.clone()));
        };
        let kind = if meta.is_dir() {
            FileKind::Directory
        } else if meta.is_file() {
            FileKind::File
        } else {
            return Ok(FileInfo::missing(target.display.clone()));
        };
        Ok(FileInfo {
            path: target.display.clone(),
            kind,
            size: (kind == FileKind::File).then_some(meta.len()),
            modified: meta.modified().ok(),
        })
    }

    /// Opens a file for reading: inside the tree, regular, not blocking on a FIFO.
    fn open_regular(&self, target: &Target) -> Result<(fs::File, u64), PathError> {
        self.check_inside(target)?;
        let not_found = || PathError::FileNotFound {
            path: target.display.clone(),
        };
        let resolved = self.visible(&target.host).ok_or_else(not_found)?;
        // Non-blocking, so opening a FIFO cannot hang; the kind is checked on the open file.
        let file = rustix::fs::open(
            &resolved,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map(fs::File::from)
        .map_err(|err| match err {
            rustix::io::Errno::NOENT => not_found(),
            err => read_failed(target, err.into()),
        })?;
        let meta = file.metadata().map_err(|err| read_failed(target, err))?;
        if meta.is_dir() {
            return Err(PathError::Other {
                path: target.display.clone(),
                message: format!("is a directory: {}", target.display),
            });
        }
        if !meta.is_file() {
            return Err(PathError::NotRegular {
                path: target.display.clone(),
            });
        }
        Ok((file, meta.len()))
    }

    fn read_blocking(&self, target: &Target) -> Result<Content, PathError> {
        let (file, len) = self.open_regular(target)?;
        let too_large = || PathError::TooLarge {
            path: target.display.clone(),
            limit: READ_BYTE_CAP,
        };
        if len > READ_BYTE_CAP {
            return Err(too_large());
        }
        let mut bytes = Vec::with_capacity(len as usize);
        // The file may grow while it is read: never past the cap.
        io::Read::read_to_end(&mut io::Read::take(file, READ_BYTE_CAP + 1), &mut bytes)
            .map_err(|err| read_failed(target, err))?;
        if bytes.len() as u64 > READ_BYTE_CAP {
            return Err(too_large());
        }
        Ok(Content::from_bytes(bytes))
    }

    /// A page of a text file, streamed: only the requested lines are kept. Images (and small
    /// files) are read whole.
    fn page_blocking(&self, target: &Target, offset: u64, limit: u64) -> Result<Page, PathError> {
        let (mut file, len) = self.open_regular(target)?;
        let mut head = [0u8; 12];
        let sniffed =
            io::Read::read(&mut file, &mut head).map_err(|err| read_failed(target, err))?;
        if crate::image_mime(&head[..sniffed]).is_some() {
            return Ok(Page::of_content(self.read_blocking(target)?, offset, limit));
        }
        if len > SCAN_BYTE_CAP {
            return Err(PathError::TooLarge {
                path: target.display.clone(),
                limit: SCAN_BYTE_CAP,
            });
        }
        let rest = io::Read::take(file, SCAN_BYTE_CAP);
        crate::page_reader(io::Read::chain(&head[..sniffed], rest), offset, limit)
            .map_err(|err| read_failed(target, err))
    }

    /// The directory a walk starts in, when it exists and may be walked.
    fn walk_root(&self, target: &Target) -> Option<PathBuf> {
        self.visible(&target.host).filter(|dir| dir.is_dir())
    }

    /// The host location a write or delete of `target` acts on: its parent directory resolved
    /// (created first when `create`) and checked to stay inside a confined root.
    fn mutation_path(&self, target: &Target, create: bool) -> Result<PathBuf, PathError> {
        let escapes = || PathError::WriteFailed {
            path: target.display.clone(),
            message: Some(ESCAPES.to_string()),
        };
        let Some(name) = target.host.file_name() else {
            return Err(PathError::WriteFailed {
                path: target.display.clone(),
                message: Some("is a directory".to_string()),
            });
        };
        let parent = target.host.parent().unwrap_or(Path::new("/"));
        let Some(roots) = self.roots() else {
            if create {
                fs::create_dir_all(parent).map_err(|err| write_failed(&target.display, &err))?;
            }
            return Ok(target.host.clone());
        };
        let inside = |path: &Path| roots.iter().any(|root| path.starts_with(root));
        // The deepest existing ancestor must resolve inside the root before anything is created.
        let mut existing = parent;
        while fs::symlink_metadata(existing).is_err() {
            existing = existing.parent().unwrap_or(Path::new("/"));
        }
        let resolved = fs::canonicalize(existing).map_err(|_| escapes())?;
        if !inside(&resolved) {
            return Err(escapes());
        }
        if create {
            fs::create_dir_all(parent).map_err(|err| write_failed(&target.display, &err))?;
        }
        let parent = match fs::canonicalize(parent) {
            Ok(parent) if inside(&parent) => parent,
            Ok(_) => return Err(escapes()),
            Err(_) => {
                return Err(PathError::FileNotFound {
                    path: target.display.clone(),
                });
            }
        };
        Ok(parent.join(name))
    }

    fn write_blocking(&self, target: &Target, contents: &str) -> Result<(), PathError> {
        self.check_inside(target)?;
        folio_path::check_path_limits(self.tree_path(target)).map_err(|limit| {
            PathError::OverLimit {
                path: target.display.clone(),
                limit,
            }
        })?;
        self.check_quota(target, contents.len())?;
        if let Mode::Confined {
            read_only: true, ..
        } = &*self.mode
        {
            return Err(PathError::ReadOnlyMount {
                path: target.display.clone(),
            });
        }
        let mut host = self.mutation_path(target, true)?;
        if let Some(roots) = self.roots() {
            // A link in the last segment is written through only when its target stays inside.
            if fs::symlink_metadata(&host).is_ok_and(|m| m.file_type().is_symlink()) {
                host = fs::canonicalize(&host)
                    .ok()
                    .filter(|resolved| roots.iter().any(|root| resolved.starts_with(root)))
                    .ok_or_else(|| PathError::WriteFailed {
                        path: target.display.clone(),
                        message: Some(ESCAPES.to_string()),
                    })?;
            }
        }
        fs::write(&host, contents).map_err(|err| write_failed(&target.display, &err))
    }

    fn delete_blocking(&self, target: &Target) -> Result<(), PathError> {
        self.check_inside(target)?;
        if let Mode::Confined {
            read_only: true, ..
        } = &*self.mode
        {
            return Err(PathError::ReadOnlyMount {
                path: target.display.clone(),
            });
        }
        let not_found = || PathError::FileNotFound {
            path: target.display.clone(),
        };
        let host = match self.mutation_path(target, false) {
            Ok(host) => host,
            Err(PathError::WriteFailed { .. }) if self.roots().is_some() => {
                return Err(not_found());
            }
            Err(err) => return Err(err),
        };
        let meta = fs::symlink_metadata(&host).map_err(|_| not_found())?;
        if meta.file_type().is_symlink() {
            // A link is removed itself, never its target; one that leads outside is invisible.
            if self.link_kind(&host) != Some(EntryKind::File) && self.roots().is_some() {
                return Err(not_found());
            }
        } else if meta.is_dir() {
            return Err(PathError::Other {
                path: target.display.clone(),
                message: format!("is a directory: {}", target.display),
            });
        }
        fs::remove_file(&host).map_err(|err| match err.kind() {
            io::ErrorKind::NotFound => not_found(),
            _ => PathError::Other {
                path: target.display.clone(),
                message: format!("delete failed: {}: {err}", target.display),
            },
        })
    }

    fn list_into(&self, target: &Target, sink: &mut crate::walk::Sink<DirEntry>) {
        if let Err(err) = self.check_inside(target) {
            sink.push(Err(err));
            return;
        }
        let Some(dir) = self.walk_root(target) else {
            return;
        };
        let kind_of = |link: &Path| self.link_kind(link);
        for walked in Walk::new(dir, "", 1, Symlinks::Show(&kind_of)) {
            let path = display_join(&target.display, &walked.rel);
            if !sink.push(Ok(DirEntry {
                path,
                kind: walked.kind,
            })) {
                return;
            }
        }
    }

    fn glob_into(&self, pattern: &str, target: &Target, sink: &mut crate::walk::Sink<DirEntry>) {
        let filter = match PathFilter::for_glob(pattern, &target.display) {
            Ok(filter) => filter,
            Err(err) => {
                sink.push(Err(err));
                return;
            }
        };
        if let Err(err) = self.check_inside(target) {
            sink.push(Err(err));
            return;
        }
        let Some(dir) = self.walk_root(target) else {
            return;
        };
        let start = PathFilter::literal_base(pattern);
        if self.roots().is_some()
            && Path::new(&start)
                .components()
                .any(|c| c == std::path::Component::ParentDir)
        {
            // The walk would start outside the directory asked about.
            sink.push(Err(PathError::Other {
                path: target.display.clone(),
                message: format!(
                    "glob patterns may not climb with `..`: {pattern} (pass the directory as path instead)"
                ),
            }));
            return;
        }
        if crosses_symlink(&dir, &start) {
            return;
        }
        let trimmed = pattern.trim_start_matches("./").trim_start_matches('/');
        let max_depth = if trimmed.contains("**") {
            usize::MAX
        } else {
            trimmed.split('/').count()
        };
        let kind_of = |link: &Path| self.link_kind(link);
        for walked in Walk::new(dir, &start, max_depth, Symlinks::Show(&kind_of)) {
            if walked.kind != EntryKind::File || !filter.matches(&walked.rel) {
                continue;
            }
            let path = display_join(&target.display, &walked.rel);
            if !sink.push(Ok(DirEntry {
                path,
                kind: walked.kind,
            })) {
                return;
            }
        }
    }

    fn grep_into(
        &self,
        query: &GrepQuery,
        target: &Target,
        sink: &mut crate::walk::Sink<GrepResult>,
    ) {
        let matcher = match LineMatcher::new(query, &target.display) {
            Ok(matcher) => matcher,
            Err(err) => {
                sink.push(Err(err));
                return;
            }
        };
        let not_found = || PathError::FileNotFound {
            path: target.display.clone(),
        };
        if let Err(err) = self.check_inside(target) {
            sink.push(Err(err));
            return;
        }
        let Some(resolved) = self.visible(&target.host) else {
            sink.push(Err(not_found()));
            return;
        };
        let Ok(meta) = fs::metadata(&resolved) else {
            sink.push(Err(not_found()));
            return;
        };
        let mut searcher = LineMatcher::searcher();
        let mut left = query.max_results;
        if left == Some(0) {
            return;
        }
        if meta.is_file() {
            if !matcher.wants_file(crate::basename(&target.display)) {
                return;
            }
            if let Ok(hits) = matcher.search_file(&mut searcher, &target.display, &resolved, left) {
                for hit in hits {
                    if !sink.push(Ok(hit)) {
                        return;
                    }
                }
            }
            return;
        }
        let mut file = PathBuf::with_capacity(resolved.as_os_str().len() + 64);
        for walked in Walk::new(resolved.clone(), "", usize::MAX, Symlinks::Skip) {
            if walked.kind != EntryKind::File || !matcher.wants_file(&walked.rel) {
                continue;
            }
            file.as_mut_os_string().clear();
            file.push(&resolved);
            file.push(&walked.rel);
            let path = display_join(&target.display, &walked.rel);
            let hits = matcher.search_file(&mut searcher, &path, &file, left);
            let Ok(hits) = hits else {
                continue;
            };
            for hit in hits {
                if !sink.push(Ok(hit)) {
                    return;
                }
                if let Some(n) = left.as_mut() {
                    *n -= 1;
                    if *n == 0 {
                        return;
                    }
                }
            }
        }
    }

    fn root_target(&self, path: Option<&str>) -> Target {
        match path {
            None | Some("") => match &*self.mode {
                Mode::Confined { .. } => self.target("/"),
                Mode::Local { cwd, .. } => self.target(&cwd.to_string_lossy()),
            },
            Some(path) => self.target(path),
        }
    }
}

fn read_failed(target: &Target, err: io::Error) -> PathError {
    PathError::Other {
        path: target.display.clone(),
        message: format!("read failed: {}: {err}", target.display),
    }
}

fn write_failed(path: &str, err: &io::Error) -> PathError {
    PathError::WriteFailed {
        path: path.to_string(),
        message: Some(err.to_string()),
    }
}

#[async_trait::async_trait]
impl FileSystem for HostTree {
    fn list(&self, prefix: &str) -> FsStream<DirEntry> {
        let tree = self.clone();
        let target = self.root_target(Some(prefix));
        produce(move |sink| tree.list_into(&target, sink))
    }

    async fn stat(&self, path: &str) -> Result<FileInfo, PathError> {
        let tree = self.clone();
        let target = self.target(path);
        let display = target.display.clone();
        blocking(&display, move || tree.stat_blocking(&target)).await
    }

    fn glob(&self, pattern: &str, dir: Option<&str>) -> FsStream<DirEntry> {
        let tree = self.clone();
        let target = self.root_target(dir);
        let pattern = pattern.to_string();
        produce(move |sink| tree.glob_into(&pattern, &target, sink))
    }

    async fn read(&self, path: &str) -> Result<Content, PathError> {
        let tree = self.clone();
        let target = self.target(path);
        let display = target.display.clone();
        blocking(&display, move || tree.read_blocking(&target)).await
    }

    async fn read_page(&self, path: &str, offset: u64, limit: u64) -> Result<Page, PathError> {
        let tree = self.clone();
        let target = self.target(path);
        let display = target.display.clone();
        blocking(&display, move || tree.page_blocking(&target, offset, limit)).await
    }

    fn grep(&self, query: GrepQuery) -> FsStream<GrepResult> {
        let tree = self.clone();
        let target = self.root_target(query.path.as_deref());
        produce(move |sink| tree.grep_into(&query, &target, sink))
    }

    async fn write(&self, path: &str, contents: &str) -> Result<(), PathError> {
        let tree = self.clone();
        let target = self.target(path);
        let display = target.display.clone();
        let contents = contents.to_string();
        blocking(&display, move || tree.write_blocking(&target, &contents)).await
    }

    async fn delete(&self, path: &str) -> Result<(), PathError> {
        let tree = self.clone();
        let target = self.target(path);
        let display = target.display.clone();
        blocking(&display, move || tree.delete_blocking(&target)).await
    }

    fn search(&self, _query: SearchQuery) -> FsStream<SearchResult> {
        Box::pin(futures::stream::empty())
    }
}
