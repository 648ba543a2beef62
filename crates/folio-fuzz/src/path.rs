//! Paths: normalization, mount prefixes and shape limits (`folio-path`), with their
//! invariants.

use folio_path::{
    basename, check_path_limits, is_within, join_mount, normalize_fs_path, parent, strip_mount,
};

/// A path and a mount prefix, separated by the first NUL byte (the prefix is `/` without one).
pub fn path(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (path, prefix) = text.split_once('\0').unwrap_or((&text, "/"));
    let normalized = normalize_fs_path(path);
    assert!(
        normalized.starts_with('/'),
        "{normalized:?} is not absolute"
    );
    assert_eq!(normalize_fs_path(&normalized), normalized, "not idempotent");
    if let Err(limit) = check_path_limits(path) {
        let _ = limit.describe(path);
        assert_eq!(check_path_limits(&normalized), Err(limit));
    }
    let prefix = normalize_fs_path(prefix);
    match strip_mount(&normalized, &prefix) {
        Some(inner) => {
            assert!(is_within(&normalized, &prefix));
            assert_eq!(join_mount(&prefix, &inner), normalized, "mount round trip");
        }
        None => assert!(!is_within(&normalized, &prefix)),
    }
    let up = parent(&normalized);
    let name = basename(&normalized);
    if normalized != "/" {
        assert_eq!(
            join_mount(up, &format!("/{name}")),
            normalized,
            "parent + basename"
        );
        assert!(is_within(&normalized, up));
    }
}
