//! A `host_dir` mount cannot be escaped: not by `..`, not by an absolute path, not by a symbolic
//! link (to a file or a directory) pointing outside; read-only mounts refuse writes and deletes.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;

use folio_fs::{
    Content, DirEntry, FileKind, FileSystem, GrepQuery, GrepResult, PathError, host_dir,
};
use futures::TryStreamExt;

/// A sandbox: `outside/` holds secrets, `mount/` is the mounted directory with links out.
struct Sandbox {
    _dir: tempfile::TempDir,
    outside: std::path::PathBuf,
    mount: std::path::PathBuf,
}

fn sandbox() -> Sandbox {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    let mount = dir.path().join("mount");
    fs::create_dir_all(outside.join("sub")).unwrap();
    fs::create_dir_all(mount.join("inner")).unwrap();
    fs::write(outside.join("secret.txt"), "SECRET password\n").unwrap();
    fs::write(outside.join("sub/deep.txt"), "SECRET deep\n").unwrap();
    fs::write(mount.join("ok.txt"), "public words\n").unwrap();
    fs::write(mount.join("inner/note.txt"), "public inner\n").unwrap();
    symlink(outside.join("secret.txt"), mount.join("file-link")).unwrap();
    symlink(&outside, mount.join("dir-link")).unwrap();
    symlink("../../outside/secret.txt", mount.join("inner/rel-link")).unwrap();
    symlink(outside.join("missing.txt"), mount.join("dangling")).unwrap();
    symlink(mount.join("ok.txt"), mount.join("inside-link")).unwrap();
    Sandbox {
        _dir: dir,
        outside,
        mount,
    }
}

fn escaping_paths(s: &Sandbox) -> Vec<String> {
    let abs = s.outside.join("secret.txt").to_string_lossy().into_owned();
    vec![
        "../outside/secret.txt".into(),
        "/../outside/secret.txt".into(),
        "/inner/../../outside/secret.txt".into(),
        abs,
        "/file-link".into(),
        "/dir-link/secret.txt".into(),
        "/dir-link/sub/deep.txt".into(),
        "/inner/rel-link".into(),
        "/dangling".into(),
    ]
}

async fn all<T>(stream: folio_fs::FsStream<T>) -> Result<Vec<T>, PathError> {
    stream.try_collect().await
}

fn mount(s: &Sandbox, read_only: bool) -> Arc<dyn FileSystem> {
    host_dir(&s.mount, read_only).unwrap()
}

#[tokio::test]
async fn reads_and_stats_cannot_escape() {
    let s = sandbox();
    let fs = mount(&s, false);
    for path in escaping_paths(&s) {
        let err = fs.read(&path).await.unwrap_err();
        assert!(
            matches!(err, PathError::FileNotFound { .. }),
            "read {path}: {err}"
        );
        assert!(err.to_string().starts_with("not found: /"), "{err}");
        assert!(!err.to_string().contains("SECRET"));
        let info = fs.stat(&path).await.unwrap();
        assert_eq!(info.kind, FileKind::Missing, "stat {path}");
    }
    assert_eq!(fs.stat("/dir-link").await.unwrap().kind, FileKind::Missing);
    // A link that stays inside is followed for exact-path reads.
    assert_eq!(
        fs.read("/inside-link").await.unwrap(),
        Content::Text("public words\n".into())
    );
    // `..` is resolved within the mount: it never climbs above `/`.
    assert_eq!(
        fs.read("/../../ok.txt").await.unwrap(),
        Content::Text("public words\n".into())
    );
}

#[tokio::test]
async fn walks_do_not_reach_outside() {
    let s = sandbox();
    let fs = mount(&s, false);
    let listed = all(fs.list("/")).await.unwrap();
    assert_eq!(
        listed,
        vec![
            DirEntry::dir("/inner"),
            DirEntry::file("/inside-link"),
            DirEntry::file("/ok.txt"),
        ]
    );
    assert!(all(fs.list("/dir-link")).await.unwrap().is_empty());
    assert!(all(fs.list("/../outside")).await.unwrap().is_empty());
    let globbed = all(fs.glob("**", None)).await.unwrap();
    assert!(
        globbed.iter().all(|e| !e.path.contains("link/")
            && !e.path.contains("secret")
            && !e.path.contains("dangling")),
        "{globbed:?}"
    );
    assert!(
        all(fs.glob("*", Some("/dir-link")))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(all(fs.glob("dir-link/**", None)).await.unwrap().is_empty());
    // `../outside` normalizes to `/outside`, which does not exist in the mount.
    assert!(
        all(fs.glob("**/*.txt", Some("../outside")))
            .await
            .unwrap()
            .is_empty()
    );

    let hits: Vec<GrepResult> = all(fs.grep(GrepQuery::new("SECRET|public"))).await.unwrap();
    assert!(hits.iter().all(|h| !h.line.contains("SECRET")), "{hits:?}");
    assert_eq!(hits.len(), 2, "{hits:?}");
    for scope in ["/dir-link", "/file-link", "/../outside", "/inner/rel-link"] {
        let mut query = GrepQuery::new("SECRET");
        query.path = Some(scope.to_string());
        let err = all(fs.grep(query)).await.unwrap_err();
        assert!(
            matches!(err, PathError::FileNotFound { .. }),
            "grep {scope}: {err}"
        );
    }
}

#[tokio::test]
async fn writes_and_deletes_cannot_escape() {
    let s = sandbox();
    let fs = mount(&s, false);
    let secret = || fs::read_to_string(s.outside.join("secret.txt")).unwrap();
    for path in [
        "/file-link",
        "/dir-link/secret.txt",
        "/dir-link/new.txt",
        "/dir-link/newdir/new.txt",
        "/inner/rel-link",
        "/dangling",
    ] {
        let err = fs.write(path, "pwned").await.unwrap_err();
        assert!(
            matches!(err, PathError::WriteFailed { .. }),
            "write {path}: {err}"
        );
        assert!(err.to_string().contains("escapes"), "{err}");
    }
    assert_eq!(secret(), "SECRET password\n");
    assert!(!s.outside.join("new.txt").exists());
    assert!(!s.outside.join("newdir").exists());
    assert!(!s.outside.join("missing.txt").exists());

    // `..` and absolute paths land inside the mount, never outside it.
    fs.write("../outside/secret.txt", "inside").await.unwrap();
    assert_eq!(secret(), "SECRET password\n");
    assert_eq!(
        fs::read_to_string(s.mount.join("outside/secret.txt")).unwrap(),
        "inside"
    );
    let abs = s.outside.join("abs.txt").to_string_lossy().into_owned();
    fs.write(&abs, "inside").await.unwrap();
    assert!(!s.outside.join("abs.txt").exists());
    assert!(s.mount.join(abs.trim_start_matches('/')).exists());

    for path in [
        "/file-link",
        "/dir-link/secret.txt",
        "/dir-link/sub/deep.txt",
        "/inner/rel-link",
    ] {
        let err = fs.delete(path).await.unwrap_err();
        assert!(
            matches!(err, PathError::FileNotFound { .. }),
            "delete {path}: {err}"
        );
    }
    assert_eq!(secret(), "SECRET password\n");
    assert!(s.outside.join("sub/deep.txt").exists());
    assert!(fs::symlink_metadata(s.mount.join("file-link")).is_ok());

    // A link inside the mount to a file inside it is written through.
    fs.write("/inside-link", "changed").await.unwrap();
    assert_eq!(
        fs::read_to_string(s.mount.join("ok.txt")).unwrap(),
        "changed"
    );
}

#[tokio::test]
async fn read_only_mount_refuses_changes() {
    let s = sandbox();
    let fs = mount(&s, true);
    let err = fs.write("/ok.txt", "x").await.unwrap_err();
    assert_eq!(err.to_string(), "read-only mount: /ok.txt");
    let err = fs.write("/new/file.txt", "x").await.unwrap_err();
    assert_eq!(err.to_string(), "read-only mount: /new/file.txt");
    let err = fs.delete("/ok.txt").await.unwrap_err();
    assert_eq!(err.to_string(), "read-only mount: /ok.txt");
    assert_eq!(
        fs::read_to_string(s.mount.join("ok.txt")).unwrap(),
        "public words\n"
    );
    assert!(!s.mount.join("new").exists());
    // Reads still work.
    assert_eq!(
        fs.read("/inner/note.txt").await.unwrap(),
        Content::Text("public inner\n".into())
    );
}

#[test]
fn mount_of_missing_directory_fails() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let err = host_dir(&missing, false).err().unwrap();
    assert_eq!(err.to_string(), format!("not found: {}", missing.display()));
    let file = dir.path().join("file");
    fs::write(&file, "x").unwrap();
    assert!(host_dir(Path::new(&file), false).is_err());
}
