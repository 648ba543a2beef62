//! `[provider]` settings reach the model client: the Anthropic system prompt is a plain string
//! unless `cache = true` marks it as a cache breakpoint; `max_retries` and `timeout_ms` bound a
//! failing or silent model server; `api = "responses"` (or an `openai-responses:` model) speaks
//! the Responses API.

mod common;

use std::time::Duration;

use common::*;
use folio_test_support::{MockModelServer, MockReply};
use serde_json::{Value, json};

/// `folio run --json` of a project with `agent_toml`, against `mock` on both wire formats;
/// returns whether it succeeded and its stderr.
async fn run(mock: &MockModelServer, agent_toml: &str) -> (bool, String) {
    let dir = project(agent_toml);
    let output = folio(&mock.openai_base_url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", mock.anthropic_base_url())
        .args(["run", "--json", "--message", "hi", "--dir"])
        .arg(dir.path())
        .output()
        .await
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn the_anthropic_system_prompt_is_a_string_unless_cache_is_on() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("plain"));
    mock.push(MockReply::text("cached"));
    let model = "model = \"anthropic:claude-test\"\n";
    assert!(run(&mock, model).await.0);
    assert!(
        run(&mock, &format!("{model}[provider]\ncache = true\n"))
            .await
            .0
    );
    let systems: Vec<Value> = mock
        .requests()
        .iter()
        .map(|request| request.body["system"].clone())
        .collect();
    assert!(systems[0].is_string(), "{:?}", systems[0]);
    assert_eq!(systems[1][0]["cache_control"], json!({"type": "ephemeral"}));
    assert!(
        systems[1][0]["text"]
            .as_str()
            .is_some_and(|text| text.starts_with("You are a test agent.")),
        "{:?}",
        systems[1]
    );
}

#[tokio::test]
async fn max_retries_and_timeout_ms_bound_a_failing_model() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::server_error().with_message("down for maintenance"));
    let openai = "model = \"openai:gpt-test\"\n";
    let (ok, stderr) = run(&mock, &format!("{openai}[provider]\nmax_retries = 0\n")).await;
    assert!(!ok && stderr.contains("down for maintenance"), "{stderr}");
    assert_eq!(mock.requests().len(), 1, "no retry with max_retries = 0");

    mock.push(MockReply::text("too late").first_byte_delay(Duration::from_secs(30)));
    let (ok, stderr) = run(
        &mock,
        &format!("{openai}[provider]\nmax_retries = 0\ntimeout_ms = 300\n"),
    )
    .await;
    assert!(
        !ok && stderr.contains("first-byte timeout after 0.3s"),
        "{stderr}"
    );
    assert_eq!(mock.requests().len(), 2);

    let (ok, stderr) = run(&mock, &format!("{openai}[provider]\ntimeout_ms = 0\n")).await;
    assert!(!ok && stderr.contains("timeout_ms"), "{stderr}");
}

#[tokio::test]
async fn the_responses_api_is_a_model_prefix_or_a_provider_setting() {
    let mock = MockModelServer::start().await;
    mock.push(
        MockReply::text("via the prefix").with_usage(folio_test_support::Usage {
            input_tokens: 7,
            output_tokens: 3,
            cache_read_tokens: 5,
            cache_write_tokens: 0,
            cost_usd: None,
        }),
    );
    mock.push(MockReply::text("via api"));
    let dir = project("");
    let output = folio(&mock.openai_base_url())
        .args([
            "run",
            "--json",
            "--message",
            "hi",
            "--model",
            "openai-responses:gpt-test",
            "--dir",
        ])
        .arg(dir.path())
        .output()
        .await
        .unwrap();
    let result = result_of(&output);
    assert_eq!(result.reply, "via the prefix");
    let usage = result.usage.expect("usage");
    assert_eq!(
        (
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.output_tokens
        ),
        (7, 5, 3)
    );

    let (ok, stderr) = run(
        &mock,
        "model = \"openai:gpt-test\"\n[provider]\napi = \"responses\"\n",
    )
    .await;
    assert!(ok, "{stderr}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.path, "/v1/responses");
        assert_eq!(request.body["model"], json!("gpt-test"));
        assert_eq!(request.body["store"], json!(false));
        assert!(
            request.body["instructions"]
                .as_str()
                .is_some_and(|text| text.starts_with("You are a test agent.")),
            "{}",
            request.body
        );
        assert_eq!(
            request.body["input"],
            json!([{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}])
        );
    }

    let (ok, stderr) = run(
        &mock,
        "model = \"openai:gpt-test\"\n[provider]\napi = \"soap\"\n",
    )
    .await;
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains("unknown variant `soap`, expected `chat` or `responses`"),
        "{stderr}"
    );
    assert_eq!(mock.requests().len(), 2, "a bad setting asks no model");
}
