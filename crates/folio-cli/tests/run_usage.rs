//! Usage as the provider reported it: known figures summed per turn, `null` ("usage not
//! reported") when a server sends none, and `[provider] stream = false` for such servers.

mod common;

use common::*;
use folio_protocol::Usage;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::json;

fn usage(input_tokens: u64, output_tokens: u64) -> Usage {
    Usage {
        input_tokens,
        output_tokens,
        ..Usage::default()
    }
}

#[tokio::test]
async fn a_server_that_reports_no_usage_gives_null_not_zero() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([("LS", json!({"path": "/"}))]).without_usage());
    mock.push(MockReply::text("Nothing here.").without_usage());
    let dir = project("model = \"openai:gpt-test\"\n[root]\n\"/a\" = { temp = {} }\n");
    let output = run_json(&mock.openai_base_url(), dir.path(), "look").await;
    let result = result_of(&output);
    assert_eq!(result.reply, "Nothing here.");
    assert_eq!(result.usage, None);
    assert_eq!(result.turns[0].usage, None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("usage not reported"), "{stderr}");
}

#[tokio::test]
async fn stream_false_sends_whole_requests_and_records_their_usage() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([("LS", json!({"path": "/"}))]).with_usage(usage(30, 5)));
    mock.push(MockReply::text("Nothing here.").with_usage(usage(42, 3)));
    let dir = project(&format!(
        "model = \"openai-compatible:local-model\"\n[provider]\nbase_url = \"{}\"\nstream = false\n[root]\n\"/a\" = {{ temp = {{}} }}\n",
        mock.openai_base_url()
    ));
    let output = run_json(&mock.openai_base_url(), dir.path(), "look").await;
    let result = result_of(&output);
    assert_eq!(result.reply, "Nothing here.");
    assert_eq!(result.tool_calls[0].tool, "LS");
    assert_eq!(result.usage, Some(usage(72, 8)));
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    // The request bodies are the OpenAI wire, not Folio's output: read as JSON.
    for request in &requests {
        assert_eq!(request.body["stream"], json!(false));
        assert_eq!(request.body.get("stream_options"), None);
    }
}

#[tokio::test]
async fn usage_costs_its_tokens_at_the_projects_price_and_null_without_one() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([("LS", json!({"path": "/"}))]).with_usage(usage(1000, 500)));
    mock.push(MockReply::text("Nothing here.").with_usage(usage(2000, 100)));
    let dir = project("model = \"openai:gpt-test\"\n[root]\n\"/a\" = { temp = {} }\n");
    std::fs::write(
        dir.path().join("folio.toml"),
        "[prices.\"gpt-test\"]\ninput = 2.0\noutput = 8.0\n",
    )
    .unwrap();
    let fixture = dir.path().join("look.jsonl");
    let output = folio(&mock.openai_base_url())
        .args(["run", "--json", "--message", "look", "--record"])
        .arg(&fixture)
        .arg("--dir")
        .arg(dir.path())
        .output()
        .await
        .unwrap();
    let result = result_of(&output);
    let expected = (3000.0 * 2.0 + 600.0 * 8.0) / 1_000_000.0;
    let cost = result
        .usage
        .and_then(|u| u.cost_usd)
        .expect("a priced run has a cost");
    assert!((cost - expected).abs() < 1e-12, "{cost} != {expected}");
    let turn = result.turns[0].usage.and_then(|u| u.cost_usd).unwrap();
    assert!((turn - expected).abs() < 1e-12, "{turn} != {expected}");
    // The wire spells it costUsd.
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(value["usage"]["costUsd"].is_f64(), "{}", value["usage"]);

    // Replayed from the recorded fixture, with no server: the same tokens at the same price.
    let replay = folio("http://127.0.0.1:9")
        .args(["run", "--json", "--message", "look", "--model"])
        .arg(format!("replay:{}", fixture.display()))
        .arg("--dir")
        .arg(dir.path())
        .output()
        .await
        .unwrap();
    let replayed = result_of(&replay);
    let totals = replayed.usage.expect("a replayed run has usage");
    assert_eq!((totals.input_tokens, totals.output_tokens), (3000, 600));
    let cost = totals.cost_usd.expect("a replayed priced run has a cost");
    assert!((cost - expected).abs() < 1e-12, "{cost} != {expected}");

    // A model with no price: the cost is null, never 0.
    mock.push(MockReply::text("Hi.").with_usage(usage(10, 2)));
    let unpriced = project("model = \"openai:gpt-test\"\n");
    let output = run_json(&mock.openai_base_url(), unpriced.path(), "hi").await;
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(value["usage"]["costUsd"].is_null(), "{}", value["usage"]);
    assert_eq!(value["usage"]["inputTokens"], 10);

    // A price that is not a number of dollars is refused by validation.
    std::fs::write(
        unpriced.path().join("folio.toml"),
        "[prices.\"gpt-test\"]\ninput = -1.0\noutput = 8.0\n",
    )
    .unwrap();
    let output = folio(&mock.openai_base_url())
        .args(["validate", "--dir"])
        .arg(unpriced.path())
        .output()
        .await
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("prices.\"gpt-test\""), "{text}");
}
