//! Channels as `folio serve` and the `folio` binary wire them; what they do with a delivery is
//! folio-channels' own suites (`crates/folio-channels/tests`). Here: `folio serve` mounts an
//! agent's channels behind its browser guard, so a correctly signed delivery that a web page
//! sends is refused before the channel sees it, and `folio github replay` turns a saved payload
//! into a delivery signed as GitHub signs it.

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
        "kind = \"github\"\nreactions = false\ndeliver_replies = false\napi_base_url = \"{}\"\n",
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
