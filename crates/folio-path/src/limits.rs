//! The shape limits of a path a tree writes: total bytes, depth and segment length.
//!
//! They are Folio's choice, not the OS's: 4,096 bytes is Linux's `PATH_MAX` and 255 bytes its
//! `NAME_MAX`, so a path that passes here is one every common filesystem can hold; 64 segments
//! is deeper than any real project tree yet shallow enough that recursive walkers (Python's
//! `shutil.rmtree`, `os.walk`, backup tools) handle it without exhausting their stacks.

use std::fmt;

/// The most bytes a path may have (after normalization).
pub const MAX_PATH_BYTES: usize = 4096;

/// The most segments (folders plus the file) a path may have.
pub const MAX_PATH_SEGMENTS: usize = 64;

/// The most bytes one segment (a file or folder name) may have.
pub const MAX_SEGMENT_BYTES: usize = 255;

/// Which shape limit a path is over, with its measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathLimit {
    /// Longer than [`MAX_PATH_BYTES`].
    TooLong {
        /// The path's length in bytes.
        bytes: usize,
    },
    /// More segments than [`MAX_PATH_SEGMENTS`].
    TooDeep {
        /// The path's number of segments.
        segments: usize,
    },
    /// A segment longer than [`MAX_SEGMENT_BYTES`].
    SegmentTooLong {
        /// The longest segment's length in bytes.
        bytes: usize,
    },
}

impl PathLimit {
    /// The one-line message about `path` (shown abbreviated) that names the limit.
    pub fn describe(&self, path: &str) -> String {
        let shown = abbreviate(path);
        match self {
            PathLimit::TooLong { bytes } => format!(
                "path too long: {shown} is {bytes} bytes; a path may have at most {MAX_PATH_BYTES} bytes"
            ),
            PathLimit::TooDeep { segments } => format!(
                "path too deep: {shown} has {segments} segments; a path may have at most {MAX_PATH_SEGMENTS} (folders and file)"
            ),
            PathLimit::SegmentTooLong { bytes } => format!(
                "path segment too long: {shown} has a name of {bytes} bytes; a file or folder name may have at most {MAX_SEGMENT_BYTES} bytes"
            ),
        }
    }
}

impl fmt::Display for PathLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathLimit::TooLong { bytes } => {
                write!(
                    f,
                    "{bytes} bytes, over the {MAX_PATH_BYTES}-byte path limit"
                )
            }
            PathLimit::TooDeep { segments } => write!(
                f,
                "{segments} segments, over the {MAX_PATH_SEGMENTS}-segment path limit"
            ),
            PathLimit::SegmentTooLong { bytes } => write!(
                f,
                "a name of {bytes} bytes, over the {MAX_SEGMENT_BYTES}-byte name limit"
            ),
        }
    }
}

impl std::error::Error for PathLimit {}

/// Checks `path` against the shape limits, measured on its normalized form (a relative path is
/// taken relative to the root, so `a/b` and `/a/b` measure the same); the first limit it is over,
/// checked in the order depth, segment, length.
pub fn check_path_limits(path: &str) -> Result<(), PathLimit> {
    let normalized = crate::normalize_fs_path(path);
    let segments = normalized.split('/').filter(|s| !s.is_empty());
    let depth = segments.clone().count();
    if depth > MAX_PATH_SEGMENTS {
        return Err(PathLimit::TooDeep { segments: depth });
    }
    if let Some(bytes) = segments
        .map(str::len)
        .max()
        .filter(|&b| b > MAX_SEGMENT_BYTES)
    {
        return Err(PathLimit::SegmentTooLong { bytes });
    }
    if normalized.len() > MAX_PATH_BYTES {
        return Err(PathLimit::TooLong {
            bytes: normalized.len(),
        });
    }
    Ok(())
}

/// `path` shortened for a message: its first 60 and last 40 characters around `…` when longer
/// than 120 characters, else as is.
pub fn abbreviate(path: &str) -> String {
    let chars = path.chars().count();
    if chars <= 120 {
        return path.to_string();
    }
    let head: String = path.chars().take(60).collect();
    let tail: String = path.chars().skip(chars - 40).collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_inclusive() {
        assert_eq!(check_path_limits(&"/d".repeat(64)), Ok(()));
        assert_eq!(
            check_path_limits(&"d/".repeat(65)),
            Err(PathLimit::TooDeep { segments: 65 })
        );
        assert_eq!(check_path_limits(&format!("/{}", "n".repeat(255))), Ok(()));
        assert_eq!(
            check_path_limits(&format!("/{}", "n".repeat(256))),
            Err(PathLimit::SegmentTooLong { bytes: 256 })
        );
        let long = format!("/{}", "n".repeat(200)).repeat(21);
        assert_eq!(
            check_path_limits(&long),
            Err(PathLimit::TooLong { bytes: long.len() })
        );
        assert_eq!(check_path_limits("/a/../../b/./c"), Ok(()));
    }

    #[test]
    fn messages_name_the_limit_and_stay_short() {
        let deep = "/d".repeat(1500);
        let message = check_path_limits(&deep).unwrap_err().describe(&deep);
        assert!(message.starts_with("path too deep: /d/d/"), "{message}");
        assert!(message.contains("1500 segments"), "{message}");
        assert!(message.contains("at most 64"), "{message}");
        assert!(message.len() < 300, "{message}");
    }
}
