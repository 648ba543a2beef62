//! The k-way merge every composer is built on.
//!
//! Each source is an [`FsStream`] that its producer already sorted; [`merge_sorted_by`] interleaves
//! them into one sorted stream without re-sorting anything. It is lazy: a source is polled only when
//! its head is needed (all heads once at the start, then only the source whose head was just
//! yielded), so a consumer that stops early stops the children too. Options:
//!
//! - **dedup**: an item that compares equal to the one just yielded is skipped. Ties go to the
//!   lowest source index, so the first source wins (an earlier mount or layer shadows a later one).
//! - **max_results**: after that many items the merge ends and drops every source.
//! - **errors**: [`OnError::Propagate`] yields a source's error where it occurs (union);
//!   [`OnError::SkipFailedSource`] drops a failed source, losing only its own items, and fails only
//!   when no source served (overlay).
//!
//! ```
//! # futures::executor::block_on(async {
//! use folio_fs::{DirEntry, FsStream, merge::{entry_order, merge_sorted_by, MergeOptions}};
//! use futures::{stream, StreamExt, TryStreamExt};
//! let a: FsStream<DirEntry> = stream::iter([Ok(DirEntry::file("/a")), Ok(DirEntry::file("/c"))]).boxed();
//! let b: FsStream<DirEntry> = stream::iter([Ok(DirEntry::dir("/a")), Ok(DirEntry::file("/b"))]).boxed();
//! let merged: Vec<DirEntry> = merge_sorted_by(vec![a, b], entry_order, MergeOptions::new().dedup())
//!     .try_collect()
//!     .await
//!     .unwrap();
//! assert_eq!(merged, [DirEntry::file("/a"), DirEntry::file("/b"), DirEntry::file("/c")]);
//! # });
//! ```

use std::cmp::Ordering;

use futures::StreamExt;
use futures::future::join_all;
use futures::stream;

use crate::{DirEntry, FsStream, GrepResult, PathError, SearchResult};

/// What the merge does when a source yields an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// Yield the error where it occurs and keep merging (union: a child's failure is the caller's).
    #[default]
    Propagate,
    /// Drop the failed source, losing only its remaining items; the merge yields the first error
    /// only when no source served (every source failed before yielding or finishing cleanly).
    SkipFailedSource,
}

/// How [`merge_sorted_by`] combines its sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MergeOptions {
    /// Skip an item equal to the one just yielded (the first source wins ties).
    pub dedup: bool,
    /// Stop after this many items, dropping every source.
    pub max_results: Option<usize>,
    /// What a source's error does.
    pub on_error: OnError,
}

impl MergeOptions {
    /// Keep every item, no cap, propagate errors.
    pub fn new() -> Self {
        MergeOptions::default()
    }

    /// Skip items equal to the one just yielded (first source wins).
    pub fn dedup(mut self) -> Self {
        self.dedup = true;
        self
    }

    /// Stop after `max_results` items when it is `Some`.
    pub fn max_results(mut self, max_results: Option<usize>) -> Self {
        self.max_results = max_results;
        self
    }

    /// Drop failed sources; fail only when no source served.
    pub fn skip_failed_sources(mut self) -> Self {
        self.on_error = OnError::SkipFailedSource;
        self
    }
}

/// `list`/`glob` order: lexicographic by path.
pub fn entry_order(a: &DirEntry, b: &DirEntry) -> Ordering {
    a.path.cmp(&b.path)
}

/// `grep` order: by path, then line number ascending.
pub fn grep_order(a: &GrepResult, b: &GrepResult) -> Ordering {
    a.path.cmp(&b.path).then(a.line_number.cmp(&b.line_number))
}

/// `search` order: by score descending, then path ascending.
pub fn search_order(a: &SearchResult, b: &SearchResult) -> Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| a.path.cmp(&b.path))
}

/// An item of a walk verb that carries the path it is about (composers rewrite and filter it).
pub(crate) trait PathItem {
    /// The item's absolute path.
    fn path(&self) -> &str;
    /// Replaces the item's path.
    fn set_path(&mut self, path: String);
}

impl PathItem for DirEntry {
    fn path(&self) -> &str {
        &self.path
    }
    fn set_path(&mut self, path: String) {
        self.path = path;
    }
}

impl PathItem for GrepResult {
    fn path(&self) -> &str {
        &self.path
    }
    fn set_path(&mut self, path: String) {
        self.path = path;
    }
}

impl PathItem for SearchResult {
    fn path(&self) -> &str {
        &self.path
    }
    fn set_path(&mut self, path: String) {
        self.path = path;
    }
}

/// Merges sorted `sources` by the key `key` extracts (see [`merge_sorted_by`]).
pub fn merge_sorted_by_key<T, K, F>(
    sources: Vec<FsStream<T>>,
    key: F,
    options: MergeOptions,
) -> FsStream<T>
where
    T: Clone + Send + 'static,
    K: Ord,
    F: Fn(&T) -> K + Send + Sync + 'static,
{
    merge_sorted_by(sources, move |a, b| key(a).cmp(&key(b)), options)
}

/// Merges `sources`, each already sorted by `cmp`, into one stream sorted by `cmp`; lazy, see the
/// module docs for dedup, the cap and errors.
pub fn merge_sorted_by<T, C>(
    sources: Vec<FsStream<T>>,
    cmp: C,
    options: MergeOptions,
) -> FsStream<T>
where
    T: Clone + Send + 'static,
    C: Fn(&T, &T) -> Ordering + Send + Sync + 'static,
{
    if options.max_results == Some(0) {
        return stream::empty().boxed();
    }
    let state = Merge {
        sources: sources
            .into_iter()
            .map(|stream| Source {
                stream: Some(stream),
                head: None,
            })
            .collect(),
        cmp,
        options,
        yielded: 0,
        last: None,
        served: false,
        first_error: None,
        done: false,
    };
    stream::unfold(state, |mut state| async move {
        let item = state.next().await?;
        Some((item, state))
    })
    .boxed()
}

/// One input of the merge: its stream (gone once finished or dropped) and its buffered head.
struct Source<T> {
    stream: Option<FsStream<T>>,
    head: Option<T>,
}

struct Merge<T, C> {
    sources: Vec<Source<T>>,
    cmp: C,
    options: MergeOptions,
    yielded: usize,
    last: Option<T>,
    /// Whether any source yielded an item or finished cleanly (for `SkipFailedSource`).
    served: bool,
    first_error: Option<PathError>,
    done: bool,
}

impl<T, C> Merge<T, C>
where
    T: Clone + Send + 'static,
    C: Fn(&T, &T) -> Ordering + Send + Sync + 'static,
{
    async fn next(&mut self) -> Option<Result<T, PathError>> {
        loop {
            if self.done {
                return None;
            }
            if let Some(err) = self.refill().await {
                return Some(Err(err));
            }
            let Some(index) = self.min_head() else {
                self.finish();
                return match self.first_error.take() {
                    Some(err) if !self.served => Some(Err(err)),
                    _ => None,
                };
            };
            let item = self.sources[index].head.take()?;
            if self.options.dedup {
                if let Some(last) = &self.last
                    && (self.cmp)(last, &item) == Ordering::Equal
                {
                    continue;
                }
                self.last = Some(item.clone());
            }
            self.yielded += 1;
            if self
                .options
                .max_results
                .is_some_and(|max| self.yielded >= max)
            {
                self.finish();
            }
            return Some(Ok(item));
        }
    }

    /// Polls (concurrently) every live source whose head is empty. Under `Propagate`, returns the
    /// first error met; the erroring source stays live and is polled again next time.
    async fn refill(&mut self) -> Option<PathError> {
        let pending: Vec<_> = self
            .sources
            .iter_mut()
            .enumerate()
            .filter(|(_, source)| source.head.is_none())
            .filter_map(|(index, source)| source.stream.as_mut().map(|s| (index, s)))
            .map(|(index, stream)| async move { (index, stream.next().await) })
            .collect();
        if pending.is_empty() {
            return None;
        }
        let polled = join_all(pending).await;
        let mut propagated = None;
        for (index, next) in polled {
            let source = &mut self.sources[index];
            match next {
                Some(Ok(item)) => {
                    source.head = Some(item);
                    self.served = true;
                }
                None => {
                    source.stream = None;
                    self.served = true;
                }
                Some(Err(err)) => match self.options.on_error {
                    OnError::Propagate => {
                        // Later errors of the same round are re-polled next call; most streams end
                        // after an error, and those that do not will yield it again in order.
                        if propagated.is_none() {
                            propagated = Some(err);
                        }
                    }
                    OnError::SkipFailedSource => {
                        source.stream = None;
                        if self.first_error.is_none() {
                            self.first_error = Some(err);
                        }
                    }
                },
            }
        }
        propagated
    }

    /// The source holding the smallest head; ties go to the lowest index.
    fn min_head(&self) -> Option<usize> {
        let mut best: Option<(usize, &T)> = None;
        for (index, source) in self.sources.iter().enumerate() {
            if let Some(head) = &source.head {
                match best {
                    Some((_, current)) if (self.cmp)(head, current) != Ordering::Less => {}
                    _ => best = Some((index, head)),
                }
            }
        }
        best.map(|(index, _)| index)
    }

    /// Ends the merge and drops every source.
    fn finish(&mut self) {
        self.done = true;
        self.sources.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

    use futures::TryStreamExt;

    use super::*;

    fn files(paths: &[&str]) -> FsStream<DirEntry> {
        let items: Vec<_> = paths.iter().map(|p| Ok(DirEntry::file(*p))).collect();
        stream::iter(items).boxed()
    }

    fn counted(paths: &[&str], pulled: Arc<AtomicUsize>) -> FsStream<DirEntry> {
        files(paths)
            .inspect(move |_| {
                pulled.fetch_add(1, AtomicOrdering::SeqCst);
            })
            .boxed()
    }

    fn failing() -> FsStream<DirEntry> {
        stream::iter([Err(PathError::Other {
            path: "/".into(),
            message: "down".into(),
        })])
        .boxed()
    }

    fn paths(entries: Vec<DirEntry>) -> Vec<String> {
        entries.into_iter().map(|e| e.path).collect()
    }

    #[tokio::test]
    async fn merges_in_order_and_keeps_duplicates_without_dedup() {
        let merged = merge_sorted_by(
            vec![files(&["/a", "/c"]), files(&["/a", "/b", "/d"])],
            entry_order,
            MergeOptions::new(),
        );
        let got = paths(merged.try_collect().await.unwrap());
        assert_eq!(got, ["/a", "/a", "/b", "/c", "/d"]);
    }

    #[tokio::test]
    async fn dedup_keeps_the_first_source() {
        let a = stream::iter([Ok(DirEntry::file("/x"))]).boxed();
        let b = stream::iter([Ok(DirEntry::dir("/x")), Ok(DirEntry::dir("/y"))]).boxed();
        let merged: Vec<DirEntry> =
            merge_sorted_by(vec![a, b], entry_order, MergeOptions::new().dedup())
                .try_collect()
                .await
                .unwrap();
        assert_eq!(merged, [DirEntry::file("/x"), DirEntry::dir("/y")]);
    }

    #[tokio::test]
    async fn cap_stops_pulling() {
        let pulled = Arc::new(AtomicUsize::new(0));
        let many: Vec<String> = (0..1000).map(|i| format!("/f{i:04}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let merged = merge_sorted_by(
            vec![
                counted(&refs, pulled.clone()),
                counted(&refs, pulled.clone()),
            ],
            entry_order,
            MergeOptions::new().max_results(Some(3)),
        );
        let got = paths(merged.try_collect().await.unwrap());
        assert_eq!(got, ["/f0000", "/f0000", "/f0001"]);
        assert!(pulled.load(AtomicOrdering::SeqCst) <= 4, "pulled too many");
    }

    #[tokio::test]
    async fn lazy_polls_only_needed_heads() {
        let pulled = Arc::new(AtomicUsize::new(0));
        let mut merged = merge_sorted_by(
            vec![
                counted(&["/a", "/b", "/c"], pulled.clone()),
                counted(&["/x", "/y"], pulled.clone()),
            ],
            entry_order,
            MergeOptions::new(),
        );
        merged.next().await;
        // Both heads, then nothing more until the next item is asked for.
        assert_eq!(pulled.load(AtomicOrdering::SeqCst), 2);
        merged.next().await;
        assert_eq!(pulled.load(AtomicOrdering::SeqCst), 3);
    }

    #[tokio::test]
    async fn propagate_yields_the_error() {
        let merged: Vec<_> = merge_sorted_by(
            vec![files(&["/a"]), failing()],
            entry_order,
            MergeOptions::new(),
        )
        .collect()
        .await;
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].as_ref().unwrap_err().to_string(), "down");
        assert_eq!(merged[1].as_ref().unwrap().path, "/a");
    }

    #[tokio::test]
    async fn skip_failed_source_loses_only_its_items() {
        let merged = merge_sorted_by(
            vec![failing(), files(&["/a"])],
            entry_order,
            MergeOptions::new().skip_failed_sources(),
        );
        assert_eq!(paths(merged.try_collect().await.unwrap()), ["/a"]);
        let empty_but_served = merge_sorted_by(
            vec![failing(), files(&[])],
            entry_order,
            MergeOptions::new().skip_failed_sources(),
        );
        assert!(
            empty_but_served
                .try_collect::<Vec<_>>()
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[tokio::test]
    async fn skip_failed_source_fails_when_none_served() {
        let merged: Vec<_> = merge_sorted_by(
            vec![failing(), failing()],
            entry_order,
            MergeOptions::new().skip_failed_sources(),
        )
        .collect()
        .await;
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].as_ref().unwrap_err().to_string(), "down");
    }

    #[tokio::test]
    async fn search_order_is_score_desc_then_path() {
        let hit = |path: &str, score: f32| SearchResult {
            path: path.into(),
            score,
            snippet: String::new(),
            start_line: 1,
            end_line: 1,
        };
        let a = stream::iter([Ok(hit("/b", 2.0)), Ok(hit("/a", 1.0))]).boxed();
        let b = stream::iter([Ok(hit("/a", 2.0)), Ok(hit("/c", 0.5))]).boxed();
        let merged: Vec<SearchResult> =
            merge_sorted_by(vec![a, b], search_order, MergeOptions::new())
                .try_collect()
                .await
                .unwrap();
        let got: Vec<(&str, f32)> = merged.iter().map(|h| (h.path.as_str(), h.score)).collect();
        assert_eq!(got, [("/a", 2.0), ("/b", 2.0), ("/a", 1.0), ("/c", 0.5)]);
    }
}
