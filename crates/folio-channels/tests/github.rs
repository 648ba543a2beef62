//! GitHub channels served in-process (the channels' router on a real listener), fed GitHub's
//! own example payloads (`@octokit/webhooks-examples`) signed by `@octokit/webhooks-methods`,
//! against a recording fake GitHub API: the continuation `pr:owner/repo#N`, `pr/` files before
//! the turn, the 👀 reaction, check runs (queued → in_progress → completed, details URL to the
//! session), the reply as a PR comment, the `bot_name` loop guard and ignored events, and an
//! App installation token bought with the App's JWT. (`folio github replay` is folio-cli's
//! `channels_serve.rs`.)

mod support;

use std::time::Duration;

use folio_protocol::{ChannelDelivery, ChannelDeliveryOutcome, DeliveryAccepted, DeliveryStatus};
use folio_test_support::{ApiCall, FakeApi, MockModelServer, MockReply, read_wire};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::*;

const AGENT: &str = "name = \"reviewer\"\nmodel = \"openai:gpt-test\"\n";
const REPO: &str = "/repos/Codertocat/Hello-World";
const SHA: &str = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";

fn calls_of(calls: &[ApiCall]) -> Vec<(String, String, Value)> {
    calls
        .iter()
        .map(|c| (c.method.clone(), c.path.clone(), c.body.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn pull_requests_and_mentions_wake_one_session_that_reacts_checks_and_comments() {
    let mock = MockModelServer::start().await;
    let github = FakeApi::start().await;
    let project = project(AGENT);
    let manifest = format!(
        "kind = \"github\"\ncheckout = false\nbot_name = \"folio-reviewer\"\ncheck_runs = true\napi_base_url = \"{}\"\n",
        github.url()
    );
    write_files(project.path(), &[("agent/channels/gh.toml", &manifest)]);
    let state = tempfile::tempdir().unwrap();
    let server = serve_with_env(
        &mock.openai_base_url(),
        project.path(),
        state.path(),
        &[
            ("GITHUB_WEBHOOK_SECRET", SECRET),
            ("GITHUB_TOKEN", "ghp_test"),
        ],
    )
    .await;
    let hook = format!("{}/v1/channels/gh", server.url);

    // Unsigned or wrongly signed: 401, nothing recorded, nothing called.
    let opened = github_examples("pull_request")
        .into_iter()
        .find(|p| p["action"] == "opened")
        .unwrap();
    let (status, _) = deliver(
        &hook,
        &opened.to_string(),
        &[
            ("x-github-event", "pull_request".into()),
            ("x-github-delivery", "d-0".into()),
        ],
    )
    .await;
    assert_eq!(status, 401);
    let (status, _) = deliver(
        &hook,
        &opened.to_string(),
        &[
            ("x-github-event", "pull_request".into()),
            ("x-github-delivery", "d-0".into()),
            ("x-hub-signature-256", github_signature("{}")),
        ],
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(settled(&server.url, "gh").await, []);

    mock.push(MockReply::text("approve: the README change reads well."));
    // GitHub redelivers with the same X-GitHub-Delivery: five copies at once run one turn.
    let copies = (0..5).map(|_| github_delivery(&hook, "pull_request", "d-1", &opened));
    let answers = futures::future::join_all(copies).await;
    let accepted: Vec<DeliveryAccepted> = answers
        .iter()
        .map(|(status, answer)| {
            assert_eq!(*status, 202, "{answer}");
            read_wire(answer)
        })
        .collect();
    assert!(accepted.iter().all(|a| a.delivery_id == "d-1"));
    assert_eq!(accepted.iter().filter(|a| !a.duplicate).count(), 1);
    let calls = github.wait_for(6, Duration::from_secs(30)).await;
    let deliveries = settled(&server.url, "gh").await;
    let session = session_of(&deliveries[0]);
    let details = format!("{}/playground?session={session}", server.url);
    assert_eq!(
        calls_of(&calls),
        [
            ("GET".into(), format!("{REPO}/pulls/2"), Value::Null),
            (
                "POST".into(),
                format!("{REPO}/issues/2/reactions"),
                json!({"content": "eyes"})
            ),
            (
                "POST".into(),
                format!("{REPO}/check-runs"),
                json!({"name": "folio-reviewer", "head_sha": SHA, "status": "queued", "details_url": details})
            ),
            (
                "PATCH".into(),
                format!("{REPO}/check-runs/3"),
                json!({"status": "in_progress"})
            ),
            (
                "PATCH".into(),
                format!("{REPO}/check-runs/3"),
                json!({
                    "status": "completed",
                    "conclusion": "success",
                    "output": {
                        "title": "folio-reviewer",
                        "summary": format!("[View agent]({details})\n\napprove: the README change reads well."),
                    },
                })
            ),
            (
                "POST".into(),
                format!("{REPO}/issues/2/comments"),
                json!({"body": "approve: the README change reads well."})
            ),
        ]
    );
    assert_eq!(calls[0].headers["accept"], "application/vnd.github.diff");
    assert!(
        calls
            .iter()
            .all(|c| c.headers["authorization"] == "Bearer ghp_test")
    );
    let workspace = state
        .path()
        .join("sessions")
        .join(&session)
        .join("workspace");
    assert_eq!(
        std::fs::read_to_string(workspace.join("pr/diff.patch")).unwrap(),
        r#"{"id":1,"ok":true,"ts":"1"}"#
    );
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(workspace.join("pr/meta.json")).unwrap())
            .unwrap();
    assert_eq!(
        (
            meta["number"].clone(),
            meta["headSha"].clone(),
            meta["title"].clone()
        ),
        (
            json!(2),
            json!(SHA),
            json!("Update the README with new information.")
        )
    );
    assert!(
        mock.requests()[0]
            .body
            .to_string()
            .contains("Update the README with new information.")
    );

    // A review comment mentioning the bot reaches the same session; the bot's own comment and
    // a check suite that succeeded are recorded as ignored.
    let mut comment = github_examples("pull_request_review_comment")
        .into_iter()
        .find(|p| p["action"] == "created")
        .unwrap();
    comment["comment"]["body"] = json!("@folio-reviewer is this line right?");
    mock.push(MockReply::text("Yes, it is."));
    assert_eq!(
        github_delivery(&hook, "pull_request_review_comment", "d-2", &comment)
            .await
            .0,
        202
    );
    let mut own = comment.clone();
    own["comment"]["user"]["login"] = json!("folio-reviewer");
    assert_eq!(
        github_delivery(&hook, "pull_request_review_comment", "d-3", &own)
            .await
            .0,
        202
    );
    let suite = github_examples("check_suite")
        .into_iter()
        .find(|p| p["action"] == "completed")
        .unwrap();
    assert_eq!(
        github_delivery(&hook, "check_suite", "d-4", &suite).await.0,
        202
    );
    let calls = github.wait_for(12, Duration::from_secs(30)).await;
    assert_eq!(
        calls_of(&calls[7..8]),
        [(
            "POST".into(),
            format!("{REPO}/pulls/comments/284312630/reactions"),
            json!({"content": "eyes"})
        )]
    );
    assert_eq!(
        calls_of(&calls[11..]),
        [(
            "POST".into(),
            format!("{REPO}/issues/2/comments"),
            json!({"body": "Yes, it is."})
        )]
    );
    let deliveries = settled(&server.url, "gh").await;
    let summary: Vec<(String, DeliveryStatus, Option<String>, Option<String>)> = deliveries
        .iter()
        .cloned()
        .map(|d| (d.id, d.status, d.session_id, d.message))
        .collect();
    assert_eq!(
        summary,
        [
            (
                "d-4".into(),
                DeliveryStatus::Ignored,
                None,
                Some("check_suite.completed did not fail".into())
            ),
            (
                "d-3".into(),
                DeliveryStatus::Ignored,
                None,
                Some("the bot's own comment (loop guard)".into())
            ),
            (
                "d-2".into(),
                DeliveryStatus::Accepted,
                Some(session.clone()),
                None
            ),
            (
                "d-1".into(),
                DeliveryStatus::Accepted,
                Some(session.clone()),
                None
            ),
        ]
    );
    assert_eq!(deliveries[3].duplicates, 4);
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(github.calls().len(), 12);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_app_installation_token_bought_with_the_apps_jwt_authenticates_every_call() {
    let mock = MockModelServer::start().await;
    let github = FakeApi::start().await;
    let token_path = "/app/installations/77/access_tokens";
    github.respond(
        token_path,
        json!({"token": "ghs_installation", "expires_at": "2099-01-01T00:00:00Z"}),
    );
    let (private, public) = app_key();
    let project = project(AGENT);
    let manifest = format!(
        "kind = \"github\"\ncheckout = false\napi_base_url = \"{}\"\n[app]\nid = 4242\n",
        github.url()
    );
    write_files(project.path(), &[("agent/channels/gh.toml", &manifest)]);
    let state = tempfile::tempdir().unwrap();
    let server = serve_with_env(
        &mock.openai_base_url(),
        project.path(),
        state.path(),
        &[
            ("GITHUB_WEBHOOK_SECRET", SECRET),
            ("GITHUB_APP_PRIVATE_KEY", &private),
        ],
    )
    .await;
    let hook = format!("{}/v1/channels/gh", server.url);
    let mut opened = github_examples("pull_request")
        .into_iter()
        .find(|p| p["action"] == "opened")
        .unwrap();
    opened["installation"] = json!({"id": 77});

    mock.push(MockReply::text("Looks good."));
    assert_eq!(
        github_delivery(&hook, "pull_request", "app-1", &opened)
            .await
            .0,
        202
    );
    // The token is bought once, then every call carries it: diff, 👀, the reply comment.
    let calls = github.wait_for(4, Duration::from_secs(30)).await;
    let paths: Vec<(String, String)> = calls
        .iter()
        .map(|c| (c.method.clone(), c.path.clone()))
        .collect();
    assert_eq!(
        paths,
        [
            ("POST".to_string(), token_path.to_string()),
            ("GET".into(), format!("{REPO}/pulls/2")),
            ("POST".into(), format!("{REPO}/issues/2/reactions")),
            ("POST".into(), format!("{REPO}/issues/2/comments")),
        ]
    );
    let jwt = calls[0].headers["authorization"]
        .strip_prefix("Bearer ")
        .unwrap();
    let claims = verified_claims(jwt, &public);
    assert_eq!(claims["iss"], "4242");
    let (iat, exp) = (
        claims["iat"].as_i64().unwrap(),
        claims["exp"].as_i64().unwrap(),
    );
    assert_eq!(exp - iat, 600);
    assert!(
        (iat + 60 - now()).abs() < 30,
        "iat {iat} is not a minute back"
    );
    assert!(
        calls[1..]
            .iter()
            .all(|c| c.headers["authorization"] == "Bearer ghs_installation")
    );

    // The session saw the delivery arrive and its answer go back.
    let deliveries = settled(&server.url, "gh").await;
    let session = session_of(&deliveries[0]);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let reported = loop {
        let events = session_events(state.path(), &session);
        let reported: Vec<ChannelDelivery> = folio_test_support::all::<ChannelDelivery>(&events)
            .into_iter()
            .cloned()
            .collect();
        if reported.len() == 2 || tokio::time::Instant::now() > deadline {
            break reported;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        reported,
        [
            ChannelDelivery {
                channel: "gh".into(),
                outcome: ChannelDeliveryOutcome::Received,
                delivery_id: Some("app-1".into()),
                route: Some("pull_request.opened".into()),
                message: None,
            },
            ChannelDelivery {
                channel: "gh".into(),
                outcome: ChannelDeliveryOutcome::Replied,
                delivery_id: None,
                route: None,
                message: None,
            },
        ]
    );

    // A second delivery reuses the cached token.
    let mut reopened = opened.clone();
    reopened["action"] = json!("reopened");
    mock.push(MockReply::text("Still good."));
    assert_eq!(
        github_delivery(&hook, "pull_request", "app-2", &reopened)
            .await
            .0,
        202
    );
    let calls = github.wait_for(7, Duration::from_secs(30)).await;
    assert_eq!(calls.len(), 7);
    assert_eq!(
        calls.iter().filter(|c| c.path == token_path).count(),
        1,
        "{calls:#?}"
    );
}
