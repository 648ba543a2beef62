//! One `FileSystem` for every Folio agent.
//!
//! Every turn binds one [`FileSystem`]; the model's file tools (`Read`, `LS`, `Grep`, `Glob`,
//! `Write`, `StrReplace`, `Delete`, `SemanticSearch`) are synthesized from its eight verbs. An
//! authored root is one posix namespace rooted at `/`; without one, the turn runs on
//! [`local_fs`], the host disk.
//!
//! Concepts:
//! - **Verbs.** `list`, `stat`, `glob`, `read`, `grep`, `write`, `delete`, `search`. Walk verbs
//!   return streams that are *already sorted* by their producer (see [`FileSystem`]); composers
//!   merge children with a k-way merge and never re-sort.
//! - **Paths.** Absolute, no trailing slash except `/`, `..` resolved by [`normalize_fs_path`];
//!   prefix tests go by whole segments ([`is_within`]).
//! - **Errors.** Every failure is a [`PathError`] whose message is a contract string
//!   (`not found: /a.txt`, `read-only mount: /a.txt`, …), shown verbatim to the model.
//! - **Trees.** [`empty_fs`], [`temp_fs`], [`union_fs`], [`overlay_fs`], [`writable_overlay_fs`],
//!   [`host_dir`], [`local_fs`], [`host_fs`]; any tree can opt into full-text `search` with
//!   [`indexed`].
//! - **Composition.** [`union_fs`] mounts trees at path prefixes (longest prefix wins; the
//!   deepest mount shadows what its parent holds there); [`overlay_fs`] stacks same-root layers
//!   (earlier wins; a failing layer costs only its own files). Both fan walk verbs out and combine
//!   the children's sorted streams with the lazy k-way merge in [`merge`], pushing `max_results`
//!   down. `glob` yields files only; `list` yields files and directories.
//! - **Sessions.** A tree that remembers what it has read (a [`host_fs`] over a remote API,
//!   which writes with compare-and-swap on the versions it read) gives each session its own
//!   [`FileSystem::session_view`]; the files are shared, what each session has seen is not.
//!
//! ```
//! # futures::executor::block_on(async {
//! use folio_fs::{temp_fs, union_fs, FileSystem, Content};
//! let notes = temp_fs([("/notes.md", "hello")]);
//! let root = union_fs([("/notes", notes)]);
//! assert_eq!(root.read("/notes/notes.md").await.unwrap(), Content::Text("hello".into()));
//! assert_eq!(root.read("/other").await.unwrap_err().to_string(), "no mount for path: /other");
//! # });
//! ```

use std::time::SystemTime;

use futures::stream::BoxStream;

mod beneath;
mod error;
mod host;
mod host_files;
mod index;
mod limits;
mod matcher;
mod memory;
pub mod merge;
mod overlay;
mod page;
mod quota;
mod shared_error;
/// The path rules live in their own dependency-free crate (folio-project needs them too).
use folio_path as path;
mod union;
mod walk;

pub use beneath::{BeneathError, write_beneath};
pub use error::{EditError, PathError};
pub use host::{HostTree, host_dir, local_fs, workspace_fs};
pub use host_files::{
    BlindWrites, HostFileMeta, HostFilesApi, HostFilesError, HostFs, MemoryHostFiles, PutOutcome,
    host_fs,
};
pub use index::{IndexedFs, indexed};
pub use limits::READ_BYTE_CAP;
pub use matcher::{LineMatcher, PathFilter};
pub use memory::{EmptyFs, TempFs, empty_fs, temp_fs};
pub use overlay::{OverlayDiff, OverlayFs, WritableOverlayFs, overlay_fs, writable_overlay_fs};
pub use page::{MAX_LINE_CHARS, Page, PageLine, SCAN_BYTE_CAP, page_reader};
pub use path::{
    MAX_PATH_BYTES, MAX_PATH_SEGMENTS, MAX_SEGMENT_BYTES, PathLimit, basename, check_path_limits,
    is_within, join_mount, normalize_fs_path, parent, strip_mount,
};
pub use quota::{QuotaExceeded, Usage, WorkspaceQuota, usage_of};
pub use shared_error::SharedError;
pub use union::{IntoFs, UnionFs, union_fs};

/// A sorted, fallible async stream of results from a walk verb.
pub type FsStream<T> = BoxStream<'static, Result<T, PathError>>;

/// Whether a listed entry is a file or a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory (or a mount point).
    Directory,
}

/// One child yielded by `list` or `glob`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DirEntry {
    /// The entry's absolute path.
    pub path: String,
    /// File or directory.
    pub kind: EntryKind,
}

impl DirEntry {
    /// A file entry at `path`.
    pub fn file(path: impl Into<String>) -> Self {
        DirEntry {
            path: path.into(),
            kind: EntryKind::File,
        }
    }

    /// A directory entry at `path`.
    pub fn dir(path: impl Into<String>) -> Self {
        DirEntry {
            path: path.into(),
            kind: EntryKind::Directory,
        }
    }
}

/// What `stat` found at a path; a missing path is a value, not an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// Nothing at this path.
    Missing,
}

/// The answer of `stat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// The path asked about.
    pub path: String,
    /// File, directory or missing.
    pub kind: FileKind,
    /// Size in bytes, where known (files only).
    pub size: Option<u64>,
    /// Last modification time, where known.
    pub modified: Option<SystemTime>,
}

impl FileInfo {
    /// The `missing` answer for `path`.
    pub fn missing(path: impl Into<String>) -> Self {
        FileInfo {
            path: path.into(),
            kind: FileKind::Missing,
            size: None,
            modified: None,
        }
    }
}

/// The contents returned by `read`: text, or image bytes with their mime type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// A text file.
    Text(String),
    /// A `jpeg`, `png`, `gif` or `webp` image, detected by content.
    Image {
        /// The raw image bytes.
        bytes: Vec<u8>,
        /// `image/jpeg`, `image/png`, `image/gif` or `image/webp`.
        mime: &'static str,
    },
}

/// The image mime type of `bytes` when they start like a jpeg, png, gif or webp file.
pub fn image_mime(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

impl Content {
    /// Interprets raw file bytes: an image when the content says so, else (lossy UTF-8) text.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        match image_mime(&bytes) {
            Some(mime) => Content::Image { bytes, mime },
            None => match String::from_utf8(bytes) {
                Ok(text) => Content::Text(text),
                Err(err) => Content::Text(String::from_utf8_lossy(err.as_bytes()).into_owned()),
            },
        }
    }
}

/// A regex search over file lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrepQuery {
    /// The regular expression (Rust `regex` syntax, as ripgrep).
    pub pattern: String,
    /// Scope: a directory or a single file; `None`, `""` or `"/"` mean the root.
    pub path: Option<String>,
    /// Only files matching this glob; a slash-free glob matches the basename at any depth.
    pub glob: Option<String>,
    /// Match case-insensitively.
    pub case_insensitive: bool,
    /// Stop after this many hits.
    pub max_results: Option<usize>,
}

impl GrepQuery {
    /// A query for `pattern` over the whole tree.
    pub fn new(pattern: impl Into<String>) -> Self {
        GrepQuery {
            pattern: pattern.into(),
            ..GrepQuery::default()
        }
    }
}

/// One matching line yielded by `grep`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GrepResult {
    /// The file's absolute path.
    pub path: String,
    /// 1-based line number.
    pub line_number: u64,
    /// The line's text without its line terminator.
    pub line: String,
}

/// A full-text query answered by a tree's search index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchQuery {
    /// Free text (BM25-ranked terms).
    pub query: String,
    /// Scope: only files within this path.
    pub path: Option<String>,
    /// Stop after this many hits.
    pub max_results: Option<usize>,
}

/// One ranked hit yielded by `search`.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    /// The file's absolute path.
    pub path: String,
    /// Relevance; higher is better.
    pub score: f32,
    /// The best-matching passage.
    pub snippet: String,
    /// First line (1-based) of the snippet.
    pub start_line: u64,
    /// Last line (1-based, inclusive) of the snippet.
    pub end_line: u64,
}

/// The eight path verbs every tree implements; all file tools are synthesized from them.
///
/// Stream order is a contract: `list` and `glob` yield unique paths in lexicographic order;
/// `grep` yields by path then line number; `search` by score descending then path.
#[async_trait::async_trait]
pub trait FileSystem: Send + Sync + 'static {
    /// The children of directory `prefix`; a file or a missing path lists nothing.
    fn list(&self, prefix: &str) -> FsStream<DirEntry>;
    /// What is at `path`; missing is a value.
    async fn stat(&self, path: &str) -> Result<FileInfo, PathError>;
    /// Entries matching `pattern` relative to `dir` (the root when `None`).
    fn glob(&self, pattern: &str, dir: Option<&str>) -> FsStream<DirEntry>;
    /// The contents of file `path`.
    async fn read(&self, path: &str) -> Result<Content, PathError>;
    /// Lines `offset..offset + limit` (1-based) of file `path` and its line count, for `Read`.
    /// Host trees stream the file; the default pages what `read` returns.
    async fn read_page(&self, path: &str, offset: u64, limit: u64) -> Result<Page, PathError> {
        Ok(Page::of_content(self.read(path).await?, offset, limit))
    }
    /// Lines matching `query`.
    fn grep(&self, query: GrepQuery) -> FsStream<GrepResult>;
    /// Creates or overwrites file `path`.
    async fn write(&self, path: &str, contents: &str) -> Result<(), PathError>;
    /// Removes file `path`.
    async fn delete(&self, path: &str) -> Result<(), PathError>;
    /// Ranked full-text hits; a tree without an index yields nothing.
    fn search(&self, query: SearchQuery) -> FsStream<SearchResult>;
    /// A handle on the same files that keeps its own per-session state (which versions it has
    /// read, for compare-and-swap writes), or `None` when the tree keeps no such state and one
    /// handle can serve every session. Composers return a view over their children's views.
    fn session_view(&self) -> Option<std::sync::Arc<dyn FileSystem>> {
        None
    }
}
