//! Posix path rules for authored trees: normalization, segment-wise prefix tests and the
//! shape limits every write is held to.
//!
//! ```
//! use folio_path::{PathLimit, check_path_limits};
//! assert_eq!(check_path_limits("/src/main.rs"), Ok(()));
//! let deep = "/d".repeat(65);
//! assert_eq!(check_path_limits(&deep), Err(PathLimit::TooDeep { segments: 65 }));
//! ```

mod limits;

pub use limits::{
    MAX_PATH_BYTES, MAX_PATH_SEGMENTS, MAX_SEGMENT_BYTES, PathLimit, abbreviate, check_path_limits,
};

/// Normalizes `path` to an absolute posix path: resolves `.` and `..` (never above `/`),
/// collapses repeated slashes and drops any trailing slash except on `/` itself.
///
/// `""` and `"/"` both mean the root. A relative path is taken relative to `/`.
///
/// ```
/// use folio_path::normalize_fs_path;
/// assert_eq!(normalize_fs_path("a/./b/../c/"), "/a/c");
/// assert_eq!(normalize_fs_path("/../../etc"), "/etc");
/// ```
pub fn normalize_fs_path(path: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    if segments.is_empty() {
        return "/".to_string();
    }
    let mut out = String::with_capacity(path.len() + 1);
    for segment in segments {
        out.push('/');
        out.push_str(segment);
    }
    out
}

/// Whether normalized `path` equals `prefix` or lies under it, comparing whole segments:
/// `/agent` contains `/agent/skills` but not `/agent-tools`.
pub fn is_within(path: &str, prefix: &str) -> bool {
    if prefix == "/" {
        return path.starts_with('/');
    }
    match path.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with('/'),
        None => false,
    }
}

/// `path` relative to the normalized `prefix` it lies within, as an absolute path (`/` for equal).
pub fn strip_mount(path: &str, prefix: &str) -> Option<String> {
    if !is_within(path, prefix) {
        return None;
    }
    if prefix == "/" {
        return Some(path.to_string());
    }
    let rest = &path[prefix.len()..];
    Some(if rest.is_empty() {
        "/".to_string()
    } else {
        rest.to_string()
    })
}

/// Joins a mount prefix and a path yielded by the mounted tree (both absolute).
pub fn join_mount(prefix: &str, child_path: &str) -> String {
    match (prefix, child_path) {
        ("/", child) => child.to_string(),
        (prefix, "/") => prefix.to_string(),
        (prefix, child) => format!("{prefix}{child}"),
    }
}

/// The parent of a normalized absolute path (`/` for `/` and for top-level entries).
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The last segment of a normalized path (empty for `/`).
pub fn basename(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes() {
        assert_eq!(normalize_fs_path(""), "/");
        assert_eq!(normalize_fs_path("/"), "/");
        assert_eq!(normalize_fs_path("//a//b/"), "/a/b");
        assert_eq!(normalize_fs_path("a/../../b"), "/b");
        assert_eq!(normalize_fs_path("./memory/x"), "/memory/x");
        assert_eq!(normalize_fs_path("foo/../memory/x"), "/memory/x");
    }

    #[test]
    fn prefixes_are_segment_wise() {
        assert!(is_within("/agent/skills", "/agent"));
        assert!(is_within("/agent", "/agent"));
        assert!(!is_within("/agent-tools", "/agent"));
        assert!(is_within("/anything", "/"));
        assert_eq!(
            strip_mount("/agent/skills", "/agent").as_deref(),
            Some("/skills")
        );
        assert_eq!(strip_mount("/agent", "/agent").as_deref(), Some("/"));
        assert_eq!(strip_mount("/agent-tools", "/agent"), None);
        assert_eq!(join_mount("/agent", "/"), "/agent");
        assert_eq!(join_mount("/", "/x"), "/x");
        assert_eq!(join_mount("/a", "/x"), "/a/x");
        assert_eq!(parent("/a/b"), "/a");
        assert_eq!(parent("/a"), "/");
        assert_eq!(basename("/a/b.rs"), "b.rs");
    }
}
