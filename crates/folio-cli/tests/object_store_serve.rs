//! Sessions of one `folio serve` sharing an object-store mount (an S3 bucket on moto): each
//! session is handed its own view of the mount, so a version one session read never vouches
//! for another session's write. Two sessions read the same file, the first writes it, and the
//! second's write is refused with the message that tells the model to read the file again; a
//! session that never read the file cannot overwrite it at all.

mod serve_support;

#[path = "../../folio-object-store/tests/support/stores.rs"]
mod stores;

use folio_protocol::{ActionResult, CreateSession, Event, FollowUp};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::json;
use serve_support::*;
use stores::{BUCKET, Moto, fresh_prefix};

/// Waits until session `id` has recorded `turns` waits (its turns are done); its log.
async fn settle(url: &str, id: &str, turns: usize) -> Vec<Event> {
    let mut stream = Stream::open(url, id, 0, None).await;
    stream.until_count("session.waiting", turns).await;
    events(url, id).await
}

/// The outcome of the last call of `tool` in `log`: its error text, or `None` on success.
fn last_outcome(log: &[Event], tool: &str) -> Option<String> {
    let result: &ActionResult = all::<ActionResult>(log)
        .into_iter()
        .rfind(|result| result.tool == tool)
        .expect("the tool was called");
    assert_eq!(result.is_error, result.error.is_some());
    result.error.clone()
}

#[tokio::test]
async fn a_session_cannot_overwrite_a_version_another_session_wrote_after_its_read() {
    let moto = Moto::shared();
    let prefix = fresh_prefix();
    moto.put(&format!("{prefix}/plan.md"), b"v1\n");
    let options: Vec<String> = moto
        .options()
        .into_iter()
        .map(|(k, v)| format!("{k} = \"{v}\""))
        .collect();
    let dir = project(&format!(
        "model = \"openai:gpt-test\"\n\n[root]\n\"/data\" = {{ object_store = \"s3://{BUCKET}/{prefix}\", options = {{ {} }} }}\n",
        options.join(", ")
    ));
    let state = tempfile::tempdir().unwrap();
    let mock = MockModelServer::start().await;
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let read = || MockReply::tool_calls([("Read", json!({"path": "/data/plan.md"}))]);
    let write = |text: &str| {
        MockReply::tool_calls([("Write", json!({"path": "/data/plan.md", "contents": text}))])
    };

    // Both sessions read v1.
    mock.push(read()).push(MockReply::text("Read it."));
    let a = create_session(&server.url, &CreateSession::message("Read the plan.")).await;
    settle(&server.url, &a.session_id, 1).await;
    mock.push(read()).push(MockReply::text("Read it."));
    let b = create_session(&server.url, &CreateSession::message("Read the plan.")).await;
    settle(&server.url, &b.session_id, 1).await;

    // A writes; B's write, on the v1 it read, is refused and A's version stays.
    mock.push(write("a's plan\n"))
        .push(MockReply::text("Wrote it."));
    follow_up(
        &server.url,
        &a.session_id,
        &FollowUp::new(&a.continuation_token, "Write yours."),
    )
    .await;
    let log = settle(&server.url, &a.session_id, 2).await;
    assert_eq!(last_outcome(&log, "Write"), None);
    mock.push(write("b's plan\n"))
        .push(MockReply::text("Could not."));
    follow_up(
        &server.url,
        &b.session_id,
        &FollowUp::new(&b.continuation_token, "Write yours."),
    )
    .await;
    let log = settle(&server.url, &b.session_id, 2).await;
    assert_eq!(
        last_outcome(&log, "Write").as_deref(),
        Some(
            "write failed: /data/plan.md: the file changed remotely since it was last read; read it again before writing"
        )
    );
    assert_eq!(
        moto.get(&format!("{prefix}/plan.md")).unwrap(),
        b"a's plan\n"
    );

    // A third session that never read the file cannot replace it blindly.
    mock.push(write("c's plan\n"))
        .push(MockReply::text("Could not."));
    let c = create_session(&server.url, &CreateSession::message("Write a plan.")).await;
    let log = settle(&server.url, &c.session_id, 1).await;
    assert_eq!(
        last_outcome(&log, "Write").as_deref(),
        Some(
            "write failed: /data/plan.md: the file exists and was not read in this session; read it before writing it"
        )
    );
    assert_eq!(
        moto.get(&format!("{prefix}/plan.md")).unwrap(),
        b"a's plan\n"
    );
}
