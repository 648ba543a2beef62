//! The playground's server side without a browser: its embedded files (served without auth,
//! behind the browser guard, with a CSP that admits only its own origin), `POST
//! /v1/session/:id/fork`, `POST /v1/session/:id/token` and `POST /v1/session/:id/eval-case`.

mod serve_support;

use folio_protocol::{
    CreateSession, Empty, ErrorBody, ErrorCode, EvalCaseSaved, EventBody, FollowUp,
    FollowUpAccepted, ForkOrigin, ForkSession, MessageReceived, OkTrue, SaveEvalCase,
    SessionCreated, SessionMode, SessionStarted, Usage,
};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::{Value, json};
use serve_support::*;

const TOKENS: &str = "alice = \"alice-secret\"\nbob = \"bob-secret\"\n";

async fn served(
    replies: Vec<MockReply>,
    extra: &[&str],
) -> (MockModelServer, Served, Project, tempfile::TempDir) {
    let mock = MockModelServer::start().await;
    for reply in replies {
        mock.push(reply);
    }
    let dir = project("name = \"pg\"\nmodel = \"openai:gpt-test\"\n");
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), extra).await;
    (mock, server, dir, state)
}

/// Creates a session as `token`'s principal and waits for its first turn to end.
async fn started(url: &str, message: &str, token: Option<&str>) -> SessionCreated {
    let (status, created) = call_as::<SessionCreated>(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(&CreateSession::message(message)),
        token,
    )
    .await;
    assert_eq!(status, 201);
    let mut stream = Stream::open(url, &created.session_id, 0, token).await;
    stream.until("session.waiting").await;
    created
}

/// Usage of `input` uncached prompt tokens and `output` output tokens.
fn tokens(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }
}

/// `POST …/fork` with `body`, expecting `invalid_request`: the error's message.
async fn fork_refused(fork_url: &str, body: Value) -> String {
    let (status, error) = call(Method::POST, fork_url, Some(body), None).await;
    let error: ErrorBody = read_wire(&error);
    assert_eq!((status, error.error), (400, ErrorCode::InvalidRequest));
    error.message
}

#[tokio::test]
async fn the_page_and_its_modules_are_embedded_and_served_without_auth_behind_the_guard() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tokens.path(), TOKENS).unwrap();
    let (_mock, server, _dir, _state) =
        served(vec![], &["--tokens-file", tokens.path().to_str().unwrap()]).await;
    let url = &server.url;
    let page = client()
        .get(format!("{url}/playground"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let headers = page.headers().clone();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.starts_with("default-src 'none'; script-src 'self';"),
        "{csp}"
    );
    assert!(csp.contains("connect-src 'self'"), "{csp}");
    assert!(
        csp.ends_with("require-trusted-types-for 'script'; trusted-types dompurify"),
        "{csp}"
    );
    let html = page.text().await.unwrap();
    assert!(
        html.contains(r#"<script type="module" src="playground/assets/app.js">"#),
        "{html}"
    );
    for (file, kind) in [
        ("app.js", "text/javascript; charset=utf-8"),
        ("style.css", "text/css; charset=utf-8"),
    ] {
        let asset = client()
            .get(format!("{url}/playground/assets/{file}"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            (
                asset.status().as_u16(),
                asset.headers()["content-type"].to_str().unwrap()
            ),
            (200, kind)
        );
        let text = asset.text().await.unwrap();
        assert!(
            !text.contains("http://") && !text.contains("https://"),
            "{file} names an external URL"
        );
    }
    // The vendored Markdown libraries are modules too (their license headers name URLs).
    for file in [
        "vendor/markdown-it.esm.min.mjs",
        "vendor/purify.es.mjs",
        "vendor/highlight.min.js",
    ] {
        let asset = client()
            .get(format!("{url}/playground/assets/{file}"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            (
                asset.status().as_u16(),
                asset.headers()["content-type"].to_str().unwrap()
            ),
            (200, "text/javascript; charset=utf-8"),
            "{file}"
        );
    }
    let (status, missing) = refused(
        Method::GET,
        &format!("{url}/playground/assets/nope.js"),
        NO_BODY,
        None,
    )
    .await;
    assert_eq!(
        (status, missing.error, missing.message.as_str()),
        (
            404,
            ErrorCode::NotFound,
            "the playground has no file nope.js"
        )
    );
    // The API still needs a token; the page's files pass the same browser guard.
    let (status, denied) = refused(Method::GET, &format!("{url}/v1/agent"), NO_BODY, None).await;
    assert_eq!((status, denied.error), (401, ErrorCode::Unauthorized));
    let rebinding = client()
        .get(format!("{url}/playground"))
        .header("host", "evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(rebinding.status().as_u16(), 403);
    let index = client()
        .get(format!("{}/", server.host))
        .header("authorization", "Bearer bob-secret")
        .send()
        .await
        .unwrap();
    let index = index.text().await.unwrap();
    assert!(
        index.contains(r#"(<a href="/test-agent/playground">playground</a>)"#),
        "{index}"
    );
}

#[tokio::test]
async fn fork_copies_the_log_before_a_message_and_runs_the_edited_one() {
    let (mock, server, _dir, _state) = served(
        vec![
            MockReply::text("One.").with_usage(tokens(10, 2)),
            MockReply::text("Two.").with_usage(tokens(20, 3)),
            MockReply::text("Edited.").with_usage(tokens(30, 4)),
        ],
        &[],
    )
    .await;
    let url = &server.url;
    let first = started(url, "first", None).await;
    let id = first.session_id.clone();
    follow_up(
        url,
        &id,
        &FollowUp::new(first.continuation_token.clone(), "second"),
    )
    .await;
    let mut stream = Stream::open(url, &id, 0, None).await;
    stream.until_count("session.waiting", 2).await;
    let original = stream.events.clone();
    let second = of_type::<MessageReceived>(&original)[1].index;

    let fork_url = format!("{url}/v1/session/{id}/fork");
    assert_eq!(
        fork_refused(&fork_url, json!({"atIndex": 0, "message": "x"})).await,
        "atIndex 0 is a session.started event: fork at the index of a message.received event"
    );
    fork_refused(&fork_url, json!({"atIndex": 999, "message": "x"})).await;
    fork_refused(
        &fork_url,
        json!({"atIndex": second, "message": "x", "extra": 1}),
    )
    .await;

    let fork: SessionCreated = expect(
        Method::POST,
        &fork_url,
        Some(&ForkSession {
            at_index: second,
            message: "second, edited".into(),
            title: None,
        }),
        201,
    )
    .await;
    assert_ne!(fork.session_id, id);
    let mut forked = Stream::open(url, &fork.session_id, 0, None).await;
    // The copied first turn ends in session.waiting too.
    forked.until_count("session.waiting", 2).await;
    let events = forked.events.clone();
    assert_contiguous(&events, 0);
    assert_eq!(
        data::<SessionStarted>(&events[0]).forked_from,
        Some(ForkOrigin {
            session_id: id.clone(),
            at_index: second,
        })
    );
    // Everything between session.started and the replaced message is a copy, in order.
    let copied: Vec<&EventBody> = events[1..second as usize].iter().map(|e| &e.body).collect();
    let source: Vec<&EventBody> = original[1..second as usize]
        .iter()
        .map(|e| &e.body)
        .collect();
    assert_eq!(copied, source);
    assert_eq!(
        data::<MessageReceived>(&events[second as usize]).text,
        "second, edited"
    );
    // The fork's turn saw the copied history: first, One., then the edited message.
    let request = mock.requests().pop().unwrap();
    let messages: Vec<String> = request
        .messages()
        .iter()
        .filter(|m| m.role != "system")
        .map(|m| m.text())
        .collect();
    assert_eq!(messages, vec!["first", "One.", "second, edited"]);
    // Each run's tokens: the original's two turns; the copied first turn and the edited one.
    assert_eq!(session(url, &id).await.usage, tokens(30, 5));
    let forked_summary = session(url, &fork.session_id).await;
    assert_eq!(
        (forked_summary.turns, forked_summary.usage),
        (2, tokens(40, 6))
    );
    // The fork's token continues it.
    mock.push(MockReply::text("More."));
    follow_up(
        url,
        &fork.session_id,
        &FollowUp::new(fork.continuation_token, "more"),
    )
    .await;
}

#[tokio::test]
async fn the_owner_gets_a_fresh_token_and_others_get_403() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tokens.path(), TOKENS).unwrap();
    let (mock, server, _dir, _state) = served(
        vec![
            MockReply::text("Hi."),
            MockReply::text("Again."),
            MockReply::text("Task done."),
        ],
        &["--tokens-file", tokens.path().to_str().unwrap()],
    )
    .await;
    let url = &server.url;
    let created = started(url, "hello", Some("alice-secret")).await;
    let id = created.session_id.clone();
    let token_url = format!("{url}/v1/session/{id}/token");
    let (status, denied) = refused(
        Method::POST,
        &token_url,
        Some(&Empty {}),
        Some("bob-secret"),
    )
    .await;
    assert_eq!((status, denied.error), (403, ErrorCode::Forbidden));
    let fork = ForkSession {
        at_index: 1,
        message: "x".into(),
        title: None,
    };
    let (status, denied) = refused(
        Method::POST,
        &format!("{url}/v1/session/{id}/fork"),
        Some(&fork),
        Some("bob-secret"),
    )
    .await;
    assert_eq!((status, denied.error), (403, ErrorCode::Forbidden));
    let (status, issued) = call_as::<FollowUpAccepted>(
        Method::POST,
        &token_url,
        Some(&Empty {}),
        Some("alice-secret"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(issued.session_id, id);
    assert_ne!(issued.continuation_token, created.continuation_token);
    let follow = format!("{url}/v1/session/{id}");
    let (status, stale) = refused(
        Method::POST,
        &follow,
        Some(&FollowUp::new(created.continuation_token.clone(), "old")),
        Some("alice-secret"),
    )
    .await;
    assert_eq!(
        (status, stale.error),
        (409, ErrorCode::StaleContinuationToken)
    );
    let (status, _) = call_as::<FollowUpAccepted>(
        Method::POST,
        &follow,
        Some(&FollowUp::new(issued.continuation_token, "again")),
        Some("alice-secret"),
    )
    .await;
    assert_eq!(status, 200);
    // A task session takes no follow-ups, so it gets no token either.
    let task = CreateSession {
        mode: Some(SessionMode::Task),
        ..CreateSession::message("do it")
    };
    let (status, task) = call_as::<SessionCreated>(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(&task),
        Some("alice-secret"),
    )
    .await;
    assert_eq!(status, 201);
    let (status, denied) = refused(
        Method::POST,
        &format!("{url}/v1/session/{}/token", task.session_id),
        Some(&Empty {}),
        Some("alice-secret"),
    )
    .await;
    assert_eq!(
        (status, denied.error),
        (409, ErrorCode::SessionNotFollowable)
    );
    drop(mock);
}

#[tokio::test]
async fn an_eval_case_is_saved_once_by_the_sessions_owner_between_turns() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tokens.path(), TOKENS).unwrap();
    let slow = "one two three four five six seven eight nine ten";
    let (_mock, server, dir, _state) = served(
        vec![
            MockReply::text("Hi."),
            MockReply::text(slow).chunk_delay(std::time::Duration::from_millis(300)),
        ],
        &["--tokens-file", tokens.path().to_str().unwrap()],
    )
    .await;
    let url = &server.url;
    let created = started(url, "hello", Some("alice-secret")).await;
    let id = created.session_id.clone();
    let save_url = format!("{url}/v1/session/{id}/eval-case");
    let save = |name: &str, token: &'static str| {
        let body = SaveEvalCase { name: name.into() };
        let save_url = save_url.clone();
        async move { refused(Method::POST, &save_url, Some(&body), Some(token)).await }
    };
    // Another principal cannot save alice's run.
    let (status, denied) = save("greeting", "bob-secret").await;
    assert_eq!((status, denied.error), (403, ErrorCode::Forbidden));
    // A name that cannot name a file is refused, saying what a name may hold.
    let (status, invalid) = save("../greeting", "alice-secret").await;
    assert_eq!((status, invalid.error), (400, ErrorCode::InvalidRequest));
    assert!(invalid.message.contains("letters, digits"), "{invalid:?}");

    let (status, saved) = call_as::<EvalCaseSaved>(
        Method::POST,
        &save_url,
        Some(&SaveEvalCase {
            name: "greeting".into(),
        }),
        Some("alice-secret"),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(
        saved,
        EvalCaseSaved {
            ok: OkTrue,
            eval_id: "from-session/greeting".into(),
            case_id: "greeting".into(),
            path: "evals/from-session/greeting.eval.toml".into(),
        }
    );
    // The file is what `folio eval --from-session` writes for this run, and `folio eval` reads it.
    let file = dir.path().join(&saved.path);
    let written = std::fs::read_to_string(&file).unwrap();
    let events = events_as(url, &id, "alice-secret").await;
    assert_eq!(
        written,
        folio_project::eval_from_session(&events, "greeting")
    );
    let suite = folio_project::discover_evals(dir.path());
    assert!(!suite.has_errors(), "{:?}", suite.diagnostics);
    let cases: Vec<(&str, &str, Vec<&str>)> = suite
        .evals
        .iter()
        .flat_map(|eval| {
            eval.cases.iter().map(|case| {
                let sends = case.steps.iter().map(|step| step.send.as_str()).collect();
                (eval.id.as_str(), case.id.as_str(), sends)
            })
        })
        .collect();
    assert_eq!(
        cases,
        vec![("from-session/greeting", "greeting", vec!["hello"])]
    );

    // A taken name is refused and the file stays as it was.
    let (status, taken) = save("greeting", "alice-secret").await;
    assert_eq!((status, taken.error), (409, ErrorCode::AlreadyExists));
    assert!(taken.message.contains("another name"), "{taken:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), written);

    // While a turn runs there is no outcome to expect yet.
    let token = call_as::<FollowUpAccepted>(
        Method::POST,
        &format!("{url}/v1/session/{id}/token"),
        Some(&Empty {}),
        Some("alice-secret"),
    )
    .await
    .1
    .continuation_token;
    let (status, _) = call_as::<FollowUpAccepted>(
        Method::POST,
        &format!("{url}/v1/session/{id}"),
        Some(&FollowUp::new(token, "tell me more")),
        Some("alice-secret"),
    )
    .await;
    assert_eq!(status, 200);
    let mut stream = Stream::open(url, &id, 0, Some("alice-secret")).await;
    // The first turn's end (replayed), then the second turn streaming its reply.
    stream.until("session.waiting").await;
    stream.until("message.appended").await;
    let (status, busy) = save("later", "alice-secret").await;
    assert_eq!((status, busy.error), (409, ErrorCode::SessionBusy));
    stream.until("session.waiting").await;

    // A project folder the server cannot write (here a link into /sys, which even root cannot
    // write) is refused with what to do instead.
    std::fs::rename(dir.path().join("evals"), dir.path().join("evals.saved")).unwrap();
    std::os::unix::fs::symlink("/sys/kernel", dir.path().join("evals")).unwrap();
    let (status, read_only) = save("elsewhere", "alice-secret").await;
    assert_eq!((status, read_only.error), (403, ErrorCode::Forbidden));
    assert!(
        read_only.message.contains("read-only") && read_only.message.contains("--out FILE"),
        "{read_only:?}"
    );
}
