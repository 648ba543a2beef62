//! Writing a file beneath a directory without following symbolic links: every directory on the
//! way is opened relative to the previous one with `O_NOFOLLOW`, so a link planted in a
//! workspace (by a tool, a seed or an earlier send) cannot redirect the write outside it.

use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags, fstat, ftruncate, mkdirat, openat};
use rustix::io::Errno;

use crate::SharedError;

/// Why [`write_beneath`] refused or failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BeneathError {
    /// The relative path is empty, absolute or climbs with `..`.
    #[error("not a path inside the directory: {0}")]
    Invalid(String),
    /// The path is over a shape limit (depth, length or name length); nothing was created.
    #[error("{}", limit.describe(path))]
    OverLimit {
        /// The relative path that was refused.
        path: String,
        /// Which limit, with the path's measure.
        limit: folio_path::PathLimit,
    },
    /// A segment on the way (or the file itself) is a symbolic link.
    #[error("refusing to write through the symbolic link at {0}")]
    Symlink(String),
    /// The file exists but is not a plain file with a single name (a device, FIFO, socket,
    /// directory, or a hard link to a file elsewhere).
    #[error("refusing to overwrite {0}: it is not a plain file of its own")]
    NotPlain(String),
    /// The operating system refused.
    #[error("{path}: {source}")]
    Io {
        /// The relative path being written.
        path: String,
        /// The operating system's error.
        #[source]
        source: SharedError<io::Error>,
    },
}

/// Creates or overwrites `rel` (a relative `/`-separated path) under `dir` with `contents`,
/// creating missing directories, never following a symbolic link below `dir`.
pub fn write_beneath(dir: &Path, rel: &str, contents: &[u8]) -> Result<(), BeneathError> {
    let segments: Vec<&str> = rel
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    if rel.starts_with('/') || segments.contains(&"..") {
        return Err(BeneathError::Invalid(rel.to_string()));
    }
    folio_path::check_path_limits(rel).map_err(|limit| BeneathError::OverLimit {
        path: rel.to_string(),
        limit,
    })?;
    let Some((name, parents)) = segments.split_last() else {
        return Err(BeneathError::Invalid(rel.to_string()));
    };
    let io_err = |err: Errno| BeneathError::Io {
        path: rel.to_string(),
        source: io::Error::from(err).into(),
    };
    let mut current = openat(
        rustix::fs::CWD,
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io_err)?;
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    for (depth, segment) in parents.iter().enumerate() {
        let shown = || parents[..=depth].join("/");
        current = match openat(&current, *segment, dir_flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => {
                match mkdirat(&current, *segment, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(err) => return Err(io_err(err)),
                }
                openat(&current, *segment, dir_flags, Mode::empty())
                    .map_err(|err| refusal(err, shown(), rel))?
            }
            Err(err) => return Err(refusal(err, shown(), rel)),
        };
    }
    // Non-blocking so a FIFO cannot hang the open; not truncated before it is checked.
    let file: OwnedFd = openat(
        &current,
        *name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(|err| match err {
        Errno::NXIO | Errno::ISDIR => BeneathError::NotPlain(rel.to_string()),
        err => refusal(err, rel.to_string(), rel),
    })?;
    let stat = fstat(&file).map_err(io_err)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile || stat.st_nlink > 1 {
        return Err(BeneathError::NotPlain(rel.to_string()));
    }
    ftruncate(&file, 0).map_err(io_err)?;
    std::fs::File::from(file)
        .write_all(contents)
        .map_err(|err| BeneathError::Io {
            path: rel.to_string(),
            source: err.into(),
        })
}

/// `ELOOP`/`ENOTDIR` from an `O_NOFOLLOW` open mean a link (or a file) sits where a directory
/// or the file was expected.
fn refusal(err: Errno, shown: String, rel: &str) -> BeneathError {
    match err {
        Errno::LOOP | Errno::NOTDIR | Errno::MLINK => BeneathError::Symlink(shown),
        err => BeneathError::Io {
            path: rel.to_string(),
            source: io::Error::from(err).into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_create_directories_and_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        write_beneath(dir.path(), "a/b/c.txt", b"one").unwrap();
        write_beneath(dir.path(), "./a//b/c.txt", b"two").unwrap();
        assert_eq!(std::fs::read(dir.path().join("a/b/c.txt")).unwrap(), b"two");
    }

    #[test]
    fn links_on_the_way_are_never_followed() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("victim"), "keep").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("victim"), dir.path().join("v")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("new"), dir.path().join("dangling"))
            .unwrap();
        std::fs::hard_link(outside.path().join("victim"), dir.path().join("hard")).unwrap();
        for rel in ["out/victim", "out/new", "v", "dangling", "out/x/y"] {
            let err = write_beneath(dir.path(), rel, b"owned").unwrap_err();
            assert!(matches!(err, BeneathError::Symlink(_)), "{rel}: {err}");
        }
        assert!(matches!(
            write_beneath(dir.path(), "hard", b"owned"),
            Err(BeneathError::NotPlain(_))
        ));
        for rel in ["../x", "/etc/x", "", "a/../../x"] {
            assert!(matches!(
                write_beneath(dir.path(), rel, b"x"),
                Err(BeneathError::Invalid(_))
            ));
        }
        assert_eq!(
            std::fs::read_to_string(outside.path().join("victim")).unwrap(),
            "keep"
        );
        assert!(!outside.path().join("new").exists());
    }
}
