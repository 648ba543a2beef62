//! `folio store copy`: a state root made by a real `folio serve` (turns, an artifact, a
//! reminder, a storage entry, an idempotent create) copied to PostgreSQL and back to a fresh
//! state root, identical event for event and served again; a copy killed half way (`kill -9`)
//! and run again finishes and verifies; `folio serve` refuses a store a copy is still writing.
//! PostgreSQL comes from `FOLIO_TEST_DATABASE_URL` (`scripts/test`); without it, the cases that
//! need it run disk to disk only.

mod serve_support;

use std::path::Path;
use std::process::Output;
use std::sync::Arc;

use folio_protocol::{
    ArtifactRecord, CreateSession, Event, EventBody, FollowUp, MessageCompleted, Page, Reminder,
    ReminderResponse, SessionSummary, SetReminder,
};
use folio_store::{NewEvent, SessionStore};
use folio_store_postgres::testing::test_database;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::{Value, json};
use serve_support::*;
use tokio::io::AsyncBufReadExt;

const AGENT: &str =
    "name = \"copied\"\nmodel = \"openai:gpt-test\"\ntools = [\"read\", \"storage\"]\n";

/// `folio store copy ARGS…`, its output.
async fn store_copy(args: &[&str]) -> Output {
    tokio::process::Command::new(folio_bin())
        .args(["store", "copy"])
        .args(args)
        .output()
        .await
        .unwrap()
}

/// The `--json` summary of a copy that succeeded.
fn summary(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "the copy failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// What a server shows of its sessions: the list, each log, the reminders and the artifacts.
#[derive(Debug, PartialEq)]
struct View {
    sessions: Vec<SessionSummary>,
    logs: Vec<Vec<Event>>,
    reminders: Vec<Vec<Reminder>>,
    artifacts: Vec<ArtifactRecord>,
}

async fn view(url: &str) -> View {
    let (status, page) =
        call_as::<Page<SessionSummary>>(Method::GET, &format!("{url}/v1/sessions"), NO_BODY, None)
            .await;
    assert_eq!(status, 200);
    let mut logs = Vec::new();
    let mut reminders = Vec::new();
    for session in &page.data {
        logs.push(events(url, &session.session_id).await);
        let (status, listed) = call_as::<Page<Reminder>>(
            Method::GET,
            &format!("{url}/v1/session/{}/reminders", session.session_id),
            NO_BODY,
            None,
        )
        .await;
        assert_eq!(status, 200);
        reminders.push(listed.data);
    }
    let (status, artifacts) =
        call_as::<Page<ArtifactRecord>>(Method::GET, &format!("{url}/v1/artifacts"), NO_BODY, None)
            .await;
    assert_eq!(status, 200);
    // A server opening a store settles, at that moment, the metadata of a session whose log
    // moved on after its last turn (here the reminder's event): its update time is the
    // opening's, different for every server that opens the store. Everything else must match.
    let sessions = page
        .data
        .into_iter()
        .map(|session| SessionSummary {
            updated_at: session.created_at.clone(),
            ..session
        })
        .collect();
    View {
        sessions,
        logs,
        reminders,
        artifacts: artifacts.data,
    }
}

async fn waiting_after(url: &str, id: &str, turns: u32) {
    for _ in 0..300 {
        let summary = session(url, id).await;
        if summary.status == folio_protocol::SessionStatus::Waiting && summary.turns >= turns {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("session {id} did not wait after {turns} turns within 30 s");
}

/// Stops a server as an operator does (SIGTERM: a graceful shutdown).
async fn stop(mut served: Served) {
    let pid = served.child.id().unwrap();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    served.child.wait().await.unwrap();
}

/// A project whose agent may tag notes and keep storage entries.
fn agent_project() -> Project {
    let dir = project(AGENT);
    write_files(
        dir.path(),
        &[(
            "agent/artifacts.toml",
            "agent_tool = true\n[kinds.note]\ndescription = \"A note\"\n",
        )],
    );
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn a_served_state_root_goes_to_postgres_and_back_event_for_event() {
    let Some(database) = test_database("store_copy_round_trip").await else {
        return;
    };
    let mock = MockModelServer::start().await;
    let dir = agent_project();
    let work = tempfile::tempdir().unwrap();
    let (state, back) = (work.path().join("state"), work.path().join("back"));
    let served = serve(
        &mock.openai_base_url(),
        dir.path(),
        &state,
        &["--mode", "single"],
    )
    .await;
    let url = served.url.clone();
    // An idempotent create whose turn tags an artifact with contents.
    mock.push(MockReply::tool_calls([(
        "tag_artifact",
        json!({"kind": "note", "key": "n1", "title": "A note", "data": {"text": "hi"}, "contents": "the note"}),
    )]));
    mock.push(MockReply::text("Tagged."));
    let first = create_session(
        &url,
        &CreateSession {
            client_message_id: Some("create-1".into()),
            ..CreateSession::message("tag a note")
        },
    )
    .await;
    waiting_after(&url, &first.session_id, 1).await;
    // A second session keeps a storage entry, then answers a follow-up.
    mock.push(MockReply::tool_calls([(
        "storage_put",
        json!({"key": "plan", "value": {"step": 1}, "scope": "principal"}),
    )]));
    mock.push(MockReply::text("Noted."));
    mock.push(MockReply::text("Still noted."));
    let second = create_session(&url, &CreateSession::message("keep a plan")).await;
    waiting_after(&url, &second.session_id, 1).await;
    follow_up(
        &url,
        &second.session_id,
        &FollowUp::new(second.continuation_token.clone(), "and again"),
    )
    .await;
    waiting_after(&url, &second.session_id, 2).await;
    let (status, _) = call_as::<ReminderResponse>(
        Method::POST,
        &format!("{url}/v1/session/{}/reminders", first.session_id),
        Some(&SetReminder {
            at: None,
            after: Some("1h".into()),
            message: "look again".into(),
        }),
        None,
    )
    .await;
    assert_eq!(status, 201);
    stop(served).await;
    // What the state root serves once a server has opened it again (and settled, from the
    // logs, the metadata of sessions whose log moved on after their last turn: the reminder's
    // event).
    let again = serve(
        &mock.openai_base_url(),
        dir.path(),
        &state,
        &["--mode", "single"],
    )
    .await;
    let served_view = view(&again.url).await;
    assert_eq!(served_view.sessions.len(), 2);
    assert_eq!(served_view.artifacts.len(), 1);
    stop(again).await;

    let state_arg = state.display().to_string();
    let back_arg = back.display().to_string();
    let to_pg = summary(&store_copy(&["--from", &state_arg, "--to", &database, "--json"]).await);
    assert_eq!(
        to_pg["copied"],
        json!({
            "sessions": 2, "sessionsSkipped": 0,
            "events": served_view.logs.iter().map(Vec::len).sum::<usize>(),
            "reminders": 1, "artifacts": 1, "createKeys": 1, "storageEntries": 1,
            "deliveries": 0
        }),
        "{to_pg}"
    );
    assert_eq!(to_pg["verified"]["sessions"], json!(2));
    let to_disk = summary(&store_copy(&["--from", &database, "--to", &back_arg, "--json"]).await);
    assert_eq!(to_disk["copied"], to_pg["copied"], "{to_disk}");
    // The first state root and the last one, compared directly.
    let same = summary(
        &store_copy(&[
            "--from",
            &state_arg,
            "--to",
            &back_arg,
            "--verify-only",
            "--json",
        ])
        .await,
    );
    assert_eq!(same["verified"], to_pg["verified"]);
    assert_eq!(same.get("copied"), None);

    // A server on the copy, and one on PostgreSQL, serve the same sessions.
    let on_copy = serve(
        &mock.openai_base_url(),
        dir.path(),
        &back,
        &["--mode", "single"],
    )
    .await;
    assert_eq!(view(&on_copy.url).await, served_view);
    // The idempotent create is answered from the copied record.
    let again = create_session(
        &on_copy.url,
        &CreateSession {
            client_message_id: Some("create-1".into()),
            ..CreateSession::message("tag a note")
        },
    )
    .await;
    assert_eq!(again.session_id, first.session_id);
    stop(on_copy).await;
    let elsewhere = tempfile::tempdir().unwrap();
    let on_pg = serve(
        &mock.openai_base_url(),
        dir.path(),
        elsewhere.path(),
        &["--mode", "single", "--store", &database],
    )
    .await;
    assert_eq!(view(&on_pg.url).await, served_view);
    stop(on_pg).await;
}

/// A state root of `count` sessions of three events each, made through the store API.
async fn generated_root(root: &Path, count: usize) {
    let store = folio_store_disk::DiskStore::open(folio_store_disk::StateRoot::new(root)).unwrap();
    let store: Arc<dyn SessionStore> = Arc::new(store);
    for n in 0..count {
        let meta: folio_store::SessionMeta = serde_json::from_value(json!({
            "sessionId": folio_store::new_session_id(),
            "mode": "chat",
            "status": "waiting",
            "channel": "http",
            "principal": if n % 2 == 0 { "alice" } else { "bob" },
            "createdAt": chrono::Utc::now(),
            "updatedAt": chrono::Utc::now(),
        }))
        .unwrap();
        store.create_session(&meta).await.unwrap();
        let events = (0..3)
            .map(|i| {
                NewEvent::new(
                    Some("turn_1"),
                    EventBody::MessageCompleted(MessageCompleted {
                        text: format!("session {n}, event {i}"),
                    }),
                )
            })
            .collect();
        store
            .append(&meta.session_id, 0, None, events)
            .await
            .unwrap();
        store.commit(&meta.session_id, None).await.unwrap();
    }
    store.close().await;
}

/// `folio store copy --from FROM --to TO` killed (`kill -9`) once it reported `at` sessions.
async fn killed_copy(from: &str, to: &str, at: &str) {
    let mut child = tokio::process::Command::new(folio_bin())
        .args(["store", "copy", "--from", from, "--to", to])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    while let Some(line) = lines.next_line().await.unwrap() {
        if line == format!("folio: sessions: {at}") {
            child.start_kill().unwrap();
            break;
        }
    }
    let status = child.wait().await.unwrap();
    assert!(
        !status.success(),
        "the copy was killed before it finished: {status:?}"
    );
}

/// `folio serve` on a store a copy writes: refused, in one line naming the command to rerun.
fn refused_to_serve(dir: &Path, state: &Path, store: Option<&str>) -> String {
    let output = std::process::Command::new(folio_bin())
        .args(["serve", "--port", "0", "--mode", "single", "--dir"])
        .arg(dir)
        .arg("--state-root")
        .arg(state)
        .args(store.map(|url| ["--store", url]).into_iter().flatten())
        .env("OPENAI_API_KEY", "test-key")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    stderr
}

/// Kills a copy of `root` into `to` half way, checks that a server refuses the destination,
/// reruns the copy and checks that it finished the rest and verified everything.
async fn interrupted_then_finished(root: &Path, to: &str, serve_state: &Path, count: u64) {
    let from = root.display().to_string();
    killed_copy(&from, to, "1000").await;
    let dir = project(AGENT);
    let store = to.starts_with("postgres://").then_some(to);
    let stderr = refused_to_serve(dir.path(), serve_state, store);
    assert!(
        stderr.contains(
            "is the destination of a `folio store copy` that is still running or was interrupted"
        ) && stderr.contains("run that `folio store copy` again"),
        "{stderr}"
    );
    let finished = summary(&store_copy(&["--from", &from, "--to", to, "--json"]).await);
    let copied = &finished["copied"];
    let (written, skipped) = (
        copied["sessions"].as_u64().unwrap(),
        copied["sessionsSkipped"].as_u64().unwrap(),
    );
    assert_eq!(written + skipped, count, "{finished}");
    assert!(
        skipped >= 1000 - 16,
        "the first run's sessions are kept: {finished}"
    );
    assert_eq!(finished["verified"]["sessions"], json!(count));
    assert_eq!(finished["verified"]["events"], json!(count * 3));
    // The marker is gone: a server starts.
    let mock = MockModelServer::start().await;
    let extra: Vec<&str> = match store {
        Some(url) => vec!["--mode", "single", "--store", url],
        None => vec!["--mode", "single"],
    };
    let served = serve(&mock.openai_base_url(), dir.path(), serve_state, &extra).await;
    stop(served).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_copy_killed_half_way_is_refused_by_serve_then_finished_by_a_rerun() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("root");
    generated_root(&root, 2500).await;
    let backup = work.path().join("backup");
    interrupted_then_finished(&root, &backup.display().to_string(), &backup, 2500).await;
    if let Some(database) = test_database("store_copy_killed").await {
        let elsewhere = work.path().join("elsewhere");
        interrupted_then_finished(&root, &database, &elsewhere, 2500).await;
    }
}

#[tokio::test]
async fn a_difference_is_named_and_bad_arguments_are_one_clear_line() {
    let work = tempfile::tempdir().unwrap();
    let (a, b) = (work.path().join("a"), work.path().join("b"));
    generated_root(&a, 3).await;
    generated_root(&b, 3).await;
    let (a, b) = (a.display().to_string(), b.display().to_string());
    let output = store_copy(&["--from", &a, "--to", &b, "--verify-only"]).await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("error: the stores differ: session ses_")
            && stderr.contains("run the same `folio store copy` again"),
        "{stderr}"
    );
    let output = store_copy(&["--from", &a, "--to", &a]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("--from and --to name the same store"),
        "{output:?}"
    );
    let missing = work.path().join("missing").display().to_string();
    let output = store_copy(&["--from", &missing, "--to", &b]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("not a state root"),
        "{output:?}"
    );
}

/// 10,000 sessions of three events, disk → PostgreSQL → disk, timed (bench/store-copy.sh;
/// bench/RESULTS.md, "Copying a store").
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a benchmark: bench/store-copy.sh runs it"]
async fn bench_copy_ten_thousand_sessions_to_postgres_and_back() {
    let Some(database) = test_database("store_copy_bench").await else {
        panic!("the benchmark needs FOLIO_TEST_DATABASE_URL");
    };
    let count = 10_000;
    let work = tempfile::tempdir().unwrap();
    let (root, back) = (work.path().join("root"), work.path().join("back"));
    let started = std::time::Instant::now();
    generated_root(&root, count).await;
    eprintln!(
        "generated {count} sessions in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let (root, back) = (root.display().to_string(), back.display().to_string());
    for (from, to) in [(&root, &database), (&database, &back)] {
        let done = summary(&store_copy(&["--from", from, "--to", to, "--json"]).await);
        assert_eq!(done["verified"]["sessions"], json!(count));
        eprintln!(
            "copy {} → {}: {:.1} s ({} sessions, {} events, copied and verified)",
            if from.starts_with("postgres") {
                "postgres"
            } else {
                "disk"
            },
            if to.starts_with("postgres") {
                "postgres"
            } else {
                "disk"
            },
            done["seconds"].as_f64().unwrap(),
            done["copied"]["sessions"],
            done["copied"]["events"]
        );
    }
    let same =
        summary(&store_copy(&["--from", &root, "--to", &back, "--verify-only", "--json"]).await);
    eprintln!(
        "verify disk ↔ disk: {:.1} s, {} events identical",
        same["seconds"].as_f64().unwrap(),
        same["verified"]["events"]
    );
}
