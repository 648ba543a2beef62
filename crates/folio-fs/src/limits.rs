//! Bounds every tree and engine of the crate shares.

/// The most bytes a host `read` returns; a larger file is refused (`TooLarge`) without being
/// loaded, so one `Read` cannot exhaust memory.
pub const READ_BYTE_CAP: u64 = 64 * 1024 * 1024;

/// Refuses a write to `path` (as the tree addresses it) over a path shape limit, before
/// anything is created; see [`folio_path::check_path_limits`].
pub(crate) fn check_write_path(path: &str) -> Result<(), crate::PathError> {
    folio_path::check_path_limits(path).map_err(|limit| crate::PathError::OverLimit {
        path: path.to_string(),
        limit,
    })
}
