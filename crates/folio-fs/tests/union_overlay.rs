//! Union- and overlay-specific behaviour beyond the shared contract suite: shadowing, mount
//! routing and error re-prefixing, fan-out, failing layers, whiteouts and `diff`, and proof that
//! `max_results` is pushed down (children are pulled lazily, not drained).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use folio_fs::{
    Content, DirEntry, FileInfo, FileKind, FileSystem, FsStream, GrepQuery, GrepResult,
    OverlayDiff, PathError, SearchQuery, SearchResult, TempFs, empty_fs, overlay_fs, temp_fs,
    union_fs, writable_overlay_fs,
};
use futures::{StreamExt, TryStreamExt};

// ---------------------------------------------------------------------------------------------
// Test trees

/// Wraps a tree and counts the items its walk streams hand out, and the grep caps it was given.
struct Counting {
    inner: Arc<dyn FileSystem>,
    pulled: Arc<AtomicUsize>,
    caps: Mutex<Vec<Option<usize>>>,
}

impl Counting {
    fn new(inner: Arc<dyn FileSystem>) -> Arc<Self> {
        Arc::new(Counting {
            inner,
            pulled: Arc::new(AtomicUsize::new(0)),
            caps: Mutex::new(Vec::new()),
        })
    }

    fn pulled(&self) -> usize {
        self.pulled.load(Ordering::SeqCst)
    }

    fn caps(&self) -> Vec<Option<usize>> {
        self.caps.lock().unwrap().clone()
    }

    fn count<T: Send + 'static>(&self, stream: FsStream<T>) -> FsStream<T> {
        let pulled = self.pulled.clone();
        stream
            .inspect(move |_| {
                pulled.fetch_add(1, Ordering::SeqCst);
            })
            .boxed()
    }
}

#[async_trait::async_trait]
impl FileSystem for Counting {
    fn list(&self, prefix: &str) -> FsStream<DirEntry> {
        self.count(self.inner.list(prefix))
    }
    async fn stat(&self, path: &str) -> Result<FileInfo, PathError> {
        self.inner.stat(path).await
    }
    fn glob(&self, pattern: &str, dir: Option<&str>) -> FsStream<DirEntry> {
        self.count(self.inner.glob(pattern, dir))
    }
    async fn read(&self, path: &str) -> Result<Content, PathError> {
        self.inner.read(path).await
    }
    fn grep(&self, query: GrepQuery) -> FsStream<GrepResult> {
        self.caps.lock().unwrap().push(query.max_results);
        self.count(self.inner.grep(query))
    }
    async fn write(&self, path: &str, contents: &str) -> Result<(), PathError> {
        self.inner.write(path, contents).await
    }
    async fn delete(&self, path: &str) -> Result<(), PathError> {
        self.inner.delete(path).await
    }
    fn search(&self, query: SearchQuery) -> FsStream<SearchResult> {
        self.count(self.inner.search(query))
    }
}

#[path = "contract/down.rs"]
mod down;
use down::Down;

/// A tree with `files` files of `hits` matching lines each.
fn haystack(files: usize, hits: usize) -> Arc<dyn FileSystem> {
    named_haystack("f", files, hits)
}

/// [`haystack`] with file names starting with `name`.
fn named_haystack(name: &str, files: usize, hits: usize) -> Arc<dyn FileSystem> {
    let body: String = (0..hits).map(|i| format!("hit {i}\n")).collect();
    temp_fs((0..files).map(|i| (format!("/{name}{i:05}.txt"), body.clone())))
}

// ---------------------------------------------------------------------------------------------
// Helpers

async fn list(fs: &Arc<dyn FileSystem>, path: &str) -> Vec<DirEntry> {
    fs.list(path).try_collect().await.unwrap()
}

async fn glob(fs: &Arc<dyn FileSystem>, pattern: &str, dir: &str) -> Vec<String> {
    fs.glob(pattern, Some(dir))
        .map_ok(|entry| entry.path)
        .try_collect()
        .await
        .unwrap()
}

async fn grep(fs: &Arc<dyn FileSystem>, query: GrepQuery) -> Result<Vec<(String, u64)>, PathError> {
    fs.grep(query)
        .map_ok(|hit| (hit.path, hit.line_number))
        .try_collect()
        .await
}

fn query(pattern: &str, path: &str) -> GrepQuery {
    GrepQuery {
        path: Some(path.to_string()),
        ..GrepQuery::new(pattern)
    }
}

fn hits(items: &[(&str, u64)]) -> Vec<(String, u64)> {
    items.iter().map(|(p, n)| (p.to_string(), *n)).collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

async fn text(fs: &Arc<dyn FileSystem>, path: &str) -> String {
    match fs.read(path).await.unwrap() {
        Content::Text(text) => text,
        other => panic!("expected text, got {other:?}"),
    }
}

async fn err(result: Result<impl std::fmt::Debug, PathError>) -> String {
    result.expect_err("should fail").to_string()
}

// ---------------------------------------------------------------------------------------------
// union_fs

/// The per-turn binding: an authored root plus `/tmp` scratch, where the authored tree also holds
/// (shadowed) files under `/tmp`.
fn authored_with_scratch() -> Arc<dyn FileSystem> {
    let authored = temp_fs([
        ("/a.txt", "authored needle\n"),
        ("/tmp/old.txt", "shadowed needle\n"),
        ("/tmp/z.txt", "shadowed needle\n"),
    ]);
    union_fs([
        ("/", authored),
        ("/tmp", temp_fs([("/new.txt", "scratch needle\n")])),
    ])
}

#[tokio::test]
async fn deeper_mount_shadows_the_parent_in_every_verb() {
    let fs = authored_with_scratch();
    assert_eq!(
        list(&fs, "/").await,
        [DirEntry::file("/a.txt"), DirEntry::dir("/tmp")]
    );
    assert_eq!(list(&fs, "/tmp").await, [DirEntry::file("/tmp/new.txt")]);
    assert_eq!(
        glob(&fs, "**", "/").await,
        strings(&["/a.txt", "/tmp/new.txt"])
    );
    assert_eq!(glob(&fs, "*.txt", "/tmp").await, strings(&["/tmp/new.txt"]));
    assert_eq!(
        grep(&fs, query("needle", "/")).await.unwrap(),
        hits(&[("/a.txt", 1), ("/tmp/new.txt", 1)])
    );
    assert_eq!(
        err(fs.read("/tmp/old.txt").await).await,
        "not found: /tmp/old.txt"
    );
    assert_eq!(
        fs.stat("/tmp/old.txt").await.unwrap().kind,
        FileKind::Missing
    );
    // The cap is not pushed to the parent child (its first hits are shadowed), yet it holds.
    let capped = GrepQuery {
        max_results: Some(1),
        ..query("needle", "/")
    };
    assert_eq!(grep(&fs, capped).await.unwrap(), hits(&[("/a.txt", 1)]));
    let capped = GrepQuery {
        max_results: Some(1),
        ..query("shadowed|scratch", "/")
    };
    assert_eq!(
        grep(&fs, capped).await.unwrap(),
        hits(&[("/tmp/new.txt", 1)])
    );
}

#[tokio::test]
async fn an_earlier_mount_of_the_same_prefix_wins() {
    let fs = union_fs([
        ("/x", temp_fs([("/a", "first")])),
        ("/x/", temp_fs([("/a", "second"), ("/b", "second")])),
    ]);
    assert_eq!(text(&fs, "/x/a").await, "first");
    assert_eq!(list(&fs, "/x").await, [DirEntry::file("/x/a")]);
    assert_eq!(glob(&fs, "**", "/").await, strings(&["/x/a"]));
}

#[tokio::test]
async fn child_errors_are_re_prefixed() {
    let repo = temp_fs([("/src/main.rs", "fn main() {}\n")]);
    let fs = union_fs([
        ("/repo", repo),
        ("/ro", overlay_fs([temp_fs([("/a", "x")])])),
        ("/down", Arc::new(Down) as Arc<dyn FileSystem>),
    ]);
    assert_eq!(
        err(fs.read("/repo/x.rs").await).await,
        "not found: /repo/x.rs"
    );
    assert_eq!(
        err(fs.delete("/repo/x.rs").await).await,
        "not found: /repo/x.rs"
    );
    assert_eq!(err(fs.read("/repo").await).await, "not found: /repo");
    assert_eq!(
        err(fs.write("/repo/src", "x").await).await,
        "write failed: /repo/src"
    );
    assert_eq!(
        err(fs.write("/ro/a", "x").await).await,
        "read-only mount: /ro/a"
    );
    assert_eq!(
        err(fs.delete("/ro/a").await).await,
        "read-only mount: /ro/a"
    );
    // A foreign error gets its path and message rewritten.
    let error = fs.read("/down/file").await.unwrap_err();
    assert_eq!(error.path(), "/down/file");
    assert_eq!(error.to_string(), "layer down: /down/file");
    let grep_error = grep(&fs, query("x", "/down")).await.unwrap_err();
    assert_eq!(grep_error.path(), "/down");
    assert_eq!(
        err(grep(&fs, query("a(", "/repo")).await).await,
        "invalid grep pattern: a("
    );
}

#[tokio::test]
async fn no_mount_for_path() {
    let fs = union_fs([("/repo", temp_fs([("/a.rs", "a")]))]);
    for path in ["/other", "/repo-x/a.rs", "/", "/other/../x"] {
        let shown = folio_fs::normalize_fs_path(path);
        let expected = format!("no mount for path: {shown}");
        assert_eq!(err(fs.read(path).await).await, expected);
        assert_eq!(err(fs.write(path, "x").await).await, expected);
        assert_eq!(err(fs.delete(path).await).await, expected);
    }
    // Walk verbs stay empty or missing.
    assert_eq!(fs.stat("/other").await.unwrap().kind, FileKind::Missing);
    assert_eq!(fs.stat("/repo-x").await.unwrap().kind, FileKind::Missing);
    assert_eq!(list(&fs, "/other").await, []);
    assert_eq!(glob(&fs, "**", "/other").await, Vec::<String>::new());
    assert_eq!(grep(&fs, query("a", "/other")).await.unwrap(), []);
    // An invalid pattern is still an error, even where no mount answers.
    assert_eq!(
        err(grep(&fs, query("a(", "/other")).await).await,
        "invalid grep pattern: a("
    );
    let nothing = union_fs(Vec::<(&str, Arc<dyn FileSystem>)>::new());
    assert_eq!(err(nothing.read("/a").await).await, "no mount for path: /a");
    assert_eq!(nothing.stat("/").await.unwrap().kind, FileKind::Directory);
    assert_eq!(list(&nothing, "/").await, []);
}

#[tokio::test]
async fn grep_and_search_fan_out_to_every_child() {
    let fs = union_fs([
        ("/plans", temp_fs([("/p.md", "needle plan\n")])),
        (
            "/repo",
            temp_fs([("/a.rs", "needle\nneedle\n"), ("/z/b.rs", "needle\n")]),
        ),
        ("/deep/er", temp_fs([("/c.rs", "needle\n")])),
        ("/empty", empty_fs()),
    ]);
    assert_eq!(
        grep(&fs, query("needle", "/")).await.unwrap(),
        hits(&[
            ("/deep/er/c.rs", 1),
            ("/plans/p.md", 1),
            ("/repo/a.rs", 1),
            ("/repo/a.rs", 2),
            ("/repo/z/b.rs", 1),
        ])
    );
    // A directory that is not a mount but holds one.
    assert_eq!(
        grep(&fs, query("needle", "/deep")).await.unwrap(),
        hits(&[("/deep/er/c.rs", 1)])
    );
    // Slash-free glob: basenames anywhere, in every child.
    let rs = GrepQuery {
        glob: Some("*.rs".into()),
        ..query("needle", "/")
    };
    assert_eq!(
        grep(&fs, rs).await.unwrap(),
        hits(&[
            ("/deep/er/c.rs", 1),
            ("/repo/a.rs", 1),
            ("/repo/a.rs", 2),
            ("/repo/z/b.rs", 1)
        ])
    );
    // A glob with a slash is relative to the union scope, across the mount boundary.
    let top_rs = GrepQuery {
        glob: Some("repo/*.rs".into()),
        ..query("needle", "/")
    };
    assert_eq!(
        grep(&fs, top_rs).await.unwrap(),
        hits(&[("/repo/a.rs", 1), ("/repo/a.rs", 2)])
    );
    let deep_rs = GrepQuery {
        glob: Some("**/z/*.rs".into()),
        ..query("needle", "/")
    };
    assert_eq!(
        grep(&fs, deep_rs).await.unwrap(),
        hits(&[("/repo/z/b.rs", 1)])
    );
    // Search fans out too (no child has an index: empty success).
    let found: Vec<SearchResult> = fs
        .search(SearchQuery {
            query: "needle".into(),
            path: None,
            max_results: Some(3),
        })
        .try_collect()
        .await
        .unwrap();
    assert!(found.is_empty());
}

#[tokio::test]
async fn glob_crosses_mount_boundaries() {
    let fs = union_fs([
        ("/", temp_fs([("/top.rs", ""), ("/src/x.rs", "")])),
        (
            "/repo",
            temp_fs([("/a.rs", ""), ("/src/b.rs", ""), ("/src/c.ts", "")]),
        ),
    ]);
    assert_eq!(glob(&fs, "*.rs", "/").await, strings(&["/top.rs"]));
    assert_eq!(glob(&fs, "repo/*.rs", "/").await, strings(&["/repo/a.rs"]));
    assert_eq!(
        glob(&fs, "*/src/*.rs", "/").await,
        strings(&["/repo/src/b.rs"])
    );
    assert_eq!(
        glob(&fs, "**/*.rs", "/").await,
        strings(&["/repo/a.rs", "/repo/src/b.rs", "/src/x.rs", "/top.rs"])
    );
    assert_eq!(
        glob(&fs, "**/src/*", "/").await,
        strings(&["/repo/src/b.rs", "/repo/src/c.ts", "/src/x.rs"])
    );
    assert_eq!(
        glob(&fs, "src/*", "/repo").await,
        strings(&["/repo/src/b.rs", "/repo/src/c.ts"])
    );
    assert_eq!(
        err(fs.glob("[", Some("/")).try_collect::<Vec<_>>().await).await,
        "invalid glob pattern: [: unclosed character class; missing ']'"
    );
}

#[tokio::test]
async fn mount_points_are_directories() {
    let fs = union_fs([
        ("/a/b", temp_fs([("/f.txt", "x")])),
        ("/a-c", temp_fs([("/g.txt", "y")])),
        ("/z", empty_fs()),
    ]);
    assert_eq!(
        list(&fs, "/").await,
        [
            DirEntry::dir("/a"),
            DirEntry::dir("/a-c"),
            DirEntry::dir("/z")
        ]
    );
    assert_eq!(list(&fs, "/a").await, [DirEntry::dir("/a/b")]);
    assert_eq!(list(&fs, "/a/b").await, [DirEntry::file("/a/b/f.txt")]);
    assert_eq!(list(&fs, "/z").await, []);
    for dir in ["/", "/a", "/a/b", "/a-c", "/z"] {
        assert_eq!(
            fs.stat(dir).await.unwrap().kind,
            FileKind::Directory,
            "{dir}"
        );
    }
    assert_eq!(fs.stat("/a/b/f.txt").await.unwrap().size, Some(1));
    assert_eq!(fs.stat("/a/x").await.unwrap().kind, FileKind::Missing);
    assert_eq!(err(fs.read("/a").await).await, "no mount for path: /a");
    // A file of the root child where a mount lives is hidden by the mount point.
    let fs = union_fs([
        ("/", temp_fs([("/tmp", "a file"), ("/b.txt", "b")])),
        ("/tmp", temp_fs([("/s", "scratch")])),
    ]);
    assert_eq!(
        list(&fs, "/").await,
        [DirEntry::file("/b.txt"), DirEntry::dir("/tmp")]
    );
    assert_eq!(fs.stat("/tmp").await.unwrap().kind, FileKind::Directory);
    assert_eq!(err(fs.write("/tmp", "x").await).await, "write failed: /tmp");
    assert_eq!(err(fs.delete("/tmp").await).await, "write failed: /tmp");
}

#[tokio::test]
async fn writes_route_to_the_covering_mount() {
    let root = Arc::new(TempFs::new());
    let scratch = Arc::new(TempFs::new());
    let fs = union_fs([("/", root.clone()), ("/tmp", scratch.clone())]);
    fs.write("/tmp/a.txt", "s").await.unwrap();
    fs.write("/tmp-not/a.txt", "r").await.unwrap();
    assert_eq!(scratch.snapshot().keys().collect::<Vec<_>>(), ["/a.txt"]);
    assert_eq!(
        root.snapshot().keys().collect::<Vec<_>>(),
        ["/tmp-not/a.txt"]
    );
    fs.delete("/tmp/a.txt").await.unwrap();
    assert!(scratch.snapshot().is_empty());
}

#[tokio::test]
async fn union_grep_pushes_max_results_down() {
    let a = Counting::new(haystack(2000, 3));
    let b = Counting::new(haystack(2000, 3));
    let fs = union_fs([("/a", a.clone()), ("/b", b.clone())]);
    let capped = GrepQuery {
        max_results: Some(3),
        ..GrepQuery::new("hit")
    };
    assert_eq!(
        grep(&fs, capped).await.unwrap(),
        hits(&[
            ("/a/f00000.txt", 1),
            ("/a/f00000.txt", 2),
            ("/a/f00000.txt", 3)
        ])
    );
    assert_eq!(a.caps(), [Some(3)]);
    assert_eq!(b.caps(), [Some(3)]);
    let pulled = a.pulled() + b.pulled();
    assert!(pulled <= 5, "union pulled {pulled} items from 12000 hits");
}

#[tokio::test]
async fn union_grep_stays_lazy_without_pushdown() {
    // The root child is filtered by the `/tmp` mount, so it gets no cap; laziness still holds.
    let root = Counting::new(haystack(2000, 3));
    let fs = union_fs([
        ("/", root.clone() as Arc<dyn FileSystem>),
        ("/tmp", haystack(10, 1)),
    ]);
    let capped = GrepQuery {
        max_results: Some(3),
        ..GrepQuery::new("hit")
    };
    assert_eq!(grep(&fs, capped).await.unwrap().len(), 3);
    assert_eq!(root.caps(), [None]);
    assert!(root.pulled() <= 4, "pulled {}", root.pulled());
}

// ---------------------------------------------------------------------------------------------
// overlay_fs

#[tokio::test]
async fn overlay_upper_wins_and_lower_shows_through() {
    let fs = overlay_fs([
        temp_fs([("/a.txt", "upper\n"), ("/dir/u.txt", "u\n")]),
        temp_fs([
            ("/a.txt", "lower needle\n"),
            ("/b.txt", "lower\n"),
            ("/dir/l.txt", "l\n"),
        ]),
    ]);
    assert_eq!(text(&fs, "/a.txt").await, "upper\n");
    assert_eq!(text(&fs, "/b.txt").await, "lower\n");
    assert_eq!(fs.stat("/a.txt").await.unwrap().size, Some(6));
    assert_eq!(
        list(&fs, "/").await,
        [
            DirEntry::file("/a.txt"),
            DirEntry::file("/b.txt"),
            DirEntry::dir("/dir")
        ]
    );
    assert_eq!(
        glob(&fs, "**", "/").await,
        strings(&["/a.txt", "/b.txt", "/dir/l.txt", "/dir/u.txt"])
    );
    // The lower copy of /a.txt matches, but it is shadowed even though the upper copy does not.
    assert_eq!(grep(&fs, query("needle", "/")).await.unwrap(), []);
    assert_eq!(
        grep(&fs, query("upper|lower", "/")).await.unwrap(),
        hits(&[("/a.txt", 1), ("/b.txt", 1)])
    );
    assert_eq!(
        err(fs.write("/a.txt", "x").await).await,
        "read-only mount: /a.txt"
    );
    assert_eq!(
        err(fs.delete("/b.txt").await).await,
        "read-only mount: /b.txt"
    );
    assert_eq!(err(fs.read("/c.txt").await).await, "not found: /c.txt");
}

#[tokio::test]
async fn a_failing_layer_costs_only_its_own_files() {
    let fs = overlay_fs([
        Arc::new(Down) as Arc<dyn FileSystem>,
        temp_fs([("/a.txt", "needle\n")]),
    ]);
    assert_eq!(text(&fs, "/a.txt").await, "needle\n");
    assert_eq!(fs.stat("/a.txt").await.unwrap().kind, FileKind::File);
    assert_eq!(fs.stat("/nope").await.unwrap().kind, FileKind::Missing);
    assert_eq!(list(&fs, "/").await, [DirEntry::file("/a.txt")]);
    assert_eq!(glob(&fs, "*", "/").await, strings(&["/a.txt"]));
    assert_eq!(
        grep(&fs, query("needle", "/")).await.unwrap(),
        hits(&[("/a.txt", 1)])
    );
    assert_eq!(err(fs.read("/nope").await).await, "not found: /nope");
    let found: Vec<_> = fs
        .search(SearchQuery::default())
        .try_collect()
        .await
        .unwrap();
    assert!(found.is_empty());

    // When no layer serves, the overlay fails.
    let all_down = overlay_fs([
        Arc::new(Down) as Arc<dyn FileSystem>,
        Arc::new(Down) as Arc<dyn FileSystem>,
    ]);
    assert_eq!(err(all_down.stat("/a").await).await, "layer down: /a");
    assert_eq!(err(all_down.read("/a").await).await, "layer down: /a");
    assert_eq!(
        err(grep(&all_down, query("x", "/")).await).await,
        "layer down: /"
    );
    assert_eq!(
        err(all_down
            .search(SearchQuery::default())
            .try_collect::<Vec<_>>()
            .await)
        .await,
        "layer down: /"
    );
    assert_eq!(
        err(all_down.list("/").try_collect::<Vec<_>>().await).await,
        "layer down: /"
    );
}

#[tokio::test]
async fn overlay_grep_pushes_max_results_to_the_top_and_stays_lazy() {
    let capped = || GrepQuery {
        max_results: Some(3),
        ..GrepQuery::new("hit")
    };
    // The upper's hits come first.
    let upper = Counting::new(haystack(2000, 3));
    let lower = Counting::new(named_haystack("g", 2000, 3));
    let fs = overlay_fs([upper.clone(), lower.clone()]);
    assert_eq!(
        grep(&fs, capped()).await.unwrap(),
        hits(&[("/f00000.txt", 1), ("/f00000.txt", 2), ("/f00000.txt", 3)])
    );
    assert_eq!(upper.caps(), [Some(3)]);
    assert_eq!(
        lower.caps(),
        [None],
        "lower hits are filtered, so they get no cap"
    );
    let pulled = upper.pulled() + lower.pulled();
    assert!(pulled <= 5, "overlay pulled {pulled} items from 12000 hits");

    // The lower's hits come first, after a file the upper shadows (with no hits of its own).
    let upper = Counting::new(temp_fs(
        [("/0.txt".to_string(), "no match\n".to_string())]
            .into_iter()
            .chain((0..2000).map(|i| (format!("/e{i:05}.txt"), "hit\n".to_string()))),
    ));
    let lower = Counting::new(temp_fs(
        [("/0.txt".to_string(), "hit shadowed\n".to_string())]
            .into_iter()
            .chain((0..2000).map(|i| (format!("/a{i:05}.txt"), "hit\nhit\n".to_string()))),
    ));
    let fs = overlay_fs([upper.clone(), lower.clone()]);
    assert_eq!(
        grep(&fs, capped()).await.unwrap(),
        hits(&[("/a00000.txt", 1), ("/a00000.txt", 2), ("/a00001.txt", 1)])
    );
    let pulled = upper.pulled() + lower.pulled();
    assert!(pulled <= 7, "overlay pulled {pulled} items from 6001 hits");
}

// ---------------------------------------------------------------------------------------------
// writable_overlay_fs

fn lowers() -> Arc<dyn FileSystem> {
    temp_fs([
        ("/keep.txt", "keep needle\n"),
        ("/edit.txt", "before needle\n"),
        ("/gone.txt", "gone needle\n"),
        ("/dir/inner.txt", "inner needle\n"),
    ])
}

#[tokio::test]
async fn whiteouts_hide_deleted_lower_files_from_every_verb() {
    let upper = Arc::new(TempFs::new());
    let fs = writable_overlay_fs(upper.clone(), [lowers()]);
    let dyn_fs: Arc<dyn FileSystem> = fs.clone();
    dyn_fs.delete("/gone.txt").await.unwrap();
    assert_eq!(fs.whiteouts(), ["/gone.txt"]);
    assert_eq!(
        dyn_fs.stat("/gone.txt").await.unwrap().kind,
        FileKind::Missing
    );
    assert_eq!(
        err(dyn_fs.read("/gone.txt").await).await,
        "not found: /gone.txt"
    );
    assert_eq!(
        err(dyn_fs.delete("/gone.txt").await).await,
        "not found: /gone.txt"
    );
    assert_eq!(
        list(&dyn_fs, "/").await,
        [
            DirEntry::dir("/dir"),
            DirEntry::file("/edit.txt"),
            DirEntry::file("/keep.txt")
        ]
    );
    assert_eq!(
        glob(&dyn_fs, "*.txt", "/").await,
        strings(&["/edit.txt", "/keep.txt"])
    );
    assert_eq!(
        grep(&dyn_fs, query("needle", "/")).await.unwrap(),
        hits(&[("/dir/inner.txt", 1), ("/edit.txt", 1), ("/keep.txt", 1)])
    );
    // Writing it again brings it back, from the upper layer.
    dyn_fs.write("/gone.txt", "back\n").await.unwrap();
    assert!(fs.whiteouts().is_empty());
    assert_eq!(text(&dyn_fs, "/gone.txt").await, "back\n");
    // The lower layer never changed.
    assert_eq!(upper.snapshot().keys().collect::<Vec<_>>(), ["/gone.txt"]);
}

#[tokio::test]
async fn diff_reports_added_modified_and_deleted() {
    let fs = writable_overlay_fs(Arc::new(TempFs::new()), [lowers()]);
    assert_eq!(fs.diff().await.unwrap(), OverlayDiff::default());
    fs.write("/edit.txt", "after\n").await.unwrap();
    fs.write("/keep.txt", "keep needle\n").await.unwrap(); // same contents: not a change
    fs.write("/new/b.txt", "b").await.unwrap();
    fs.write("/a-new.txt", "a").await.unwrap();
    fs.delete("/gone.txt").await.unwrap();
    fs.delete("/dir/inner.txt").await.unwrap();
    // An upper-only file deleted again leaves no trace.
    fs.write("/tmp.txt", "t").await.unwrap();
    fs.delete("/tmp.txt").await.unwrap();
    assert_eq!(
        fs.diff().await.unwrap(),
        OverlayDiff {
            added: strings(&["/a-new.txt", "/new/b.txt"]),
            modified: strings(&["/edit.txt"]),
            deleted: strings(&["/dir/inner.txt", "/gone.txt"]),
        }
    );
    // Deleting a modified lower file: its upper copy goes and a whiteout is recorded.
    fs.delete("/edit.txt").await.unwrap();
    let diff = fs.diff().await.unwrap();
    assert_eq!(diff.modified, Vec::<String>::new());
    assert_eq!(
        diff.deleted,
        strings(&["/dir/inner.txt", "/edit.txt", "/gone.txt"])
    );
    assert_eq!(
        err(fs.read("/edit.txt").await).await,
        "not found: /edit.txt"
    );
}

#[tokio::test]
async fn writable_overlay_refuses_inconsistent_writes() {
    let fs = writable_overlay_fs(Arc::new(TempFs::new()), [lowers()]);
    assert_eq!(err(fs.write("/dir", "x").await).await, "write failed: /dir");
    assert_eq!(
        err(fs.write("/keep.txt/under", "x").await).await,
        "write failed: /keep.txt/under"
    );
    assert_eq!(err(fs.delete("/dir").await).await, "write failed: /dir");
    assert_eq!(err(fs.write("/", "x").await).await, "write failed: /");
    // A read-only upper refuses with its own error.
    let ro = writable_overlay_fs(empty_fs(), [lowers()]);
    assert_eq!(
        err(ro.write("/n.txt", "x").await).await,
        "read-only mount: /n.txt"
    );
}
