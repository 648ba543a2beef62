//! How much a session workspace holds, and the quota a write into it is held to.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The most a session workspace may hold (`[limits] workspace_files` and `workspace_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkspaceQuota {
    /// Most regular files.
    pub files: u64,
    /// Most bytes in those files.
    pub bytes: u64,
}

/// What a directory holds: its regular files and their bytes (symbolic links are not
/// followed, so the `memory/` link of a workspace does not count).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Regular files.
    pub files: u64,
    /// Bytes in them.
    pub bytes: u64,
}

/// A write the quota refuses: what the workspace would hold, and the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QuotaExceeded {
    /// Too many files.
    #[error(
        "the session workspace would hold {would_hold} files; at most {limit} are allowed ([limits] workspace_files): delete files first"
    )]
    Files {
        /// The file count after the write.
        would_hold: u64,
        /// The limit.
        limit: u64,
    },
    /// Too many bytes.
    #[error(
        "the session workspace would hold {would_hold} bytes; at most {limit} are allowed ([limits] workspace_bytes): delete files first"
    )]
    Bytes {
        /// The byte count after the write.
        would_hold: u64,
        /// The limit.
        limit: u64,
    },
}

impl WorkspaceQuota {
    /// Whether a workspace holding `usage` (after a write) is within the quota.
    pub fn admit(&self, usage: Usage) -> Result<(), QuotaExceeded> {
        if usage.files > self.files {
            return Err(QuotaExceeded::Files {
                would_hold: usage.files,
                limit: self.files,
            });
        }
        if usage.bytes > self.bytes {
            return Err(QuotaExceeded::Bytes {
                would_hold: usage.bytes,
                limit: self.bytes,
            });
        }
        Ok(())
    }
}

impl Usage {
    /// `self` with the file at `host` (when it is a regular file) replaced by `new_bytes`.
    pub fn replacing(self, host: &Path, new_bytes: u64) -> Usage {
        let (files, bytes) = match fs::symlink_metadata(host) {
            Ok(meta) if meta.is_file() => (1, meta.len()),
            _ => (0, 0),
        };
        Usage {
            files: (self.files - files.min(self.files)) + 1,
            bytes: self.bytes.saturating_sub(bytes).saturating_add(new_bytes),
        }
    }
}

/// What `dir` holds, walked without recursion (a deep tree cannot exhaust the stack) and
/// without following symbolic links; entries that vanish during the walk are skipped.
pub fn usage_of(dir: &Path) -> io::Result<Usage> {
    let mut usage = Usage::default();
    let mut pending: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let entries = match fs::read_dir(&next) {
            Ok(entries) => entries,
            Err(err) if next != dir && err.kind() == io::ErrorKind::NotFound => continue,
            Err(err) => return Err(err),
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                usage.files += 1;
                usage.bytes += entry.metadata().map_or(0, |m| m.len());
            }
        }
    }
    Ok(usage)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_files_not_links_and_admit_names_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("a/b")).unwrap();
        fs::write(dir.path().join("a/b/x"), "12345").unwrap();
        fs::write(dir.path().join("y"), "12").unwrap();
        std::os::unix::fs::symlink(dir.path().join("y"), dir.path().join("link")).unwrap();
        let usage = usage_of(dir.path()).unwrap();
        assert_eq!(usage, Usage { files: 2, bytes: 7 });
        assert_eq!(
            usage.replacing(&dir.path().join("y"), 10),
            Usage {
                files: 2,
                bytes: 15
            }
        );
        let quota = WorkspaceQuota {
            files: 2,
            bytes: 100,
        };
        assert_eq!(quota.admit(usage), Ok(()));
        let err = quota
            .admit(usage.replacing(&dir.path().join("new"), 1))
            .unwrap_err();
        assert_eq!(
            err,
            QuotaExceeded::Files {
                would_hold: 3,
                limit: 2
            }
        );
        assert!(err.to_string().contains("workspace_files"), "{err}");
    }
}
