//! Property tests: path normalization, and union/overlay walk verbs against naive reference models
//! computed with `BTreeMap`/`BTreeSet` over random small trees.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use folio_fs::{
    DirEntry, EntryKind, FileSystem, GrepQuery, PathFilter, is_within, join_mount,
    normalize_fs_path, overlay_fs, strip_mount, temp_fs, union_fs,
};
use futures::TryStreamExt;
use futures::executor::block_on;
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// normalize_fs_path

fn path_like() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ab./-]{0,24}",
        prop::collection::vec(prop_oneof!["a", "b-c", ".", "..", "", "x.y"], 0..8)
            .prop_map(|segments| segments.join("/")),
        any::<String>(),
    ]
}

proptest! {
    #[test]
    fn normalize_is_idempotent_and_canonical(path in path_like()) {
        let once = normalize_fs_path(&path);
        prop_assert_eq!(normalize_fs_path(&once), once.clone());
        prop_assert!(once.starts_with('/'));
        prop_assert!(!once.contains("//"), "{once:?}");
        prop_assert!(once == "/" || !once.ends_with('/'), "{once:?}");
        prop_assert!(
            once.split('/').skip(1).all(|s| s != "." && s != ".."),
            "{once:?}"
        );
        // Never above the root: the result is within `/` and has no more segments than the input.
        let segments = once.split('/').filter(|s| !s.is_empty()).count();
        prop_assert!(segments <= path.split('/').count());
    }

    #[test]
    fn normalize_ignores_a_leading_slash_and_dot_segments(path in path_like()) {
        prop_assert_eq!(normalize_fs_path(&format!("/{path}")), normalize_fs_path(&path));
        prop_assert_eq!(normalize_fs_path(&format!("./{path}")), normalize_fs_path(&path));
        prop_assert_eq!(normalize_fs_path(&format!("{path}/")), normalize_fs_path(&path));
    }
}

// ---------------------------------------------------------------------------------------------
// Random trees

/// A path segment from a small alphabet where `-` and `.` sort before `/`.
fn segment() -> impl Strategy<Value = String> {
    "[ab.-]{1,3}".prop_filter("not a dot segment", |s| s != "." && s != "..")
}

fn file_path() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 1..4).prop_map(|segments| format!("/{}", segments.join("/")))
}

/// A consistent tree: no path is both a file and a directory.
fn tree() -> impl Strategy<Value = BTreeSet<String>> {
    prop::collection::vec(file_path(), 0..10).prop_map(|paths| {
        let mut kept = BTreeSet::new();
        for path in paths {
            let conflicts = kept
                .iter()
                .any(|other: &String| is_within(&path, other) || is_within(other, &path));
            if !conflicts {
                kept.insert(path);
            }
        }
        kept
    })
}

fn mount_prefix() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 0..3).prop_map(|segments| format!("/{}", segments.join("/")))
}

/// Every file holds its path as seen from the composed tree (under `prefix`), so grep hits are
/// predictable.
fn build(prefix: &str, files: &BTreeSet<String>) -> Arc<dyn FileSystem> {
    temp_fs(
        files
            .iter()
            .map(|path| (path.clone(), format!("{}\n", join_mount(prefix, path)))),
    )
}

fn query_dir() -> impl Strategy<Value = String> {
    prop_oneof![Just("/".to_string()), mount_prefix(), file_path()]
}

fn glob_pattern() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "*", "**", "**/*", "a*", "*/*", "a/*", "*.*", "**/a", "a-*/**", "?", "*/a*", "b/**/a",
        "**/-*", "[ab]*", "{a,b}/*", "a/b/*", "*/*/*", "**/b*/*",
    ])
}

/// The direct children of `dir` among `files` (file paths), directories winning over files.
fn children_of(files: &BTreeSet<String>, dir: &str) -> BTreeMap<String, EntryKind> {
    let base = if dir == "/" {
        "/".to_string()
    } else {
        format!("{dir}/")
    };
    let mut out = BTreeMap::new();
    for path in files {
        if let Some(rest) = path.strip_prefix(&base) {
            match rest.split_once('/') {
                Some((first, _)) => {
                    out.insert(format!("{base}{first}"), EntryKind::Directory);
                }
                None => {
                    out.entry(path.clone()).or_insert(EntryKind::File);
                }
            }
        }
    }
    out
}

fn entries(map: BTreeMap<String, EntryKind>) -> Vec<DirEntry> {
    map.into_iter()
        .map(|(path, kind)| DirEntry { path, kind })
        .collect()
}

/// Files strictly within `dir` matching `pattern` relative to it.
fn globbed(files: &BTreeSet<String>, pattern: &str, dir: &str) -> Vec<String> {
    let filter = PathFilter::for_glob(pattern, dir).expect("valid pattern");
    files
        .iter()
        .filter(|path| *path != dir && is_within(path, dir))
        .filter(|path| {
            let relative = &path[if dir == "/" { 1 } else { dir.len() + 1 }..];
            filter.matches(relative)
        })
        .cloned()
        .collect()
}

fn assert_sorted_unique(paths: &[String]) -> Result<(), TestCaseError> {
    for pair in paths.windows(2) {
        prop_assert!(pair[0] < pair[1], "not sorted and unique: {paths:?}");
    }
    Ok(())
}

async fn run_list(fs: &Arc<dyn FileSystem>, dir: &str) -> Vec<DirEntry> {
    fs.list(dir).try_collect().await.expect("list")
}

async fn run_glob(fs: &Arc<dyn FileSystem>, pattern: &str, dir: &str) -> Vec<String> {
    fs.glob(pattern, Some(dir))
        .map_ok(|entry| entry.path)
        .try_collect()
        .await
        .expect("glob")
}

async fn run_grep(fs: &Arc<dyn FileSystem>, dir: &str, max: Option<usize>) -> Vec<String> {
    let query = GrepQuery {
        path: Some(dir.to_string()),
        max_results: max,
        ..GrepQuery::new("a")
    };
    fs.grep(query)
        .map_ok(|hit| {
            assert_eq!(hit.line_number, 1);
            assert_eq!(hit.line, hit.path, "a hit carries the file's own contents");
            hit.path
        })
        .try_collect()
        .await
        .expect("grep")
}

// ---------------------------------------------------------------------------------------------
// union_fs

/// The union's visible files: each mounted file at its union path, when its own mount is the one
/// that serves that path and no mount lies below it.
fn union_model(mounts: &[(String, BTreeSet<String>)]) -> (BTreeSet<String>, Vec<String>) {
    let mut seen = BTreeSet::new();
    let mounts: Vec<&(String, BTreeSet<String>)> = mounts
        .iter()
        .filter(|(prefix, _)| seen.insert(prefix.clone()))
        .collect();
    let prefixes: Vec<String> = mounts.iter().map(|(prefix, _)| prefix.clone()).collect();
    let covering = |path: &str| {
        prefixes
            .iter()
            .filter(|prefix| is_within(path, prefix))
            .max_by_key(|prefix| prefix.len())
            .cloned()
    };
    let mut visible = BTreeSet::new();
    for (prefix, files) in &mounts {
        for file in files.iter() {
            let path = join_mount(prefix, file);
            let served_here = covering(&path).as_deref() == Some(prefix.as_str());
            let holds_mount = prefixes.iter().any(|m| is_within(m, &path));
            if served_here && !holds_mount {
                visible.insert(path);
            }
        }
    }
    (visible, prefixes)
}

fn union_list_model(visible: &BTreeSet<String>, prefixes: &[String], dir: &str) -> Vec<DirEntry> {
    let mut map = children_of(visible, dir);
    let mount_files: BTreeSet<String> = prefixes
        .iter()
        .filter(|m| m.as_str() != dir && is_within(m, dir))
        .map(|m| format!("{m}/x"))
        .collect();
    for (path, _) in children_of(&mount_files, dir) {
        map.insert(path, EntryKind::Directory);
    }
    entries(map)
}

fn mounts() -> impl Strategy<Value = Vec<(String, BTreeSet<String>)>> {
    prop::collection::vec((mount_prefix(), tree()), 1..5)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn union_walks_match_the_model(
        mounts in mounts(),
        dirs in prop::collection::vec(query_dir(), 3),
        pattern in glob_pattern(),
        max in prop::option::of(0usize..4),
    ) {
        let fs = union_fs(mounts.iter().map(|(prefix, files)| (prefix.clone(), build(prefix, files))));
        let (visible, prefixes) = union_model(&mounts);
        block_on(async {
            for dir in &dirs {
                let listed = run_list(&fs, dir).await;
                let paths: Vec<String> = listed.iter().map(|e| e.path.clone()).collect();
                assert_sorted_unique(&paths)?;
                prop_assert_eq!(&listed, &union_list_model(&visible, &prefixes, dir), "list {}", dir);

                let globbed_paths = run_glob(&fs, pattern, dir).await;
                assert_sorted_unique(&globbed_paths)?;
                prop_assert_eq!(&globbed_paths, &globbed(&visible, pattern, dir), "glob {} in {}", pattern, dir);

                let mut expected: Vec<String> = visible
                    .iter()
                    .filter(|path| is_within(path, dir) && path.contains('a'))
                    .cloned()
                    .collect();
                if let Some(max) = max {
                    expected.truncate(max);
                }
                prop_assert_eq!(run_grep(&fs, dir, max).await, expected, "grep in {}", dir);
            }
            // Every visible file reads back as itself; stat agrees with the listing kinds.
            for path in &visible {
                let info = fs.stat(path).await.expect("stat");
                prop_assert_eq!(info.kind, folio_fs::FileKind::File, "{}", path);
            }
            Ok(())
        })?;
    }
}

// ---------------------------------------------------------------------------------------------
// overlay_fs

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn overlay_walks_match_the_model(
        layers in prop::collection::vec(tree(), 1..4),
        dirs in prop::collection::vec(query_dir(), 3),
        pattern in glob_pattern(),
        max in prop::option::of(0usize..4),
    ) {
        let fs = overlay_fs(layers.iter().map(|files| build("/", files)));
        block_on(async {
            for dir in &dirs {
                // list: each layer's children, the first layer to name a path wins.
                let mut model = BTreeMap::new();
                for files in &layers {
                    for (path, kind) in children_of(files, dir) {
                        model.entry(path).or_insert(kind);
                    }
                }
                let listed = run_list(&fs, dir).await;
                let paths: Vec<String> = listed.iter().map(|e| e.path.clone()).collect();
                assert_sorted_unique(&paths)?;
                prop_assert_eq!(&listed, &entries(model), "list {}", dir);

                // glob: files only, de-duplicated across layers.
                let all: BTreeSet<String> = layers.iter().flatten().cloned().collect();
                let globbed_paths = run_glob(&fs, pattern, dir).await;
                assert_sorted_unique(&globbed_paths)?;
                prop_assert_eq!(&globbed_paths, &globbed(&all, pattern, dir), "glob {} in {}", pattern, dir);

                // grep: a lower file's hits count only when no earlier layer has that path.
                let mut visible = BTreeSet::new();
                for (index, files) in layers.iter().enumerate() {
                    for path in files {
                        let shadowed = layers[..index].iter().any(|earlier| {
                            earlier.iter().any(|other| is_within(other, path))
                        });
                        if !shadowed {
                            visible.insert(path.clone());
                        }
                    }
                }
                let mut expected: Vec<String> = visible
                    .iter()
                    .filter(|path| is_within(path, dir) && path.contains('a'))
                    .cloned()
                    .collect();
                if let Some(max) = max {
                    expected.truncate(max);
                }
                prop_assert_eq!(run_grep(&fs, dir, max).await, expected, "grep in {}", dir);
            }
            Ok(())
        })?;
    }
}

#[test]
fn strip_and_join_mount_round_trip() {
    for (prefix, path) in [
        ("/", "/a"),
        ("/a", "/a/b"),
        ("/a", "/a"),
        ("/a/b", "/a/b/c/d"),
    ] {
        let child = strip_mount(path, prefix).unwrap();
        assert_eq!(join_mount(prefix, &child), path);
    }
}
