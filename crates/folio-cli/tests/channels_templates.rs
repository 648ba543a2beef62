//! `folio init --template pr-reviewer|triage|webhook|pr-autofixer` projects, unchanged except for the fake
//! API's address, served by the real binary: a signed provider delivery wakes each one and its
//! answer goes back through the recording fakes (GitHub's REST API, Slack's Web API).

mod channels_support;
mod serve_support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use channels_support::*;
use folio_protocol::{DeliveryAccepted, DeliveryStatus};
use folio_test_support::{ApiCall, FakeApi, MockModelServer, MockReply, read_wire};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use serve_support::*;

/// `folio init --template <template>` in `parent`; the project's folder.
fn init(template: &str, parent: &Path) -> PathBuf {
    let dir = parent.join(template);
    let init = std::process::Command::new(folio_bin())
        .args(["init", "--template", template])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(init.status.success(), "{init:?}");
    dir
}

/// Points the scaffolded channel `file` at the fake API (a top-level key, appended).
fn point_at(dir: &Path, file: &str, api: &FakeApi) {
    let path = dir.join("agent/channels").join(file);
    let mut manifest = std::fs::read_to_string(&path).unwrap();
    manifest.push_str(&format!("api_base_url = \"{}\"\n", api.url()));
    std::fs::write(&path, manifest).unwrap();
}

fn calls_of(calls: &[ApiCall]) -> Vec<(String, String, Value)> {
    calls
        .iter()
        .map(|c| (c.method.clone(), c.path.clone(), c.body.clone()))
        .collect()
}

/// The one delivery of `channel` once settled: its status and session.
async fn one_delivery(url: &str, channel: &str) -> (DeliveryStatus, String) {
    let deliveries = settled(url, channel).await;
    assert_eq!(deliveries.len(), 1, "{deliveries:#?}");
    (deliveries[0].status, session_of(&deliveries[0]))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_pr_reviewer_template_reviews_a_pull_request_and_comments() {
    let parent = tempfile::tempdir().unwrap();
    let dir = init("pr-reviewer", parent.path());
    let github = FakeApi::start().await;
    point_at(&dir, "github.toml", &github);
    let mock = MockModelServer::start().await;
    let server = serve_with_env(
        &mock.openai_base_url(),
        &dir,
        &parent.path().join("state"),
        &["--mode", "single"],
        &[
            ("GITHUB_WEBHOOK_SECRET", SECRET),
            ("GITHUB_TOKEN", "ghp_template"),
        ],
    )
    .await;
    let opened = github_examples("pull_request")
        .into_iter()
        .find(|p| p["action"] == "opened")
        .unwrap();
    mock.push(MockReply::text("approve: small, clear README change."));
    let (status, answer) = github_delivery(
        &format!("{}/v1/channels/github", server.url),
        "pull_request",
        "tpl-1",
        &opened,
    )
    .await;
    assert_eq!(status, 202);
    let accepted: DeliveryAccepted = read_wire(&answer);
    assert!(!accepted.duplicate);
    let calls = github.wait_for(3, Duration::from_secs(30)).await;
    let repo = "/repos/Codertocat/Hello-World";
    assert_eq!(
        calls_of(&calls),
        [
            ("GET".into(), format!("{repo}/pulls/2"), Value::Null),
            (
                "POST".into(),
                format!("{repo}/issues/2/reactions"),
                json!({"content": "eyes"})
            ),
            (
                "POST".into(),
                format!("{repo}/issues/2/comments"),
                json!({"body": "approve: small, clear README change."})
            ),
        ]
    );
    assert_eq!(
        one_delivery(&server.url, "github").await.0,
        DeliveryStatus::Accepted
    );
    assert!(
        mock.requests()[0]
            .body
            .to_string()
            .contains("Update the README with new information.")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_webhook_template_answers_a_signed_ticket_in_its_session() {
    let parent = tempfile::tempdir().unwrap();
    let dir = init("webhook", parent.path());
    let mock = MockModelServer::start().await;
    let server = serve_with_env(
        &mock.openai_base_url(),
        &dir,
        &parent.path().join("state"),
        &["--mode", "single"],
        &[("TICKETS_SECRET", SECRET)],
    )
    .await;
    let url = format!("{}/v1/channels/tickets/ticket", server.url);
    // The template's generic `sha256=` HMAC over the body: what @octokit/webhooks-methods signs.
    let body = json!({"ticketId": 31, "message": "My invoices page is blank"}).to_string();
    let (status, _) = deliver(
        &url,
        &body,
        &[("x-signature-256", "sha256=0000".to_string())],
    )
    .await;
    assert_eq!(status, 401);
    let (status, refused) = deliver(
        &url,
        r#"{"ticketId": 31}"#,
        &[("x-signature-256", github_signature(r#"{"ticketId": 31}"#))],
    )
    .await;
    let refused: folio_protocol::ErrorBody = read_wire(&refused);
    assert_eq!(
        (status, refused.message.as_str()),
        (
            400,
            "body: \"message\" is a required property (the route's body_schema)"
        )
    );
    mock.push(MockReply::text("Sorry about that: which browser?"));
    let (status, _) = deliver(
        &url,
        &body,
        &[
            ("x-signature-256", github_signature(&body)),
            ("idempotency-key", "ticket-31-1".into()),
        ],
    )
    .await;
    assert_eq!(status, 202);
    model_requests(&mock, 1).await;
    assert_eq!(
        one_delivery(&server.url, "tickets").await.0,
        DeliveryStatus::Accepted
    );
    assert!(
        mock.requests()[0]
            .body
            .to_string()
            .contains("My invoices page is blank")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_triage_template_answers_a_slack_mention_in_its_thread() {
    let parent = tempfile::tempdir().unwrap();
    let dir = init("triage", parent.path());
    let slack = FakeApi::start().await;
    point_at(&dir, "slack.toml", &slack);
    let mock = MockModelServer::start().await;
    let server = serve_with_env(
        &mock.openai_base_url(),
        &dir,
        &parent.path().join("state"),
        &["--mode", "single"],
        &[
            ("TRIAGE_SLACK_SIGNING_SECRET", SECRET),
            ("TRIAGE_SLACK_BOT_TOKEN", "xoxb-template"),
        ],
    )
    .await;
    let mention = json!({
        "token": "unused",
        "team_id": "T0TEAM",
        "api_app_id": "A0APP",
        "type": "event_callback",
        "event_id": "EvT1",
        "event_time": 1_700_000_000,
        "event": {
            "type": "app_mention",
            "user": "U0ALICE",
            "text": "<@U0BOT> the app crashes when I upload an empty file",
            "ts": "1700000000.000100",
            "channel": "C0ISSUES",
            "event_ts": "1700000000.000100",
        },
    });
    mock.push(MockReply::text("Labeled bug: empty uploads crash the app."));
    let events = format!("{}/v1/channels/slack/events", server.url);
    assert_eq!(slack_event(&events, &mention, None).await.0, 202);
    let calls = slack.wait_for(2, Duration::from_secs(30)).await;
    let sent: Vec<(String, Value)> = calls
        .iter()
        .map(|c| (c.path.clone(), c.body.clone()))
        .collect();
    assert_eq!(
        sent,
        [
            (
                "/chat.postMessage".into(),
                json!({"channel": "C0ISSUES", "thread_ts": "1700000000.000100", "text": "_Working on it…_"})
            ),
            (
                "/chat.update".into(),
                json!({"channel": "C0ISSUES", "ts": "1", "text": "Labeled bug: empty uploads crash the app."})
            ),
        ]
    );
    assert_eq!(calls[0].headers["authorization"], "Bearer xoxb-template");
    assert_eq!(
        one_delivery(&server.url, "slack").await.0,
        DeliveryStatus::Accepted
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_pr_autofixer_template_wakes_on_failed_ci_and_checks_out_the_branch() {
    let parent = tempfile::tempdir().unwrap();
    let dir = init("pr-autofixer", parent.path());
    let github = FakeApi::start().await;
    point_at(&dir, "github.toml", &github);
    // The PR's head branch lives in a local bare repository: checkout_pr clones it from there.
    let seed = parent.path().join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    std::fs::write(seed.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    let origin = parent.path().join("origin.git");
    for args in [
        vec!["init", "--quiet", "--initial-branch", "fix-add"],
        vec!["add", "-A"],
        vec![
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@example.com",
            "commit",
            "--quiet",
            "-m",
            "seed",
        ],
        vec!["clone", "--quiet", "--bare", ".", origin.to_str().unwrap()],
    ] {
        let git = std::process::Command::new("git")
            .args(&args)
            .current_dir(&seed)
            .output()
            .unwrap();
        assert!(git.status.success(), "git {args:?}: {git:?}");
    }
    let repo = "/repos/Codertocat/Hello-World";
    github.respond(
        &format!("{repo}/pulls/2"),
        json!({"head": {"ref": "fix-add", "sha": "ec26c3e", "repo": {"clone_url": format!("file://{}", origin.display())}}}),
    );
    let mock = MockModelServer::start().await;
    let api = github.url();
    let server = serve_with_env(
        &mock.openai_base_url(),
        &dir,
        &parent.path().join("state"),
        &["--mode", "single"],
        &[
            ("GITHUB_WEBHOOK_SECRET", SECRET),
            ("GITHUB_TOKEN", "ghp_template"),
            ("GITHUB_API_URL", api.as_str()),
        ],
    )
    .await;
    let mut failed = github_examples("check_suite")
        .into_iter()
        .find(|p| p["action"] == "completed" && p["check_suite"]["pull_requests"][0]["number"] == 2)
        .unwrap();
    failed["check_suite"]["conclusion"] = json!("failure");
    mock.push(MockReply::tool_calls([("checkout_pr", json!({}))]));
    mock.push(MockReply::text(
        "Checked out fix-add; reproducing the failure next.",
    ));
    let (status, _) = github_delivery(
        &format!("{}/v1/channels/github", server.url),
        "check_suite",
        "tpl-ci",
        &failed,
    )
    .await;
    assert_eq!(status, 202);
    let calls = github.wait_for(7, Duration::from_secs(60)).await;
    let gets: Vec<&ApiCall> = calls
        .iter()
        .filter(|c| c.method == "GET" && c.path == format!("{repo}/pulls/2"))
        .collect();
    assert_eq!(
        gets.len(),
        2,
        "the channel's diff and the tool's lookup: {calls:#?}"
    );
    assert!(
        gets.iter()
            .any(|c| c.headers["accept"] == "application/vnd.github+json"
                && c.headers["authorization"] == "Bearer ghp_template"),
        "{gets:#?}"
    );
    let checks: Vec<(String, Value)> = calls
        .iter()
        .filter(|c| c.path.starts_with(&format!("{repo}/check-runs")))
        .map(|c| (c.method.clone(), c.body["status"].clone()))
        .collect();
    assert_eq!(
        checks,
        [
            ("POST".into(), json!("queued")),
            ("PATCH".into(), json!("in_progress")),
            ("PATCH".into(), json!("completed")),
        ]
    );
    assert_eq!(
        calls_of(&calls[calls.len() - 1..]),
        [(
            "POST".into(),
            format!("{repo}/issues/2/comments"),
            json!({"body": "Checked out fix-add; reproducing the failure next."})
        )]
    );
    let (status, session) = one_delivery(&server.url, "github").await;
    assert_eq!(status, DeliveryStatus::Accepted);
    let requests = mock.requests();
    assert!(
        requests[0]
            .body
            .to_string()
            .contains("CI failed on Codertocat/Hello-World#2"),
        "{:?}",
        requests[0].body
    );
    assert!(requests[1].body.to_string().contains("fix-add"));
    let cloned = parent
        .path()
        .join("state/sessions")
        .join(&session)
        .join("workspace/repo/calc.py");
    assert_eq!(
        std::fs::read_to_string(&cloned).unwrap(),
        "def add(a, b):\n    return a - b\n"
    );
}
