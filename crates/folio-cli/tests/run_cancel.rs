//! Stopping a turn: an interrupt reaches the model stream and a running `Shell` child promptly,
//! and the turn is recorded as `turn interrupted`.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use folio_protocol::EventBody;
use folio_test_support::{MockModelServer, MockReply, read_ndjson};
use serde_json::json;

/// How long cancellation may take to reach the provider and the Shell child.
const CANCEL_BUDGET: Duration = Duration::from_millis(200);

fn interrupt(child: &tokio::process::Child) {
    let pid = child.id().expect("the child is running") as i32;
    // SAFETY: sending a signal to our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
}

fn last_event_types(state_root: &Path) -> Vec<String> {
    let traces = state_root.join("traces");
    let log = std::fs::read_dir(&traces)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    read_ndjson(&std::fs::read_to_string(log).unwrap())
        .iter()
        .map(|event| match &event.body {
            EventBody::TurnFailed(failed) => format!("turn.failed: {}", failed.message),
            body => body.event_type().to_string(),
        })
        .collect()
}

#[tokio::test]
async fn interrupt_drops_the_model_stream_promptly() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("word ".repeat(200)).chunk_delay(Duration::from_millis(100)));
    let dir = project("model = \"openai:m\"\n");
    let state = dir.path().join("state");
    let mut child = folio(&mock.openai_base_url())
        .args(["run", "--message", "talk slowly", "--state-root"])
        .arg(&state)
        .arg("--dir")
        .arg(dir.path())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while mock.requests().is_empty() {
        assert!(Instant::now() < deadline, "the model was never called");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent = Instant::now();
    interrupt(&child);
    let disconnect = mock
        .wait_for_disconnect(Duration::from_secs(5))
        .await
        .expect("the provider stream was never dropped");
    let took = disconnect.at.saturating_duration_since(sent);
    assert!(
        took < CANCEL_BUDGET,
        "the stream was dropped after {took:?}"
    );
    let status = child.wait().await.unwrap();
    assert_eq!(status.code(), Some(1));
    let types = last_event_types(&state);
    assert!(
        types.contains(&"turn.failed: turn interrupted".to_string()),
        "{types:?}"
    );
    assert_eq!(types.last().map(String::as_str), Some("session.waiting"));
}

fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A zombie waiting for its reaper is dead too.
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test]
async fn interrupt_kills_a_running_shell_child_promptly() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "Shell",
        json!({"command": "sleep 30 & echo $! > sleep.pid; wait"}),
    )]));
    let dir = project("model = \"openai:m\"\n");
    let state = dir.path().join("state");
    let mut child = folio(&mock.openai_base_url())
        .args(["run", "--message", "sleep", "--state-root"])
        .arg(&state)
        .arg("--dir")
        .arg(dir.path())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let pid = loop {
        assert!(Instant::now() < deadline, "the Shell command never started");
        let pid_file = std::fs::read_dir(state.join("sessions"))
            .ok()
            .and_then(|mut dirs| dirs.next())
            .and_then(Result::ok)
            .map(|session| session.path().join("workspace/sleep.pid"));
        if let Some(pid) = pid_file
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|text| text.trim().parse::<u32>().ok())
        {
            break pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(!is_gone(pid));
    let sent = Instant::now();
    interrupt(&child);
    while !is_gone(pid) {
        assert!(
            sent.elapsed() < Duration::from_secs(5),
            "sleep {pid} survived the interrupt"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let took = sent.elapsed();
    assert!(took < CANCEL_BUDGET, "the Shell child died after {took:?}");
    assert_eq!(child.wait().await.unwrap().code(), Some(1));
    let types = last_event_types(&state);
    assert!(
        types.contains(&"turn.failed: turn interrupted".to_string()),
        "{types:?}"
    );
}
