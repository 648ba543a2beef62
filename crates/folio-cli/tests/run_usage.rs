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
