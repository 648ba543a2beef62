//! The contract suite against the in-memory trees and the composers.

#[path = "contract/suite.rs"]
mod suite;

use std::sync::Arc;

use folio_fs::{FileSystem, TempFs, empty_fs, overlay_fs, temp_fs, union_fs, writable_overlay_fs};
use suite::{Files, Subject};

/// Splits a fixture by mount: each file goes to the deepest of `prefixes` that contains it, with
/// the prefix stripped.
fn split(files: &Files, prefixes: &[&str]) -> Vec<Files> {
    let mut parts = vec![Files::new(); prefixes.len()];
    for (path, contents) in files {
        let (index, prefix) = prefixes
            .iter()
            .enumerate()
            .filter(|(_, prefix)| folio_fs::is_within(path, prefix))
            .max_by_key(|(_, prefix)| prefix.len())
            .expect("a root mount covers everything");
        let child = folio_fs::strip_mount(path, prefix).expect("within");
        parts[index].push((child, contents.clone()));
    }
    parts
}

#[path = "contract/down.rs"]
mod down;
use down::Down;

/// Upper gets every other file; lower gets the rest plus stale copies of the upper's files, which
/// must never show through.
fn layered(files: &Files) -> (Files, Files) {
    let mut upper = Files::new();
    let mut lower = Files::new();
    for (index, (path, contents)) in files.iter().enumerate() {
        if index % 2 == 0 {
            upper.push((path.clone(), contents.clone()));
            lower.push((path.clone(), b"STALE needle Needle\n".to_vec()));
        } else {
            lower.push((path.clone(), contents.clone()));
        }
    }
    (upper, lower)
}

contract_suite!(temp, |files: Files| Subject::rooted(temp_fs(files)));

contract_suite!(union_at_root, |files: Files| {
    Subject::rooted(union_fs([("/", temp_fs(files))]))
});

contract_suite!(union_of_nested_mounts, |files: Files| {
    let prefixes = ["/", "/src", "/agent/skills", "/img"];
    let parts = split(&files, &prefixes);
    Subject::rooted(union_fs(
        prefixes
            .iter()
            .zip(parts)
            .map(|(prefix, part)| (*prefix, temp_fs(part))),
    ))
});

contract_suite!(union_under_a_prefix, |files: Files| {
    Subject::rooted(union_fs([
        ("/repo", temp_fs(files)),
        ("/repo-other", temp_fs([("/decoy.txt", "needle decoy\n")])),
        ("/elsewhere", empty_fs()),
    ]))
    .with_prefix("/repo")
});

contract_suite!(overlay, |files: Files| {
    let (upper, lower) = layered(&files);
    Subject::rooted(overlay_fs([temp_fs(upper), temp_fs(lower)])).read_only()
});

contract_suite!(overlay_with_a_downed_layer, |files: Files| {
    let (upper, lower) = layered(&files);
    let down: Arc<dyn FileSystem> = Arc::new(Down);
    Subject::rooted(overlay_fs([
        temp_fs(upper),
        down,
        empty_fs(),
        temp_fs(lower),
    ]))
    .read_only()
});

contract_suite!(writable_overlay, |files: Files| {
    let (upper, lower) = layered(&files);
    let tree: Arc<dyn FileSystem> = writable_overlay_fs(temp_fs(upper), [temp_fs(lower)]);
    Subject::rooted(tree)
});

contract_suite!(writable_overlay_over_everything, |files: Files| {
    let tree: Arc<dyn FileSystem> =
        writable_overlay_fs(Arc::new(TempFs::new()), [temp_fs(files), empty_fs()]);
    Subject::rooted(tree)
});
