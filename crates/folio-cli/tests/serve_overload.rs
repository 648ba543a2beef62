//! Overload through the real binary: with `[concurrency] max_running_turns` and
//! `max_queued_turns` set, a server offered more turns than it can run sheds the excess with
//! `503 overloaded` and `Retry-After` instead of queueing without bound. What it acknowledged
//! it answers (every `201` gets its turn's end), a refused create leaves no session, the queue
//! never grows past its bound (`turn.queued {position}`), and the process's memory stays flat.

mod serve_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use folio_protocol::{CreateSession, ErrorBody, ErrorCode, FollowUp, SessionCreated, TurnQueued};
use folio_test_support::{MockModelServer, MockReply};
use reqwest::Method;
use serve_support::*;

const AGENT: &str = "name = \"Test Agent\"\nmodel = \"openai:gpt-test\"\n";

/// The resident set of process `pid` in KiB (`VmRSS` in `/proc/PID/status`).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

/// POSTs `body` to `url`, answering the status, the `Retry-After` header and the body.
async fn post(url: &str, body: &impl serde::Serialize) -> (u16, Option<u64>, serde_json::Value) {
    let response = client().post(url).json(body).send().await.unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|value| value.to_str().unwrap().parse::<u64>().unwrap());
    (status, retry_after, response.json().await.unwrap())
}

/// Checks a refusal: `503 overloaded`, a whole number of seconds to wait, a message naming
/// the setting.
fn assert_overloaded(status: u16, retry_after: Option<u64>, body: &serde_json::Value) {
    assert_eq!(status, 503, "{body}");
    let error: ErrorBody = serde_json::from_value(body.clone()).unwrap();
    assert_eq!(error.error, ErrorCode::Overloaded);
    assert!(
        error.message.contains("max_queued_turns"),
        "{}",
        error.message
    );
    assert!(
        retry_after.is_some_and(|s| s >= 1),
        "Retry-After: {retry_after:?}"
    );
}

#[tokio::test]
async fn a_full_queue_refuses_creates_and_follow_ups_with_503_and_nothing_written() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("first"));
    // Turns that run until stopped (the model answers after a minute).
    for _ in 0..2 {
        mock.push(MockReply::text("late").first_byte_delay(Duration::from_secs(60)));
    }
    mock.push(MockReply::text("after"));
    let agent = format!("{AGENT}\n[concurrency]\nmax_running_turns = 1\nmax_queued_turns = 1\n");
    let dir = project(&agent);
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = &server.url;

    // An idle session to follow up later (its turn runs before the queue fills).
    let idle = create_session(url, &CreateSession::message("idle")).await;
    Stream::open(url, &idle.session_id, 0, None)
        .await
        .until("session.waiting")
        .await;

    // One turn runs, one waits: the queue is full.
    let running = create_session(url, &CreateSession::message("runs")).await;
    Stream::open(url, &running.session_id, 0, None)
        .await
        .until("turn.started")
        .await;
    let queued = create_session(url, &CreateSession::message("waits")).await;
    Stream::open(url, &queued.session_id, 0, None)
        .await
        .until("turn.queued")
        .await;

    let (status, retry_after, body) = post(
        &format!("{url}/v1/session"),
        &CreateSession::message("refused"),
    )
    .await;
    assert_overloaded(status, retry_after, &body);
    let follow_up = FollowUp::new(idle.continuation_token.clone(), "refused too");
    let (status, retry_after, body) =
        post(&format!("{url}/v1/session/{}", idle.session_id), &follow_up).await;
    assert_overloaded(status, retry_after, &body);

    // Nothing was written: three sessions, and the idle one's log ends where it did.
    let (status, page) = get(&format!("{url}/v1/sessions")).await;
    assert_eq!(status, 200);
    assert_eq!(page["data"].as_array().unwrap().len(), 3, "{page}");
    let types: Vec<String> = events(url, &idle.session_id)
        .await
        .iter()
        .map(|e| e.event_type().to_string())
        .collect();
    assert_eq!(types.last().unwrap(), "session.waiting", "{types:?}");
    assert_eq!(types.iter().filter(|t| *t == "message.received").count(), 1);

    // Room again once the running turn stops: the same follow-up (same token) is accepted.
    for id in [&running.session_id, &queued.session_id] {
        let (status, _) = call(
            Method::POST,
            &format!("{url}/v1/session/{id}/stop"),
            Some(serde_json::json!({})),
            None,
        )
        .await;
        assert_eq!(status, 200);
    }
    let (status, _, body) =
        post(&format!("{url}/v1/session/{}", idle.session_id), &follow_up).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_times_the_sustainable_load_is_shed_and_every_acknowledged_turn_completes() {
    const RUNNING: u32 = 2;
    const QUEUED: u32 = 2;
    const TURN: Duration = Duration::from_millis(500);
    // Sustainable: RUNNING turns per TURN (4/s); offered open-loop at four times that for 5 s.
    const OFFERED: u32 = 80;
    let interval = TURN / (4 * RUNNING);

    let mock = MockModelServer::start().await;
    for _ in 0..OFFERED {
        mock.push(MockReply::text("done").first_byte_delay(TURN));
    }
    let agent = format!(
        "{AGENT}\n[concurrency]\nmax_running_turns = {RUNNING}\nmax_queued_turns = {QUEUED}\n"
    );
    let dir = project(&agent);
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let pid = server.child.id().unwrap();
    let url = Arc::new(server.url.clone());

    let accepted = Arc::new(AtomicU32::new(0));
    let refused = Arc::new(AtomicU32::new(0));
    let completed = Arc::new(AtomicU32::new(0));
    let deepest = Arc::new(AtomicU64::new(0));
    let mut rss = Vec::new();
    let mut tasks = tokio::task::JoinSet::new();
    let mut ticker = tokio::time::interval(interval);
    for n in 0..OFFERED {
        ticker.tick().await;
        if n % 8 == 0 {
            rss.push(rss_kib(pid));
        }
        let (url, accepted, refused, completed, deepest) = (
            url.clone(),
            accepted.clone(),
            refused.clone(),
            completed.clone(),
            deepest.clone(),
        );
        tasks.spawn(async move {
            let (status, retry_after, body) = post(
                &format!("{url}/v1/session"),
                &CreateSession::message(format!("m{n}")),
            )
            .await;
            if status == 503 {
                assert_overloaded(status, retry_after, &body);
                refused.fetch_add(1, Ordering::SeqCst);
                return;
            }
            assert_eq!(status, 201, "{body}");
            accepted.fetch_add(1, Ordering::SeqCst);
            let created: SessionCreated = serde_json::from_value(body).unwrap();
            let mut stream = Stream::open(&url, &created.session_id, 0, None).await;
            stream.until("turn.completed").await;
            if let Some(queued) = all::<TurnQueued>(&stream.events).first() {
                deepest.fetch_max(u64::from(queued.position), Ordering::SeqCst);
            }
            completed.fetch_add(1, Ordering::SeqCst);
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    rss.push(rss_kib(pid));

    let (accepted, refused) = (
        accepted.load(Ordering::SeqCst),
        refused.load(Ordering::SeqCst),
    );
    assert_eq!(accepted + refused, OFFERED);
    assert!(
        refused > 0,
        "nothing was shed at four times the sustainable load"
    );
    assert!(accepted > 0);
    assert_eq!(
        completed.load(Ordering::SeqCst),
        accepted,
        "every 201 was answered"
    );
    // A `turn.queued` position counts the turns waiting for a slot, including those just
    // handed a slot that have not yet left the line (at most one per slot): so at most
    // max_queued_turns + max_running_turns, where an unbounded queue reaches hundreds here.
    let deepest = deepest.load(Ordering::SeqCst);
    assert!(
        deepest <= u64::from(QUEUED + RUNNING),
        "a turn waited at position {deepest}, past max_queued_turns = {QUEUED} (+ {RUNNING} handed a slot)"
    );
    // Every acknowledged session is listed; no refused create left one behind.
    let mut listed = 0;
    let mut cursor: Option<String> = None;
    loop {
        let page_url = match &cursor {
            Some(c) => format!("{url}/v1/sessions?limit=200&cursor={c}"),
            None => format!("{url}/v1/sessions?limit=200"),
        };
        let (status, page) = get(&page_url).await;
        assert_eq!(status, 200);
        listed += page["data"].as_array().unwrap().len() as u32;
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(listed, accepted);
    eprintln!(
        "offered {OFFERED}: {accepted} accepted and answered, {refused} refused; deepest queue position {deepest}; RSS KiB {rss:?}"
    );
    // Flat memory: the last sample within 32 MiB of the first taken under load.
    let (first, last) = (rss[1], *rss.last().unwrap());
    assert!(
        last <= first + 32 * 1024,
        "RSS grew from {first} KiB to {last} KiB under load: {rss:?}"
    );
}
