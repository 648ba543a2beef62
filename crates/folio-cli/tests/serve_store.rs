//! Many servers, one set of sessions: two and three real `folio serve --store postgres://…`
//! processes on one throwaway database (`FOLIO_TEST_DATABASE_URL`, started by `scripts/test`),
//! one mock model. A client streams from server A while B runs the turn; follow-ups alternate
//! between servers; A is killed mid-turn and B takes over once A's lease expires; a stop sent to
//! A reaches the turn on B; a schedule's slot fires once across three servers; and, generated,
//! no session ever has two turns running at once however messages are spread over servers;
//! channel deliveries spread over servers run once in one session and reply once, and a
//! delivery acknowledged by a server killed at once runs once on another.

mod channels_support;
mod serve_support;

use std::time::Duration;

use folio_protocol::{
    Admission, ArtifactRecord, CreateSession, Event, EventBody, FollowUp, MessageQueued,
    MessageReceived, Page, Reminder, ReminderFired, ReminderResponse, SERVER_RESTARTED,
    SessionStatus, SetReminder, TURN_INTERRUPTED, TurnCompleted, TurnFailed,
};
use folio_store_postgres::testing::test_database;
use folio_test_support::{FakeApi, MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serve_support::*;

const AGENT: &str = "name = \"shared\"\nmodel = \"openai:gpt-test\"\n";

/// The lease time to live of the servers under test: a killed server's turn is taken over
/// about this long after it died.
const LEASE_TTL_MS: &str = "3000";

/// `folio serve` with `args`, expected to refuse to start: its one line of stderr.
fn refused_to_serve(args: &[&str]) -> String {
    let output = std::process::Command::new(folio_bin())
        .arg("serve")
        .args(["--port", "0"])
        .args(args)
        .env_remove("FOLIO_STORE")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    stderr
}

#[test]
fn a_bad_store_url_an_unreachable_database_or_several_agents_is_one_clear_line() {
    let dir = project(AGENT);
    let path = dir.path().display().to_string();
    let stderr = refused_to_serve(&["--dir", &path, "--store", "mysql://folio@db/folio"]);
    assert!(
        stderr.contains("the shared store is PostgreSQL (postgres://USER@HOST:PORT/DATABASE)")
            && stderr.contains("omit --store"),
        "{stderr}"
    );
    // Nothing listens on port 1.
    let stderr = refused_to_serve(&[
        "--dir",
        &path,
        "--store",
        "postgres://folio@127.0.0.1:1/folio",
    ]);
    assert!(
        stderr.contains("cannot open the session store")
            && stderr.contains("cannot reach PostgreSQL at 127.0.0.1:1"),
        "{stderr}"
    );
    // A folder of two projects: one database serves one agent.
    let parent = tempfile::tempdir().unwrap();
    for name in ["one", "two"] {
        write_files(
            &parent.path().join(name),
            &[
                ("agent/instructions.md", "You are a test agent.\n"),
                ("agent/agent.toml", AGENT),
            ],
        );
    }
    let stderr = refused_to_serve(&[
        "--dir",
        &parent.path().display().to_string(),
        "--store",
        "postgres://folio@127.0.0.1:1/folio",
    ]);
    assert!(
        stderr.contains("--store serves one agent per database, but --dir holds 2"),
        "{stderr}"
    );
}

/// Servers of one agent on one database, each with its own state root and one shared
/// workspace root.
struct Cluster {
    servers: Vec<Served>,
    dir: Project,
    database: String,
    workspaces: tempfile::TempDir,
    states: Vec<tempfile::TempDir>,
}

impl Cluster {
    /// Starts `n` servers on a fresh database; `None` (the test skips) without a test server.
    async fn start(test: &str, mock: &MockModelServer, n: usize) -> Option<Cluster> {
        Self::start_with(test, mock, n, project(AGENT), &[]).await
    }

    async fn start_with(
        test: &str,
        mock: &MockModelServer,
        n: usize,
        dir: Project,
        env: &[(&str, &str)],
    ) -> Option<Cluster> {
        let database = test_database(test).await?;
        let mut cluster = Cluster {
            servers: Vec::new(),
            dir,
            database,
            workspaces: tempfile::tempdir().unwrap(),
            states: Vec::new(),
        };
        for _ in 0..n {
            cluster.add(mock, env).await;
        }
        Some(cluster)
    }

    /// Starts one more server.
    async fn add(&mut self, mock: &MockModelServer, env: &[(&str, &str)]) {
        let state = tempfile::tempdir().unwrap();
        let server = serve_with_env(
            &mock.openai_base_url(),
            self.dir.path(),
            state.path(),
            &[
                "--mode",
                "single",
                "--store",
                &self.database,
                "--workspace-root",
                &self.workspaces.path().display().to_string(),
                "--lease-ttl-ms",
                LEASE_TTL_MS,
            ],
            env,
        )
        .await;
        self.states.push(state);
        self.servers.push(server);
    }

    fn url(&self, n: usize) -> &str {
        &self.servers[n].url
    }
}

/// Two servers with a long turn running on B (the second); A's stream has shown its first
/// delta. The cluster, the session and its token, and A's stream.
async fn long_turn_on_b(
    test: &str,
    mock: &MockModelServer,
) -> Option<(Cluster, String, String, Stream)> {
    let cluster = Cluster::start(test, mock, 2).await?;
    mock.push(
        MockReply::text("one two three four five six seven eight nine ten")
            .chunk_delay(Duration::from_millis(500)),
    );
    let created = create_session(cluster.url(1), &CreateSession::message("long")).await;
    let mut on_a = Stream::open(cluster.url(0), &created.session_id, 0, None).await;
    on_a.until("message.appended").await;
    Some((
        cluster,
        created.session_id,
        created.continuation_token,
        on_a,
    ))
}

/// A reply streamed slowly enough for a test to act while the turn runs.
fn slow(text: &str) -> MockReply {
    MockReply::text(text).chunk_delay(Duration::from_millis(150))
}

/// Waits until the session read through `url` has `turns` turns and is waiting.
async fn waiting_after(url: &str, id: &str, turns: u32) -> Vec<Event> {
    for _ in 0..300 {
        let summary = session(url, id).await;
        if summary.status == SessionStatus::Waiting && summary.turns >= turns {
            return events(url, id).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("session {id} did not wait after {turns} turns within 30 s");
}

/// Checks that no two turns of the log overlap: each `message.received` comes after the end
/// (`turn.completed`/`turn.failed`) of the turn before it.
fn assert_one_turn_at_a_time(events: &[Event]) {
    let mut open: Option<&str> = None;
    for event in events {
        match &event.body {
            EventBody::MessageReceived(_) => {
                assert!(
                    open.is_none(),
                    "turn {:?} started at index {} while turn {open:?} ran: {:#?}",
                    event.turn_id,
                    event.index,
                    events.iter().map(Event::event_type).collect::<Vec<_>>()
                );
                open = event.turn_id.as_deref();
            }
            EventBody::TurnCompleted(_) | EventBody::TurnFailed(_)
                if event.turn_id.as_deref() == open =>
            {
                open = None;
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn a_stream_on_one_server_follows_the_turn_another_runs_and_follow_ups_alternate() {
    let mock = MockModelServer::start().await;
    let Some(cluster) = Cluster::start("stream_across", &mock, 2).await else {
        return;
    };
    let (a, b) = (cluster.url(0), cluster.url(1));
    mock.push(slow("one two three four five six"));
    let created = create_session(b, &CreateSession::message("first")).await;
    let id = created.session_id.clone();
    // Streamed from A while B runs the turn: every event, in order, as B stored it.
    let mut on_a = Stream::open(a, &id, 0, None).await;
    on_a.until("session.waiting").await;
    assert_contiguous(&on_a.events, 0);
    assert_eq!(on_a.events, events(b, &id).await);
    assert!(
        on_a.events
            .iter()
            .any(|e| matches!(&e.body, EventBody::MessageAppended(_))),
        "the deltas streamed through A: {:?}",
        on_a.types()
    );

    // Follow-ups alternate: A, then B, then A again, each with the token the last one gave.
    let mut token = created.continuation_token;
    let mut on_b = Stream::open(b, &id, on_a.events.len() as u64, None).await;
    for (turn, url) in [(2, a), (3, b), (4, a)] {
        mock.push(MockReply::text(format!("answer {turn}")));
        let accepted = follow_up(url, &id, &FollowUp::new(&token, format!("message {turn}"))).await;
        token = accepted.continuation_token;
        waiting_after(url, &id, turn).await;
    }
    let on_a_log = events(a, &id).await;
    let on_b_log = events(b, &id).await;
    assert_eq!(on_a_log, on_b_log, "one log, read through either server");
    assert_contiguous(&on_a_log, 0);
    assert_one_turn_at_a_time(&on_a_log);
    let texts: Vec<String> = on_a_log
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::MessageReceived(m) => Some(m.text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["first", "message 2", "message 3", "message 4"]);
    // A stream opened on B before those turns saw them all, in order, without a gap.
    on_b.until_count("session.waiting", 3).await;
    assert_contiguous(&on_b.events, on_a.events.len() as u64);
    // The token of the last answer is the current one on both servers; an older one is stale.
    for url in [a, b] {
        let (status, _) = refused(
            Method::POST,
            &format!("{url}/v1/session/{id}"),
            Some(&FollowUp::new("http:not-the-token", "stale")),
            None,
        )
        .await;
        assert_eq!(status, 409);
    }
    let summary = session(a, &id).await;
    assert_eq!((summary.turns, summary.status), (4, SessionStatus::Waiting));
    assert_eq!(summary.last_index, on_a_log.last().unwrap().index);
}

#[tokio::test]
async fn a_server_killed_mid_turn_is_taken_over_when_its_lease_expires() {
    let mock = MockModelServer::start().await;
    let Some(mut cluster) = Cluster::start("kill_takeover", &mock, 2).await else {
        return;
    };
    mock.push(
        MockReply::text("one two three four five six seven eight nine ten")
            .chunk_delay(Duration::from_millis(500)),
    );
    let created = create_session(cluster.url(0), &CreateSession::message("long")).await;
    let id = created.session_id.clone();
    let b = cluster.url(1).to_string();
    let mut on_a = Stream::open(cluster.url(0), &id, 0, None).await;
    let mut on_b = Stream::open(&b, &id, 0, None).await;
    on_b.until("message.appended").await;
    on_a.until_count("message.appended", 2).await;
    // kill -9 of A, the turn's owner, mid-turn.
    let mut a = cluster.servers.remove(0);
    a.child.start_kill().unwrap();
    a.child.wait().await.unwrap();
    while on_a.next().await.is_some() {}
    // B takes the expired lease over and records the turn as failed, `server restarted`.
    let failed = on_b.until("turn.failed").await;
    assert_eq!(
        data::<TurnFailed>(&failed).message,
        SERVER_RESTARTED,
        "{:?}",
        on_b.types()
    );
    on_b.until("session.waiting").await;
    assert_contiguous(&on_b.events, 0);
    // The conversation goes on through B.
    mock.push(MockReply::text("after the takeover"));
    let accepted = follow_up(
        &b,
        &id,
        &FollowUp::new(&created.continuation_token, "are you there?"),
    )
    .await;
    assert_eq!(accepted.session_id, id);
    let log = waiting_after(&b, &id, 2).await;
    assert_contiguous(&log, 0);
    assert_one_turn_at_a_time(&log);
    // What A's own stream showed before it died is in the log as shown: a server shows an event
    // only once it is in the store, so the server taking over never reuses an index a client saw.
    assert_eq!(on_a.events[..], log[..on_a.events.len()]);
    let failures: Vec<&str> = all::<TurnFailed>(&log)
        .iter()
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(failures, [SERVER_RESTARTED]);
}

#[tokio::test]
async fn a_stop_sent_to_one_server_reaches_the_turn_running_on_another() {
    let mock = MockModelServer::start().await;
    let Some((cluster, id, _, mut on_a)) = long_turn_on_b("stop_across", &mock).await else {
        return;
    };
    let (a, b) = (cluster.url(0), cluster.url(1));
    let (status, body) = call(
        Method::POST,
        &format!("{a}/v1/session/{id}/stop"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Interrupted, not completed: the stop landed while the turn ran on B.
    let failed = on_a.until("turn.failed").await;
    assert_eq!(data::<TurnFailed>(&failed).message, TURN_INTERRUPTED);
    on_a.until("session.waiting").await;
    let log = events(b, &id).await;
    assert_contiguous(&log, 0);
    assert_one_turn_at_a_time(&log);
}

#[tokio::test]
async fn a_preempting_message_on_one_server_stops_the_turn_on_another_and_runs_once() {
    let mock = MockModelServer::start().await;
    let Some((cluster, id, token, _)) = long_turn_on_b("preempt_across", &mock).await else {
        return;
    };
    let (a, b) = (cluster.url(0), cluster.url(1));
    mock.push(MockReply::text("the new answer"));
    let accepted = follow_up(
        a,
        &id,
        &FollowUp {
            admission: Some(Admission::Preempt),
            ..FollowUp::new(&token, "change of plan")
        },
    )
    .await;
    assert_eq!(accepted.session_id, id);
    let log = waiting_after(b, &id, 2).await;
    assert_contiguous(&log, 0);
    assert_one_turn_at_a_time(&log);
    assert_eq!(
        all::<TurnFailed>(&log)
            .iter()
            .map(|f| f.message.as_str())
            .collect::<Vec<_>>(),
        [TURN_INTERRUPTED]
    );
}

#[tokio::test]
async fn a_reminder_set_on_a_server_that_died_is_delivered_once_by_another() {
    let mock = MockModelServer::start().await;
    let Some(mut cluster) = Cluster::start("reminder_across", &mock, 2).await else {
        return;
    };
    mock.push(MockReply::text("hello"));
    let created = create_session(cluster.url(0), &CreateSession::message("hi")).await;
    let id = created.session_id;
    waiting_after(cluster.url(0), &id, 1).await;
    let (status, set) = call_as::<ReminderResponse>(
        Method::POST,
        &format!("{}/v1/session/{id}/reminders", cluster.url(0)),
        Some(&SetReminder {
            at: None,
            after: Some("3s".into()),
            message: "check the build".into(),
        }),
        None,
    )
    .await;
    assert_eq!(status, 201);
    let b = cluster.url(1).to_string();
    // B lists it: reminders live in the store, not in A's state root.
    let (status, listed) = call_as::<Page<Reminder>>(
        Method::GET,
        &format!("{b}/v1/session/{id}/reminders"),
        NO_BODY,
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(listed.data, std::slice::from_ref(&set.reminder));
    // A dies before the reminder is due; B delivers it.
    let mut a = cluster.servers.remove(0);
    a.child.start_kill().unwrap();
    a.child.wait().await.unwrap();
    mock.push(MockReply::text("Checked."));
    let log = waiting_after(&b, &id, 2).await;
    let fired: Vec<&ReminderFired> = all::<ReminderFired>(&log);
    assert_eq!(
        fired.len(),
        1,
        "{:?}",
        log.iter().map(Event::event_type).collect::<Vec<_>>()
    );
    assert_eq!(fired[0].reminder_id, set.reminder.reminder_id);
    let received: Vec<&MessageReceived> = all::<MessageReceived>(&log);
    assert_eq!(received.len(), 2);
    assert_eq!(
        received[1].client_message_id.as_deref(),
        Some(format!("reminder:{}", set.reminder.reminder_id).as_str())
    );
    assert_eq!(received[1].text, "Reminder: check the build");
    let (_, listed) = call_as::<Page<Reminder>>(
        Method::GET,
        &format!("{b}/v1/session/{id}/reminders"),
        NO_BODY,
        None,
    )
    .await;
    assert!(listed.data.is_empty(), "delivered: {listed:?}");
}

#[tokio::test]
async fn artifacts_tagged_through_two_servers_are_one_record_listed_by_both() {
    let mock = MockModelServer::start().await;
    let dir = project(AGENT);
    write_files(
        dir.path(),
        &[(
            "agent/artifacts.toml",
            "agent_tool = true\n[kinds.note]\ndescription = \"A note\"\n",
        )],
    );
    let Some(cluster) = Cluster::start_with("artifacts_across", &mock, 2, dir, &[]).await else {
        return;
    };
    let tag = |text: &str| {
        MockReply::tool_calls([(
            "tag_artifact",
            serde_json::json!({"kind": "note", "key": "n1", "title": text, "data": {"text": text}, "contents": text}),
        )])
    };
    // Tagged in a session on A, then the same kind and key again in a session on B.
    for (n, text) in [(0, "first"), (1, "second")] {
        mock.push(tag(text));
        mock.push(MockReply::text("Tagged."));
        let created = create_session(cluster.url(n), &CreateSession::message(text)).await;
        waiting_after(cluster.url(n), &created.session_id, 1).await;
    }
    let mut listed = Vec::new();
    for n in 0..2 {
        let (status, page) = call_as::<Page<ArtifactRecord>>(
            Method::GET,
            &format!("{}/v1/artifacts", cluster.url(n)),
            NO_BODY,
            None,
        )
        .await;
        assert_eq!(status, 200);
        listed.push(page.data);
    }
    assert_eq!(listed[0], listed[1], "both servers list the same records");
    assert_eq!(
        listed[0].len(),
        1,
        "one record per kind and key: {:?}",
        listed[0]
    );
    let record = &listed[0][0];
    assert_eq!(
        (record.title.as_str(), &record.data),
        ("second", &serde_json::json!({"text": "second"}))
    );
    assert!(record.created_at < record.updated_at, "{record:?}");
    // Its contents, read through A, are the ones B's turn wrote.
    let response = client()
        .get(format!(
            "{}/v1/artifacts/{}/content",
            cluster.url(0),
            record.id
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.text().await.unwrap(), "second");
}

#[tokio::test]
async fn a_coalesced_message_on_one_server_joins_the_turn_running_on_another() {
    let mock = MockModelServer::start().await;
    let Some((cluster, id, token, _)) = long_turn_on_b("coalesce_across", &mock).await else {
        return;
    };
    let (a, b) = (cluster.url(0), cluster.url(1));
    mock.push(MockReply::text("both answered"));
    let coalesce = |text: &str, token: &str| FollowUp {
        admission: Some(Admission::Coalesce),
        ..FollowUp::new(token, text)
    };
    // Answered while B's turn still runs (it streams for five seconds): queued into it.
    let first = follow_up(a, &id, &coalesce("q1", &token)).await;
    let keyed = FollowUp {
        client_message_id: Some("q2-key".into()),
        ..coalesce("q2", &first.continuation_token)
    };
    let second = follow_up(a, &id, &keyed).await;
    let now = events(a, &id).await;
    assert!(
        all::<TurnCompleted>(&now).is_empty(),
        "both were answered before the running turn ended: {:?}",
        now.iter().map(Event::event_type).collect::<Vec<_>>()
    );
    // A retry of the keyed one gets the same answer and queues nothing more.
    assert_eq!(follow_up(a, &id, &keyed).await, second);
    let log = waiting_after(b, &id, 2).await;
    assert_contiguous(&log, 0);
    assert_one_turn_at_a_time(&log);
    let queued: Vec<&str> = all::<MessageQueued>(&log)
        .iter()
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(queued, ["q1", "q2"]);
    let received = all::<MessageReceived>(&log);
    assert_eq!(
        (
            received.len(),
            received[1].text.as_str(),
            received[1].coalesced
        ),
        (2, "q1\n\nq2", Some(2))
    );
    // The token of the last answer continues the conversation, on either server.
    mock.push(MockReply::text("next"));
    follow_up(b, &id, &FollowUp::new(&second.continuation_token, "next")).await;
    waiting_after(a, &id, 3).await;
}

/// 2027-01-04 is a Monday: the schedule below fires at 09:00Z.
const CLOCK_START: &str = "2027-01-04T08:59:58Z";

#[tokio::test]
async fn a_schedule_slot_fires_once_across_three_servers() {
    let mock = MockModelServer::start().await;
    for _ in 0..3 {
        mock.push(MockReply::text("summary written"));
    }
    let dir = project(AGENT);
    write_files(
        dir.path(),
        &[(
            "agent/schedules/nightly.md",
            "---\ncron: \"0 9 * * 1-5\"\n---\nSummarize the day.\n",
        )],
    );
    let Some(cluster) = Cluster::start_with(
        "schedule_once",
        &mock,
        3,
        dir,
        &[("FOLIO_TEST_CLOCK_START", CLOCK_START)],
    )
    .await
    else {
        return;
    };
    // Every server decided the slot: one fired it, two recorded it as claimed elsewhere.
    let mut outcomes = Vec::new();
    for n in 0..3 {
        outcomes.push(decided(cluster.url(n)).await);
    }
    outcomes.sort();
    assert_eq!(
        outcomes,
        [
            "fired".to_string(),
            "skipped: claimed by another server sharing the session store, which fired it".into(),
            "skipped: claimed by another server sharing the session store, which fired it".into(),
        ]
    );
    // One task session, run once.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(mock.requests().len(), 1, "the model ran once");
}

/// Polls the server's schedule until its last slot was decided; says how.
async fn decided(url: &str) -> String {
    for _ in 0..300 {
        let (status, body) = call(Method::GET, &format!("{url}/v1/schedules"), None, None).await;
        assert_eq!(status, 200);
        if let Some(last) = body["schedules"][0]["last"].as_object() {
            let outcome = last["outcome"].as_str().unwrap().to_string();
            return match last.get("reason").and_then(|r| r.as_str()) {
                Some(reason) if outcome == "skipped" => format!("{outcome}: {reason}"),
                _ => outcome,
            };
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no slot decided on {url} within 30 s");
}

/// One message of a generated run: which server gets it and how it is admitted.
#[derive(Debug, Clone)]
struct Send {
    server: usize,
    coalesce: bool,
    pause_ms: u64,
}

fn sends() -> impl proptest::strategy::Strategy<Value = Vec<Send>> {
    use proptest::prelude::*;
    proptest::collection::vec(
        (0..2usize, any::<bool>(), 0..300u64).prop_map(|(server, coalesce, pause_ms)| Send {
            server,
            coalesce,
            pause_ms,
        }),
        2..6,
    )
}

#[test]
fn no_session_ever_runs_two_turns_at_once_across_servers() {
    use proptest::test_runner::{Config, TestRunner};
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mock, cluster) = runtime.block_on(async {
        let mock = MockModelServer::start().await;
        let cluster = Cluster::start("two_turns", &mock, 2).await;
        (mock, cluster)
    });
    let Some(cluster) = cluster else { return };
    let mut runner = TestRunner::new(Config {
        cases: 6,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&sends(), |plan| {
            runtime.block_on(run_plan(&mock, &cluster, &plan));
            Ok(())
        })
        .unwrap();
}

/// Sends the plan's messages concurrently (each after its pause) to their servers, with
/// idempotency keys; then checks the log: every acknowledged message was recorded once, and
/// no turn started before the one before it ended.
async fn run_plan(mock: &MockModelServer, cluster: &Cluster, plan: &[Send]) {
    for _ in 0..(plan.len() * 2 + 2) {
        mock.push(MockReply::text("a b c d e f").chunk_delay(Duration::from_millis(40)));
    }
    let created = create_session(cluster.url(0), &CreateSession::message("start")).await;
    let id = created.session_id.clone();
    let token = created.continuation_token.clone();
    // Follow-ups need the current token: messages go out one after another, each with the
    // token the last answer gave, the next one sent while the previous turn may still run.
    let mut token = token;
    let mut keys = Vec::new();
    for (n, send) in plan.iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(send.pause_ms)).await;
        let key = format!("plan-{n}");
        let accepted = follow_up(
            cluster.url(send.server),
            &id,
            &FollowUp {
                admission: Some(if send.coalesce {
                    Admission::Coalesce
                } else {
                    Admission::Preempt
                }),
                client_message_id: Some(key.clone()),
                ..FollowUp::new(&token, format!("message {n}"))
            },
        )
        .await;
        token = accepted.continuation_token;
        keys.push(key);
    }
    let log = settle(cluster.url(1), &id).await;
    assert_contiguous(&log, 0);
    assert_one_turn_at_a_time(&log);
    for key in &keys {
        let recorded = log
            .iter()
            .filter(|e| match &e.body {
                EventBody::MessageReceived(m) => m.client_message_id.as_deref() == Some(key),
                EventBody::MessageQueued(m) => m.client_message_id.as_deref() == Some(key),
                _ => false,
            })
            .count();
        assert_eq!(
            recorded,
            1,
            "message {key} recorded once: {:?}",
            log.iter().map(Event::event_type).collect::<Vec<_>>()
        );
    }
}

/// Waits until the session is waiting with nothing queued; its log.
async fn settle(url: &str, id: &str) -> Vec<Event> {
    for _ in 0..600 {
        let summary = session(url, id).await;
        if summary.status == SessionStatus::Waiting {
            let log = events(url, id).await;
            if log
                .last()
                .is_some_and(|e| matches!(e.body, EventBody::SessionWaiting(_)))
            {
                return log;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("session {id} did not settle within 60 s");
}

/// The replies `[deliver]` posted, once no more arrive for a second.
async fn replies_posted(target: &FakeApi, at_least: usize) -> Vec<serde_json::Value> {
    target.wait_for(at_least, Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    target.calls().into_iter().map(|call| call.body).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn deliveries_spread_over_two_servers_run_once_in_one_session_and_reply_once() {
    let mock = MockModelServer::start().await;
    let target = FakeApi::start().await;
    let env = [
        ("HOOK_WHSEC", channels_support::WHSEC),
        ("TICKETS_TOKEN", "tk-1"),
    ];
    let Some(cluster) = Cluster::start_with(
        "channels_across",
        &mock,
        2,
        channels_support::ticket_project(AGENT, &target.url()),
        &env,
    )
    .await
    else {
        return;
    };
    let (a, b) = (cluster.url(0).to_string(), cluster.url(1).to_string());
    mock.push(slow("First answer."));
    mock.push(MockReply::text("Second answer."));
    // A provider's delivery and its retries, reaching both servers at once: run once.
    let sends = (0..6).map(|i| {
        let url = if i % 2 == 0 { a.clone() } else { b.clone() };
        async move { channels_support::ticket(&url, "msg_dup", 42, "It broke").await }
    });
    let answers = futures::future::join_all(sends).await;
    assert!(
        answers.iter().all(|(status, _)| *status == 202),
        "{answers:?}"
    );
    let fresh = answers
        .iter()
        .filter(|(_, answer)| !channels_support::duplicate(answer))
        .count();
    assert_eq!(fresh, 1, "{answers:?}");
    channels_support::model_requests(&mock, 1).await;
    // The same ticket through the other server while the first turn runs: same session.
    let (status, _) = channels_support::ticket(&b, "msg_next", 42, "Still broken").await;
    assert_eq!(status, 202);
    channels_support::model_requests(&mock, 2).await;
    let replies = replies_posted(&target, 2).await;
    assert_eq!(
        replies,
        [
            serde_json::json!({"text": "First answer."}),
            serde_json::json!({"text": "Second answer."})
        ],
        "each turn's reply is posted once, by the one server following the session"
    );
    let on_a = channels_support::settled(&a, "tickets").await;
    let on_b = channels_support::settled(&b, "tickets").await;
    assert_eq!(on_a, on_b, "both servers list the same deliveries");
    let sessions: Vec<String> = on_a.iter().map(channels_support::session_of).collect();
    assert_eq!(sessions.len(), 2);
    assert_eq!(
        sessions[0], sessions[1],
        "one continuation key, one session"
    );
    assert_eq!(on_a[1].duplicates, 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_delivery_acknowledged_by_a_server_killed_at_once_runs_once_on_another() {
    let mock = MockModelServer::start().await;
    let target = FakeApi::start().await;
    let project = channels_support::ticket_project(AGENT, &target.url());
    let Some(mut cluster) = Cluster::start_with(
        "channels_kill",
        &mock,
        1,
        project,
        &[
            ("HOOK_WHSEC", channels_support::WHSEC),
            ("TICKETS_TOKEN", "tk-1"),
            ("FOLIO_FAULT", "channel-acknowledged"),
        ],
    )
    .await
    else {
        return;
    };
    cluster
        .add(
            &mock,
            &[
                ("HOOK_WHSEC", channels_support::WHSEC),
                ("TICKETS_TOKEN", "tk-1"),
            ],
        )
        .await;
    let (a, b) = (cluster.url(0).to_string(), cluster.url(1).to_string());
    mock.push(MockReply::text("Taken over."));
    // A records and acknowledges the delivery, then dies before running it.
    let (status, answer) = channels_support::ticket(&a, "msg_k", 7, "Kill me").await;
    assert_eq!((status, channels_support::duplicate(&answer)), (202, false));
    channels_support::kill(cluster.servers.remove(0)).await;
    // The provider's retry reaches B: a duplicate, while B runs the work once A's claim
    // expired.
    let (status, answer) = channels_support::ticket(&b, "msg_k", 7, "Kill me").await;
    assert_eq!((status, channels_support::duplicate(&answer)), (202, true));
    let settled = channels_support::settled(&b, "tickets").await;
    assert_eq!(settled.len(), 1);
    assert_eq!(settled[0].status, folio_protocol::DeliveryStatus::Accepted);
    let replies = replies_posted(&target, 1).await;
    assert_eq!(replies, [serde_json::json!({"text": "Taken over."})]);
    assert_eq!(mock.requests().len(), 1, "the work ran once");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_follow_of_a_server_killed_mid_turn_is_taken_over_and_the_next_reply_sent_once() {
    let mock = MockModelServer::start().await;
    let target = FakeApi::start().await;
    let env = [
        ("HOOK_WHSEC", channels_support::WHSEC),
        ("TICKETS_TOKEN", "tk-1"),
    ];
    let Some(mut cluster) = Cluster::start_with(
        "channels_follow",
        &mock,
        2,
        channels_support::ticket_project(AGENT, &target.url()),
        &env,
    )
    .await
    else {
        return;
    };
    let (a, b) = (cluster.url(0).to_string(), cluster.url(1).to_string());
    mock.push(
        MockReply::text("one two three four five six seven eight nine ten")
            .chunk_delay(Duration::from_millis(500)),
    );
    mock.push(MockReply::text("After the takeover."));
    let (status, _) = channels_support::ticket(&a, "msg_1", 9, "Start").await;
    assert_eq!(status, 202);
    channels_support::model_requests(&mock, 1).await;
    // A (running the turn and following the session) dies mid-turn.
    channels_support::kill(cluster.servers.remove(0)).await;
    let (status, _) = channels_support::ticket(&b, "msg_2", 9, "Again").await;
    assert_eq!(status, 202);
    channels_support::model_requests(&mock, 2).await;
    let replies = replies_posted(&target, 1).await;
    assert_eq!(
        replies,
        [serde_json::json!({"text": "After the takeover."})],
        "the cut-short turn has no reply; the next one is posted once, by B"
    );
    let settled = channels_support::settled(&b, "tickets").await;
    assert_eq!(settled[0].session_id, settled[1].session_id);
}

/// The sessions in the cluster's database, read from the store itself.
async fn stored_sessions(cluster: &Cluster) -> Vec<String> {
    let store = folio_store_postgres::PgStore::connect(&cluster.database, Default::default())
        .await
        .unwrap();
    let query = folio_store::ListQuery {
        principal: None,
        before: None,
        limit: 100,
        ..Default::default()
    };
    folio_store::SessionStore::list_sessions(&store, &query)
        .await
        .unwrap()
        .into_iter()
        .map(|meta| meta.session_id)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_create_whose_server_died_before_answering_is_removed_and_its_retry_runs_once() {
    let mock = MockModelServer::start().await;
    let Some(mut cluster) = Cluster::start_with(
        "unacknowledged_create",
        &mock,
        1,
        project(AGENT),
        &[("FOLIO_FAULT", "session-created")],
    )
    .await
    else {
        return;
    };
    cluster.add(&mock, &[]).await;
    let b = cluster.url(1).to_string();
    // A aborts once the session's row is in the store, before its first event: no answer.
    let request = CreateSession {
        client_message_id: Some("create-1".into()),
        ..CreateSession::message("hello")
    };
    let answer = client()
        .post(format!("{}/v1/session", cluster.url(0)))
        .json(&request)
        .send()
        .await;
    assert!(answer.is_err(), "A answered: {answer:?}");
    let orphan = stored_sessions(&cluster).await;
    assert_eq!(orphan.len(), 1, "the row A created");
    // B removes it once two lease lifetimes passed with its log still empty.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !stored_sessions(&cluster).await.is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the unacknowledged create was not removed within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The client retries with its key on B: the key's session is made (its recorded id), and
    // the message runs once.
    mock.push(MockReply::text("Hello."));
    let created = create_session(&b, &request).await;
    assert_eq!(created.session_id, orphan[0]);
    let log = waiting_after(&b, &created.session_id, 1).await;
    assert_eq!(all::<MessageReceived>(&log).len(), 1);
    assert_eq!(mock.requests().len(), 1);
}
