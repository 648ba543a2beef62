//! The shared contract suite against the host-backed trees (`host_dir`, `local_fs`, `host_fs`,
//! and `indexed` over `host_dir`), plus what only those trees do: host-path semantics of
//! `local_fs`, symbolic links, compare-and-swap writes of `host_fs`, the search index.

#[path = "contract/suite.rs"]
mod suite;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;

use folio_fs::{
    BlindWrites, Content, DirEntry, FileKind, FileSystem, FsStream, GrepQuery, HostFilesApi,
    HostFs, MemoryHostFiles, PathError, SearchQuery, SearchResult, host_dir, host_fs, indexed,
    local_fs,
};
use futures::TryStreamExt;
use suite::{Files, Subject};

fn on_disk(files: &Files) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    suite::place_on_disk(dir.path(), files);
    dir
}

fn host_dir_subject(files: Files) -> Subject {
    let dir = on_disk(&files);
    Subject::rooted(host_dir(dir.path(), false).expect("mount"))
        .host_backed()
        .keep(dir)
}

fn read_only_host_dir_subject(files: Files) -> Subject {
    let dir = on_disk(&files);
    Subject::rooted(host_dir(dir.path(), true).expect("mount"))
        .read_only()
        .host_backed()
        .keep(dir)
}

fn local_fs_subject(files: Files) -> Subject {
    let dir = on_disk(&files);
    let prefix = dir.path().to_string_lossy().into_owned();
    // The cwd is elsewhere: the suite addresses everything by absolute host path.
    Subject::rooted(local_fs(std::env::temp_dir()))
        .with_prefix(prefix)
        .host_backed()
        .keep(dir)
}

const SCOPE: &str = "team/notes";

fn host_fs_subject(files: Files) -> Subject {
    Subject::rooted(host_fs(remote_with(&files), SCOPE))
}

/// The remote files of a `host_fs` subject: the fixture under [`SCOPE`], and decoys beside it.
fn remote_with(files: &Files) -> Arc<MemoryHostFiles> {
    let remote = Arc::new(MemoryHostFiles::new());
    for (path, bytes) in files {
        remote.insert(&format!("{SCOPE}{path}"), bytes.clone());
    }
    // Keys outside the scope, one of them a segment-prefix trap, must stay invisible.
    remote.insert("team/notes-other/needle.txt", "needle outside\n");
    remote.insert("team/other.txt", "needle outside\n");
    remote.insert("notes/a.txt", "needle outside\n");
    remote
}

/// `host_fs` that overwrites only what it read (what object-store mounts use).
fn create_only_host_fs_subject(files: Files) -> Subject {
    let tree = HostFs::new(remote_with(&files), SCOPE).with_blind_writes(BlindWrites::CreateOnly);
    Subject::rooted(Arc::new(tree)).reads_before_overwrite()
}

/// `indexed` is async; build it on a runtime of its own so the (sync) factory can wait for it.
fn build_indexed(inner: Arc<dyn FileSystem>) -> Arc<dyn FileSystem> {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(indexed(inner))
            .expect("index builds")
    })
    .join()
    .expect("index thread")
}

fn indexed_host_dir_subject(files: Files) -> Subject {
    let dir = on_disk(&files);
    let inner = host_dir(dir.path(), false).expect("mount");
    Subject::rooted(build_indexed(inner))
        .host_backed()
        .indexed()
        .keep(dir)
}

contract_suite!(host_dir_rw, host_dir_subject);
contract_suite!(host_dir_ro, read_only_host_dir_subject);
contract_suite!(local, local_fs_subject);
contract_suite!(host_files, host_fs_subject);
contract_suite!(host_files_create_only, create_only_host_fs_subject);
contract_suite!(indexed_host_dir, indexed_host_dir_subject);

// ---------------------------------------------------------------------------------------------
// Helpers

async fn all<T>(stream: FsStream<T>) -> Vec<T> {
    stream.try_collect().await.expect("stream succeeds")
}

fn touch(root: &Path, rel: &str, contents: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, contents).unwrap();
}

fn text(content: Content) -> String {
    match content {
        Content::Text(text) => text,
        other => panic!("expected text, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Order: a depth-first walk by name is not lexicographic by full path

const TRICKY: &[&str] = &[
    "a/b-x/y", "a/b/c", "a/b.x", "a-c", "a.d", "a b", "a0", "A", "a/z/q/r", "a/z!", "b/a-/x",
    "b/a/x", "b/a.x",
];

#[tokio::test]
async fn host_walks_are_sorted_by_full_path() {
    let dir = tempfile::tempdir().unwrap();
    for rel in TRICKY {
        touch(dir.path(), rel, "hit\n");
    }
    let base = dir.path().to_string_lossy().into_owned();
    let trees: [(Arc<dyn FileSystem>, String); 2] = [
        (host_dir(dir.path(), false).unwrap(), String::new()),
        (local_fs("/"), base.clone()),
    ];
    for (fs, prefix) in trees {
        let root = if prefix.is_empty() {
            "/".to_string()
        } else {
            prefix.clone()
        };
        let mut expected: Vec<String> =
            TRICKY.iter().map(|rel| format!("{prefix}/{rel}")).collect();
        expected.sort();

        let globbed: Vec<String> = all(fs.glob("**", Some(&root)))
            .await
            .into_iter()
            .map(|e| e.path)
            .collect();
        assert_eq!(globbed, expected);
        // A plain name-sorted DFS would put `/a/...` before `/a-c`; prove the fixture catches it.
        assert!(
            expected.iter().position(|p| p.ends_with("/a-c")).unwrap()
                < expected.iter().position(|p| p.ends_with("/a/b/c")).unwrap()
        );

        let query = GrepQuery {
            path: Some(root.clone()),
            ..GrepQuery::new("hit")
        };
        let grepped: Vec<String> = all(fs.grep(query))
            .await
            .into_iter()
            .map(|h| h.path)
            .collect();
        assert_eq!(grepped, expected);

        let listed: Vec<String> = all(fs.list(&format!("{prefix}/a")))
            .await
            .into_iter()
            .map(|e| e.path)
            .collect();
        let mut sorted = listed.clone();
        sorted.sort();
        assert_eq!(listed, sorted);
        assert_eq!(
            listed,
            ["/b", "/b-x", "/b.x", "/z", "/z!"].map(|p| format!("{prefix}/a{p}"))
        );
    }
}

// ---------------------------------------------------------------------------------------------
// local_fs: host semantics

#[tokio::test]
async fn local_fs_resolves_relative_paths_against_cwd_and_yields_host_paths() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("work");
    touch(&cwd, "src/lib.rs", "fn needle() {}\n");
    touch(dir.path(), "sibling.txt", "needle sibling\n");
    let fs = local_fs(&cwd);
    let cwd_s = cwd.to_string_lossy().into_owned();
    let abs = |rel: &str| format!("{cwd_s}/{rel}");

    assert_eq!(
        text(fs.read("src/lib.rs").await.unwrap()),
        "fn needle() {}\n"
    );
    assert_eq!(
        text(fs.read("./src/../src/lib.rs").await.unwrap()),
        "fn needle() {}\n"
    );
    assert_eq!(
        text(fs.read("../sibling.txt").await.unwrap()),
        "needle sibling\n"
    );
    assert_eq!(
        text(fs.read(&abs("src/lib.rs")).await.unwrap()),
        "fn needle() {}\n"
    );
    assert_eq!(fs.stat("src").await.unwrap().path, abs("src"));

    assert_eq!(all(fs.list("")).await, vec![DirEntry::dir(abs("src"))]);
    assert_eq!(
        all(fs.list("src")).await,
        vec![DirEntry::file(abs("src/lib.rs"))]
    );
    assert_eq!(
        all(fs.glob("**/*.rs", None)).await,
        vec![DirEntry::file(abs("src/lib.rs"))]
    );
    let hits = all(fs.grep(GrepQuery::new("needle"))).await;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].path, abs("src/lib.rs"));

    fs.write("out/new.txt", "written").await.unwrap();
    assert_eq!(
        fs::read_to_string(cwd.join("out/new.txt")).unwrap(),
        "written"
    );
    fs.delete("out/new.txt").await.unwrap();
    assert!(!cwd.join("out/new.txt").exists());
    let err = fs.delete("out/new.txt").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("not found: {}", abs("out/new.txt"))
    );

    let hits: Vec<SearchResult> = all(fs.search(SearchQuery {
        query: "needle".into(),
        ..SearchQuery::default()
    }))
    .await;
    assert!(hits.is_empty(), "local_fs has no index");
}

#[tokio::test]
async fn local_fs_walks_do_not_follow_directory_links_but_exact_paths_do() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("ws");
    touch(&cwd, "real/file.txt", "needle real\n");
    touch(dir.path(), "memory/notes.md", "needle memory\n");
    symlink(dir.path().join("memory"), cwd.join("memory")).unwrap();
    symlink(cwd.join("real/file.txt"), cwd.join("file-link.txt")).unwrap();
    let fs = local_fs(&cwd);
    let abs = |rel: &str| format!("{}/{rel}", cwd.display());

    // list shows the links (as their targets' kinds) but walks never descend into `memory/`.
    assert_eq!(
        all(fs.list("")).await,
        vec![
            DirEntry::file(abs("file-link.txt")),
            DirEntry::dir(abs("memory")),
            DirEntry::dir(abs("real")),
        ]
    );
    let globbed: Vec<String> = all(fs.glob("**", None))
        .await
        .into_iter()
        .map(|e| e.path)
        .collect();
    assert_eq!(globbed, [abs("file-link.txt"), abs("real/file.txt")]);
    let grepped: Vec<String> = all(fs.grep(GrepQuery::new("needle")))
        .await
        .into_iter()
        .map(|h| h.path)
        .collect();
    assert_eq!(grepped, [abs("real/file.txt")]);

    // Exact paths follow links.
    assert_eq!(
        text(fs.read("memory/notes.md").await.unwrap()),
        "needle memory\n"
    );
    assert_eq!(fs.stat("memory").await.unwrap().kind, FileKind::Directory);
    assert_eq!(
        all(fs.list("memory")).await,
        vec![DirEntry::file(abs("memory/notes.md"))]
    );
    let query = GrepQuery {
        path: Some("memory".into()),
        ..GrepQuery::new("needle")
    };
    assert_eq!(all(fs.grep(query)).await.len(), 1);
}

#[tokio::test]
async fn local_fs_grep_of_a_missing_root_fails() {
    let dir = tempfile::tempdir().unwrap();
    let fs = local_fs(dir.path());
    let query = GrepQuery {
        path: Some("nope".into()),
        ..GrepQuery::new("x")
    };
    let err = fs.grep(query).try_collect::<Vec<_>>().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("not found: {}/nope", dir.path().display())
    );
    assert!(all(fs.list("nope")).await.is_empty());
    assert!(all(fs.glob("*", Some("nope"))).await.is_empty());
    assert_eq!(fs.stat("nope").await.unwrap().kind, FileKind::Missing);
}

#[tokio::test]
async fn host_reads_detect_images_by_content() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("picture.txt"), suite::PNG).unwrap();
    fs::write(dir.path().join("photo.png"), "not really a png").unwrap();
    let tree = host_dir(dir.path(), true).unwrap();
    assert_eq!(
        tree.read("/picture.txt").await.unwrap(),
        Content::Image {
            bytes: suite::PNG.to_vec(),
            mime: "image/png"
        }
    );
    assert_eq!(
        text(tree.read("/photo.png").await.unwrap()),
        "not really a png"
    );
}

#[tokio::test]
async fn streams_work_without_a_tokio_runtime() {
    let dir = tempfile::tempdir().unwrap();
    touch(dir.path(), "x/y.txt", "needle\n");
    let tree = host_dir(dir.path(), false).unwrap();
    let hits = std::thread::spawn(move || {
        futures::executor::block_on(async {
            tree.write("/z.txt", "needle z\n").await.unwrap();
            tree.grep(GrepQuery::new("needle"))
                .try_collect::<Vec<_>>()
                .await
                .unwrap()
        })
    })
    .join()
    .unwrap();
    let paths: Vec<&str> = hits.iter().map(|h| h.path.as_str()).collect();
    assert_eq!(paths, ["/x/y.txt", "/z.txt"]);
}

// ---------------------------------------------------------------------------------------------
// host_fs: compare-and-swap on etags

const CHANGED: &str = "write failed: /doc.md: the file changed remotely since it was last read; read it again before writing";

#[tokio::test]
async fn host_fs_writes_are_compare_and_swap_after_a_read() {
    let remote = Arc::new(MemoryHostFiles::new());
    remote.insert("ws/doc.md", "v1");
    let tree = host_fs(remote.clone(), "ws");

    // No cached etag: unconditional, even over a version this tree never saw.
    tree.write("/doc.md", "mine 1").await.unwrap();
    // After our write the etag is cached; a remote change in between makes the next write fail.
    remote.insert("ws/doc.md", "theirs 1");
    let err = tree.write("/doc.md", "mine 2").await.unwrap_err();
    assert!(matches!(err, PathError::WriteFailed { .. }));
    assert_eq!(err.to_string(), CHANGED);
    // It keeps failing until the file is read again…
    assert_eq!(
        tree.write("/doc.md", "mine 2")
            .await
            .unwrap_err()
            .to_string(),
        CHANGED
    );
    let (bytes, _) = remote.get("ws/doc.md").await.unwrap().unwrap();
    assert_eq!(bytes, b"theirs 1");
    // …after which the write goes through, on the version read.
    assert_eq!(text(tree.read("/doc.md").await.unwrap()), "theirs 1");
    tree.write("/doc.md", "mine 2").await.unwrap();
    tree.write("/doc.md", "mine 3").await.unwrap();
    let (bytes, _) = remote.get("ws/doc.md").await.unwrap().unwrap();
    assert_eq!(bytes, b"mine 3");

    // A read caches too: a change after the read conflicts.
    remote.insert("ws/other.md", "o1");
    assert_eq!(text(tree.read("/other.md").await.unwrap()), "o1");
    remote.insert("ws/other.md", "o2");
    let err = tree.write("/other.md", "mine").await.unwrap_err();
    assert!(err.to_string().contains("changed remotely"), "{err}");

    // A file deleted remotely after our read conflicts as well.
    assert_eq!(text(tree.read("/other.md").await.unwrap()), "o2");
    remote.delete("ws/other.md").await.unwrap();
    assert!(tree.write("/other.md", "mine").await.is_err());
}

#[tokio::test]
async fn each_session_view_of_host_fs_has_its_own_etags() {
    let remote = Arc::new(MemoryHostFiles::new());
    remote.insert("ws/doc.md", "v1");
    let shared = host_fs(remote.clone(), "ws");
    let (a, b) = (
        shared.session_view().expect("host_fs has session state"),
        shared.session_view().expect("host_fs has session state"),
    );
    assert_eq!(text(a.read("/doc.md").await.unwrap()), "v1");
    a.write("/doc.md", "from a").await.unwrap();
    // b never read the file: under the seed's policy its write is blind (unconditional), and
    // a's read and write did not make it a compare-and-swap on a's version.
    assert_eq!(text(b.read("/doc.md").await.unwrap()), "from a");
    remote.insert("ws/doc.md", "theirs");
    assert_eq!(
        b.write("/doc.md", "from b").await.unwrap_err().to_string(),
        CHANGED
    );
    // The views share the files: a union over a host_fs gives views of the union.
    let root = folio_fs::union_fs([
        ("/ws", shared.clone()),
        ("/tmp", folio_fs::temp_fs(Files::new())),
    ]);
    let view = root.session_view().expect("the union holds a host_fs");
    assert_eq!(text(view.read("/ws/doc.md").await.unwrap()), "theirs");
    assert!(folio_fs::temp_fs(Files::new()).session_view().is_none());
}

#[tokio::test]
async fn create_only_host_fs_never_overwrites_what_it_did_not_read() {
    let remote = Arc::new(MemoryHostFiles::new());
    remote.insert("ws/doc.md", "v1");
    let tree = HostFs::new(remote.clone(), "ws").with_blind_writes(BlindWrites::CreateOnly);
    let not_read = "write failed: /doc.md: the file exists and was not read in this session; read it before writing it";
    assert_eq!(
        tree.write("/doc.md", "blind")
            .await
            .unwrap_err()
            .to_string(),
        not_read
    );
    // A new file is created; a second writer creating it too is refused the same way.
    tree.write("/new.md", "created").await.unwrap();
    let other = tree.session_view().unwrap();
    assert_eq!(
        other
            .write("/new.md", "mine")
            .await
            .unwrap_err()
            .to_string(),
        not_read.replace("/doc.md", "/new.md")
    );
    // After a read, the write is a compare-and-swap on the version read.
    assert_eq!(text(tree.read("/doc.md").await.unwrap()), "v1");
    tree.write("/doc.md", "v2").await.unwrap();
    // A file deleted since the read is not resurrected; once the deletion is seen (the
    // read fails), the write creates it anew.
    remote.delete("ws/doc.md").await.unwrap();
    assert_eq!(
        tree.write("/doc.md", "v3").await.unwrap_err().to_string(),
        CHANGED
    );
    assert!(matches!(
        tree.read("/doc.md").await.unwrap_err(),
        PathError::FileNotFound { .. }
    ));
    tree.write("/doc.md", "v3").await.unwrap();
    let (bytes, _) = remote.get("ws/doc.md").await.unwrap().unwrap();
    assert_eq!(bytes, b"v3");
    // Deleting through the tree forgets the version too.
    tree.delete("/new.md").await.unwrap();
    tree.write("/new.md", "again").await.unwrap();
    let (bytes, _) = remote.get("ws/new.md").await.unwrap().unwrap();
    assert_eq!(bytes, b"again");
}

#[tokio::test]
async fn host_fs_keeps_to_its_scope() {
    let remote = Arc::new(MemoryHostFiles::new());
    remote.insert("a/b/in.txt", "needle in\n");
    remote.insert("a/b-c/out.txt", "needle out\n");
    remote.insert("a/out.txt", "needle out\n");
    let tree = host_fs(remote.clone(), "/a/b/");
    assert_eq!(all(tree.list("/")).await, vec![DirEntry::file("/in.txt")]);
    assert_eq!(
        all(tree.glob("**", None)).await,
        vec![DirEntry::file("/in.txt")]
    );
    assert_eq!(all(tree.grep(GrepQuery::new("needle"))).await.len(), 1);
    assert!(matches!(
        tree.read("/../b-c/out.txt").await.unwrap_err(),
        PathError::FileNotFound { .. }
    ));
    tree.write("/../escape.txt", "x").await.unwrap();
    assert!(remote.get("a/b/escape.txt").await.unwrap().is_some());
    assert!(remote.get("a/escape.txt").await.unwrap().is_none());
}

// ---------------------------------------------------------------------------------------------
// The search index

async fn search(
    fs: &Arc<dyn FileSystem>,
    query: &str,
    path: Option<&str>,
    max: Option<usize>,
) -> Vec<SearchResult> {
    all(fs.search(SearchQuery {
        query: query.to_string(),
        path: path.map(str::to_string),
        max_results: max,
    }))
    .await
}

#[tokio::test]
async fn index_ranks_snippets_scopes_and_caps() {
    let dir = tempfile::tempdir().unwrap();
    touch(
        dir.path(),
        "docs/tantivy.md",
        "# Notes\n\nintro line\nthe tantivy engine ranks with bm25\nmore text\n",
    );
    touch(dir.path(), "docs/other.md", "nothing relevant here\n");
    touch(
        dir.path(),
        "src/engine.rs",
        "// engine\nfn engine() {}\n// tantivy tantivy tantivy engine\n",
    );
    touch(dir.path(), "src/same-a.txt", "zebra\n");
    touch(dir.path(), "src/same-b.txt", "zebra\n");
    fs::write(dir.path().join("img.png"), suite::PNG).unwrap();
    let tree = indexed(host_dir(dir.path(), false).unwrap()).await.unwrap();

    let hits = search(&tree, "tantivy", None, None).await;
    let paths: Vec<&str> = hits.iter().map(|h| h.path.as_str()).collect();
    assert_eq!(paths, ["/src/engine.rs", "/docs/tantivy.md"], "{hits:?}");
    assert!(hits[0].score > hits[1].score);
    let doc = &hits[1];
    assert!(doc.snippet.contains("tantivy engine"), "{doc:?}");
    assert_eq!((doc.start_line, doc.end_line), (4, 4), "{doc:?}");

    // Ties on score are ordered by path; the cap keeps the first ones of that order.
    let zebra = search(&tree, "zebra", None, None).await;
    assert_eq!(zebra.len(), 2);
    assert_eq!(zebra[0].score, zebra[1].score);
    assert_eq!(zebra[0].path, "/src/same-a.txt");
    let capped = search(&tree, "zebra", None, Some(1)).await;
    assert_eq!(
        capped.iter().map(|h| h.path.as_str()).collect::<Vec<_>>(),
        ["/src/same-a.txt"]
    );
    assert!(search(&tree, "zebra", None, Some(0)).await.is_empty());

    // Scope by whole segments.
    let scoped = search(&tree, "tantivy", Some("/docs"), None).await;
    assert_eq!(
        scoped.iter().map(|h| h.path.as_str()).collect::<Vec<_>>(),
        ["/docs/tantivy.md"]
    );
    assert!(
        search(&tree, "tantivy", Some("/doc"), None)
            .await
            .is_empty()
    );
    assert_eq!(
        search(&tree, "tantivy", Some("/src/engine.rs"), None)
            .await
            .len(),
        1
    );
    assert!(search(&tree, "", None, None).await.is_empty());
    assert!(
        search(&tree, "png", None, None).await.is_empty(),
        "images are not indexed"
    );

    // Other verbs delegate.
    assert_eq!(all(tree.glob("*.md", Some("/docs"))).await.len(), 2);
    assert_eq!(all(tree.grep(GrepQuery::new("zebra"))).await.len(), 2);
}

#[tokio::test]
async fn index_follows_writes_and_deletes_through_the_wrapper() {
    let dir = tempfile::tempdir().unwrap();
    touch(dir.path(), "a.md", "alpha\n");
    let tree = indexed(host_dir(dir.path(), false).unwrap()).await.unwrap();
    assert_eq!(search(&tree, "alpha", None, None).await.len(), 1);

    tree.write("/notes/b.md", "line one\nline two\nquokka here\n")
        .await
        .unwrap();
    let hits = search(&tree, "quokka", None, None).await;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].path, "/notes/b.md");
    assert_eq!((hits[0].start_line, hits[0].end_line), (3, 3));
    assert_eq!(search(&tree, "quokka", Some("/notes"), None).await.len(), 1);

    // Overwrite replaces the document: the old words are gone, no duplicate path.
    tree.write("/a.md", "beta\n").await.unwrap();
    assert!(search(&tree, "alpha", None, None).await.is_empty());
    assert_eq!(search(&tree, "beta", None, None).await.len(), 1);
    tree.write("/a.md", "beta beta\n").await.unwrap();
    assert_eq!(search(&tree, "beta", None, None).await.len(), 1);

    tree.delete("/notes/b.md").await.unwrap();
    assert!(search(&tree, "quokka", None, None).await.is_empty());
    assert!(!dir.path().join("notes/b.md").exists());
    // A failed inner write leaves the index alone.
    let ro = indexed(host_dir(dir.path(), true).unwrap()).await.unwrap();
    assert!(ro.write("/c.md", "gamma").await.is_err());
    assert!(search(&ro, "gamma", None, None).await.is_empty());
}

#[tokio::test]
async fn index_works_over_local_and_remote_trees() {
    let dir = tempfile::tempdir().unwrap();
    touch(dir.path(), "k.txt", "kiwi\n");
    let local = indexed(local_fs(dir.path())).await.unwrap();
    let hits = search(&local, "kiwi", None, None).await;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].path, format!("{}/k.txt", dir.path().display()));
    local.write("m.txt", "mango\n").await.unwrap();
    let hits = search(&local, "mango", Some(&dir.path().to_string_lossy()), None).await;
    assert_eq!(hits[0].path, format!("{}/m.txt", dir.path().display()));

    let remote = Arc::new(MemoryHostFiles::new());
    remote.insert("s/f.txt", "fig\n");
    let tree = indexed(host_fs(remote, "s")).await.unwrap();
    assert_eq!(search(&tree, "fig", None, None).await[0].path, "/f.txt");
}

#[tokio::test]
async fn a_workspace_quota_refuses_the_write_that_would_pass_it_and_writes_nothing() {
    let workspace = tempfile::tempdir().unwrap();
    let memory = tempfile::tempdir().unwrap();
    fs::write(memory.path().join("big.md"), "m".repeat(100)).unwrap();
    symlink(memory.path(), workspace.path().join("memory")).unwrap();
    let quota = folio_fs::WorkspaceQuota {
        files: 2,
        bytes: 10,
    };
    let tree = folio_fs::workspace_fs(
        workspace.path(),
        &[memory.path().to_path_buf()],
        Some(quota),
    )
    .unwrap();
    tree.write("a.txt", "12345").await.unwrap();
    tree.write("sub/b.txt", "1234").await.unwrap();
    // Overwriting counts the new size in place of the old one.
    tree.write("a.txt", "123456").await.unwrap();
    let err = tree.write("deeper/c.txt", "1").await.unwrap_err();
    let shown = format!("{}/deeper/c.txt", workspace.path().display());
    assert_eq!(
        err.to_string(),
        format!(
            "workspace full: cannot write {shown}: the session workspace would hold 3 files; at most 2 are allowed ([limits] workspace_files): delete files first"
        )
    );
    assert!(!workspace.path().join("deeper").exists());
    let err = tree.write("a.txt", "1234567").await.unwrap_err();
    assert!(err.to_string().contains("would hold 11 bytes"), "{err}");
    assert_eq!(
        fs::read_to_string(workspace.path().join("a.txt")).unwrap(),
        "123456"
    );
    // Deleting makes room again.
    tree.delete("sub/b.txt").await.unwrap();
    tree.write("deeper/c.txt", "1").await.unwrap();
}

#[tokio::test]
async fn workspace_path_limits_measure_from_the_workspace() {
    let workspace = tempfile::tempdir().unwrap();
    let tree = folio_fs::workspace_fs(workspace.path(), &[], None).unwrap();
    // 64 segments below the workspace are allowed whatever the workspace's own depth.
    let at_limit = format!("{}/f", "d/".repeat(63).trim_end_matches('/'));
    tree.write(&at_limit, "x").await.unwrap();
    let over = format!("{}/f", "e/".repeat(64).trim_end_matches('/'));
    let err = tree.write(&over, "x").await.unwrap_err();
    assert!(
        err.to_string().starts_with("path too deep: ") && err.to_string().contains("65 segments"),
        "{err}"
    );
    assert!(!workspace.path().join("e").exists());
}
