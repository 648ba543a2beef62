//! Hooks: event-filtered subprocess observers that run after an event is recorded, in the
//! background, under a timeout; slow or failing hooks never delay or break a turn.

mod part_b;

use std::sync::Arc;
use std::time::{Duration, Instant};

use folio_agent::{HookDispatcher, HookFailure, HookOutcome};
use folio_agent::{TurnOutcome, discover};
use folio_protocol::{HookPayload, TurnCompleted};
use folio_test_support::{MockModelServer, MockReply, data, read_wire};
use part_b::*;
use pretty_assertions::assert_eq;
use serde_json::Value;

/// A sink that hands every recorded event to the agent's hooks, as sessions do.
fn hooked_sink(hooks: &HookDispatcher) -> MemorySink {
    let hooks = hooks.for_session(Some("cli"), Some("test"));
    MemorySink {
        observer: Some(Box::new(move |event| hooks.dispatch(event))),
        ..MemorySink::default()
    }
}

#[tokio::test]
async fn a_slow_hook_does_not_delay_the_turn_and_a_recording_hook_sees_events_in_order() {
    let mock = MockModelServer::start().await;
    let dir = project(&[
        (
            "agent/hooks/slow.toml",
            "events = [\"turn.completed\"]\ncommand = [\"sleep\", \"10\"]\n",
        ),
        (
            "agent/hooks/audit/record.toml",
            "events = [\"turn.*\", \"message.received\"]\ncommand = \"cat >> seen.ndjson; echo >> seen.ndjson\"\n",
        ),
    ]);
    let agent = load_agent(dir.path(), &mock.openai_base_url(), env_of(&[])).await;
    let names: Vec<&str> = agent
        .definition
        .hooks
        .iter()
        .map(|h| h.name.as_str())
        .collect();
    assert_eq!(names, ["audit/record", "slow"]);
    mock.push(MockReply::text("hello"));
    let sink = hooked_sink(&agent.hooks);
    let started = Instant::now();
    let outcome = run_turn(&agent, &sink, &dir.path().join("workspace"), "hi").await;
    let turn_time = started.elapsed();
    assert_eq!(
        outcome,
        TurnOutcome::Completed {
            reply: "hello".into()
        }
    );
    assert!(
        turn_time < Duration::from_secs(3),
        "the turn took {turn_time:?}"
    );

    // The recording hook ran once per matching event, in log order, with the envelope on stdin.
    let seen_path = dir.path().join("agent/hooks/audit/seen.ndjson");
    let deadline = Instant::now() + Duration::from_secs(10);
    let seen: Vec<Value> = loop {
        let text = std::fs::read_to_string(&seen_path).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if lines.len() == 3 || Instant::now() > deadline {
            break lines;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let seen: Vec<HookPayload> = seen.iter().map(read_wire).collect();
    let types: Vec<&str> = seen.iter().map(|p| p.event.event_type()).collect();
    assert_eq!(
        types,
        ["message.received", "turn.started", "turn.completed"]
    );
    let completed = &seen[2];
    assert_eq!(data::<TurnCompleted>(&completed.event).reply, "hello");
    assert_eq!(completed.event.session_id, "ses_test");
    assert_eq!(
        (completed.channel.as_deref(), completed.purpose.as_deref()),
        (Some("cli"), Some("test"))
    );
    let indexes: Vec<u64> = seen.iter().map(|p| p.event.index).collect();
    assert!(indexes.windows(2).all(|w| w[0] < w[1]), "{indexes:?}");
}

#[tokio::test]
async fn failing_and_timed_out_hooks_are_logged_and_skipped() {
    let dir = project(&[
        (
            "agent/hooks/fails.toml",
            "events = [\"*\"]\ncommand = \"echo boom >&2; exit 3\"\n",
        ),
        (
            "agent/hooks/hangs.toml",
            "events = [\"turn.completed\"]\ncommand = \"sleep 10\"\ntimeout_secs = 1\n",
        ),
        (
            "agent/hooks/missing.toml",
            "events = [\"turn.completed\"]\ncommand = [\"./not-there.sh\"]\n",
        ),
    ]);
    let mock = MockModelServer::start().await;
    let agent = load_agent(dir.path(), &mock.openai_base_url(), env_of(&[])).await;
    mock.push(MockReply::text("done"));
    let sink = hooked_sink(&agent.hooks);
    let outcome = run_turn(&agent, &sink, &dir.path().join("workspace"), "go").await;
    assert_eq!(
        outcome,
        TurnOutcome::Completed {
            reply: "done".into()
        }
    );
    let started = Instant::now();
    assert!(
        agent.hooks.flush(Duration::from_secs(8)).await,
        "hooks did not finish"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the timeout did not kill the hook"
    );
    let runs = agent.hooks.recent_runs();
    let of = |hook: &str| -> Vec<HookOutcome> {
        runs.iter()
            .filter(|r| r.hook == hook)
            .map(|r| r.outcome.clone())
            .collect()
    };
    // `fails` saw every event of the turn and failed on each; later events still ran.
    let fails = of("fails");
    assert_eq!(fails.len(), sink.events().len());
    let HookOutcome::Failed(failure @ HookFailure::Exited { status, stderr }) = &fails[0] else {
        panic!("{fails:?}");
    };
    assert_eq!((status.code(), stderr.as_str()), (Some(3), "boom"));
    assert_eq!(failure.to_string(), "exited with exit status: 3: boom");
    assert_eq!(
        of("hangs"),
        [HookOutcome::Failed(HookFailure::TimedOut {
            after: Duration::from_secs(1)
        })]
    );
    assert_eq!(
        HookFailure::TimedOut {
            after: Duration::from_secs(1)
        }
        .to_string(),
        "timed out after 1s and was killed"
    );
    let missing = of("missing");
    assert_eq!(missing.len(), 1);
    let HookOutcome::Failed(failure @ HookFailure::Spawn { program, source }) = &missing[0] else {
        panic!("{missing:?}");
    };
    assert!(program.ends_with("not-there.sh"), "{program:?}");
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    let message = failure.to_string();
    assert!(
        message.starts_with("cannot run ") && message.contains("not-there.sh"),
        "{message}"
    );
}

#[test]
fn hook_manifests_are_checked() {
    let dir = project(&[
        (
            "agent/hooks/empty.toml",
            "events = []\ncommand = \"true\"\n",
        ),
        (
            "agent/hooks/typo.toml",
            "event = [\"turn.completed\"]\ncommand = \"true\"\n",
        ),
        (
            "agent/hooks/odd.toml",
            "events = [\"turn.finished\"]\ncommand = \"true\"\n",
        ),
    ]);
    let lines: Vec<String> = discover(dir.path())
        .diagnostics
        .iter()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(
        lines,
        [
            "error: agent/hooks/empty.toml: events: list at least one event type (e.g. [\"turn.completed\"] or [\"action.*\"])",
            "error: agent/hooks/typo.toml:1: column 1: unknown key `event` (did you mean `events`?)",
            "warning: agent/hooks/odd.toml: events: \"turn.finished\" matches no event type, so it never fires",
        ]
    );
}

#[test]
fn without_a_runtime_hooks_are_disabled_not_panicking() {
    let dir = project(&[(
        "agent/hooks/a.toml",
        "events = [\"*\"]\ncommand = \"true\"\n",
    )]);
    let definition = discover(dir.path()).definition.unwrap();
    let dispatcher = HookDispatcher::new(&definition.hooks);
    assert!(dispatcher.is_empty());
    let _ = Arc::new(dispatcher);
}
