//! Bounds every tree and engine of the crate shares (a leaf: it imports nothing of the crate).

/// The most bytes a host `read` returns; a larger file is refused (`TooLarge`) without being
/// loaded, so one `Read` cannot exhaust memory.
pub const READ_BYTE_CAP: u64 = 64 * 1024 * 1024;
