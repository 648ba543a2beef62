//! The one `FileSystem` contract suite, written once and run against every tree.
//!
//! A test crate includes this file as a module named `suite` at its root and expands
//! [`contract_suite!`] once per tree, with a factory that builds a [`Subject`] holding the
//! standard [`fixture`]:
//!
//! ```ignore
//! #[path = "contract/suite.rs"]
//! mod suite;
//! use suite::{Files, Subject};
//!
//! contract_suite!(temp, |files: Files| Subject::rooted(folio_fs::temp_fs(files)));
//! contract_suite!(host, |files: Files| {
//!     let dir = tempfile::tempdir().unwrap();
//!     suite::place_on_disk(dir.path(), &files);
//!     Subject::rooted(folio_fs::host_dir(dir.path(), false)).keep(dir)
//! });
//! ```
//!
//! Each check is one `#[tokio::test]` named after the check. A subject says where its files live
//! (`prefix`, prepended to every query path and every expected yielded path: `""` for trees rooted
//! at `/`, the host directory for `local_fs`), whether it is writable (read-only subjects get the
//! `read-only mount` half of the write checks), and whether it is host-backed (a missing grep root
//! is then an error instead of an empty stream).
//!
//! Contract decisions pinned here (beyond the spec's wording): `glob` yields files only; `stat`
//! reports the normalized path asked about; `grep` with `max_results = Some(0)` yields nothing.
//!
//! One documented exception: a tree that overwrites only files it has read
//! ([`Subject::reads_before_overwrite`]: `host_fs` with `BlindWrites::CreateOnly`, the
//! object-store mounts) must refuse `write_overwrites`'s blind overwrite, then overwrite after a
//! read.

#![allow(dead_code)]

use std::any::Any;
use std::path::Path;
use std::sync::Arc;

use folio_fs::{
    Content, DirEntry, FileInfo, FileKind, FileSystem, GrepQuery, GrepResult, PathError,
    SearchQuery,
};
use futures::TryStreamExt;

/// A fixture: `(absolute path, contents)` pairs.
pub type Files = Vec<(String, Vec<u8>)>;

/// A tree under test plus how to address it.
pub struct Subject {
    /// The tree.
    pub fs: Arc<dyn FileSystem>,
    /// Prepended to query paths and expected yielded paths (`""` for trees rooted at `/`).
    pub prefix: String,
    /// Whether `write`/`delete` are expected to work (else: `read-only mount: …`).
    pub writable: bool,
    /// Whether a missing grep root is an error (host trees) rather than an empty stream.
    pub host_backed: bool,
    /// Whether the tree answers `search` from an index (the empty-search check is skipped).
    pub indexed: bool,
    /// Whether the tree overwrites only files it has read (a blind overwrite is refused).
    pub reads_before_overwrite: bool,
    /// Whatever must outlive the tree (a temporary directory, a server).
    pub guard: Option<Box<dyn Any + Send + Sync>>,
}

impl Subject {
    /// A writable, virtual tree rooted at `/`.
    pub fn rooted(fs: Arc<dyn FileSystem>) -> Self {
        Subject {
            fs,
            prefix: String::new(),
            writable: true,
            host_backed: false,
            indexed: false,
            reads_before_overwrite: false,
            guard: None,
        }
    }

    /// Addresses the fixture under `prefix` (a mount prefix, or a host directory).
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Expects `write`/`delete` to fail with `read-only mount: …`.
    pub fn read_only(mut self) -> Self {
        self.writable = false;
        self
    }

    /// Marks a host-backed tree (a missing grep root is an error).
    pub fn host_backed(mut self) -> Self {
        self.host_backed = true;
        self
    }

    /// Marks a tree whose `search` answers from an index.
    pub fn indexed(mut self) -> Self {
        self.indexed = true;
        self
    }

    /// Expects a blind overwrite (of a file never read through the tree) to be refused.
    pub fn reads_before_overwrite(mut self) -> Self {
        self.reads_before_overwrite = true;
        self
    }

    /// Keeps `guard` alive as long as the subject.
    pub fn keep(mut self, guard: impl Any + Send + Sync) -> Self {
        self.guard = Some(Box::new(guard));
        self
    }

    /// The subject's path for fixture path `path` (absolute, `/` for the fixture root).
    pub fn p(&self, path: &str) -> String {
        if self.prefix.is_empty() {
            path.to_string()
        } else if path == "/" {
            self.prefix.clone()
        } else {
            format!("{}{path}", self.prefix)
        }
    }
}

/// Minimal headers of the four image formats `read` recognizes (each holds a NUL byte, so grep
/// treats them as binary).
pub const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01";
/// A jpeg header.
pub const JPEG: &[u8] = b"\xff\xd8\xff\xe0\0\x10JFIF\0\x01";
/// A gif header.
pub const GIF: &[u8] = b"GIF89a\x01\0\x01\0\x80\0\0";
/// A webp header.
pub const WEBP: &[u8] = b"RIFF\x1a\0\0\0WEBPVP8 \0\0";

/// The standard fixture. Names are chosen so that a depth-first walk and lexicographic order
/// disagree (`/a-c` < `/a.txt` < `/a/b`), and so that `/agent` is a segment prefix trap for
/// `/agent-tools`.
pub fn fixture() -> Files {
    let text = |path: &str, contents: &str| (path.to_string(), contents.as_bytes().to_vec());
    let bytes = |path: &str, contents: &[u8]| (path.to_string(), contents.to_vec());
    vec![
        text("/a-c", "needle two\n"),
        text("/a.txt", "Needle Three\nneedle four\n"),
        text("/a/b", "needle one\nnothing here\n"),
        text("/agent-tools/t.txt", "tool needle\n"),
        text("/agent/skills/s.md", "skill needle\n"),
        bytes("/img/g.gif", GIF),
        bytes("/img/j.jpg", JPEG),
        bytes("/img/p.png", PNG),
        bytes("/img/w.webp", WEBP),
        text(
            "/src/a.ts",
            "export const a = 1; // needle\nneedle crlf\r\nlast line\n",
        ),
        text("/src/b.rs", "fn main() {}\n// needle\n"),
        text("/src/nested/c.ts", "nested needle\n"),
        text("/z.txt", "zzz\n"),
    ]
}

/// Writes `files` under host directory `root` (for host-backed factories).
pub fn place_on_disk(root: &Path, files: &Files) {
    for (path, contents) in files {
        let target = root.join(path.trim_start_matches('/'));
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).expect("create fixture directory");
        }
        std::fs::write(&target, contents).expect("write fixture file");
    }
}

/// Expands into one `#[tokio::test]` per contract check, in a module named `$name`, each building
/// its subject with `$factory` (a `Fn(Files) -> Subject`) from [`fixture`].
#[macro_export]
macro_rules! contract_suite {
    ($name:ident, $factory:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $crate::contract_suite!(@checks $factory;
                list_root_is_sorted_unique_with_kinds,
                list_subdirectory,
                list_of_a_file_is_empty,
                list_of_a_missing_path_is_empty,
                list_normalizes_dot_dot_and_trailing_slash,
                list_respects_segment_prefixes,
                stat_file_directory_missing_and_root,
                stat_normalizes_the_path,
                glob_is_relative_to_dir,
                glob_recursive_is_sorted_and_unique,
                glob_yields_files_only,
                glob_of_a_missing_dir_is_empty,
                glob_normalizes_the_dir,
                glob_respects_segment_prefixes,
                glob_without_dir_means_the_root,
                read_text,
                read_missing_is_not_found,
                read_normalizes_dot_dot,
                read_images_with_mime,
                grep_is_sorted_by_path_then_line,
                grep_case_insensitive,
                grep_slash_free_glob_matches_basenames_at_any_depth,
                grep_glob_with_slash_is_relative_to_the_scope,
                grep_scope_directory_and_file,
                grep_respects_segment_prefixes,
                grep_max_results_stops_early,
                grep_invalid_pattern,
                grep_missing_path,
                grep_strips_line_terminators,
                search_without_index_is_empty,
                write_then_read,
                write_overwrites,
                write_creates_parent_directories,
                write_normalizes_the_path,
                write_to_a_directory_fails,
                write_over_the_path_limits_writes_nothing,
                written_files_reach_every_walk_verb,
                delete_then_stat_is_missing,
                delete_missing_is_not_found,
            );
        }
    };
    (@checks $factory:expr; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $check() {
                let factory = $factory;
                let subject: $crate::suite::Subject = factory($crate::suite::fixture());
                $crate::suite::$check(&subject).await;
            }
        )*
    };
}

// ---------------------------------------------------------------------------------------------
// Helpers

async fn list(s: &Subject, path: &str) -> Vec<DirEntry> {
    s.fs.list(&s.p(path))
        .try_collect()
        .await
        .expect("list never fails here")
}

async fn glob(s: &Subject, pattern: &str, dir: &str) -> Vec<DirEntry> {
    s.fs.glob(pattern, Some(&s.p(dir)))
        .try_collect()
        .await
        .expect("glob never fails here")
}

async fn glob_paths(s: &Subject, pattern: &str, dir: &str) -> Vec<String> {
    glob(s, pattern, dir)
        .await
        .into_iter()
        .map(|entry| entry.path)
        .collect()
}

async fn grep(s: &Subject, query: GrepQuery) -> Result<Vec<GrepResult>, PathError> {
    let query = GrepQuery {
        path: Some(s.p(query.path.as_deref().unwrap_or("/"))),
        ..query
    };
    s.fs.grep(query).try_collect().await
}

/// Hits as `(fixture path, line number, line)` for compact expectations.
async fn grep_hits(s: &Subject, query: GrepQuery) -> Vec<(String, u64, String)> {
    grep(s, query)
        .await
        .expect("grep succeeds")
        .into_iter()
        .map(|hit| (hit.path, hit.line_number, hit.line))
        .collect()
}

fn hit(s: &Subject, path: &str, line_number: u64, line: &str) -> (String, u64, String) {
    (s.p(path), line_number, line.to_string())
}

fn files(s: &Subject, paths: &[&str]) -> Vec<DirEntry> {
    paths.iter().map(|p| DirEntry::file(s.p(p))).collect()
}

fn file_paths(s: &Subject, paths: &[&str]) -> Vec<String> {
    paths.iter().map(|p| s.p(p)).collect()
}

fn needle(pattern: &str) -> GrepQuery {
    GrepQuery::new(pattern)
}

fn scoped(pattern: &str, path: &str) -> GrepQuery {
    GrepQuery {
        path: Some(path.to_string()),
        ..GrepQuery::new(pattern)
    }
}

fn with_glob(pattern: &str, path: &str, glob: &str) -> GrepQuery {
    GrepQuery {
        glob: Some(glob.to_string()),
        ..scoped(pattern, path)
    }
}

async fn error_of_read(s: &Subject, path: &str) -> String {
    s.fs.read(&s.p(path))
        .await
        .expect_err("read should fail")
        .to_string()
}

async fn kind(s: &Subject, path: &str) -> FileKind {
    s.fs.stat(&s.p(path)).await.expect("stat never fails").kind
}

/// The case-sensitive `needle` hits of the fixture, in contract order.
fn all_needles(s: &Subject) -> Vec<(String, u64, String)> {
    vec![
        hit(s, "/a-c", 1, "needle two"),
        hit(s, "/a.txt", 2, "needle four"),
        hit(s, "/a/b", 1, "needle one"),
        hit(s, "/agent-tools/t.txt", 1, "tool needle"),
        hit(s, "/agent/skills/s.md", 1, "skill needle"),
        hit(s, "/src/a.ts", 1, "export const a = 1; // needle"),
        hit(s, "/src/a.ts", 2, "needle crlf"),
        hit(s, "/src/b.rs", 2, "// needle"),
        hit(s, "/src/nested/c.ts", 1, "nested needle"),
    ]
}

// ---------------------------------------------------------------------------------------------
// list

pub async fn list_root_is_sorted_unique_with_kinds(s: &Subject) {
    let expected = vec![
        DirEntry::dir(s.p("/a")),
        DirEntry::file(s.p("/a-c")),
        DirEntry::file(s.p("/a.txt")),
        DirEntry::dir(s.p("/agent")),
        DirEntry::dir(s.p("/agent-tools")),
        DirEntry::dir(s.p("/img")),
        DirEntry::dir(s.p("/src")),
        DirEntry::file(s.p("/z.txt")),
    ];
    assert_eq!(list(s, "/").await, expected);
}

pub async fn list_subdirectory(s: &Subject) {
    assert_eq!(
        list(s, "/src").await,
        vec![
            DirEntry::file(s.p("/src/a.ts")),
            DirEntry::file(s.p("/src/b.rs")),
            DirEntry::dir(s.p("/src/nested")),
        ]
    );
    assert_eq!(list(s, "/a").await, vec![DirEntry::file(s.p("/a/b"))]);
}

pub async fn list_of_a_file_is_empty(s: &Subject) {
    assert_eq!(list(s, "/a.txt").await, vec![]);
    assert_eq!(list(s, "/src/nested/c.ts").await, vec![]);
}

pub async fn list_of_a_missing_path_is_empty(s: &Subject) {
    assert_eq!(list(s, "/missing").await, vec![]);
    assert_eq!(list(s, "/src/missing/deeper").await, vec![]);
    assert_eq!(list(s, "/a.txt/under-a-file").await, vec![]);
}

pub async fn list_normalizes_dot_dot_and_trailing_slash(s: &Subject) {
    let src = list(s, "/src").await;
    assert_eq!(list(s, "/src/nested/..").await, src);
    assert_eq!(list(s, "/src/").await, src);
    assert_eq!(list(s, "/src/./nested/../").await, src);
}

pub async fn list_respects_segment_prefixes(s: &Subject) {
    assert_eq!(
        list(s, "/agent").await,
        vec![DirEntry::dir(s.p("/agent/skills"))]
    );
    assert_eq!(
        list(s, "/agent-tools").await,
        vec![DirEntry::file(s.p("/agent-tools/t.txt"))]
    );
}

// ---------------------------------------------------------------------------------------------
// stat

pub async fn stat_file_directory_missing_and_root(s: &Subject) {
    let info = s.fs.stat(&s.p("/a.txt")).await.expect("stat");
    assert_eq!(info.path, s.p("/a.txt"));
    assert_eq!(info.kind, FileKind::File);
    assert_eq!(info.size, Some(25));

    let info = s.fs.stat(&s.p("/src/nested")).await.expect("stat");
    assert_eq!(info.path, s.p("/src/nested"));
    assert_eq!(info.kind, FileKind::Directory);

    assert_eq!(
        s.fs.stat(&s.p("/missing"))
            .await
            .expect("missing is a value"),
        FileInfo::missing(s.p("/missing"))
    );
    assert_eq!(kind(s, "/a.txt/under-a-file").await, FileKind::Missing);
    assert_eq!(kind(s, "/").await, FileKind::Directory);
    // Segment prefixes: `/agen` is neither `/agent` nor `/agent-tools`.
    assert_eq!(kind(s, "/agen").await, FileKind::Missing);
}

pub async fn stat_normalizes_the_path(s: &Subject) {
    let info = s.fs.stat(&s.p("/src/../a.txt")).await.expect("stat");
    assert_eq!(info.path, s.p("/a.txt"));
    assert_eq!(info.kind, FileKind::File);
    assert_eq!(kind(s, "/src/nested/../").await, FileKind::Directory);
}

// ---------------------------------------------------------------------------------------------
// glob

pub async fn glob_is_relative_to_dir(s: &Subject) {
    assert_eq!(glob(s, "*.ts", "/src").await, files(s, &["/src/a.ts"]));
    assert_eq!(
        glob(s, "**/*.ts", "/src").await,
        files(s, &["/src/a.ts", "/src/nested/c.ts"])
    );
    assert_eq!(
        glob(s, "nested/*.ts", "/src").await,
        files(s, &["/src/nested/c.ts"])
    );
    // Relative to the root, `*.ts` is only top-level files.
    assert_eq!(glob(s, "*.ts", "/").await, vec![]);
    assert_eq!(glob(s, "src/*.ts", "/").await, files(s, &["/src/a.ts"]));
}

pub async fn glob_recursive_is_sorted_and_unique(s: &Subject) {
    let expected = file_paths(
        s,
        &[
            "/a-c",
            "/a.txt",
            "/a/b",
            "/agent-tools/t.txt",
            "/agent/skills/s.md",
            "/img/g.gif",
            "/img/j.jpg",
            "/img/p.png",
            "/img/w.webp",
            "/src/a.ts",
            "/src/b.rs",
            "/src/nested/c.ts",
            "/z.txt",
        ],
    );
    assert_eq!(glob_paths(s, "**", "/").await, expected);
    assert_eq!(glob_paths(s, "**/*", "/").await, expected);
    assert_eq!(
        glob_paths(s, "a*", "/").await,
        file_paths(s, &["/a-c", "/a.txt"])
    );
}

pub async fn glob_yields_files_only(s: &Subject) {
    assert_eq!(
        glob(s, "*", "/").await,
        files(s, &["/a-c", "/a.txt", "/z.txt"])
    );
    assert_eq!(
        glob(s, "*", "/src").await,
        files(s, &["/src/a.ts", "/src/b.rs"])
    );
}

pub async fn glob_of_a_missing_dir_is_empty(s: &Subject) {
    assert_eq!(glob(s, "*", "/missing").await, vec![]);
    assert_eq!(glob(s, "**", "/missing/deeper").await, vec![]);
    assert_eq!(glob(s, "*", "/a.txt").await, vec![]);
}

pub async fn glob_normalizes_the_dir(s: &Subject) {
    assert_eq!(
        glob(s, "*.ts", "/src/nested/..").await,
        files(s, &["/src/a.ts"])
    );
    assert_eq!(glob(s, "*.ts", "/src/").await, files(s, &["/src/a.ts"]));
}

pub async fn glob_respects_segment_prefixes(s: &Subject) {
    assert_eq!(
        glob_paths(s, "**", "/agent").await,
        file_paths(s, &["/agent/skills/s.md"])
    );
    assert_eq!(
        glob_paths(s, "agent/**", "/").await,
        file_paths(s, &["/agent/skills/s.md"])
    );
}

pub async fn glob_without_dir_means_the_root(s: &Subject) {
    let dir = if s.prefix.is_empty() {
        None
    } else {
        // A prefixed subject's root is its prefix; `None` is only meaningful at `/`.
        Some(s.p("/"))
    };
    let got: Vec<DirEntry> =
        s.fs.glob("*.txt", dir.as_deref())
            .try_collect()
            .await
            .expect("glob");
    assert_eq!(got, files(s, &["/a.txt", "/z.txt"]));
}

// ---------------------------------------------------------------------------------------------
// read

pub async fn read_text(s: &Subject) {
    assert_eq!(
        read_text_at(s, "/a.txt").await,
        "Needle Three\nneedle four\n"
    );
    assert_eq!(read_text_at(s, "/src/nested/c.ts").await, "nested needle\n");
}

async fn read_text_at(s: &Subject, path: &str) -> String {
    match s.fs.read(&s.p(path)).await {
        Ok(Content::Text(text)) => text,
        other => panic!("expected text at {path}, got {other:?}"),
    }
}

pub async fn read_missing_is_not_found(s: &Subject) {
    assert_eq!(
        error_of_read(s, "/missing.txt").await,
        format!("not found: {}", s.p("/missing.txt"))
    );
    assert_eq!(
        error_of_read(s, "/src/missing/deeper.rs").await,
        format!("not found: {}", s.p("/src/missing/deeper.rs"))
    );
}

pub async fn read_normalizes_dot_dot(s: &Subject) {
    assert_eq!(
        read_text_at(s, "/src/../a.txt").await,
        "Needle Three\nneedle four\n"
    );
    assert_eq!(
        read_text_at(s, "/src/./nested/../b.rs").await,
        "fn main() {}\n// needle\n"
    );
    assert_eq!(
        error_of_read(s, "/src/../nope").await,
        format!("not found: {}", s.p("/nope"))
    );
}

pub async fn read_images_with_mime(s: &Subject) {
    for (path, bytes, mime) in [
        ("/img/p.png", PNG, "image/png"),
        ("/img/j.jpg", JPEG, "image/jpeg"),
        ("/img/g.gif", GIF, "image/gif"),
        ("/img/w.webp", WEBP, "image/webp"),
    ] {
        assert_eq!(
            s.fs.read(&s.p(path)).await.expect("read image"),
            Content::Image {
                bytes: bytes.to_vec(),
                mime
            },
            "{path}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// grep

pub async fn grep_is_sorted_by_path_then_line(s: &Subject) {
    assert_eq!(grep_hits(s, needle("needle")).await, all_needles(s));
    // Whole values, not just the triple.
    let first = grep(s, needle("needle two")).await.expect("grep");
    assert_eq!(
        first,
        vec![GrepResult {
            path: s.p("/a-c"),
            line_number: 1,
            line: "needle two".to_string()
        }]
    );
}

pub async fn grep_case_insensitive(s: &Subject) {
    let query = GrepQuery {
        case_insensitive: true,
        ..scoped("NEEDLE (three|four)", "/")
    };
    assert_eq!(
        grep_hits(s, query).await,
        vec![
            hit(s, "/a.txt", 1, "Needle Three"),
            hit(s, "/a.txt", 2, "needle four"),
        ]
    );
    assert_eq!(grep_hits(s, needle("NEEDLE")).await, vec![]);
    assert_eq!(
        grep_hits(s, needle("Needle")).await,
        vec![hit(s, "/a.txt", 1, "Needle Three")]
    );
}

pub async fn grep_slash_free_glob_matches_basenames_at_any_depth(s: &Subject) {
    assert_eq!(
        grep_hits(s, with_glob("needle", "/", "*.ts")).await,
        vec![
            hit(s, "/src/a.ts", 1, "export const a = 1; // needle"),
            hit(s, "/src/a.ts", 2, "needle crlf"),
            hit(s, "/src/nested/c.ts", 1, "nested needle"),
        ]
    );
    assert_eq!(
        grep_hits(s, with_glob("needle", "/", "*.md")).await,
        vec![hit(s, "/agent/skills/s.md", 1, "skill needle")]
    );
}

pub async fn grep_glob_with_slash_is_relative_to_the_scope(s: &Subject) {
    assert_eq!(
        grep_hits(s, with_glob("needle", "/", "src/*.ts")).await,
        vec![
            hit(s, "/src/a.ts", 1, "export const a = 1; // needle"),
            hit(s, "/src/a.ts", 2, "needle crlf"),
        ]
    );
    assert_eq!(
        grep_hits(s, with_glob("needle", "/src", "nested/*.ts")).await,
        vec![hit(s, "/src/nested/c.ts", 1, "nested needle")]
    );
    assert_eq!(
        grep_hits(s, with_glob("needle", "/", "nested/*.ts")).await,
        vec![]
    );
}

pub async fn grep_scope_directory_and_file(s: &Subject) {
    assert_eq!(
        grep_hits(s, scoped("needle", "/src")).await,
        vec![
            hit(s, "/src/a.ts", 1, "export const a = 1; // needle"),
            hit(s, "/src/a.ts", 2, "needle crlf"),
            hit(s, "/src/b.rs", 2, "// needle"),
            hit(s, "/src/nested/c.ts", 1, "nested needle"),
        ]
    );
    assert_eq!(
        grep_hits(s, scoped("needle", "/src/b.rs")).await,
        vec![hit(s, "/src/b.rs", 2, "// needle")]
    );
    assert_eq!(
        grep_hits(s, scoped("needle", "/src/nested/../b.rs")).await,
        vec![hit(s, "/src/b.rs", 2, "// needle")]
    );
}

pub async fn grep_respects_segment_prefixes(s: &Subject) {
    assert_eq!(
        grep_hits(s, scoped("needle", "/agent")).await,
        vec![hit(s, "/agent/skills/s.md", 1, "skill needle")]
    );
    assert_eq!(
        grep_hits(s, scoped("needle", "/a")).await,
        vec![hit(s, "/a/b", 1, "needle one")]
    );
}

pub async fn grep_max_results_stops_early(s: &Subject) {
    let capped = |max| GrepQuery {
        max_results: Some(max),
        ..needle("needle")
    };
    let all = all_needles(s);
    assert_eq!(grep_hits(s, capped(3)).await, all[..3].to_vec());
    assert_eq!(grep_hits(s, capped(1)).await, all[..1].to_vec());
    assert_eq!(grep_hits(s, capped(0)).await, vec![]);
    assert_eq!(grep_hits(s, capped(100)).await, all);
    // The cap counts hits, not files: two hits of one file.
    let in_file = GrepQuery {
        max_results: Some(1),
        ..scoped("needle", "/src/a.ts")
    };
    assert_eq!(
        grep_hits(s, in_file).await,
        vec![hit(s, "/src/a.ts", 1, "export const a = 1; // needle")]
    );
}

pub async fn grep_invalid_pattern(s: &Subject) {
    let err = grep(s, needle("a(")).await.expect_err("invalid regex");
    assert_eq!(err.to_string(), "invalid grep pattern: a(");
    assert!(matches!(err, PathError::InvalidGrepPattern { .. }));
}

pub async fn grep_missing_path(s: &Subject) {
    let result = grep(s, scoped("needle", "/missing")).await;
    if s.host_backed {
        assert!(result.is_err(), "a missing host search root is an error");
    } else {
        assert_eq!(
            result.expect("a missing virtual path yields nothing"),
            vec![]
        );
    }
}

pub async fn grep_strips_line_terminators(s: &Subject) {
    assert_eq!(
        grep_hits(s, needle("crlf")).await,
        vec![hit(s, "/src/a.ts", 2, "needle crlf")]
    );
}

// ---------------------------------------------------------------------------------------------
// search

pub async fn search_without_index_is_empty(s: &Subject) {
    if s.indexed {
        return;
    }
    let hits: Vec<_> =
        s.fs.search(SearchQuery {
            query: "needle".to_string(),
            path: Some(s.p("/")),
            max_results: None,
        })
        .try_collect()
        .await
        .expect("search without an index is empty success");
    assert!(hits.is_empty());
}

// ---------------------------------------------------------------------------------------------
// write and delete

async fn expect_read_only_write(s: &Subject, path: &str) {
    let err =
        s.fs.write(&s.p(path), "x")
            .await
            .expect_err("read-only tree refuses writes");
    let normalized = folio_fs::normalize_fs_path(path);
    assert_eq!(
        err.to_string(),
        format!("read-only mount: {}", s.p(&normalized))
    );
}

pub async fn write_then_read(s: &Subject) {
    if !s.writable {
        expect_read_only_write(s, "/new.txt").await;
        expect_read_only_write(s, "/a.txt").await;
        assert_eq!(kind(s, "/new.txt").await, FileKind::Missing);
        return;
    }
    s.fs.write(&s.p("/new.txt"), "fresh\n")
        .await
        .expect("write");
    assert_eq!(read_text_at(s, "/new.txt").await, "fresh\n");
    let info = s.fs.stat(&s.p("/new.txt")).await.expect("stat");
    assert_eq!((info.kind, info.size), (FileKind::File, Some(6)));
    s.fs.write(&s.p("/empty.txt"), "")
        .await
        .expect("write empty");
    assert_eq!(read_text_at(s, "/empty.txt").await, "");
}

pub async fn write_overwrites(s: &Subject) {
    if !s.writable {
        return expect_read_only_write(s, "/a.txt").await;
    }
    if s.reads_before_overwrite {
        let err =
            s.fs.write(&s.p("/a.txt"), "blind")
                .await
                .expect_err("a file never read is not overwritten");
        assert_eq!(
            err.to_string(),
            format!(
                "write failed: {}: the file exists and was not read in this session; read it before writing it",
                s.p("/a.txt")
            )
        );
        assert_eq!(
            read_text_at(s, "/a.txt").await,
            "Needle Three\nneedle four\n"
        );
    }
    s.fs.write(&s.p("/a.txt"), "replaced").await.expect("write");
    assert_eq!(read_text_at(s, "/a.txt").await, "replaced");
    assert_eq!(
        grep_hits(s, scoped("needle|Needle", "/a.txt")).await,
        vec![]
    );
}

pub async fn write_creates_parent_directories(s: &Subject) {
    if !s.writable {
        return expect_read_only_write(s, "/new/deep/f.txt").await;
    }
    s.fs.write(&s.p("/new/deep/f.txt"), "deep")
        .await
        .expect("write");
    assert_eq!(kind(s, "/new").await, FileKind::Directory);
    assert_eq!(kind(s, "/new/deep").await, FileKind::Directory);
    assert_eq!(list(s, "/new").await, vec![DirEntry::dir(s.p("/new/deep"))]);
    assert_eq!(read_text_at(s, "/new/deep/f.txt").await, "deep");
}

pub async fn write_normalizes_the_path(s: &Subject) {
    if !s.writable {
        return expect_read_only_write(s, "/src/../w.txt").await;
    }
    s.fs.write(&s.p("/src/nested/../../w.txt"), "w")
        .await
        .expect("write");
    assert_eq!(read_text_at(s, "/w.txt").await, "w");
    assert_eq!(kind(s, "/src/w.txt").await, FileKind::Missing);
}

pub async fn write_to_a_directory_fails(s: &Subject) {
    if !s.writable {
        return expect_read_only_write(s, "/src").await;
    }
    let err =
        s.fs.write(&s.p("/src"), "x")
            .await
            .expect_err("a directory is not a file");
    let expected = format!("write failed: {}", s.p("/src"));
    assert!(
        err.to_string().starts_with(&expected),
        "{err} should start with {expected}"
    );
    assert_eq!(kind(s, "/src").await, FileKind::Directory);
    assert_eq!(kind(s, "/src/a.ts").await, FileKind::File);
}

pub async fn write_over_the_path_limits_writes_nothing(s: &Subject) {
    if !s.writable {
        return;
    }
    let deep = format!("{}/f.txt", "/d".repeat(1500));
    let long_name = format!("/n/{}", "x".repeat(256));
    let long_path = format!("/l{}", format!("/{}", "y".repeat(200)).repeat(21));
    for (path, message) in [
        (&deep, "path too deep: "),
        (&long_name, "path segment too long: "),
        (&long_path, "path too long: "),
    ] {
        let err =
            s.fs.write(&s.p(path), "x")
                .await
                .expect_err("a path over a limit is refused");
        assert!(
            matches!(&err, PathError::OverLimit { path: shown, .. } if *shown == s.p(path)),
            "{err:?}"
        );
        assert!(err.to_string().starts_with(message), "{err}");
        assert!(err.to_string().len() < 400, "{err}");
    }
    for top in ["/d", "/n", "/l"] {
        assert_eq!(kind(s, top).await, FileKind::Missing, "{top}");
    }
}

pub async fn written_files_reach_every_walk_verb(s: &Subject) {
    if !s.writable {
        return;
    }
    s.fs.write(&s.p("/src/a-new.ts"), "fresh needle\n")
        .await
        .expect("write");
    assert_eq!(
        glob(s, "*.ts", "/src").await,
        files(s, &["/src/a-new.ts", "/src/a.ts"])
    );
    assert_eq!(
        list(s, "/src").await,
        vec![
            DirEntry::file(s.p("/src/a-new.ts")),
            DirEntry::file(s.p("/src/a.ts")),
            DirEntry::file(s.p("/src/b.rs")),
            DirEntry::dir(s.p("/src/nested")),
        ]
    );
    assert_eq!(
        grep_hits(s, scoped("fresh", "/")).await,
        vec![hit(s, "/src/a-new.ts", 1, "fresh needle")]
    );
}

pub async fn delete_then_stat_is_missing(s: &Subject) {
    if !s.writable {
        let err =
            s.fs.delete(&s.p("/a.txt"))
                .await
                .expect_err("read-only tree refuses deletes");
        assert_eq!(
            err.to_string(),
            format!("read-only mount: {}", s.p("/a.txt"))
        );
        assert_eq!(kind(s, "/a.txt").await, FileKind::File);
        return;
    }
    s.fs.delete(&s.p("/a.txt")).await.expect("delete");
    assert_eq!(kind(s, "/a.txt").await, FileKind::Missing);
    assert_eq!(
        error_of_read(s, "/a.txt").await,
        format!("not found: {}", s.p("/a.txt"))
    );
    assert!(!list(s, "/").await.contains(&DirEntry::file(s.p("/a.txt"))));
    assert_eq!(glob_paths(s, "a*", "/").await, file_paths(s, &["/a-c"]));
    assert_eq!(
        grep_hits(s, scoped("four", "/")).await,
        vec![],
        "a deleted file has no grep hits"
    );
    // Deleting through `..` normalizes too.
    s.fs.delete(&s.p("/src/nested/../b.rs"))
        .await
        .expect("delete");
    assert_eq!(kind(s, "/src/b.rs").await, FileKind::Missing);
}

pub async fn delete_missing_is_not_found(s: &Subject) {
    let err =
        s.fs.delete(&s.p("/missing.txt"))
            .await
            .expect_err("nothing to delete");
    if s.writable {
        assert_eq!(
            err.to_string(),
            format!("not found: {}", s.p("/missing.txt"))
        );
        let err =
            s.fs.delete(&s.p("/src/../gone"))
                .await
                .expect_err("missing");
        assert_eq!(err.to_string(), format!("not found: {}", s.p("/gone")));
    } else {
        assert_eq!(
            err.to_string(),
            format!("read-only mount: {}", s.p("/missing.txt"))
        );
    }
}
