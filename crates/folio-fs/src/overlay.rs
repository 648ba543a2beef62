//! Same-root overlays: [`overlay_fs`] (read-only) and [`writable_overlay_fs`] (a writable upper
//! layer over read-only lowers, with whiteouts and a [`diff`](WritableOverlayFs::diff)).
//!
//! Layers are ordered upper first; an earlier layer wins. A path is visible from the first layer
//! that has anything at it: `list`/`glob` merge the layers de-duplicated (first layer wins), and a
//! `grep`/`search` hit from a lower layer counts only when no earlier layer has that path.
//! Shadowing is by exact path: an upper file `/a` does not hide a lower `/a/b` (its `list`,
//! `glob` and `grep` still show it), as a lower directory does not hide an upper file.
//!
//! A layer that fails costs only its own files: its errors are dropped, and `stat`, `grep`,
//! `search` (and `list`/`glob`) fail only when no layer served. `read` tries the layers in order;
//! when none has the file it is `not found`, or a failed layer's error when no layer answered.
//!
//! In a writable overlay, deleting a file that a lower layer holds records a *whiteout*: the path
//! disappears from every verb until it is written again. Whiteouts hide lower layers only.

use std::collections::BTreeSet;
use std::sync::{Arc, PoisonError, RwLock};

use futures::stream;
use futures::{StreamExt, TryStreamExt};

use crate::merge::{
    MergeOptions, PathItem, entry_order, grep_order, merge_sorted_by, search_order,
};
use crate::union::IntoFs;
use crate::{
    Content, DirEntry, FileInfo, FileKind, FileSystem, FsStream, GrepQuery, GrepResult,
    LineMatcher, PathError, PathFilter, SearchQuery, SearchResult, normalize_fs_path, parent,
};

/// A read-only overlay of `layers` (upper first); see the module docs.
///
/// ```
/// # futures::executor::block_on(async {
/// use folio_fs::{overlay_fs, temp_fs, Content, FileSystem};
/// let tree = overlay_fs([temp_fs([("/a", "upper")]), temp_fs([("/a", "lower"), ("/b", "lower")])]);
/// assert_eq!(tree.read("/a").await.unwrap(), Content::Text("upper".into()));
/// assert_eq!(tree.read("/b").await.unwrap(), Content::Text("lower".into()));
/// assert_eq!(tree.write("/a", "x").await.unwrap_err().to_string(), "read-only mount: /a");
/// # });
/// ```
pub fn overlay_fs<I, F>(layers: I) -> Arc<dyn FileSystem>
where
    I: IntoIterator<Item = F>,
    F: IntoFs,
{
    Arc::new(OverlayFs::new(layers))
}

/// A writable overlay: writes go to `upper`, deletes of lower files become whiteouts.
///
/// ```
/// # futures::executor::block_on(async {
/// use std::sync::Arc;
/// use folio_fs::{temp_fs, writable_overlay_fs, FileSystem, OverlayDiff, TempFs};
/// let tree = writable_overlay_fs(Arc::new(TempFs::new()), [temp_fs([("/a", "1"), ("/b", "2")])]);
/// tree.write("/a", "changed").await.unwrap();
/// tree.write("/c", "new").await.unwrap();
/// tree.delete("/b").await.unwrap();
/// assert_eq!(tree.read("/b").await.unwrap_err().to_string(), "not found: /b");
/// let diff = tree.diff().await.unwrap();
/// assert_eq!(diff, OverlayDiff { added: vec!["/c".into()], modified: vec!["/a".into()], deleted: vec!["/b".into()] });
/// # });
/// ```
pub fn writable_overlay_fs<U, I, F>(upper: U, lowers: I) -> Arc<WritableOverlayFs>
where
    U: IntoFs,
    I: IntoIterator<Item = F>,
    F: IntoFs,
{
    Arc::new(WritableOverlayFs::new(upper, lowers))
}

/// What a writable overlay changed relative to its lower layers; each list sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OverlayDiff {
    /// Files that exist only in the upper layer.
    pub added: Vec<String>,
    /// Files the upper layer holds with contents that differ from the lowers'.
    pub modified: Vec<String>,
    /// Lower files deleted through the overlay (whiteouts).
    pub deleted: Vec<String>,
}

type Whiteouts = Arc<RwLock<BTreeSet<String>>>;

/// The layers and (for a writable overlay) the whiteouts; every read verb lives here.
#[derive(Clone)]
struct Layers {
    layers: Arc<[Arc<dyn FileSystem>]>,
    whiteouts: Whiteouts,
}

fn whited_out(whiteouts: &Whiteouts, path: &str) -> bool {
    whiteouts
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .contains(path)
}

impl Layers {
    fn new(layers: Vec<Arc<dyn FileSystem>>) -> Self {
        Layers {
            layers: layers.into(),
            whiteouts: Whiteouts::default(),
        }
    }

    fn hidden(&self, index: usize, path: &str) -> bool {
        index > 0 && whited_out(&self.whiteouts, path)
    }

    /// Merges `open(layer)` for every layer; lower layers lose whited-out paths; with `shadow`,
    /// a lower layer's item also needs every earlier layer to have nothing at its path.
    fn merged<T, O, C>(&self, open: O, cmp: C, options: MergeOptions, shadow: bool) -> FsStream<T>
    where
        T: PathItem + Clone + Send + 'static,
        O: Fn(usize, &Arc<dyn FileSystem>) -> FsStream<T>,
        C: Fn(&T, &T) -> std::cmp::Ordering + Send + Sync + 'static,
    {
        let sources = self
            .layers
            .iter()
            .enumerate()
            .map(|(index, layer)| {
                let stream = open(index, layer);
                if index == 0 {
                    stream
                } else if shadow {
                    visible_only(
                        stream,
                        self.layers[..index].to_vec(),
                        self.whiteouts.clone(),
                    )
                } else {
                    let whiteouts = self.whiteouts.clone();
                    stream
                        .try_filter(move |item| {
                            futures::future::ready(!whited_out(&whiteouts, item.path()))
                        })
                        .boxed()
                }
            })
            .collect();
        merge_sorted_by(sources, cmp, options.skip_failed_sources())
    }

    fn list(&self, prefix: &str) -> FsStream<DirEntry> {
        let dir = normalize_fs_path(prefix);
        self.merged(
            |_, layer| layer.list(&dir),
            entry_order,
            MergeOptions::new().dedup(),
            false,
        )
    }

    async fn stat(&self, path: &str) -> Result<FileInfo, PathError> {
        let path = normalize_fs_path(path);
        let mut first_error = None;
        let mut served = false;
        for (index, layer) in self.layers.iter().enumerate() {
            if self.hidden(index, &path) {
                served = true;
                continue;
            }
            match layer.stat(&path).await {
                Ok(info) if info.kind == FileKind::Missing => served = true,
                Ok(info) => return Ok(FileInfo { path, ..info }),
                Err(err) => {
                    first_error.get_or_insert(err);
                }
            }
        }
        match first_error {
            Some(err) if !served => Err(err),
            _ => Ok(FileInfo::missing(path)),
        }
    }

    fn glob(&self, pattern: &str, dir: Option<&str>) -> FsStream<DirEntry> {
        let dir = normalize_fs_path(dir.unwrap_or("/"));
        if let Err(err) = PathFilter::for_glob(pattern, &dir) {
            return stream::iter([Err(err)]).boxed();
        }
        self.merged(
            |_, layer| layer.glob(pattern, Some(&dir)),
            entry_order,
            MergeOptions::new().dedup(),
            false,
        )
    }

    async fn read(&self, path: &str) -> Result<Content, PathError> {
        let path = normalize_fs_path(path);
        let mut first_error = None;
        let mut served = false;
        for (index, layer) in self.layers.iter().enumerate() {
            if self.hidden(index, &path) {
                served = true;
                break;
            }
            match layer.read(&path).await {
                Ok(content) => return Ok(content),
                Err(PathError::FileNotFound { .. }) => served = true,
                Err(err) => {
                    first_error.get_or_insert(err);
                }
            }
        }
        match first_error {
            Some(err) if !served => Err(err),
            _ => Err(PathError::FileNotFound { path }),
        }
    }

    fn grep(&self, query: GrepQuery) -> FsStream<GrepResult> {
        let scope = normalize_fs_path(query.path.as_deref().unwrap_or("/"));
        if let Err(err) = LineMatcher::new(&query, &scope) {
            return stream::iter([Err(err)]).boxed();
        }
        if query.max_results == Some(0) {
            return stream::empty().boxed();
        }
        let max = query.max_results;
        self.merged(
            |index, layer| {
                // Lower layers' hits are filtered by visibility, so only the top takes the cap.
                layer.grep(GrepQuery {
                    max_results: max.filter(|_| index == 0),
                    ..query.clone()
                })
            },
            grep_order,
            MergeOptions::new().max_results(max),
            true,
        )
    }

    fn search(&self, query: SearchQuery) -> FsStream<SearchResult> {
        if query.max_results == Some(0) {
            return stream::empty().boxed();
        }
        let max = query.max_results;
        self.merged(
            |index, layer| {
                layer.search(SearchQuery {
                    max_results: max.filter(|_| index == 0),
                    ..query.clone()
                })
            },
            search_order,
            MergeOptions::new().max_results(max),
            true,
        )
    }
}

/// Keeps the items of a lower layer whose path no earlier layer has anything at (a failing earlier
/// layer counts as having nothing) and that are not whited out; decisions are cached per path,
/// since a grep's hits come grouped by path.
fn visible_only<T: PathItem + Send + 'static>(
    stream: FsStream<T>,
    earlier: Vec<Arc<dyn FileSystem>>,
    whiteouts: Whiteouts,
) -> FsStream<T> {
    let state = (stream, earlier, whiteouts, None::<(String, bool)>);
    stream::unfold(
        state,
        |(mut stream, earlier, whiteouts, mut last)| async move {
            loop {
                let item = match stream.next().await? {
                    Ok(item) => item,
                    Err(err) => return Some((Err(err), (stream, earlier, whiteouts, last))),
                };
                let visible = match &last {
                    Some((path, visible)) if path == item.path() => *visible,
                    _ => {
                        let visible = !whited_out(&whiteouts, item.path())
                            && shadowed_by(&earlier, item.path()).await.is_none();
                        last = Some((item.path().to_string(), visible));
                        visible
                    }
                };
                if visible {
                    return Some((Ok(item), (stream, earlier, whiteouts, last)));
                }
            }
        },
    )
    .boxed()
}

/// The kind of the first of `layers` with anything at `path` (failing layers count as empty).
async fn shadowed_by(layers: &[Arc<dyn FileSystem>], path: &str) -> Option<FileKind> {
    for layer in layers {
        if let Ok(info) = layer.stat(path).await
            && info.kind != FileKind::Missing
        {
            return Some(info.kind);
        }
    }
    None
}

/// The tree behind [`overlay_fs`].
#[derive(Clone)]
pub struct OverlayFs {
    inner: Layers,
}

impl std::fmt::Debug for OverlayFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OverlayFs")
            .field("layers", &self.inner.layers.len())
            .finish()
    }
}

impl OverlayFs {
    /// A read-only overlay of `layers`, upper first.
    pub fn new<I, F>(layers: I) -> Self
    where
        I: IntoIterator<Item = F>,
        F: IntoFs,
    {
        OverlayFs {
            inner: Layers::new(layers.into_iter().map(IntoFs::into_fs).collect()),
        }
    }
}

#[async_trait::async_trait]
impl FileSystem for OverlayFs {
    fn list(&self, prefix: &str) -> FsStream<DirEntry> {
        self.inner.list(prefix)
    }

    async fn stat(&self, path: &str) -> Result<FileInfo, PathError> {
        self.inner.stat(path).await
    }

    fn glob(&self, pattern: &str, dir: Option<&str>) -> FsStream<DirEntry> {
        self.inner.glob(pattern, dir)
    }

    async fn read(&self, path: &str) -> Result<Content, PathError> {
        self.inner.read(path).await
    }

    fn grep(&self, query: GrepQuery) -> FsStream<GrepResult> {
        self.inner.grep(query)
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

    fn search(&self, query: SearchQuery) -> FsStream<SearchResult> {
        self.inner.search(query)
    }
}

/// The tree behind [`writable_overlay_fs`].
#[derive(Clone)]
pub struct WritableOverlayFs {
    /// Upper layer first, then the lowers.
    inner: Layers,
    /// The lowers alone (whiteouts ignored), the base that [`diff`](Self::diff) compares with.
    lowers: Layers,
}

impl std::fmt::Debug for WritableOverlayFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WritableOverlayFs")
            .field("lowers", &self.lowers.layers.len())
            .field("whiteouts", &self.whiteouts())
            .finish()
    }
}

fn write_failed(path: String) -> PathError {
    PathError::WriteFailed {
        path,
        message: None,
    }
}

impl WritableOverlayFs {
    /// Writes to `upper`, reads through `upper` then `lowers` (earlier wins).
    pub fn new<U, I, F>(upper: U, lowers: I) -> Self
    where
        U: IntoFs,
        I: IntoIterator<Item = F>,
        F: IntoFs,
    {
        let lowers: Vec<Arc<dyn FileSystem>> = lowers.into_iter().map(IntoFs::into_fs).collect();
        let mut layers = vec![upper.into_fs()];
        layers.extend(lowers.iter().cloned());
        WritableOverlayFs {
            inner: Layers::new(layers),
            lowers: Layers::new(lowers),
        }
    }

    fn upper(&self) -> &Arc<dyn FileSystem> {
        &self.inner.layers[0]
    }

    /// The deleted lower paths, sorted.
    pub fn whiteouts(&self) -> Vec<String> {
        self.inner
            .whiteouts
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }

    /// The changes against the lower layers: added, modified and deleted files, each sorted.
    pub async fn diff(&self) -> Result<OverlayDiff, PathError> {
        let mut diff = OverlayDiff {
            deleted: self.whiteouts(),
            ..OverlayDiff::default()
        };
        let mut upper_files = self.upper().glob("**", Some("/"));
        while let Some(entry) = upper_files.try_next().await? {
            let lower = match self.lowers.read(&entry.path).await {
                Ok(content) => Some(content),
                Err(PathError::FileNotFound { .. }) => None,
                Err(err) => return Err(err),
            };
            match lower {
                None => diff.added.push(entry.path),
                Some(lower) => {
                    if self.upper().read(&entry.path).await? != lower {
                        diff.modified.push(entry.path);
                    }
                }
            }
        }
        Ok(diff)
    }

    fn set_whiteout(&self, path: &str, on: bool) {
        let mut whiteouts = self
            .inner
            .whiteouts
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if on {
            whiteouts.insert(path.to_string());
        } else {
            whiteouts.remove(path);
        }
    }
}

#[async_trait::async_trait]
impl FileSystem for WritableOverlayFs {
    fn list(&self, prefix: &str) -> FsStream<DirEntry> {
        self.inner.list(prefix)
    }

    async fn stat(&self, path: &str) -> Result<FileInfo, PathError> {
        self.inner.stat(path).await
    }

    fn glob(&self, pattern: &str, dir: Option<&str>) -> FsStream<DirEntry> {
        self.inner.glob(pattern, dir)
    }

    async fn read(&self, path: &str) -> Result<Content, PathError> {
        self.inner.read(path).await
    }

    fn grep(&self, query: GrepQuery) -> FsStream<GrepResult> {
        self.inner.grep(query)
    }

    async fn write(&self, path: &str, contents: &str) -> Result<(), PathError> {
        let path = normalize_fs_path(path);
        if path == "/" || self.inner.stat(&path).await?.kind == FileKind::Directory {
            return Err(write_failed(path));
        }
        let mut ancestor = parent(&path);
        while ancestor != "/" {
            if self.inner.stat(ancestor).await?.kind == FileKind::File {
                return Err(write_failed(path));
            }
            ancestor = parent(ancestor);
        }
        self.upper().write(&path, contents).await?;
        self.set_whiteout(&path, false);
        Ok(())
    }

    async fn delete(&self, path: &str) -> Result<(), PathError> {
        let path = normalize_fs_path(path);
        let in_upper = self.upper().stat(&path).await?.kind == FileKind::File;
        let in_lowers = !whited_out(&self.inner.whiteouts, &path)
            && self.lowers.stat(&path).await?.kind == FileKind::File;
        if !in_upper && !in_lowers {
            return Err(match self.inner.stat(&path).await?.kind {
                FileKind::Directory => write_failed(path),
                FileKind::File | FileKind::Missing => PathError::FileNotFound { path },
            });
        }
        if in_upper {
            self.upper().delete(&path).await?;
        }
        if in_lowers {
            self.set_whiteout(&path, true);
        }
        Ok(())
    }

    fn search(&self, query: SearchQuery) -> FsStream<SearchResult> {
        self.inner.search(query)
    }

    fn session_view(&self) -> Option<Arc<dyn FileSystem>> {
        // Writes go to the upper layer only: its view, over the same lowers and whiteouts.
        let upper = self.upper().session_view()?;
        let mut layers: Vec<Arc<dyn FileSystem>> = self.inner.layers.to_vec();
        layers[0] = upper;
        Some(Arc::new(WritableOverlayFs {
            inner: Layers {
                layers: layers.into(),
                whiteouts: self.inner.whiteouts.clone(),
            },
            lowers: self.lowers.clone(),
        }))
    }
}
