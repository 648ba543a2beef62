//! Workspace roots (`folio serve --workspace-root`): a session's host workspace lives under the
//! root of the server that made it; a server with another root refuses the session's
//! host-default turns, saying which root to mount; the same root mounted at another path runs
//! them; deleting the session removes its workspace there.

mod support;

use std::collections::BTreeMap;

use folio_protocol::{CreateSession, EventBody, FollowUp};
use folio_session::{ManagerError, WorkspaceRoot};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use support::*;

/// The message of the last `turn.failed` of `events`, if any.
fn last_failure(events: &[folio_protocol::Event]) -> Option<String> {
    events.iter().rev().find_map(|event| match &event.body {
        EventBody::TurnFailed(failed) => Some(failed.message.clone()),
        _ => None,
    })
}

#[tokio::test]
async fn a_turn_runs_only_where_the_sessions_workspace_root_is_seen() {
    let mock = MockModelServer::start().await;
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let disks = tempfile::tempdir().unwrap();
    let shared = disks.path().join("shared");
    let agent = agent(&mock, dir.path()).await;

    // Server A: the session's workspace is made under its root.
    let a = manager(agent.clone(), state.path()).await;
    let root = WorkspaceRoot::open(&shared).unwrap();
    a.set_workspace_root(root.clone());
    mock.push(MockReply::text("noted"));
    let created = a
        .sessions()
        .create(
            "local",
            "http",
            CreateSession {
                workspace_files: BTreeMap::from([("notes.md".into(), "from A\n".into())]),
                ..CreateSession::message("keep this")
            },
        )
        .await
        .unwrap();
    let id = created.session_id.clone();
    wait_turns(&a, &id, 1).await;
    assert_eq!(
        std::fs::read_to_string(shared.join(&id).join("notes.md")).unwrap(),
        "from A\n"
    );
    assert_eq!(
        a.sessions().workspace_dir("local", &id).await.unwrap(),
        shared.join(&id)
    );
    a.shutdown().await;

    // Server B has a root of its own: the follow-up is accepted, its turn refused.
    let b = manager(agent.clone(), state.path()).await;
    b.set_workspace_root(WorkspaceRoot::open(&disks.path().join("elsewhere")).unwrap());
    let requests = mock.requests().len();
    let accepted = b
        .turns()
        .follow_up(
            "local",
            &id,
            FollowUp::new(created.continuation_token.clone(), "still there?"),
        )
        .await
        .unwrap();
    let events = wait_turns(&b, &id, 2).await;
    let refused = last_failure(&events).expect("the turn failed");
    assert!(
        refused.contains(root.id()) && refused.contains("--workspace-root"),
        "{refused}"
    );
    assert_eq!(mock.requests().len(), requests, "the model was not called");
    assert!(matches!(
        b.sessions().workspace_dir("local", &id).await,
        Err(ManagerError::Refused(_))
    ));
    b.shutdown().await;

    // Server C mounts the same root at another path: the turn runs and sees A's file.
    let mount = disks.path().join("mount-c");
    std::os::unix::fs::symlink(&shared, &mount).unwrap();
    let c = manager(agent, state.path()).await;
    c.set_workspace_root(WorkspaceRoot::open(&mount).unwrap());
    mock.push(MockReply::text("yes"));
    c.turns()
        .follow_up(
            "local",
            &id,
            FollowUp::new(accepted.continuation_token, "and now?"),
        )
        .await
        .unwrap();
    let events = wait_turns(&c, &id, 3).await;
    assert!(
        matches!(
            events.last().map(|e| &e.body),
            Some(EventBody::SessionWaiting(_))
        ),
        "{:?}",
        last_failure(&events)
    );
    assert_eq!(
        c.sessions().workspace_dir("local", &id).await.unwrap(),
        mount.join(&id)
    );
    c.sessions().delete("local", &id).await.unwrap();
    assert!(
        !shared.join(&id).exists(),
        "deleting the session removes its workspace"
    );
}
