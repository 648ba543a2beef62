//! [`union_fs`]: several trees mounted at path prefixes of one namespace.
//!
//! Routing is by the longest mount prefix that contains a path, segment-wise (`/agent` covers
//! `/agent/skills`, not `/agent-tools`). Every child is rooted at `/`: the union strips the mount
//! prefix going in and adds it back to every yielded path and every error
//! (`error.with_path(prefix + child_path)`).
//!
//! Shadowing follows routing. A path is served by the deepest mount that covers it, so a child's
//! own files under a deeper mount point (an authored `/tmp/x` under the `/tmp` scratch mount) are
//! hidden from every verb, and a mount point (and each directory on the way to it) is a directory
//! of the union. When two mounts share one prefix, the earlier one wins and the later one is
//! unreachable.
//!
//! Walk verbs fan out: `list`, `glob`, `grep` and `search` of a directory ask the mount covering it
//! and every mount below it, then merge the children's sorted streams with
//! [`merge_sorted_by`](crate::merge::merge_sorted_by) (`list`/`glob` de-duplicated, `grep`/`search`
//! keeping every hit). `max_results` is pushed down to every child whose answer the union does not
//! filter further, and applied again after the merge; the merge is lazy either way.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream;
use globset::GlobBuilder;

use crate::limits::check_write_path;
use crate::merge::{
    MergeOptions, PathItem, entry_order, grep_order, merge_sorted_by, search_order,
};
use crate::{
    Content, DirEntry, FileInfo, FileKind, FileSystem, FsStream, GrepQuery, GrepResult,
    LineMatcher, Page, PathError, PathFilter, SearchQuery, SearchResult, is_within, join_mount,
    normalize_fs_path, strip_mount,
};

/// Anything a composer accepts as a child tree: an `Arc` of a concrete tree or of `dyn FileSystem`.
pub trait IntoFs {
    /// The tree as a shared trait object.
    fn into_fs(self) -> Arc<dyn FileSystem>;
}

impl<T: FileSystem> IntoFs for Arc<T> {
    fn into_fs(self) -> Arc<dyn FileSystem> {
        self
    }
}

impl IntoFs for Arc<dyn FileSystem> {
    fn into_fs(self) -> Arc<dyn FileSystem> {
        self
    }
}

/// Mounts each `(prefix, tree)` of `mounts` at its (normalized) prefix; see the module docs.
///
/// ```
/// # futures::executor::block_on(async {
/// use folio_fs::{temp_fs, union_fs, FileSystem};
/// let root = union_fs([("/", temp_fs([("/a.txt", "authored")])), ("/tmp", temp_fs([("/s.txt", "x")]))]);
/// assert_eq!(root.stat("/tmp/s.txt").await.unwrap().size, Some(1));
/// assert_eq!(root.read("/tmp/nope").await.unwrap_err().to_string(), "not found: /tmp/nope");
/// # });
/// ```
pub fn union_fs<I, P, F>(mounts: I) -> Arc<dyn FileSystem>
where
    I: IntoIterator<Item = (P, F)>,
    P: AsRef<str>,
    F: IntoFs,
{
    Arc::new(UnionFs::new(mounts))
}

/// One mounted child.
struct Mount {
    prefix: String,
    fs: Arc<dyn FileSystem>,
    /// The prefixes of the mounts strictly below this one: paths the child must not serve.
    shadowed: Arc<[String]>,
}

/// The tree behind [`union_fs`].
pub struct UnionFs {
    mounts: Vec<Mount>,
}

impl std::fmt::Debug for UnionFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnionFs")
            .field(
                "mounts",
                &self.mounts.iter().map(|m| &m.prefix).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl UnionFs {
    /// A union of `mounts`; a prefix given twice keeps its first tree.
    pub fn new<I, P, F>(mounts: I) -> Self
    where
        I: IntoIterator<Item = (P, F)>,
        P: AsRef<str>,
        F: IntoFs,
    {
        let mut seen = BTreeSet::new();
        let given: Vec<(String, Arc<dyn FileSystem>)> = mounts
            .into_iter()
            .map(|(prefix, fs)| (normalize_fs_path(prefix.as_ref()), fs.into_fs()))
            .filter(|(prefix, _)| seen.insert(prefix.clone()))
            .collect();
        let prefixes: Vec<String> = given.iter().map(|(prefix, _)| prefix.clone()).collect();
        let mounts = given
            .into_iter()
            .map(|(prefix, fs)| {
                let shadowed: Vec<String> = prefixes
                    .iter()
                    .filter(|other| *other != &prefix && is_within(other, &prefix))
                    .cloned()
                    .collect();
                Mount {
                    prefix,
                    fs,
                    shadowed: shadowed.into(),
                }
            })
            .collect();
        UnionFs { mounts }
    }

    /// The mount serving `path`: the longest prefix containing it.
    fn covering(&self, path: &str) -> Option<&Mount> {
        self.mounts
            .iter()
            .filter(|mount| is_within(path, &mount.prefix))
            .max_by_key(|mount| mount.prefix.len())
    }

    /// The mounts strictly below directory `dir`.
    fn below<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = &'a Mount> + 'a {
        self.mounts
            .iter()
            .filter(move |mount| mount.prefix != dir && is_within(&mount.prefix, dir))
    }

    /// Whether `path` is a mount point or a directory on the way to one.
    fn holds_mount(&self, path: &str) -> bool {
        self.mounts
            .iter()
            .any(|mount| is_within(&mount.prefix, path))
    }

    /// Routes a single-path verb to the covering mount: the child path, or `no mount for path`.
    fn route(&self, path: &str) -> Result<(&Mount, String), PathError> {
        let mount = self.covering(path).ok_or_else(|| PathError::NoMount {
            path: path.to_string(),
        })?;
        let child_path = strip_mount(path, &mount.prefix).unwrap_or_else(|| "/".to_string());
        Ok((mount, child_path))
    }
}

/// A child's error about `child_path`-space, re-raised about the union path.
fn reprefix_error(prefix: &str, err: PathError) -> PathError {
    let path = join_mount(prefix, err.path());
    err.with_path(path)
}

/// A post-filter on union paths: a glob matched against the path relative to `base`.
struct PostFilter {
    filter: PathFilter,
    base: String,
}

impl PostFilter {
    fn matches(&self, path: &str) -> bool {
        let relative = if self.base == "/" {
            &path[1..]
        } else {
            path.get(self.base.len() + 1..).unwrap_or("")
        };
        self.filter.matches(relative)
    }
}

/// A child's stream in union space: paths re-prefixed, errors re-raised, paths served by deeper
/// mounts dropped, and an optional glob post-filter.
fn adapt<T: PathItem + Send + 'static>(
    stream: FsStream<T>,
    mount: &Mount,
    post: Option<PostFilter>,
) -> FsStream<T> {
    let prefix = mount.prefix.clone();
    let shadowed = mount.shadowed.clone();
    stream
        .filter_map(move |item| {
            let out = match item {
                Ok(mut item) => {
                    let path = join_mount(&prefix, item.path());
                    // Served by a deeper mount, or on the way to one (a directory of the union).
                    let hidden = shadowed
                        .iter()
                        .any(|deeper| is_within(&path, deeper) || is_within(deeper, &path))
                        || post.as_ref().is_some_and(|post| !post.matches(&path));
                    if hidden {
                        None
                    } else {
                        item.set_path(path);
                        Some(Ok(item))
                    }
                }
                Err(err) => Some(Err(reprefix_error(&prefix, err))),
            };
            futures::future::ready(out)
        })
        .boxed()
}

/// Whether the child of `mount`, asked about `scope` (in union space), can have answers the union
/// drops (files under a deeper mount); then its results cannot carry a pushed-down cap.
fn filtered_in(mount: &Mount, scope: &str) -> bool {
    mount
        .shadowed
        .iter()
        .any(|deeper| is_within(deeper, scope) || is_within(scope, deeper))
}

/// How a glob relative to a directory applies inside a mount below that directory.
#[derive(Debug, PartialEq, Eq)]
enum Trimmed {
    /// Nothing inside the mount can match.
    Skip,
    /// The pattern relative to the mount root.
    Rest(String),
    /// Undecidable by segments (`**`, braces, classes): walk the child and filter in the union.
    Walk,
}

/// Trims `pattern` (relative to a directory) by the segments `mount_rel` of a mount below it.
fn trim_pattern(pattern: &str, mount_rel: &str) -> Trimmed {
    let pattern = pattern.trim_start_matches("./").trim_start_matches('/');
    if pattern.contains(['{', '[', '\\']) {
        return Trimmed::Walk;
    }
    let segments: Vec<&str> = pattern.split('/').collect();
    let mount_segments: Vec<&str> = mount_rel.split('/').collect();
    if segments.len() <= mount_segments.len() {
        // Matches stop at or above the mount point, unless `**` can reach deeper.
        return if segments.iter().any(|s| s.contains("**")) {
            Trimmed::Walk
        } else {
            Trimmed::Skip
        };
    }
    for (segment, mount_segment) in segments.iter().zip(&mount_segments) {
        if segment.contains("**") {
            return Trimmed::Walk;
        }
        let glob = GlobBuilder::new(segment)
            .literal_separator(true)
            .backslash_escape(true)
            .build();
        match glob {
            Ok(glob) if glob.compile_matcher().is_match(mount_segment) => {}
            Ok(_) => return Trimmed::Skip,
            Err(_) => return Trimmed::Walk,
        }
    }
    Trimmed::Rest(segments[mount_segments.len()..].join("/"))
}

/// The path of `mount` relative to directory `dir` it lies strictly below (no leading slash).
fn relative_below(mount: &str, dir: &str) -> String {
    let rest = strip_mount(mount, dir).unwrap_or_default();
    rest.trim_start_matches('/').to_string()
}

fn fail<T: Send + 'static>(err: PathError) -> FsStream<T> {
    stream::iter([Err(err)]).boxed()
}

#[async_trait::async_trait]
impl FileSystem for UnionFs {
    fn list(&self, prefix: &str) -> FsStream<DirEntry> {
        let dir = normalize_fs_path(prefix);
        // Mount points and the directories leading to them, first so they win over a child's entry.
        let dir_slash = if dir == "/" {
            "/".to_string()
        } else {
            format!("{dir}/")
        };
        let synthesized: BTreeSet<DirEntry> = self
            .below(&dir)
            .map(|mount| {
                let rest = &mount.prefix[dir_slash.len()..];
                let first = rest.split('/').next().unwrap_or(rest);
                DirEntry::dir(format!("{dir_slash}{first}"))
            })
            .collect();
        let mut sources: Vec<FsStream<DirEntry>> =
            vec![stream::iter(synthesized.into_iter().map(Ok)).boxed()];
        if let Some(mount) = self.covering(&dir) {
            let child_dir = strip_mount(&dir, &mount.prefix).unwrap_or_else(|| "/".into());
            sources.push(adapt(mount.fs.list(&child_dir), mount, None));
        }
        merge_sorted_by(sources, entry_order, MergeOptions::new().dedup())
    }

    async fn stat(&self, path: &str) -> Result<FileInfo, PathError> {
        let path = normalize_fs_path(path);
        if path == "/" || self.holds_mount(&path) {
            return Ok(FileInfo {
                path,
                kind: FileKind::Directory,
                size: None,
                modified: None,
            });
        }
        let Ok((mount, child_path)) = self.route(&path) else {
            return Ok(FileInfo::missing(path));
        };
        match mount.fs.stat(&child_path).await {
            Ok(info) => Ok(FileInfo { path, ..info }),
            Err(err) => Err(reprefix_error(&mount.prefix, err)),
        }
    }

    fn glob(&self, pattern: &str, dir: Option<&str>) -> FsStream<DirEntry> {
        let dir = normalize_fs_path(dir.unwrap_or("/"));
        if let Err(err) = PathFilter::for_glob(pattern, &dir) {
            return fail(err);
        }
        let mut sources = Vec::new();
        if let Some(mount) = self.covering(&dir) {
            let child_dir = strip_mount(&dir, &mount.prefix).unwrap_or_else(|| "/".into());
            sources.push(adapt(mount.fs.glob(pattern, Some(&child_dir)), mount, None));
        }
        for mount in self.below(&dir) {
            match trim_pattern(pattern, &relative_below(&mount.prefix, &dir)) {
                Trimmed::Skip => {}
                Trimmed::Rest(rest) => {
                    sources.push(adapt(mount.fs.glob(&rest, Some("/")), mount, None));
                }
                Trimmed::Walk => {
                    let post = PathFilter::for_glob(pattern, &dir)
                        .ok()
                        .map(|filter| PostFilter {
                            filter,
                            base: dir.clone(),
                        });
                    sources.push(adapt(mount.fs.glob("**", Some("/")), mount, post));
                }
            }
        }
        merge_sorted_by(sources, entry_order, MergeOptions::new().dedup())
    }

    async fn read(&self, path: &str) -> Result<Content, PathError> {
        let path = normalize_fs_path(path);
        let (mount, child_path) = self.route(&path)?;
        mount
            .fs
            .read(&child_path)
            .await
            .map_err(|err| reprefix_error(&mount.prefix, err))
    }

    async fn read_page(&self, path: &str, offset: u64, limit: u64) -> Result<Page, PathError> {
        let path = normalize_fs_path(path);
        let (mount, child_path) = self.route(&path)?;
        mount
            .fs
            .read_page(&child_path, offset, limit)
            .await
            .map_err(|err| reprefix_error(&mount.prefix, err))
    }

    fn grep(&self, query: GrepQuery) -> FsStream<GrepResult> {
        let scope = normalize_fs_path(query.path.as_deref().unwrap_or("/"));
        if let Err(err) = LineMatcher::new(&query, &scope) {
            return fail(err);
        }
        if query.max_results == Some(0) {
            return stream::empty().boxed();
        }
        let path_glob = query
            .glob
            .as_deref()
            .filter(|glob| glob.contains('/'))
            .map(str::to_string);
        let mut sources = Vec::new();
        if let Some(mount) = self.covering(&scope) {
            let child_scope = strip_mount(&scope, &mount.prefix).unwrap_or_else(|| "/".into());
            let child_query = GrepQuery {
                path: Some(child_scope),
                max_results: query.max_results.filter(|_| !filtered_in(mount, &scope)),
                ..query.clone()
            };
            sources.push(adapt(mount.fs.grep(child_query), mount, None));
        }
        for mount in self.below(&scope) {
            let mut child_query = GrepQuery {
                path: Some("/".to_string()),
                max_results: query.max_results.filter(|_| mount.shadowed.is_empty()),
                ..query.clone()
            };
            let mut post = None;
            if let Some(glob) = &path_glob {
                // A glob with a slash is relative to the scope, which the child cannot see: match
                // it here on the union path instead.
                if trim_pattern(glob, &relative_below(&mount.prefix, &scope)) == Trimmed::Skip {
                    continue;
                }
                child_query.glob = None;
                child_query.max_results = None;
                post = PathFilter::for_grep(glob, &scope)
                    .ok()
                    .map(|filter| PostFilter {
                        filter,
                        base: scope.clone(),
                    });
            }
            sources.push(adapt(mount.fs.grep(child_query), mount, post));
        }
        merge_sorted_by(
            sources,
            grep_order,
            MergeOptions::new().max_results(query.max_results),
        )
    }

    async fn write(&self, path: &str, contents: &str) -> Result<(), PathError> {
        let path = normalize_fs_path(path);
        check_write_path(&path)?;
        let (mount, child_path) = self.route(&path)?;
        if self.holds_mount(&path) {
            return Err(PathError::WriteFailed {
                path,
                message: None,
            });
        }
        mount
            .fs
            .write(&child_path, contents)
            .await
            .map_err(|err| reprefix_error(&mount.prefix, err))
    }

    async fn delete(&self, path: &str) -> Result<(), PathError> {
        let path = normalize_fs_path(path);
        let (mount, child_path) = self.route(&path)?;
        if self.holds_mount(&path) {
            return Err(PathError::WriteFailed {
                path,
                message: None,
            });
        }
        mount
            .fs
            .delete(&child_path)
            .await
            .map_err(|err| reprefix_error(&mount.prefix, err))
    }

    fn search(&self, query: SearchQuery) -> FsStream<SearchResult> {
        let scope = normalize_fs_path(query.path.as_deref().unwrap_or("/"));
        if query.max_results == Some(0) {
            return stream::empty().boxed();
        }
        let mut sources = Vec::new();
        if let Some(mount) = self.covering(&scope) {
            let child_scope = strip_mount(&scope, &mount.prefix).unwrap_or_else(|| "/".into());
            let child_query = SearchQuery {
                path: Some(child_scope),
                max_results: query.max_results.filter(|_| !filtered_in(mount, &scope)),
                ..query.clone()
            };
            sources.push(adapt(mount.fs.search(child_query), mount, None));
        }
        for mount in self.below(&scope) {
            let child_query = SearchQuery {
                path: Some("/".to_string()),
                max_results: query.max_results.filter(|_| mount.shadowed.is_empty()),
                ..query.clone()
            };
            sources.push(adapt(mount.fs.search(child_query), mount, None));
        }
        merge_sorted_by(
            sources,
            search_order,
            MergeOptions::new().max_results(query.max_results),
        )
    }

    fn session_view(&self) -> Option<Arc<dyn FileSystem>> {
        let views: Vec<Option<Arc<dyn FileSystem>>> =
            self.mounts.iter().map(|m| m.fs.session_view()).collect();
        if views.iter().all(Option::is_none) {
            return None;
        }
        // The same mounts in the same order; a child with session state is replaced by its view.
        let mounts = self
            .mounts
            .iter()
            .zip(views)
            .map(|(mount, view)| Mount {
                prefix: mount.prefix.clone(),
                fs: view.unwrap_or_else(|| mount.fs.clone()),
                shadowed: mount.shadowed.clone(),
            })
            .collect();
        Some(Arc::new(UnionFs { mounts }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_patterns_by_mount_segments() {
        use Trimmed::*;
        assert_eq!(trim_pattern("repo/*.rs", "repo"), Rest("*.rs".into()));
        assert_eq!(trim_pattern("*/src/*.rs", "repo"), Rest("src/*.rs".into()));
        assert_eq!(trim_pattern("other/*.rs", "repo"), Skip);
        assert_eq!(trim_pattern("*.rs", "repo"), Skip);
        assert_eq!(trim_pattern("*", "a/b"), Skip);
        assert_eq!(trim_pattern("**/*.rs", "repo"), Walk);
        assert_eq!(trim_pattern("a/**", "a/b"), Walk);
        assert_eq!(trim_pattern("{a,b}/*", "a"), Walk);
        assert_eq!(trim_pattern("./a/b/c/*", "a/b"), Rest("c/*".into()));
        assert_eq!(trim_pattern("a-*/x", "a"), Skip);
    }
}
