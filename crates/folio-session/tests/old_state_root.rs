//! A state root written by the release before the disk store became the engine's only path
//! (commit a84349c: `folio run --dir examples/demo --model replay:fixtures/demo.jsonl`, one chat
//! session whose turn used a skill, an authored tool, a subagent and an MCP tool) opens with
//! this code, reads the same, and its session continues: `folio serve` and `folio run` open it
//! through the same `SessionManager::open`. (The workspace's `memory` link, to the absolute path
//! of the state root it was made in, is left out of the fixture.)

mod support;

use std::path::Path;

use folio_protocol::{EventBody, SessionStatus};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use support::{agent, manager, project, wait_turns};

/// The fixture, copied: the test writes to it.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[tokio::test]
async fn a_state_root_of_the_previous_release_opens_and_its_session_continues() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/state-root-a84349c");
    let state = tempfile::tempdir().unwrap();
    copy_dir(&fixture, state.path());
    let traces: Vec<_> = std::fs::read_dir(state.path().join("traces"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(traces.len(), 1, "the fixture holds one session");
    let before = folio_store_disk::read_events(&traces[0]).unwrap();

    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("Still here."));
    let dir = project("");
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let page = manager
        .sessions()
        .list("local", 50, None, None)
        .await
        .unwrap();
    assert_eq!(page.data.len(), 1);
    let summary = &page.data[0];
    assert_eq!(summary.status, SessionStatus::Waiting);
    let id = summary.session_id.clone();
    assert_eq!(manager.events().read("local", &id).await.unwrap(), before);

    manager
        .turns()
        .send("local", &id, "And now?", None)
        .await
        .unwrap();
    let after = wait_turns(&manager, &id, 2).await;
    assert_eq!(
        after[..before.len()],
        before[..],
        "the old events stay as they were"
    );
    let indexes: Vec<u64> = after.iter().map(|event| event.index).collect();
    assert_eq!(indexes, (0..after.len() as u64).collect::<Vec<_>>());
    let reply = after.iter().rev().find_map(|event| match &event.body {
        EventBody::TurnCompleted(done) => Some(done.reply.clone()),
        _ => None,
    });
    assert_eq!(reply.as_deref(), Some("Still here."));
    // The model saw the old conversation: its first message is the demo's.
    let request = mock.requests().last().cloned().unwrap();
    assert!(
        request
            .body
            .to_string()
            .contains("Write a haiku about the sea"),
        "the continued turn carries the old conversation"
    );
    manager.shutdown().await;
    drop(manager);

    // Reopened, it reads what the new turn wrote.
    let reopened = support::manager(agent(&mock, dir.path()).await, state.path()).await;
    assert_eq!(reopened.events().read("local", &id).await.unwrap(), after);
    let summary = reopened.sessions().get("local", &id).await.unwrap();
    assert_eq!((summary.status, summary.turns), (SessionStatus::Waiting, 2));
}
