//! The playground in a real headless Chromium (Debian's `chromium`, driven by `playwright-core`
//! from target/test-deps/npm; `scripts/install-test-deps` installs both): every scenario starts
//! `folio serve` with the mock model and runs one node script of tests/playground/. Without the
//! browser or the npm package each test says so and passes without running.

mod hostile_support;
mod serve_support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use folio_protocol::{
    ActionApprovalResolved, ApprovalDecision, CreateSession, ErrorCode, FollowUp, ForkOrigin,
    MessageQueued, MessageReceived, Page, SessionCreated, SessionStarted, SessionSummary,
    StepCompleted, TurnCompleted, TurnFailed, Usage,
};
use folio_test_support::{MockModelServer, MockReply};
use hostile_support::{hostile_placements, hostile_replies, hostile_vectors};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::{Value, json};
use serve_support::*;

/// Where the browser and the driver are, or why the scenarios cannot run here.
fn browser_deps() -> Result<(PathBuf, PathBuf), String> {
    let chromium = PathBuf::from("/usr/bin/chromium");
    let driver = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-deps/npm/node_modules/playwright-core");
    if !chromium.exists() {
        return Err("/usr/bin/chromium is missing (run scripts/install-test-deps as root)".into());
    }
    if !driver.join("package.json").exists() {
        return Err(format!(
            "{} is missing (run scripts/install-test-deps)",
            driver.display()
        ));
    }
    Ok((chromium, driver))
}

/// Runs `tests/playground/<script>` against the server at `url` with `args`; answers its
/// standard output (the scenario's own report), failing the test with its output on failure.
async fn scenario(served: &Served, script: &str, args: &[&str]) -> Option<String> {
    let (chromium, driver) = match browser_deps() {
        Ok(deps) => deps,
        Err(why) => {
            eprintln!("skipping the browser scenario {script}: {why}");
            return None;
        }
    };
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/playground");
    let run = tokio::process::Command::new("node")
        .arg(scripts.join(script))
        .arg(&served.url)
        .args(args)
        .env("PLAYWRIGHT_CORE", &driver)
        .env("CHROMIUM", &chromium)
        .env("FOLIO_HOST", &served.host)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .unwrap_or_else(|_| panic!("{script} did not finish within 120 s"))
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{script} failed:\n{stdout}\n{stderr}"
    );
    Some(stdout)
}

/// An agent with an `echo` tool, a `deploy` tool that needs approval and a `helper` subagent.
fn agent() -> Project {
    let dir = project("name = \"ops\"\nmodel = \"openai:gpt-test\"\n");
    write_files(
        dir.path(),
        &[
            (
                "agent/tools/echo.toml",
                "description = \"Echo the input.\"\ncommand = [\"cat\"]\n\n[input_schema]\ntype = \"object\"\nrequired = [\"text\"]\nproperties.text = { type = \"string\" }\n",
            ),
            (
                "agent/subagents/helper/agent.toml",
                "description = \"Looks things up.\"\n",
            ),
            (
                "agent/subagents/helper/instructions.md",
                "You look things up with echo.\n",
            ),
            (
                "agent/tools/deploy.toml",
                "description = \"Deploy a service.\"\ncommand = [\"sh\", \"-c\", \"cat >/dev/null; echo deployed\"]\nneeds_approval = true\n\n[input_schema]\ntype = \"object\"\nrequired = [\"target\"]\nproperties.target = { type = \"string\" }\n",
            ),
        ],
    );
    dir
}

/// A served agent with its mock model and state root (kept alive together).
struct Setup {
    mock: MockModelServer,
    served: Served,
    dir: Project,
    state: tempfile::TempDir,
}

async fn setup(replies: Vec<MockReply>, extra: &[&str]) -> Setup {
    setup_with(replies, extra, &[], &[]).await
}

/// [`setup`] with extra files in the agent folder and environment variables for the server.
async fn setup_with(
    replies: Vec<MockReply>,
    extra: &[&str],
    files: &[(&str, &str)],
    env: &[(&str, &str)],
) -> Setup {
    let mock = MockModelServer::start().await;
    for reply in replies {
        mock.push(reply);
    }
    let dir = agent();
    write_files(dir.path(), files);
    let state = tempfile::tempdir().unwrap();
    let served = serve_with_env(
        &mock.openai_base_url(),
        dir.path(),
        state.path(),
        extra,
        env,
    )
    .await;
    Setup {
        mock,
        served,
        dir,
        state,
    }
}

/// The (single) session of the server's only principal.
async fn only_session(url: &str) -> String {
    let page: Page<SessionSummary> =
        expect(Method::GET, &format!("{url}/v1/sessions"), NO_BODY, 200).await;
    assert_eq!(page.data.len(), 1, "{:?}", page.data);
    page.data[0].session_id.clone()
}

#[tokio::test]
async fn chat_shows_a_tool_call_with_its_arguments_and_result_and_the_trace() {
    let s = setup(
        vec![
            MockReply::tool_calls([("echo", json!({"text": "hello"}))]),
            MockReply::text("Echoed."),
        ],
        &[],
    )
    .await;
    scenario(&s.served, "chat_tool.mjs", &[]).await;
}

/// A reply with most of what Markdown does, a raw HTML tag and a script link.
const MARKDOWN: &str = r#"Here is **bold**, *italic*, `inline code` and ~~struck~~ text.

- one
- two

3. three
4. four

| Name | Count |
| :--- | ----: |
| apples | 3 |

```rust
fn main() {
    println!("hi");
}
```

See [the docs](https://example.com/docs "Docs"), <ops@example.com>, https://example.com/bare and ![a diagram](https://example.com/d.png).

<b>not bold</b> and a [script link](javascript:alert(1))"#;

#[tokio::test]
async fn model_text_renders_as_markdown_and_no_hostile_reply_tool_input_or_result_runs() {
    let replies = hostile_replies();
    let vectors = hostile_vectors();
    let mut script = vec![MockReply::text(MARKDOWN)];
    script.extend(replies.iter().map(MockReply::text));
    // Every vector as echo's arguments (its result echoes them), and one as a tool name.
    let mut calls: Vec<(String, Value)> = vectors
        .iter()
        .map(|vector| ("echo".to_string(), json!({ "text": vector })))
        .collect();
    calls.push((
        "<img src=x onerror=alert(0)>".into(),
        json!({ "text": "<svg onload=alert(0)>" }),
    ));
    script.push(MockReply::tool_calls(calls));
    script.push(MockReply::text("Done <img src=x onerror=alert(0)>."));
    let s = setup(script, &[]).await;
    let cases = tempfile::NamedTempFile::new().unwrap();
    let body = json!({ "replies": replies.len(), "vectors": vectors });
    std::fs::write(cases.path(), body.to_string()).unwrap();
    let Some(report) = scenario(&s.served, "markdown.mjs", &[cases.path().to_str().unwrap()]).await
    else {
        return;
    };
    eprintln!(
        "{} vectors in {} placements: {report}",
        vectors.len(),
        hostile_placements()
    );
}

#[tokio::test]
async fn a_subagent_call_is_nested_in_its_call() {
    let s = setup(
        vec![
            MockReply::tool_calls([(
                "Task",
                json!({"subagent": "helper", "prompt": "look it up"}),
            )]),
            MockReply::tool_calls([("echo", json!({"text": "inner"}))]),
            MockReply::text("Found it."),
            MockReply::text("The helper found it."),
        ],
        &[],
    )
    .await;
    scenario(&s.served, "subagent.mjs", &[]).await;
}

#[tokio::test]
async fn the_agent_tab_shows_a_live_mcp_connection_and_a_schedules_next_fire_time() {
    let server = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-deps/npm/node_modules/.bin/mcp-server-everything");
    if !server.exists() {
        eprintln!(
            "skipping: {} is missing (run scripts/install-test-deps)",
            server.display()
        );
        return;
    }
    let connection = format!("command = \"{}\"\nargs = [\"stdio\"]\n", server.display());
    let s = setup_with(
        vec![],
        &[],
        &[
            ("agent/mcp-connections/everything.toml", &connection),
            (
                "agent/schedules/nightly.md",
                "---\ncron: \"30 2 * * *\"\ntimezone: Europe/Paris\n---\nTidy the tracker.\n",
            ),
        ],
        // Schedules read this clock, so the next fire time is known.
        &[("FOLIO_TEST_CLOCK_START", "2027-01-04T08:59:58Z")],
    )
    .await;
    scenario(&s.served, "agent_tab.mjs", &[]).await;
}

#[tokio::test]
async fn an_mcp_servers_question_is_answered_from_the_chat() {
    let server = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-deps/npm/node_modules/.bin/mcp-server-everything");
    if !server.exists() {
        eprintln!(
            "skipping: {} is missing (run scripts/install-test-deps)",
            server.display()
        );
        return;
    }
    let connection = format!("command = \"{}\"\nargs = [\"stdio\"]\n", server.display());
    let s = setup_with(
        vec![
            MockReply::tool_calls([("mcp__everything__trigger-elicitation-request", json!({}))]),
            MockReply::text("Thanks, Ada."),
        ],
        &[],
        &[("agent/mcp-connections/everything.toml", &connection)],
        &[],
    )
    .await;
    if scenario(&s.served, "question.mjs", &[]).await.is_none() {
        return;
    }
    let url = &s.served.url;
    let id = only_session(url).await;
    let log = events(url, &id).await;
    let resolved = all::<ActionApprovalResolved>(&log);
    assert_eq!(resolved.len(), 1, "{resolved:?}");
    let content = resolved[0].content.clone().unwrap_or_default();
    assert_eq!(
        (
            resolved[0].decision,
            content.get("name"),
            content.get("integer")
        ),
        (
            ApprovalDecision::Accept,
            Some(&json!("Ada")),
            Some(&json!(42))
        )
    );
    assert_eq!(
        all::<TurnCompleted>(&log)
            .into_iter()
            .map(|done| done.reply.as_str())
            .collect::<Vec<_>>(),
        ["Thanks, Ada."]
    );
}

#[tokio::test]
async fn approve_one_call_and_deny_another() {
    let s = setup(
        vec![
            MockReply::tool_calls([("deploy", json!({"target": "prod"}))]),
            MockReply::text("Deployed."),
            MockReply::tool_calls([("deploy", json!({"target": "eu"}))]),
            MockReply::text("Not deployed."),
        ],
        &[],
    )
    .await;
    if scenario(&s.served, "approvals.mjs", &[]).await.is_none() {
        return;
    }
    let url = &s.served.url;
    let id = only_session(url).await;
    let log = events(url, &id).await;
    let decisions: Vec<(ApprovalDecision, Option<&str>)> = all::<ActionApprovalResolved>(&log)
        .into_iter()
        .map(|resolved| (resolved.decision, resolved.reason.as_deref()))
        .collect();
    assert_eq!(
        decisions,
        vec![
            (ApprovalDecision::Approve, None),
            (ApprovalDecision::Deny, Some("not today"))
        ]
    );
}

#[tokio::test]
async fn stop_a_running_turn() {
    let slow = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen";
    let s = setup(
        vec![
            MockReply::text(slow).chunk_delay(Duration::from_millis(400)),
            MockReply::text(slow).chunk_delay(Duration::from_millis(400)),
        ],
        &[],
    )
    .await;
    if scenario(&s.served, "stop.mjs", &[]).await.is_none() {
        return;
    }
    let url = &s.served.url;
    let id = only_session(url).await;
    let log = events(url, &id).await;
    let failed: Vec<&str> = all::<TurnFailed>(&log)
        .into_iter()
        .map(|failed| failed.message.as_str())
        .collect();
    assert_eq!(failed, vec!["turn interrupted", "turn interrupted"]);
}

#[tokio::test]
async fn a_follow_up_sent_with_coalesce_waits_for_the_running_turn() {
    let s = setup(
        vec![
            MockReply::text("one two three four five six seven eight")
                .chunk_delay(Duration::from_millis(250)),
            MockReply::text("Second done."),
        ],
        &[],
    )
    .await;
    if scenario(&s.served, "admission.mjs", &[]).await.is_none() {
        return;
    }
    let url = &s.served.url;
    let log = events(url, &only_session(url).await).await;
    let queued: Vec<&str> = all::<MessageQueued>(&log)
        .into_iter()
        .map(|queued| queued.text.as_str())
        .collect();
    assert_eq!(queued, vec!["second"]);
    assert_eq!(all::<TurnFailed>(&log), Vec::<&TurnFailed>::new());
    assert_eq!(all::<TurnCompleted>(&log).len(), 2);
}

#[tokio::test]
async fn readable_on_a_phone() {
    let s = setup(
        vec![
            MockReply::tool_calls([("echo", json!({"text": "hello"}))]),
            MockReply::text("Echoed."),
        ],
        &[],
    )
    .await;
    scenario(&s.served, "phone.mjs", &[]).await;
}

#[tokio::test]
async fn reload_mid_turn_shows_the_full_history_once() {
    let story =
        "Once upon a time there was a log that never lost an event and never said anything twice.";
    let s = setup(
        vec![MockReply::text(story).chunk_delay(Duration::from_millis(150))],
        &[],
    )
    .await;
    scenario(&s.served, "reload.mjs", &[story]).await;
}

#[tokio::test]
async fn a_dropped_connection_reconnects_and_misses_nothing() {
    let story =
        "The network went away for a moment and came back, and every word arrived exactly once.";
    let s = setup(
        vec![MockReply::text(story).chunk_delay(Duration::from_millis(150))],
        &[],
    )
    .await;
    scenario(&s.served, "reconnect.mjs", &[story]).await;
}

#[tokio::test]
async fn fork_from_a_message_and_continue() {
    let s = setup(
        vec![
            MockReply::text("One."),
            MockReply::text("Two."),
            MockReply::text("Three."),
            MockReply::text("Four."),
        ],
        &[],
    )
    .await;
    let Some(report) = scenario(&s.served, "fork.mjs", &[]).await else {
        return;
    };
    let line = report.lines().find(|l| l.starts_with("fork ")).unwrap();
    let words: Vec<&str> = line.split(' ').collect();
    let (fork, original) = (words[1], words[3]);
    let url = &s.served.url;
    let forked = events(url, fork).await;
    let original_events = events(url, original).await;
    let second = of_type::<MessageReceived>(&original_events)[1].index;
    assert_eq!(
        data::<SessionStarted>(&forked[0]).forked_from,
        Some(ForkOrigin {
            session_id: original.to_string(),
            at_index: second,
        })
    );
    let messages: Vec<&str> = all::<MessageReceived>(&forked)
        .into_iter()
        .map(|received| received.text.as_str())
        .collect();
    assert_eq!(messages, vec!["first", "second, edited", "and on"]);
    // The model saw the copied history, not the replaced message.
    let last = s.mock.requests().pop().unwrap();
    assert_eq!(last.user_texts(), vec!["first", "second, edited", "and on"]);
}

#[tokio::test]
async fn reopen_a_past_run_from_the_list_and_continue_it() {
    let s = setup(
        vec![
            MockReply::text("Other."),
            MockReply::text("Hi.").with_usage(Usage {
                input_tokens: 100,
                cache_read_tokens: 20,
                output_tokens: 7,
                ..Usage::default()
            }),
            MockReply::text("Again."),
        ],
        &["--dev"],
    )
    .await;
    let url = &s.served.url;
    // Another run, which the search leaves out.
    let other = create_session(url, &CreateSession::message("unrelated")).await;
    Stream::open(url, &other.session_id, 0, None)
        .await
        .until("session.waiting")
        .await;
    let request = CreateSession {
        title: Some("Greeting".into()),
        ..CreateSession::message("hello")
    };
    let created = create_session(url, &request).await;
    let id = created.session_id.clone();
    let mut stream = Stream::open(url, &id, 0, None).await;
    stream.until("session.waiting").await;
    if scenario(&s.served, "reopen.mjs", &[&id]).await.is_none() {
        return;
    }
    // The file attached to the follow-up is in the session's workspace.
    let slug = url.rsplit('/').next().unwrap();
    let notes = s
        .state
        .path()
        .join(slug)
        .join("sessions")
        .join(&id)
        .join("workspace/notes.txt");
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "remember the milk"
    );
    // The page got its own token: the one handed out at creation is stale now.
    expect_error(
        Method::POST,
        &format!("{url}/v1/session/{id}"),
        Some(&FollowUp::new(created.continuation_token, "late")),
        ErrorCode::StaleContinuationToken,
    )
    .await;
}

#[tokio::test]
async fn a_foreign_principal_sees_nothing() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        tokens.path(),
        "alice = \"alice-secret\"\nbob = \"bob-secret\"\n",
    )
    .unwrap();
    let tokens_path = tokens.path().to_str().unwrap().to_string();
    let s = setup(
        vec![MockReply::text("Secret plans.")],
        &["--tokens-file", &tokens_path],
    )
    .await;
    let url = &s.served.url;
    let request = CreateSession {
        title: Some("alice".into()),
        ..CreateSession::message("alice's plans")
    };
    let (status, created) = call_as::<SessionCreated>(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(&request),
        Some("alice-secret"),
    )
    .await;
    assert_eq!(status, 201);
    let id = &created.session_id;
    scenario(&s.served, "foreign.mjs", &["bob-secret", id]).await;
    // Alice still has her run.
    let hers = events_as(url, id, "alice-secret").await;
    assert_eq!(
        data::<MessageReceived>(first::<MessageReceived>(&hers)).text,
        "alice's plans"
    );
}

#[tokio::test]
async fn a_tool_error_shows_its_message_and_duration_reasoning_folds_and_the_trace_has_tokens() {
    let usage = |input: u64, cached: u64, output: u64| Usage {
        input_tokens: input,
        cache_read_tokens: cached,
        output_tokens: output,
        ..Usage::default()
    };
    let s = setup_with(
        vec![
            MockReply::tool_calls([("fail", json!({}))]).with_usage(usage(100, 10, 5)),
            MockReply::text("It broke.")
                .with_reasoning("The tool failed; say so.")
                .with_usage(usage(200, 20, 7)),
        ],
        &[],
        &[(
            "agent/tools/fail.toml",
            "description = \"Always fails.\"\ncommand = [\"sh\", \"-c\", \"echo 'the disk is full' >&2; exit 3\"]\n",
        )],
        &[],
    )
    .await;
    if scenario(&s.served, "tool_error.mjs", &[]).await.is_none() {
        return;
    }
    // The figures the page showed are the ones the log holds.
    let log = events(&s.served.url, &only_session(&s.served.url).await).await;
    let steps: Vec<Option<Usage>> = all::<StepCompleted>(&log)
        .into_iter()
        .map(|step| step.usage)
        .collect();
    assert_eq!(
        steps,
        vec![Some(usage(100, 10, 5)), Some(usage(200, 20, 7))]
    );
    assert_eq!(
        all::<TurnCompleted>(&log)
            .into_iter()
            .map(|turn| turn.usage)
            .collect::<Vec<_>>(),
        vec![Some(usage(300, 30, 12))]
    );
}

#[tokio::test]
async fn save_a_run_as_an_eval_case_from_the_chat_and_run_it() {
    let replies = || {
        vec![
            MockReply::tool_calls([("echo", json!({"text": "hello"}))]),
            MockReply::text("Echoed."),
        ]
    };
    let s = setup(replies(), &[]).await;
    if scenario(&s.served, "eval_case.mjs", &["echo-hello"])
        .await
        .is_none()
    {
        return;
    }
    let url = &s.served.url;
    let log = events(url, &only_session(url).await).await;
    let file = s.dir.path().join("evals/from-session/echo-hello.eval.toml");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        folio_project::eval_from_session(&log, "echo-hello")
    );
    // `folio eval` runs the saved case, and the same answers pass it (its own state root: the
    // server holds its own).
    for reply in replies() {
        s.mock.push(reply);
    }
    let runs = tempfile::tempdir().unwrap();
    let output = eval(
        &s.mock.openai_base_url(),
        s.dir.path(),
        &[
            "--json",
            "--filter",
            "from-session/echo-hello",
            "--state-root",
            runs.path().to_str().unwrap(),
        ],
    )
    .await;
    assert!(output.status.success(), "{output:?}");
    let run = run_of(&output);
    let cases: Vec<(&str, &str, bool)> = run
        .cases
        .iter()
        .map(|case| (case.eval_id.as_str(), case.case_id.as_str(), case.ok))
        .collect();
    assert_eq!(cases, vec![("from-session/echo-hello", "echo-hello", true)]);
}

/// Two cases of `evals/smoke.eval.toml`: `echoes` expects a call of echo, `greets` a greeting.
const SMOKE_EVAL: &str = r#"
[[cases]]
id = "echoes"
  [[cases.steps]]
  send = "echo hello"
  expect = [{ called_tool = "echo" }]

[[cases]]
id = "greets"
  [[cases.steps]]
  send = "say hello"
  expect = [{ reply_includes = "Hello" }]
"#;

/// Runs `folio eval` on the project at `dir` with the state root `state` (one case at a time,
/// so the mock's replies go in order); answers whether every case passed.
async fn eval_into(mock: &MockModelServer, dir: &Path, state: &Path, extra: &[&str]) -> bool {
    let mut args = vec![
        "--json",
        "--max-concurrency",
        "1",
        "--state-root",
        state.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let output = eval(&mock.openai_base_url(), dir, &args).await;
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "folio eval failed: {output:?}"
    );
    run_of(&output).ok
}

/// An agent with `evals/smoke.eval.toml` and two stored `folio eval` runs: an older one of the
/// case that passes, then one of both where `echoes` fails.
async fn two_eval_runs() -> (MockModelServer, Project, tempfile::TempDir) {
    let mock = MockModelServer::start().await;
    let dir = agent();
    write_files(dir.path(), &[("evals/smoke.eval.toml", SMOKE_EVAL)]);
    let state = tempfile::tempdir().unwrap();
    mock.push(MockReply::text("Hello there."));
    assert!(
        eval_into(
            &mock,
            dir.path(),
            state.path(),
            &["--filter", "smoke/greets"]
        )
        .await
    );
    mock.push(MockReply::text("I would rather not."));
    mock.push(MockReply::text("Hello again."));
    assert!(!eval_into(&mock, dir.path(), state.path(), &[]).await);
    (mock, dir, state)
}

#[tokio::test]
async fn the_evals_tab_shows_runs_cases_and_failed_assertions() {
    let (mock, dir, state) = two_eval_runs().await;
    let served = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    scenario(&served, "evals_tab.mjs", &["smoke/echoes", "smoke/greets"]).await;
}

/// Writes docs/playground/*.png (run on purpose: `cargo test -p folio-cli --test
/// playground_browser -- --ignored screenshots`). Two `folio eval` runs come first, so the Evals
/// tab has runs, cases and a failed assertion to show.
#[tokio::test]
#[ignore = "rewrites the committed screenshots under docs/playground"]
async fn screenshots() {
    let (mock, dir, state) = two_eval_runs().await;
    let tokens = |input: u64, output: u64| Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    };
    for reply in [
        MockReply::tool_calls([("echo", json!({"text": "hello"}))]).with_usage(tokens(412, 18)),
        MockReply::tool_calls([("deploy", json!({"target": "prod"}))])
            .with_text("Echo worked; deploying prod now.")
            .with_usage(tokens(468, 25)),
        MockReply::text("Echoed **hello** and deployed prod.")
            .with_reasoning("The user wants both: echo first, then deploy.")
            .with_usage(tokens(530, 31)),
    ] {
        mock.push(reply);
    }
    let served = serve(
        &mock.openai_base_url(),
        dir.path(),
        state.path(),
        &["--dev"],
    )
    .await;
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/playground");
    std::fs::create_dir_all(&out).unwrap();
    scenario(&served, "screenshots.mjs", &[out.to_str().unwrap()]).await;
}

/// The page's JavaScript type-checks (`tsc --checkJs`, tests/playground/tsconfig.json) against
/// docs/schema/folio-api.d.ts, generated from folio-protocol: the page cannot drift from the
/// wire types.
#[test]
fn the_page_type_checks_against_the_generated_declarations() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tsc = root.join("../../target/test-deps/npm/node_modules/typescript/bin/tsc");
    if !tsc.exists() {
        eprintln!(
            "skipping: {} is missing (run scripts/install-test-deps)",
            tsc.display()
        );
        return;
    }
    let output = std::process::Command::new("node")
        .arg(&tsc)
        .arg("-p")
        .arg(root.join("tests/playground/tsconfig.json"))
        .output()
        .expect("node runs tsc");
    assert!(
        output.status.success(),
        "tsc found type errors:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
