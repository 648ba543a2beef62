//! `folio serve --record-dir`: every session's model exchanges recorded as a replay fixture,
//! subagent calls included, turned into an offline eval by `folio eval --from-session
//! --record-dir`; a `kill -9` leaves whole lines; no session id or slug writes outside the folder.

mod serve_support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use folio_model::ReplayProvider;
use folio_protocol::{CreateSession, EvalCaseSaved, FollowUp, SaveEvalCase};
use folio_test_support::{MockModelServer, MockReply, read_wire};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::{Value, json};
use serve_support::*;

const AGENT: &str = "model = \"openai:gpt-test\"\n[root]\n\"/notes\" = { temp = { \"/a.md\" = \"remember the milk\\n\" } }\n";

/// `folio eval --dir DIR --state-root STATE ARGS` with no model server and no key.
async fn offline_eval(dir: &Path, state: &Path, args: &[&str]) -> Output {
    tokio::process::Command::new(folio_bin())
        .env_remove("OPENAI_API_KEY")
        .env_remove("FOLIO_MODEL")
        .env_remove("FOLIO_RECORD_DIR")
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9")
        .arg("eval")
        .arg("--dir")
        .arg(dir)
        .arg("--state-root")
        .arg(state)
        .args(args)
        .output()
        .await
        .unwrap()
}

fn texts(output: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Each line of `fixture` parsed as a recorded exchange.
fn exchanges(fixture: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(fixture).unwrap();
    assert!(text.ends_with('\n'), "a torn last line: {text:?}");
    text.lines()
        .map(|line| {
            let exchange: Value = serde_json::from_str(line).expect("a whole exchange per line");
            assert!(exchange["request"]["messages"].is_array(), "{exchange}");
            assert!(exchange["response"].is_array(), "{exchange}");
            exchange
        })
        .collect()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn a_served_session_becomes_an_eval_that_replays_offline_and_passes() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "Write",
        json!({"path": "todo.md", "contents": "milk"}),
    )]));
    mock.push(MockReply::text("Noted: milk."));
    mock.push(MockReply::tool_calls([(
        "Task",
        json!({"subagent": "critic", "prompt": "judge todo.md"}),
    )]));
    mock.push(MockReply::text("Fine."));
    mock.push(MockReply::text("The critic says fine."));
    let dir = project("model = \"openai:gpt-test\"\n");
    write_files(
        dir.path(),
        &[
            (
                "agent/subagents/critic/agent.toml",
                "description = \"Judges a note.\"\n",
            ),
            (
                "agent/subagents/critic/instructions.md",
                "You judge notes.\n",
            ),
        ],
    );
    let state = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let record = scratch.path().join("recordings");
    let mut server = serve(
        &mock.openai_base_url(),
        dir.path(),
        state.path(),
        &["--record-dir", record.to_str().unwrap()],
    )
    .await;
    let url = server.url.clone();
    let created = create_session(&url, &CreateSession::message("Remember milk")).await;
    let id = created.session_id.clone();
    let mut stream = Stream::open(&url, &id, 0, None).await;
    stream.until("turn.completed").await;
    follow_up(
        &url,
        &id,
        &FollowUp::new(&created.continuation_token, "Judge it"),
    )
    .await;
    stream.until_count("turn.completed", 2).await;

    let fixture = record.join("test-agent").join(format!("{id}.jsonl"));
    let recorded = exchanges(&fixture);
    let user_texts: Vec<Vec<&Value>> = recorded
        .iter()
        .map(|exchange| {
            exchange["request"]["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "user")
                .map(|m| &m["text"])
                .collect()
        })
        .collect();
    assert_eq!(
        user_texts,
        [
            vec!["Remember milk"],
            vec!["Remember milk"],
            vec!["Remember milk", "Judge it"],
            // The subagent's call, made inside the `Task` call, is the session's too.
            vec!["judge todo.md"],
            vec!["Remember milk", "Judge it"],
        ]
    );
    assert_eq!(
        (
            mode(&record),
            mode(&record.join("test-agent")),
            mode(&fixture)
        ),
        (0o700, 0o700, 0o600)
    );

    // The playground's "Save as eval case" replays the recording too.
    let (status, saved) = call_as::<EvalCaseSaved>(
        Method::POST,
        &format!("{url}/v1/session/{id}/eval-case"),
        Some(&SaveEvalCase {
            name: "judged".into(),
        }),
        None,
    )
    .await;
    assert_eq!(
        (status, saved.path.as_str()),
        (201, "evals/from-session/judged.eval.toml")
    );
    let saved_text = std::fs::read_to_string(dir.path().join(&saved.path)).unwrap();
    assert!(
        saved_text.starts_with("model = \"replay:fixtures/from-session/judged.jsonl\"\n"),
        "{saved_text}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("evals/fixtures/from-session/judged.jsonl")).unwrap(),
        std::fs::read(&fixture).unwrap()
    );

    // No server, no model: the session is an eval that replays its recording.
    server.child.kill().await.unwrap();
    drop(mock);
    let written = offline_eval(
        dir.path(),
        state.path(),
        &[
            "--from-session",
            &id,
            "--record-dir",
            record.to_str().unwrap(),
        ],
    )
    .await;
    assert!(written.status.success(), "{}", texts(&written));
    let case = dir
        .path()
        .join(format!("evals/from-session/{id}.eval.toml"));
    assert_eq!(
        String::from_utf8_lossy(&written.stdout).trim(),
        case.display().to_string()
    );
    let text = std::fs::read_to_string(&case).unwrap();
    assert!(
        text.starts_with(&format!(
            "model = \"replay:fixtures/from-session/{id}.jsonl\"\ndescription = \"From session {id}\"\n"
        )),
        "{text}"
    );
    let copy = dir
        .path()
        .join(format!("evals/fixtures/from-session/{id}.jsonl"));
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(&fixture).unwrap()
    );

    let replayed = offline_eval(dir.path(), state.path(), &["--json"]).await;
    assert!(replayed.status.success(), "{}", texts(&replayed));
    let run: folio_protocol::EvalRun =
        read_wire(&serde_json::from_slice::<Value>(&replayed.stdout).unwrap());
    let mut cases: Vec<(&str, &str, bool, usize)> = run
        .cases
        .iter()
        .map(|c| {
            (
                c.eval_id.as_str(),
                c.case_id.as_str(),
                c.ok,
                c.attempts[0].steps.len(),
            )
        })
        .collect();
    cases.sort();
    let from_session = format!("from-session/{id}");
    let mut expected = [
        ("from-session/judged", "judged", true, 2),
        (from_session.as_str(), "replayed", true, 2),
    ];
    expected.sort();
    assert_eq!(cases, expected);
}

#[tokio::test]
async fn kill_9_mid_session_leaves_whole_lines_and_a_restart_appends() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "Read",
        json!({"path": "/notes/a.md"}),
    )]));
    mock.push(
        MockReply::text("one two three four five six seven eight nine ten eleven twelve")
            .chunk_delay(Duration::from_millis(400)),
    );
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    let record = tempfile::tempdir().unwrap();
    // The single-agent layout records under the project folder's name too.
    let flags = [
        "--mode",
        "single",
        "--record-dir",
        record.path().to_str().unwrap(),
    ];
    let mut server = serve(&mock.openai_base_url(), dir.path(), state.path(), &flags).await;
    let url = server.url.clone();
    let created = create_session(&url, &CreateSession::message("first")).await;
    let id = created.session_id.clone();
    let mut stream = Stream::open(&url, &id, 0, None).await;
    // The second model call is streaming: the first one is on disk.
    stream.until("message.appended").await;
    server.child.start_kill().unwrap();
    server.child.wait().await.unwrap();
    drop(stream);

    let fixture = record.path().join("test-agent").join(format!("{id}.jsonl"));
    let recorded = exchanges(&fixture);
    assert_eq!(recorded.len(), 1, "the call in flight is lost, no more");
    assert_eq!(
        recorded[0]["request"]["messages"],
        json!([{"role": "user", "text": "first"}])
    );
    assert_eq!(ReplayProvider::open(&fixture).unwrap().len(), 1);

    // The restarted server appends the session's next calls to its fixture.
    mock.push(MockReply::text("continued after the restart"));
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &flags).await;
    let url = server.url.clone();
    let mut stream = Stream::open(&url, &id, 0, None).await;
    stream.until("session.waiting").await;
    follow_up(
        &url,
        &id,
        &FollowUp::new(&created.continuation_token, "second"),
    )
    .await;
    stream.until("turn.completed").await;
    let recorded = exchanges(&fixture);
    assert_eq!(recorded.len(), 2);
    assert_eq!(
        recorded[1]["response"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|delta| delta["text"].as_str())
            .collect::<String>(),
        "continued after the restart"
    );
}

#[tokio::test]
async fn no_session_id_or_slug_reaches_outside_the_record_dir() {
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    let record = tempfile::tempdir().unwrap();
    let base = record.path().join("inside");
    std::fs::create_dir(&base).unwrap();
    for hostile in [
        "../../escape",
        "ses_../../../../tmp/x",
        "/etc/passwd",
        "ses_01ARZ3NDEKTSV4RRFFQ69G5FA/",
    ] {
        let output = offline_eval(
            dir.path(),
            state.path(),
            &[
                "--from-session",
                hostile,
                "--record-dir",
                base.to_str().unwrap(),
            ],
        )
        .await;
        assert_eq!(output.status.code(), Some(1), "{}", texts(&output));
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("is not a session id"),
            "{}",
            texts(&output)
        );
    }
    // Nothing was read or written anywhere under the record folder's parent or the project.
    let names = |path: &Path| -> Vec<String> {
        std::fs::read_dir(path)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect()
    };
    assert_eq!(names(record.path()), ["inside"]);
    assert!(names(&base).is_empty());
    assert!(!dir.path().join("evals").exists());

    // A session id the server never made has no fixture: the case is written as before.
    let unknown = "ses_01ARZ3NDEKTSV4RRFFQ69G5FAV";
    let output = offline_eval(
        dir.path(),
        state.path(),
        &[
            "--from-session",
            unknown,
            "--record-dir",
            base.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{}", texts(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains(&format!("no session {unknown}")),
        "{}",
        texts(&output)
    );

    // A folder of agents: a directory name that is not a slug is refused before anything is
    // recorded.
    let agents = tempfile::tempdir().unwrap();
    write_files(
        &agents.path().join("not a slug"),
        &[("agent/agent.toml", "model = \"openai:gpt-test\"\n")],
    );
    let output = tokio::process::Command::new(folio_bin())
        .env_remove("FOLIO_RECORD_DIR")
        .args(["serve", "--port", "0", "--dir"])
        .arg(agents.path())
        .arg("--state-root")
        .arg(state.path())
        .arg("--record-dir")
        .arg(&base)
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", texts(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("must match [A-Za-z0-9][A-Za-z0-9_-]*"),
        "{}",
        texts(&output)
    );
    assert!(names(&base).is_empty());
}
