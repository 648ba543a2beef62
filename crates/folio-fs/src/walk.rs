//! Host directory walks in lexicographic full-path order, and the producer plumbing that turns a
//! blocking walk into an `FsStream`.
//!
//! Order: a plain depth-first walk that visits children sorted by name is *not* sorted by full
//! path (`/a-c` < `/a/b` because `-` < `/`). Each directory child therefore contributes two sort
//! keys: `name` for the entry itself and `name/` for its subtree, and siblings are visited in the
//! byte order of those keys. Every path under a subtree starts with `name/`, so no sibling key can
//! fall inside that range, and the resulting sequence is exactly byte-sorted by full path.

use std::fs;
use std::path::{Path, PathBuf};

use futures::StreamExt;
use tokio::sync::mpsc;

use crate::{EntryKind, FsStream, PathError};

/// How many items a producer batches before handing them to the stream.
const BATCH: usize = 128;
/// How many batches may wait in the channel before the producer blocks.
const CHANNEL_BATCHES: usize = 4;

/// The producer end of a stream: items are batched and sent to the consumer.
pub(crate) struct Sink<T> {
    tx: mpsc::Sender<Vec<Result<T, PathError>>>,
    batch: Vec<Result<T, PathError>>,
}

impl<T> Sink<T> {
    /// Queues one item; `false` once the consumer has gone away (the producer should stop).
    pub(crate) fn push(&mut self, item: Result<T, PathError>) -> bool {
        self.batch.push(item);
        if self.batch.len() >= BATCH {
            self.flush()
        } else {
            true
        }
    }

    /// Sends what is queued; `false` once the consumer has gone away.
    pub(crate) fn flush(&mut self) -> bool {
        if self.batch.is_empty() {
            return !self.tx.is_closed();
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        self.tx.blocking_send(batch).is_ok()
    }
}

/// A stream fed by `produce`, run on a blocking thread once the stream is first polled.
///
/// The producer stops early when the stream is dropped (its next `push` returns `false`). Without
/// a tokio runtime the producer runs on a plain thread, so the stream works on any executor.
pub(crate) fn produce<T, F>(produce: F) -> FsStream<T>
where
    T: Send + 'static,
    F: FnOnce(&mut Sink<T>) + Send + 'static,
{
    futures::stream::once(async move {
        let (tx, rx) = mpsc::channel(CHANNEL_BATCHES);
        let job = move || {
            let mut sink = Sink {
                tx,
                batch: Vec::with_capacity(BATCH),
            };
            produce(&mut sink);
            sink.flush();
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(job)),
            Err(_) => drop(std::thread::spawn(job)),
        }
        futures::stream::unfold(rx, |mut rx| async move {
            rx.recv()
                .await
                .map(|batch| (futures::stream::iter(batch), rx))
        })
        .flatten()
    })
    .flatten()
    .boxed()
}

/// Runs blocking host I/O off the async threads (inline when there is no tokio runtime).
pub(crate) async fn blocking<T, F>(path: &str, work: F) -> Result<T, PathError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, PathError> + Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => match handle.spawn_blocking(work).await {
            Ok(result) => result,
            Err(err) => Err(PathError::Other {
                path: path.to_string(),
                message: format!("host I/O task failed: {path}: {err}"),
            }),
        },
        Err(_) => work(),
    }
}

/// What a walk does with a symbolic link it meets below its start directory.
pub(crate) enum Symlinks<'a> {
    /// Leave links out entirely (grep: like `rg --no-follow`).
    Skip,
    /// Show a link as the kind of its target (`None`: leave it out); never descend through it.
    Show(&'a (dyn Fn(&Path) -> Option<EntryKind> + Sync)),
}

/// One entry met by a [`Walk`].
pub(crate) struct Walked {
    /// The path relative to the walk base, `/`-separated, no leading slash.
    pub rel: String,
    /// File or directory (for a link: its target's kind).
    pub kind: EntryKind,
}

enum Item {
    Entry(Walked),
    Descend { rel: String, depth: usize },
}

/// A depth-first walk of a host directory yielding entries in byte order of their relative path.
///
/// It never descends through a symbolic link; unreadable subdirectories and names that are not
/// UTF-8 are skipped.
pub(crate) struct Walk<'a> {
    base: PathBuf,
    stack: Vec<Item>,
    max_depth: usize,
    symlinks: Symlinks<'a>,
}

impl<'a> Walk<'a> {
    /// Walks `base/start` (`start` relative, `""` for `base` itself), yielding entries at most
    /// `max_depth` segments below `base` (relative paths include `start`).
    pub(crate) fn new(
        base: PathBuf,
        start: &str,
        max_depth: usize,
        symlinks: Symlinks<'a>,
    ) -> Self {
        let depth = if start.is_empty() {
            0
        } else {
            start.split('/').count()
        };
        Walk {
            base,
            stack: vec![Item::Descend {
                rel: start.to_string(),
                depth,
            }],
            max_depth,
            symlinks,
        }
    }

    fn expand(&mut self, rel: &str, depth: usize) {
        if depth >= self.max_depth {
            return;
        }
        let dir = if rel.is_empty() {
            self.base.clone()
        } else {
            self.base.join(rel)
        };
        let Ok(read) = fs::read_dir(&dir) else {
            return;
        };
        let child_depth = depth + 1;
        let mut keyed: Vec<(String, Item)> = Vec::new();
        for entry in read.flatten() {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let child_rel = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let kind = if file_type.is_dir() {
                EntryKind::Directory
            } else if file_type.is_file() {
                EntryKind::File
            } else if file_type.is_symlink() {
                match &self.symlinks {
                    Symlinks::Skip => continue,
                    Symlinks::Show(kind_of) => match kind_of(&entry.path()) {
                        Some(kind) => {
                            keyed.push((
                                name,
                                Item::Entry(Walked {
                                    rel: child_rel,
                                    kind,
                                }),
                            ));
                            continue;
                        }
                        None => continue,
                    },
                }
            } else {
                continue;
            };
            if kind == EntryKind::Directory && child_depth < self.max_depth {
                keyed.push((
                    format!("{name}/"),
                    Item::Descend {
                        rel: child_rel.clone(),
                        depth: child_depth,
                    },
                ));
            }
            keyed.push((
                name,
                Item::Entry(Walked {
                    rel: child_rel,
                    kind,
                }),
            ));
        }
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        self.stack
            .extend(keyed.into_iter().rev().map(|(_, item)| item));
    }
}

impl Iterator for Walk<'_> {
    type Item = Walked;

    fn next(&mut self) -> Option<Walked> {
        loop {
            match self.stack.pop()? {
                Item::Entry(walked) => return Some(walked),
                Item::Descend { rel, depth } => self.expand(&rel, depth),
            }
        }
    }
}

/// Joins a yielded display base (`/` or `/x/y`) and a relative path.
pub(crate) fn display_join(base: &str, rel: &str) -> String {
    if rel.is_empty() {
        base.to_string()
    } else if base == "/" {
        format!("/{rel}")
    } else {
        format!("{base}/{rel}")
    }
}

/// Whether the relative path `rel` under `base` passes through a symbolic link (or is missing).
pub(crate) fn crosses_symlink(base: &Path, rel: &str) -> bool {
    let mut path = base.to_path_buf();
    for segment in rel.split('/').filter(|s| !s.is_empty()) {
        path.push(segment);
        match fs::symlink_metadata(&path) {
            Ok(meta) if !meta.file_type().is_symlink() => {}
            _ => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(root: &Path, rel: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "x").unwrap();
    }

    #[test]
    fn walk_is_sorted_by_full_path() {
        let dir = tempfile::tempdir().unwrap();
        for rel in [
            "a/b", "a-c", "a.d", "a/z/q", "a0", "b", "A", "a/b-x/y", "a/b.x",
        ] {
            touch(dir.path(), rel);
        }
        let rels: Vec<String> = Walk::new(dir.path().to_path_buf(), "", usize::MAX, Symlinks::Skip)
            .map(|w| w.rel)
            .collect();
        let mut sorted = rels.clone();
        sorted.sort();
        assert_eq!(rels, sorted);
        assert!(rels.contains(&"a".to_string()) && rels.contains(&"a/z".to_string()));
        assert_eq!(
            rels.iter().position(|r| r == "a-c").unwrap() + 1,
            rels.iter().position(|r| r == "a.d").unwrap()
        );
    }

    #[test]
    fn depth_limits_descent() {
        let dir = tempfile::tempdir().unwrap();
        touch(dir.path(), "a/b/c");
        touch(dir.path(), "x");
        let rels: Vec<String> = Walk::new(dir.path().to_path_buf(), "", 1, Symlinks::Skip)
            .map(|w| w.rel)
            .collect();
        assert_eq!(rels, ["a", "x"]);
        let rels: Vec<String> = Walk::new(dir.path().to_path_buf(), "a", 3, Symlinks::Skip)
            .map(|w| w.rel)
            .collect();
        assert_eq!(rels, ["a/b", "a/b/c"]);
    }

    #[test]
    fn producer_stops_when_dropped() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let sent = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&sent);
        let stream = produce::<usize, _>(move |sink| {
            for i in 0.. {
                counter.fetch_add(1, Ordering::SeqCst);
                if !sink.push(Ok(i)) {
                    break;
                }
            }
        });
        let first: Vec<usize> =
            futures::executor::block_on(stream.take(3).map(|r| r.unwrap()).collect::<Vec<_>>());
        assert_eq!(first, [0, 1, 2]);
        std::thread::sleep(std::time::Duration::from_millis(50));
        // Bounded: at most a few batches were produced before the producer noticed.
        assert!(sent.load(Ordering::SeqCst) <= BATCH * (CHANNEL_BATCHES + 3));
    }
}
