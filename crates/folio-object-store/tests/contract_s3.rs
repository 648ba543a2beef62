//! The `folio-fs` contract suite over an S3 bucket served by moto (a real S3 server), plus the
//! compare-and-swap of writes between two trees (two sessions, two servers) and a third-party
//! writer, and the errors of a bad mount.

#[path = "../../folio-fs/tests/contract/suite.rs"]
mod suite;

#[path = "support/moto.rs"]
mod moto;

use std::sync::Arc;

use folio_fs::{Content, FileSystem, GrepQuery};
use folio_object_store::object_store_fs;
use futures::TryStreamExt;
use moto::{BUCKET, Moto, fresh_prefix};
use suite::{Files, Subject};

/// A tree over a fresh prefix of the bucket, the fixture put there by a plain HTTP client.
fn s3_subject(files: Files) -> Subject {
    let moto = Moto::shared();
    let prefix = fresh_prefix();
    for (path, contents) in &files {
        moto.put(&format!("{prefix}{path}"), contents);
    }
    // A decoy beside the prefix that must never show through (segment-wise prefixes).
    moto.put(&format!("{prefix}-other/needle.txt"), b"needle decoy\n");
    Subject::rooted(tree(&prefix))
}

fn tree(prefix: &str) -> Arc<dyn FileSystem> {
    object_store_fs(&format!("s3://{BUCKET}/{prefix}"), Moto::shared().options())
        .expect("open the bucket")
}

contract_suite!(s3_on_moto, s3_subject);

fn text(content: Content) -> String {
    match content {
        Content::Text(text) => text,
        other => panic!("expected text, got {other:?}"),
    }
}

const CHANGED: &str = "write failed: /doc.md: the file changed remotely since it was last read; read it again before writing";

#[tokio::test]
async fn two_writers_never_silently_overwrite_each_other() {
    let moto = Moto::shared();
    let prefix = fresh_prefix();
    moto.put(&format!("{prefix}/doc.md"), b"v1");
    let (a, b) = (tree(&prefix), tree(&prefix));
    assert_eq!(text(a.read("/doc.md").await.unwrap()), "v1");
    assert_eq!(text(b.read("/doc.md").await.unwrap()), "v1");
    a.write("/doc.md", "from a").await.unwrap();
    // b saw v1, which is no longer the object's version: its write is refused, a's stays.
    assert_eq!(
        b.write("/doc.md", "from b").await.unwrap_err().to_string(),
        CHANGED
    );
    assert_eq!(moto.get(&format!("{prefix}/doc.md")).unwrap(), b"from a");
    // Once b reads the current version, its write goes through, and then a's is refused.
    assert_eq!(text(b.read("/doc.md").await.unwrap()), "from a");
    b.write("/doc.md", "from b").await.unwrap();
    assert_eq!(
        a.write("/doc.md", "a again").await.unwrap_err().to_string(),
        CHANGED
    );
    assert_eq!(moto.get(&format!("{prefix}/doc.md")).unwrap(), b"from b");
    // A third-party writer (plain PUT) counts as a change too.
    assert_eq!(text(a.read("/doc.md").await.unwrap()), "from b");
    moto.put(&format!("{prefix}/doc.md"), b"from elsewhere");
    assert_eq!(
        a.write("/doc.md", "a third").await.unwrap_err().to_string(),
        CHANGED
    );
    // A file deleted after it was read is a conflict, not a resurrection.
    assert_eq!(text(a.read("/doc.md").await.unwrap()), "from elsewhere");
    b.delete("/doc.md").await.unwrap();
    assert!(a.write("/doc.md", "a fourth").await.is_err());
    assert_eq!(moto.get(&format!("{prefix}/doc.md")), None);
}

#[tokio::test]
async fn grep_streams_objects_and_stops_at_max_results() {
    let moto = Moto::shared();
    let prefix = fresh_prefix();
    for n in 0..30 {
        moto.put(&format!("{prefix}/logs/{n:02}.log"), b"ok\nneedle here\n");
    }
    let tree = tree(&prefix);
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
