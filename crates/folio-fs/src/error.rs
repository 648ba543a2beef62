//! The `PathError` family: every FileSystem failure, each rendering one contract message.

/// A FileSystem failure about one absolute posix path; `Display` is the contract message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Read or delete of a missing file.
    #[error("not found: {path}")]
    FileNotFound {
        /// The path that was missing.
        path: String,
    },
    /// A write or delete aimed at a read-only tree or mount.
    #[error("read-only mount: {path}")]
    ReadOnlyMount {
        /// The path that was refused.
        path: String,
    },
    /// A write that failed; `message` carries the OS text for host I/O when there is one.
    #[error("{}", write_failed_message(path, message.as_deref()))]
    WriteFailed {
        /// The path that could not be written.
        path: String,
        /// The operating system's message, when the failure came from host I/O.
        message: Option<String>,
    },
    /// A union read, write or delete where no mount covers the path.
    #[error("no mount for path: {path}")]
    NoMount {
        /// The path no mount covers.
        path: String,
    },
    /// A grep pattern that is not a valid regular expression.
    #[error("invalid grep pattern: {pattern}")]
    InvalidGrepPattern {
        /// The scope the grep was asked for.
        path: String,
        /// The pattern exactly as given.
        pattern: String,
    },
    /// A delete on a tree that cannot delete.
    #[error("delete not supported: {path}")]
    DeleteNotSupported {
        /// The path whose delete was refused.
        path: String,
    },
    /// A StrReplace uniqueness failure; `message` is one of the fixed [`EditError`] texts.
    #[error("{message}")]
    Edit {
        /// The file being edited.
        path: String,
        /// Which rule failed.
        message: EditError,
    },
    /// A read of something that is not a regular file (a device, FIFO or socket).
    #[error("not a regular file: {path} (devices, FIFOs and sockets are not read)")]
    NotRegular {
        /// The path that was refused.
        path: String,
    },
    /// A read of a file over the byte cap.
    #[error("too large to read: {path} is over {limit} bytes; use Grep, or Shell with head/sed")]
    TooLarge {
        /// The path that was refused.
        path: String,
        /// The cap in bytes.
        limit: u64,
    },
    /// A path (absolute, or with `..`) that leaves a confined session workspace.
    #[error("outside the session workspace: {path} (paths must stay in the workspace)")]
    OutsideWorkspace {
        /// The path that was refused.
        path: String,
    },
    /// A write to a path over a shape limit (depth, length or name length; see
    /// [`folio_path::check_path_limits`]); nothing is written.
    #[error("{}", limit.describe(path))]
    OverLimit {
        /// The path that was refused.
        path: String,
        /// Which limit, with the path's measure.
        limit: folio_path::PathLimit,
    },
    /// A write the session workspace's quota refuses; nothing is written.
    #[error("workspace full: cannot write {path}: {exceeded}")]
    OverQuota {
        /// The path that was refused.
        path: String,
        /// What the workspace would hold, and the limit.
        exceeded: crate::QuotaExceeded,
    },
    /// Any other failure (host I/O, a remote API); `message` is shown as is.
    #[error("{message}")]
    Other {
        /// The path the failure is about.
        path: String,
        /// A one-line description for a person.
        message: String,
    },
}

fn write_failed_message(path: &str, message: Option<&str>) -> String {
    match message {
        Some(os) => format!("write failed: {path}: {os}"),
        None => format!("write failed: {path}"),
    }
}

/// The four StrReplace failures, each with its exact contract message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// `oldText` was empty.
    #[error("oldText is empty")]
    EmptyOldText,
    /// `oldText` equals `newText`.
    #[error("oldText and newText are exactly the same")]
    NoChange,
    /// `oldText` does not occur in the file.
    #[error("The string to replace was not found in the file")]
    NotFound,
    /// `oldText` occurs more than once and `replaceAll` was not set.
    #[error(
        "The string to replace was found multiple times in the file. Use replace_all to replace all occurrences, or include more context to only edit one occurrence."
    )]
    MultipleMatches,
}

impl PathError {
    /// The absolute posix path this error is about.
    pub fn path(&self) -> &str {
        match self {
            PathError::FileNotFound { path }
            | PathError::ReadOnlyMount { path }
            | PathError::WriteFailed { path, .. }
            | PathError::NoMount { path }
            | PathError::InvalidGrepPattern { path, .. }
            | PathError::DeleteNotSupported { path }
            | PathError::Edit { path, .. }
            | PathError::NotRegular { path }
            | PathError::TooLarge { path, .. }
            | PathError::OutsideWorkspace { path }
            | PathError::OverLimit { path, .. }
            | PathError::OverQuota { path, .. }
            | PathError::Other { path, .. } => path,
        }
    }

    /// The same error about `new_path`; an `Other` message has the old path rewritten too.
    pub fn with_path(self, new_path: impl Into<String>) -> Self {
        let new_path = new_path.into();
        match self {
            PathError::FileNotFound { .. } => PathError::FileNotFound { path: new_path },
            PathError::ReadOnlyMount { .. } => PathError::ReadOnlyMount { path: new_path },
            PathError::WriteFailed { message, .. } => PathError::WriteFailed {
                path: new_path,
                message,
            },
            PathError::NoMount { .. } => PathError::NoMount { path: new_path },
            PathError::InvalidGrepPattern { pattern, .. } => PathError::InvalidGrepPattern {
                path: new_path,
                pattern,
            },
            PathError::DeleteNotSupported { .. } => {
                PathError::DeleteNotSupported { path: new_path }
            }
            PathError::Edit { message, .. } => PathError::Edit {
                path: new_path,
                message,
            },
            PathError::NotRegular { .. } => PathError::NotRegular { path: new_path },
            PathError::TooLarge { limit, .. } => PathError::TooLarge {
                path: new_path,
                limit,
            },
            PathError::OutsideWorkspace { .. } => PathError::OutsideWorkspace { path: new_path },
            PathError::OverLimit { limit, .. } => PathError::OverLimit {
                path: new_path,
                limit,
            },
            PathError::OverQuota { exceeded, .. } => PathError::OverQuota {
                path: new_path,
                exceeded,
            },
            PathError::Other { path, message } => {
                // Best-effort rewrite of a foreign message that quotes the child path.
                let message = if path.is_empty() || path == "/" {
                    message
                } else {
                    message.replace(&path, &new_path)
                };
                PathError::Other {
                    path: new_path,
                    message,
                }
            }
        }
    }
}
