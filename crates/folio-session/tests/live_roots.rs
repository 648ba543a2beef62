//! Live roots end to end through the `SessionManager`: a per-turn root is built again before
//! every turn (a per-session one once), the factory is told the session, its key and its
//! principal, and `RootContext.host` is the `with_host` host when one is given, else the
//! session's own host workspace (files written through it land in that folder on disk).

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use folio_agent::{Agent, LiveRoot, LoadOptions, RootContext, RootHost, discover};
use folio_fs::{FileSystem, HostFilesApi, MemoryHostFiles, host_fs, temp_fs};
use folio_model::{ProviderConfig, open_provider};
use folio_protocol::{ActionResult, CreateSession, FollowUp};
use folio_session::{SessionManager, SessionOptions};
use folio_test_support::{MockModelServer, MockReply, all};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::{manager, project, wait_turns};

/// The project's agent on `mock` with `root` as its live root.
async fn agent_with(mock: &MockModelServer, root: LiveRoot) -> (tempfile::TempDir, Arc<Agent>) {
    let dir = project("tools = [\"read\", \"edit\", \"ls\"]\n");
    let definition = discover(dir.path()).definition.expect("a valid project");
    let config = ProviderConfig {
        base_url: Some(mock.openai_base_url()),
        ..ProviderConfig::default()
    };
    let (provider, model) =
        open_provider("openai:gpt-test", &config, &|_| Some("test-key".into())).unwrap();
    let options = LoadOptions {
        live_root: Some(root),
        ..LoadOptions::default()
    };
    let agent = Agent::load_with(definition, provider, model, options)
        .await
        .unwrap();
    (dir, Arc::new(agent))
}

/// The outputs (or errors) of the tool calls in a log, in order.
fn outputs(events: &[folio_protocol::Event]) -> Vec<Value> {
    all::<ActionResult>(events)
        .into_iter()
        .map(|result| match &result.error {
            Some(error) => json!({"error": error}),
            None => result.output.clone().unwrap_or_default(),
        })
        .collect()
}

/// A factory that counts its calls and answers a tree whose `/built.md` says which call
/// built it, for which session, key and principal.
fn counting(calls: Arc<AtomicUsize>) -> impl Fn(&RootContext) -> Arc<dyn FileSystem> {
    move |ctx: &RootContext| {
        let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
        temp_fs([(
            "/built.md".to_string(),
            format!(
                "build {n} for {} key {:?} principal {}",
                ctx.session_id, ctx.continuation_key, ctx.principal
            ),
        )])
    }
}

/// Two turns of one session each reading `/built.md`; the outputs of both reads.
async fn two_reads(mock: &MockModelServer, manager: &SessionManager) -> (String, Vec<Value>) {
    for _ in 0..2 {
        mock.push(MockReply::tool_calls([(
            "Read",
            json!({"path": "/built.md"}),
        )]))
        .push(MockReply::text("Read it."));
    }
    let options = SessionOptions {
        continuation_key: Some("acme:ticket-7".into()),
        ..SessionOptions::default()
    };
    let created = manager
        .sessions()
        .create_with("local", "http", CreateSession::message("Read it."), options)
        .await
        .unwrap();
    let id = created.session_id.clone();
    wait_turns(manager, &id, 1).await;
    manager
        .turns()
        .follow_up(
            "local",
            &id,
            FollowUp::new(&created.continuation_token, "Again."),
        )
        .await
        .unwrap();
    let log = wait_turns(manager, &id, 2).await;
    (id, outputs(&log))
}

#[tokio::test]
async fn a_per_turn_root_is_built_before_every_turn_and_a_per_session_root_once() {
    for per_turn in [true, false] {
        let mock = MockModelServer::start().await;
        let calls = Arc::new(AtomicUsize::new(0));
        let root = if per_turn {
            LiveRoot::per_turn(counting(calls.clone()))
        } else {
            LiveRoot::per_session(counting(calls.clone()))
        };
        let (_dir, agent) = agent_with(&mock, root).await;
        let state = tempfile::tempdir().unwrap();
        let manager = manager(agent, state.path()).await;
        let (id, reads) = two_reads(&mock, &manager).await;
        let built = |n: usize| {
            json!(format!(
                "     1\tbuild {n} for {id} key Some(\"acme:ticket-7\") principal local"
            ))
        };
        let expected = if per_turn {
            [built(1), built(2)]
        } else {
            [built(1), built(1)]
        };
        assert_eq!(reads, expected, "per_turn = {per_turn}");
        assert_eq!(calls.load(Ordering::SeqCst), if per_turn { 2 } else { 1 });
        assert_eq!(mock.remaining(), 0);
        manager.shutdown().await;
    }
}

/// A root that mounts the host's files (`RootContext.host`) at `/`, recording each host seen.
fn host_files_root(seen: Arc<Mutex<usize>>) -> LiveRoot {
    LiveRoot::per_session(move |ctx: &RootContext| {
        *seen.lock().unwrap() += 1;
        let host = ctx.host.clone().expect("the host is always offered");
        host_fs(host.files, "")
    })
}

/// One turn that reads `/notes.md` and writes `/reply.md`; its tool outputs.
async fn read_and_write(mock: &MockModelServer, manager: &SessionManager) -> (String, Vec<Value>) {
    mock.push(MockReply::tool_calls([
        ("Read", json!({"path": "/notes.md"})),
        (
            "Write",
            json!({"path": "/reply.md", "contents": "answered\n"}),
        ),
    ]))
    .push(MockReply::text("Done."));
    let created = manager
        .sessions()
        .create("local", "http", CreateSession::message("Answer the notes."))
        .await
        .unwrap();
    let log = wait_turns(manager, &created.session_id, 1).await;
    (created.session_id, outputs(&log))
}

#[tokio::test]
async fn the_host_is_the_with_host_files_else_the_sessions_own_workspace() {
    // With a host of its own: the factory reads and writes through it.
    let mock = MockModelServer::start().await;
    let files = Arc::new(MemoryHostFiles::new());
    files.insert("notes.md", "from the host API\n");
    let seen = Arc::new(Mutex::new(0));
    let root = host_files_root(seen.clone()).with_host(RootHost {
        files: files.clone(),
    });
    let (_dir, agent) = agent_with(&mock, root).await;
    let state = tempfile::tempdir().unwrap();
    let sessions = manager(agent, state.path()).await;
    let (_, results) = read_and_write(&mock, &sessions).await;
    assert_eq!(
        results,
        [
            json!("     1\tfrom the host API"),
            json!("Wrote contents to /reply.md")
        ]
    );
    let stored = files.list("").await.unwrap();
    let keys: Vec<&str> = stored.iter().map(|meta| meta.key.as_str()).collect();
    assert_eq!(keys, ["notes.md", "reply.md"]);
    sessions.shutdown().await;

    // Without one: the server offers the session's host workspace.
    let mock = MockModelServer::start().await;
    let (_dir, agent) = agent_with(&mock, host_files_root(seen.clone())).await;
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent, state.path()).await;
    let (id, results) = read_and_write(&mock, &manager).await;
    assert_eq!(
        results,
        [
            json!({"error": "not found: /notes.md"}),
            json!("Wrote contents to /reply.md")
        ]
    );
    let workspace = manager.state().workspace_dir(&id);
    assert_eq!(
        std::fs::read_to_string(workspace.join("reply.md")).unwrap(),
        "answered\n"
    );
    assert_eq!(*seen.lock().unwrap(), 2);
    manager.shutdown().await;
}
