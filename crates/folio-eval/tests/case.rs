//! `folio_eval::Case`: a case written in Rust runs under `cargo test` through the same runner as
//! `folio eval`, against the mock model server.

use std::sync::Arc;

use folio_eval::{Case, EvalError, OpenModel, attempt_failures};
use folio_model::ProviderConfig;
use folio_project::{ArgMode, Assertion};
use folio_session::StateRoot;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::json;

/// Opens the mock server's OpenAI endpoint, whatever the spec.
fn mock_model(base_url: String) -> OpenModel {
    Arc::new(move |_spec| {
        let config = ProviderConfig {
            base_url: Some(base_url.clone()),
            ..ProviderConfig::default()
        };
        let env = |name: &str| (name == "OPENAI_API_KEY").then(|| "test-key".to_string());
        folio_model::open_provider("openai:gpt-test", &config, &env).map_err(|err| {
            EvalError::Model {
                spec: "openai:gpt-test".into(),
                message: err.to_string(),
            }
        })
    })
}

#[tokio::test]
async fn a_rust_case_runs_its_steps_in_one_session_and_reports_failures() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "Read",
        json!({"path": "brief.md"}),
    )]));
    mock.push(MockReply::text("The brief says: ship it."));
    mock.push(MockReply::text("Still: ship it."));
    let project = tempfile::tempdir().unwrap();
    let agent = project.path().join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(agent.join("instructions.md"), "You read briefs.").unwrap();
    std::fs::write(agent.join("agent.toml"), "model = \"openai:gpt-test\"\n").unwrap();
    let definition = folio_project::discover(project.path())
        .definition
        .expect("a valid agent");

    let case = Case::new("brief")
        .workspace_file("brief.md", "ship it")
        .step(
            "What does the brief say?",
            [
                Assertion::CalledTool {
                    tool: "Read".into(),
                    input: Some(json!({"path": "brief.md"})),
                    args: ArgMode::Exact,
                    paths: Default::default(),
                    times: Some(1),
                },
                Assertion::ReplyIncludes("ship it".into()),
            ],
        )
        .step(
            "And now?",
            [
                Assertion::NotCalledTool("Read".into()),
                Assertion::ReplyIncludes("hold it".into()),
            ],
        );
    let result = case
        .run(
            definition,
            StateRoot::new(project.path().join("state")),
            mock_model(mock.openai_base_url()),
        )
        .await
        .unwrap();
    let attempt = &result.attempts[0];
    assert_eq!(
        (result.ok, attempt.steps.len(), attempt.error.clone()),
        (false, 2, None)
    );
    assert_eq!(
        attempt_failures(attempt),
        "✗ case step 2: reply_includes: the reply does not include \"hold it\"\n    expected: \"hold it\"\n    actual:   \"Still: ship it.\""
    );
    // Both steps went to one session: the second request carries the first exchange.
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[2].user_texts().first().map(String::as_str),
        Some("What does the brief say?")
    );
}
