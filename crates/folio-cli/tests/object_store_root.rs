//! An `object_store` mount of `[root]` end to end: `folio run` with the mock model reading,
//! writing, listing and grepping `/data` backed by an S3 bucket on moto (a real S3 server), and
//! a read-only mount refusing writes.

mod common;

#[path = "../../folio-object-store/tests/support/stores.rs"]
mod stores;

use common::*;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::json;
use stores::{BUCKET, Moto, fresh_prefix};

fn mount(prefix: &str, read_only: bool) -> String {
    let options: Vec<String> = Moto::shared()
        .options()
        .into_iter()
        .map(|(k, v)| format!("{k} = \"{v}\""))
        .collect();
    format!(
        "model = \"openai:gpt-test\"\n\n[root]\n\"/data\" = {{ object_store = \"s3://{BUCKET}/{prefix}\", read_only = {read_only}, options = {{ {} }} }}\n",
        options.join(", ")
    )
}

#[tokio::test]
async fn a_turn_reads_writes_and_greps_an_s3_mount() {
    let moto = Moto::shared();
    let prefix = fresh_prefix();
    moto.put(&format!("{prefix}/notes/a.md"), b"alpha\nneedle one\n");
    moto.put(&format!("{prefix}/b.txt"), b"needle two\n");
    let dir = project(&mount(&prefix, false));
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([
        ("LS", json!({"path": "/data"})),
        ("Read", json!({"path": "/data/notes/a.md"})),
        (
            "StrReplace",
            json!({"path": "/data/notes/a.md", "oldText": "alpha", "newText": "beta"}),
        ),
        (
            "Write",
            json!({"path": "/data/new/c.md", "contents": "needle three\n"}),
        ),
        ("Grep", json!({"pattern": "needle", "path": "/data"})),
        ("Glob", json!({"pattern": "**/*.md", "path": "/data"})),
        ("Delete", json!({"path": "/data/b.txt"})),
    ]));
    mock.push(MockReply::text("Done."));
    let output = run_json(&mock.openai_base_url(), dir.path(), "use the bucket").await;
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result = result_of(&output);
    assert_eq!(
        tool_outputs(&result),
        vec![
            ("LS".into(), false, json!("/data/b.txt\n/data/notes/")),
            (
                "Read".into(),
                false,
                json!("     1\talpha\n     2\tneedle one")
            ),
            (
                "StrReplace".into(),
                false,
                json!({"occurrencesModified": 1})
            ),
            (
                "Write".into(),
                false,
                json!("Wrote contents to /data/new/c.md")
            ),
            (
                "Grep".into(),
                false,
                json!(
                    "/data/b.txt:1:needle two\n/data/new/c.md:1:needle three\n/data/notes/a.md:2:needle one"
                )
            ),
            (
                "Glob".into(),
                false,
                json!("/data/new/c.md\n/data/notes/a.md")
            ),
            ("Delete".into(), false, json!("Deleted /data/b.txt")),
        ]
    );
    // The bucket holds what the turn wrote, as any S3 client sees it.
    assert_eq!(
        moto.get(&format!("{prefix}/notes/a.md")).unwrap(),
        b"beta\nneedle one\n"
    );
    assert_eq!(
        moto.get(&format!("{prefix}/new/c.md")).unwrap(),
        b"needle three\n"
    );
    assert_eq!(moto.get(&format!("{prefix}/b.txt")), None);
}

#[tokio::test]
async fn a_read_only_mount_refuses_writes_and_a_bad_mount_fails_the_run() {
    let moto = Moto::shared();
    let prefix = fresh_prefix();
    moto.put(&format!("{prefix}/a.md"), b"kept\n");
    let dir = project(&mount(&prefix, true));
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([
        ("Read", json!({"path": "/data/a.md"})),
        (
            "Write",
            json!({"path": "/data/a.md", "contents": "changed"}),
        ),
    ]));
    mock.push(MockReply::text("Done."));
    let result = result_of(&run_json(&mock.openai_base_url(), dir.path(), "try").await);
    assert_eq!(
        tool_outputs(&result),
        vec![
            ("Read".into(), false, json!("     1\tkept")),
            ("Write".into(), true, json!("read-only mount: /data/a.md")),
        ]
    );
    assert_eq!(moto.get(&format!("{prefix}/a.md")).unwrap(), b"kept\n");

    // A misspelt option is refused when the agent loads, naming the mount and the option.
    let bad = project(
        "model = \"openai:gpt-test\"\n\n[root]\n\"/data\" = { object_store = \"s3://b/p\", options = { endpiont = \"http://127.0.0.1:1\" } }\n",
    );
    let output = run_json(&mock.openai_base_url(), bad.path(), "try").await;
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "agent.toml [root] \"/data\": option \"endpiont\" is not a setting of S3 stores"
        ),
        "{stderr}"
    );

    // A local store cannot compare-and-swap: writable, it is refused; read-only, it serves.
    let local = tempfile::tempdir().unwrap();
    std::fs::write(local.path().join("l.md"), "local\n").unwrap();
    let url = format!("file://{}", local.path().display());
    let writable = project(&format!(
        "model = \"openai:gpt-test\"\n\n[root]\n\"/l\" = {{ object_store = \"{url}\" }}\n"
    ));
    let output = run_json(&mock.openai_base_url(), writable.path(), "try").await;
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "agent.toml [root] \"/l\": {url}: a local object store cannot write with compare-and-swap; mount it with read_only = true"
        )),
        "{stderr}"
    );
    let read_only = project(&format!(
        "model = \"openai:gpt-test\"\n\n[root]\n\"/l\" = {{ object_store = \"{url}\", read_only = true }}\n"
    ));
    mock.push(MockReply::tool_calls([(
        "Read",
        json!({"path": "/l/l.md"}),
    )]));
    mock.push(MockReply::text("Done."));
    let result = result_of(&run_json(&mock.openai_base_url(), read_only.path(), "read").await);
    assert_eq!(
        tool_outputs(&result),
        vec![("Read".into(), false, json!("     1\tlocal"))]
    );
}
