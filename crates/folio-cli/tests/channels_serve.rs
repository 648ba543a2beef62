//! Channels as `folio serve` and the `folio` binary wire them; what they do with a delivery is
//! folio-channels' own suites (`crates/folio-channels/tests`). Here: `folio serve` mounts an
//! agent's channels behind its browser guard, so a correctly signed delivery that a web page
//! sends is refused before the channel sees it, and `folio github replay` turns a saved payload
//! into a delivery signed as GitHub signs it; a PR session reads the PR's head checked out from a
//! private repository the fake GitHub serves over git smart HTTP, and its check runs and banner
//! are the manifest's templates.

mod channels_support;
mod serve_support;

use channels_support::*;
use folio_protocol::{DeliveryStatus, ErrorBody, ErrorCode};
use folio_test_support::{FakeApi, MockModelServer, MockReply, read_wire};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use serve_support::*;

const AGENT: &str = "name = \"hooks\"\nmodel = \"openai:gpt-test\"\n";

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_delivery_from_a_web_page_is_refused_before_the_channel_sees_it() {
    let mock = MockModelServer::start().await;
    let project = project(AGENT);
    write_files(
        project.path(),
        &[(
            "agent/channels/generic.toml",
            "kind = \"webhook\"\nauth = [{ hmac = { secret_env = \"HOOK_SECRET\", header = \"X-Signature-256\", scheme = \"sha256=\" } }]\n[[routes]]\npath = \"/ticket\"\nmessage = \"{{ body.message }}\"\ncontinuation = \"{{ body.ticketId }}\"\n",
        )],
    );
    let state = tempfile::tempdir().unwrap();
    let server = serve_with_env(
        &mock.openai_base_url(),
        project.path(),
        state.path(),
        &[],
        &[("HOOK_SECRET", SECRET)],
    )
    .await;
    let url = &server.url;
    let body = r#"{"ticketId":7,"message":"The export button does nothing"}"#;
    // A web page on this machine is a caller too: a correctly signed delivery that a browser
    // sends (it carries an `Origin`) is refused before the channel sees it.
    let signed = format!(
        "sha256={}",
        folio_channels::sign_hex(SECRET.as_bytes(), &[body.as_bytes()])
    );
    let (status, answer) = deliver(
        &format!("{url}/v1/channels/generic/ticket"),
        body,
        &[
            ("x-signature-256", signed),
            ("origin", "https://evil.example.com".into()),
        ],
    )
    .await;
    assert_eq!(status, 403, "{answer}");
    let refused: ErrorBody = read_wire(&answer);
    assert_eq!(refused.error, ErrorCode::Forbidden);
    assert_eq!(settled(url, "generic").await, []);
    assert_eq!(
        mock.requests().len(),
        0,
        "a refused delivery reached the model"
    );
}

const REVIEWER: &str = "name = \"reviewer\"\nmodel = \"openai:gpt-test\"\n";

#[tokio::test(flavor = "multi_thread")]
async fn replay_turns_a_saved_payload_into_a_signed_delivery() {
    let mock = MockModelServer::start().await;
    let github = FakeApi::start().await;
    let project = project(REVIEWER);
    let manifest = format!(
        "kind = \"github\"\ncheckout = false\nreactions = false\ndeliver_replies = false\napi_base_url = \"{}\"\n",
        github.url()
    );
    write_files(project.path(), &[("agent/channels/gh.toml", &manifest)]);
    let state = tempfile::tempdir().unwrap();
    let server = serve_with_env(
        &mock.openai_base_url(),
        project.path(),
        state.path(),
        &[],
        &[
            ("GITHUB_WEBHOOK_SECRET", SECRET),
            ("GITHUB_TOKEN", "ghp_test"),
        ],
    )
    .await;
    let saved = tempfile::tempdir().unwrap();
    let payload = saved.path().join("opened.json");
    let opened = github_examples("pull_request")
        .into_iter()
        .find(|p| p["action"] == "opened")
        .unwrap();
    std::fs::write(&payload, serde_json::to_string_pretty(&opened).unwrap()).unwrap();
    let fixtures = saved.path().join("fixtures");
    mock.push(MockReply::text("Looks fine."));
    let output = tokio::process::Command::new(folio_bin())
        .args(["github", "replay"])
        .arg(&payload)
        .arg("--fixtures-dir")
        .arg(&fixtures)
        .arg("--deliver")
        .arg(format!("{}/v1/channels/gh", server.url))
        .env("GITHUB_WEBHOOK_SECRET", SECRET)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.lines().last().unwrap().starts_with("202 "),
        "{stdout}"
    );
    let mut names: Vec<String> = std::fs::read_dir(&fixtures)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    let body = std::fs::read_to_string(fixtures.join(&names[0])).unwrap();
    let headers: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures.join(&names[1])).unwrap()).unwrap();
    // GitHub's own library signs the written body exactly as the header says.
    assert_eq!(
        headers["X-Hub-Signature-256"],
        json!(github_signature(&body))
    );
    assert_eq!(headers["X-GitHub-Event"], "pull_request");
    let deliveries = settled(&server.url, "gh").await;
    assert_eq!(
        (
            deliveries.len(),
            deliveries[0].status,
            deliveries[0].route.as_str()
        ),
        (1, DeliveryStatus::Accepted, "pull_request.opened")
    );
    model_requests(&mock, 1).await;
}

/// Runs `git args…` in `dir` (a test's repository), panicking with its output on failure.
fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Commits `src/lib.rs` with `text` in the clone `work` and pushes it to `refspec`; its SHA.
fn commit(work: &std::path::Path, text: &str, refspec: &str) -> String {
    std::fs::create_dir_all(work.join("src")).unwrap();
    std::fs::write(work.join("src/lib.rs"), text).unwrap();
    git(work, &["add", "."]);
    git(work, &["commit", "--quiet", "-m", text]);
    git(work, &["push", "--quiet", "origin", refspec]);
    git(work, &["rev-parse", "HEAD"])
}

/// A `pull_request` payload of `octo/hello#number` at `sha`, cloned from `clone_url`.
fn pull_request(action: &str, number: u64, sha: &str, clone_url: &str) -> Value {
    json!({
        "action": action,
        "number": number,
        "pull_request": {
            "number": number,
            "title": "Fix add",
            "body": "It subtracted.",
            "html_url": format!("https://github.com/octo/hello/pull/{number}"),
            "head": { "sha": sha, "ref": "fix" },
            "base": { "ref": "main" },
            "user": { "login": "octocat" },
        },
        "repository": { "full_name": "octo/hello", "clone_url": clone_url },
        "sender": { "login": "octocat" },
    })
}

/// The text of every tool result the model was sent, in order.
fn tool_results(mock: &MockModelServer) -> Vec<String> {
    let last = mock
        .requests()
        .last()
        .map(|r| r.body.to_string())
        .unwrap_or_default();
    let body: Value = serde_json::from_str(&last).unwrap_or_default();
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect()
}

/// Waits until the fake API recorded `n` calls matching `wanted` (30 s at most); those calls.
async fn calls_matching(
    api: &FakeApi,
    n: usize,
    wanted: impl Fn(&folio_test_support::ApiCall) -> bool,
) -> Vec<folio_test_support::ApiCall> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let found: Vec<_> = api.calls().into_iter().filter(|c| wanted(c)).collect();
        if found.len() >= n {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} matching calls of {n}: {:#?}",
            found.len(),
            api.calls()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

on_both_stores!(a_pr_session_reads_the_checked_out_head_and_reports_through_templated_checks);

/// On either store (the mirror is this server's, the checkout the session's workspace).
async fn a_pr_session_reads_the_checked_out_head_and_reports_through_templated_checks(
    store: Store,
) {
    // A private repository on the fake GitHub: git smart HTTP that wants the token.
    let repos = tempfile::tempdir().unwrap();
    let bare = repos.path().join("octo/hello.git");
    std::fs::create_dir_all(&bare).unwrap();
    git(&bare, &["init", "--quiet", "--bare"]);
    git(&bare, &["config", "uploadpack.allowAnySHA1InWant", "true"]);
    let work = tempfile::tempdir().unwrap();
    git(work.path(), &["init", "--quiet"]);
    git(
        work.path(),
        &["remote", "add", "origin", bare.to_str().unwrap()],
    );
    std::fs::create_dir_all(work.path().join("src")).unwrap();
    std::fs::write(
        work.path().join("src/old.rs"),
        "// the second commit removes it",
    )
    .unwrap();
    let first = commit(
        work.path(),
        "pub fn add() -> i32 { 1 - 1 } // first",
        "HEAD:refs/heads/fix",
    );
    let github = FakeApi::start().await;
    github.serve_git(repos.path(), Some("ghp_secret_token"));
    let clone_url = format!("{}/git/octo/hello.git", github.url());

    let mock = MockModelServer::start().await;
    let project = project(REVIEWER);
    let manifest = format!(
        r#"kind = "github"
bot_name = "folio-reviewer"
reactions = false
check_runs = true
api_base_url = "{}"
[check]
name = "review {{{{ repo }}}}#{{{{ number }}}}"
title = "{{{{ name }}}}: {{{{ conclusion }}}}"
summary = "{{{{ session_id }}}} said {{{{ reply }}}}"
details_url = "{{{{ base_url }}}}/details/{{{{ session_id }}}}?sha={{{{ head_sha }}}}"
[banner]
body = "{{{{ bot_name }}}} looks at #{{{{ number }}}}: {{{{ session_url }}}}"
"#,
        github.url()
    );
    write_files(project.path(), &[("agent/channels/gh.toml", &manifest)]);
    let state = tempfile::tempdir().unwrap();
    let server = serve_with_env(
        &mock.openai_base_url(),
        project.path(),
        state.path(),
        &store.args(),
        &[
            ("GITHUB_WEBHOOK_SECRET", SECRET),
            ("GITHUB_TOKEN", "ghp_secret_token"),
        ],
    )
    .await;
    let hook = format!("{}/v1/channels/gh", server.url);

    // Opened: the agent reads the file at the PR's head.
    mock.push(MockReply::tool_calls([
        ("Read", json!({ "path": "repo/src/lib.rs" })),
        ("Glob", json!({ "pattern": "repo/src/*" })),
    ]));
    mock.push(MockReply::text("Looks fine."));
    let (status, answer) = github_delivery(
        &hook,
        "pull_request",
        "d-1",
        &pull_request("opened", 7, &first, &clone_url),
    )
    .await;
    assert_eq!(status, 202, "{answer}");
    let completed =
        |c: &folio_test_support::ApiCall| c.method == "PATCH" && c.body["status"] == "completed";
    let done = calls_matching(&github, 1, completed).await;
    let results = tool_results(&mock);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].contains("1 - 1 } // first"), "{results:?}");
    assert!(results[1].contains("repo/src/old.rs"), "{results:?}");
    let created = calls_matching(&github, 1, |c| {
        c.method == "POST" && c.path == "/repos/octo/hello/check-runs"
    })
    .await;
    let session = settled(&server.url, "gh")
        .await
        .into_iter()
        .find(|d| d.id == "d-1")
        .and_then(|d| d.session_id)
        .unwrap();
    assert_eq!(created[0].body["name"], "review octo/hello#7");
    assert_eq!(
        created[0].body["details_url"],
        format!("{}/details/{session}?sha={first}", server.url)
    );
    assert_eq!(
        done[0].body["output"],
        json!({
            "title": "review octo/hello#7: success",
            "summary": format!("{session} said Looks fine."),
        })
    );
    // The token went to git in the Authorization header only.
    let fetches = calls_matching(&github, 1, |c| c.path.starts_with("/git/")).await;
    assert!(
        fetches.iter().all(|c| c
            .headers
            .get("authorization")
            .is_some_and(|a| a.starts_with("Basic "))),
        "{fetches:#?}"
    );

    // New commits (synchronize): the next wake reads the new head, without the file it deleted.
    git(work.path(), &["rm", "--quiet", "src/old.rs"]);
    let second = commit(
        work.path(),
        "pub fn add() -> i32 { 1 + 1 } // second",
        "HEAD:refs/heads/fix",
    );
    mock.push(MockReply::tool_calls([
        ("Read", json!({ "path": "repo/src/lib.rs" })),
        ("Glob", json!({ "pattern": "repo/src/*" })),
    ]));
    mock.push(MockReply::text("Better."));
    let (status, _) = github_delivery(
        &hook,
        "pull_request",
        "d-2",
        &pull_request("synchronize", 7, &second, &clone_url),
    )
    .await;
    assert_eq!(status, 202);
    calls_matching(&github, 2, completed).await;
    let results = tool_results(&mock);
    let [.., read, listed] = results.as_slice() else {
        panic!("{results:?}")
    };
    assert!(read.contains("1 + 1 } // second"), "{results:?}");
    assert!(
        listed.contains("repo/src/lib.rs") && !listed.contains("old.rs"),
        "{results:?}"
    );

    // A comment-only first wake of another PR: no head SHA, so no check run, but the banner;
    // its checkout is the PR's ref (`refs/pull/8/head`).
    commit(
        work.path(),
        "pub fn add() -> i32 { 2 } // pull 8",
        "HEAD:refs/pull/8/head",
    );
    mock.push(MockReply::tool_calls([(
        "Read",
        json!({ "path": "repo/src/lib.rs" }),
    )]));
    mock.push(MockReply::text("On it."));
    let comment = json!({
        "action": "created",
        "issue": {
            "number": 8,
            "title": "Another",
            "html_url": "https://github.com/octo/hello/pull/8",
            "pull_request": { "url": "https://api.github.com/repos/octo/hello/pulls/8" },
        },
        "comment": { "id": 99, "body": "@folio-reviewer look", "user": { "login": "octocat" } },
        "repository": { "full_name": "octo/hello", "clone_url": clone_url },
        "sender": { "login": "octocat" },
    });
    let (status, _) = github_delivery(&hook, "issue_comment", "d-3", &comment).await;
    assert_eq!(status, 202);
    let replies = calls_matching(&github, 2, |c| {
        c.method == "POST" && c.path == "/repos/octo/hello/issues/8/comments"
    })
    .await;
    let opened = settled(&server.url, "gh")
        .await
        .into_iter()
        .find(|d| d.id == "d-3")
        .and_then(|d| d.session_id)
        .unwrap();
    assert_eq!(
        replies[0].body["body"],
        format!(
            "folio-reviewer looks at #8: {}/playground?session={opened}",
            server.url
        )
    );
    assert_eq!(replies[1].body["body"], "On it.");
    assert!(
        tool_results(&mock)
            .last()
            .unwrap()
            .contains("{ 2 } // pull 8"),
        "{:?}",
        tool_results(&mock)
    );
    assert_eq!(
        github
            .calls()
            .iter()
            .filter(|c| c.path == "/repos/octo/hello/check-runs")
            .count(),
        2,
        "a comment-only wake creates no check run"
    );

    // A checkout that fails (a wrong token) loses nothing: the turn runs with the diff and is
    // told why.
    github.serve_git(repos.path(), Some("another_token"));
    let third = commit(
        work.path(),
        "pub fn add() -> i32 { 3 }",
        "HEAD:refs/heads/fix",
    );
    mock.push(MockReply::tool_calls([(
        "Read",
        json!({ "path": "pr/checkout-error.txt" }),
    )]));
    mock.push(MockReply::text("Noted."));
    let (status, _) = github_delivery(
        &hook,
        "pull_request",
        "d-4",
        &pull_request("synchronize", 7, &third, &clone_url),
    )
    .await;
    assert_eq!(status, 202);
    calls_matching(&github, 3, completed).await;
    let note = tool_results(&mock).last().unwrap().clone();
    assert!(
        note.contains("was not checked out in repo/") && note.contains("git fetch failed"),
        "{note}"
    );
    // The token is nowhere on disk: not in the mirror's config, not in the note.
    for entry in walk(state.path()) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("ghp_secret_token"),
            "{} holds the token",
            entry.display()
        );
    }
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
