//! Retries, timeouts, dropped connections and missing keys against the mock server.

mod common;

use std::time::{Duration, Instant};

use common::{collect, config, open, request};
use folio_model::{Delta, ModelError, ProviderConfig, TimeoutKind, open_provider};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;

fn texts(deltas: &[Delta]) -> String {
    deltas
        .iter()
        .filter_map(|delta| match delta {
            Delta::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn retries_429_honouring_retry_after() {
    let server = MockModelServer::start().await;
    server.push(MockReply::rate_limited(1));
    server.push(MockReply::text("after the wait"));
    let provider = open("openai:test-model", &config(server.openai_base_url()));
    let started = Instant::now();
    let deltas = collect(provider.as_ref(), &request("x")).await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(texts(&deltas), "after the wait");
    assert_eq!(server.requests().len(), 2);
    // Backoff alone would be ~10 ms: the second attempt waited for Retry-After: 1.
    assert!(elapsed >= Duration::from_millis(1000), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(2500), "{elapsed:?}");
}

#[tokio::test]
async fn retries_500_then_succeeds() {
    let server = MockModelServer::start().await;
    server.push(MockReply::server_error());
    server.push(MockReply::status(503));
    server.push(MockReply::text("third time"));
    let provider = open("anthropic:test-model", &config(server.anthropic_base_url()));
    let deltas = collect(provider.as_ref(), &request("x")).await.unwrap();
    assert_eq!(texts(&deltas), "third time");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn gives_up_after_four_attempts() {
    let server = MockModelServer::start().await;
    for _ in 0..5 {
        server.push(MockReply::server_error().with_message("upstream exploded"));
    }
    let provider = open("openai:test-model", &config(server.openai_base_url()));
    let error = collect(provider.as_ref(), &request("x")).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "gave up after 4 attempts: openai: HTTP 500: upstream exploded"
    );
    assert_eq!(server.requests().len(), 4);
    assert_eq!(server.remaining(), 1);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = MockModelServer::start().await;
    server.push(MockReply::status(400).with_message("messages: field required"));
    server.push(MockReply::text("unused"));
    let provider = open("anthropic:test-model", &config(server.anthropic_base_url()));
    let error = collect(provider.as_ref(), &request("x")).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "anthropic: HTTP 400: messages: field required"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn empty_script_answers_a_clear_error() {
    let server = MockModelServer::start().await;
    let mut quick = config(server.openai_base_url());
    quick.retry.max_attempts = 1;
    let provider = open("openai:test-model", &quick);
    let error = collect(provider.as_ref(), &request("x")).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "openai: HTTP 500: mock model server: no scripted reply left for request #0 (push a MockReply)"
    );
}

#[tokio::test]
async fn dropped_connection_mid_stream_fails_without_retry() {
    for (spec, base) in [("openai", true), ("anthropic", false)] {
        let server = MockModelServer::start().await;
        // A small delay between chunks so the first ones are flushed before the drop.
        server.push(
            MockReply::text("one two three four five six")
                .chunk_delay(Duration::from_millis(30))
                .drop_after_chunks(5),
        );
        server.push(MockReply::text("must not be used"));
        let base = if base {
            server.openai_base_url()
        } else {
            server.anthropic_base_url()
        };
        let provider = open(&format!("{spec}:test-model"), &config(base));
        let mut stream = provider
            .stream(&request("x"), tokio_util::sync::CancellationToken::new())
            .await
            .unwrap();
        let mut got = Vec::new();
        let error = loop {
            match futures::StreamExt::next(&mut stream).await {
                Some(Ok(delta)) => got.push(delta),
                Some(Err(error)) => break error,
                None => panic!("{spec}: stream ended without error: {got:?}"),
            }
        };
        assert!(
            matches!(error, ModelError::Stream { .. }),
            "{spec}: {error}"
        );
        assert!(
            error
                .to_string()
                .starts_with(&format!("{spec}: stream failed: ")),
            "{error}"
        );
        assert!(
            !got.is_empty(),
            "{spec}: some deltas arrived before the drop"
        );
        assert_eq!(
            server.requests().len(),
            1,
            "{spec}: no retry after the first token"
        );
        assert_eq!(server.remaining(), 1);
    }
}

#[tokio::test]
async fn dropped_connection_before_the_first_event_is_retried() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("lost").drop_after_chunks(0));
    server.push(MockReply::text("second try"));
    let provider = open("anthropic:test-model", &config(server.anthropic_base_url()));
    let deltas = collect(provider.as_ref(), &request("x")).await.unwrap();
    assert_eq!(texts(&deltas), "second try");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn slow_first_byte_times_out() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("late").first_byte_delay(Duration::from_secs(3)));
    let mut slow = config(server.openai_base_url());
    slow.timeouts.first_byte = Duration::from_millis(200);
    let provider = open("openai:test-model", &slow);
    let started = Instant::now();
    let error = collect(provider.as_ref(), &request("x")).await.unwrap_err();
    assert!(
        matches!(
            error,
            ModelError::Timeout {
                kind: TimeoutKind::FirstByte,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(error.to_string(), "openai: first-byte timeout after 0.2s");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn idle_stream_times_out() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("a b c").chunk_delay(Duration::from_millis(800)));
    let mut idle = config(server.anthropic_base_url());
    idle.timeouts.idle = Duration::from_millis(150);
    let provider = open("anthropic:test-model", &idle);
    let error = collect(provider.as_ref(), &request("x")).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "anthropic: idle stream timeout after 0.15s"
    );
}

#[tokio::test]
async fn connection_refused_is_retried_then_reported() {
    // Bind then drop a listener to get a port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let provider = open(
        "openai:test-model",
        &config(format!("http://127.0.0.1:{port}/v1")),
    );
    let error = collect(provider.as_ref(), &request("x")).await.unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with("gave up after 4 attempts: openai: connection failed: "),
        "{message}"
    );
}

#[test]
fn missing_key_names_the_variable() {
    let nothing = |_: &str| None;
    let config = ProviderConfig::default();
    for (spec, message) in [
        (
            "openai:gpt-4.1-mini",
            "OPENAI_API_KEY is not set: export it or set api_key_env in agent.toml [provider]",
        ),
        (
            "anthropic:claude-x",
            "ANTHROPIC_API_KEY is not set: export it or set api_key_env in agent.toml [provider]",
        ),
    ] {
        match open_provider(spec, &config, &nothing) {
            Ok(_) => panic!("{spec} opened without a key"),
            Err(error) => assert_eq!(error.to_string(), message),
        }
    }
    let custom = ProviderConfig {
        api_key_env: Some("GATEWAY_TOKEN".into()),
        ..ProviderConfig::default()
    };
    match open_provider("openai:gpt-4.1-mini", &custom, &nothing) {
        Ok(_) => panic!("opened without a key"),
        Err(error) => assert_eq!(
            error.to_string(),
            "GATEWAY_TOKEN is not set: export it or set api_key_env in agent.toml [provider]"
        ),
    }
}

#[test]
fn env_lookup_supplies_base_url_and_key() {
    let env = |name: &str| match name {
        "OPENAI_API_KEY" => Some("k".to_string()),
        "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1".to_string()),
        _ => None,
    };
    let (_, model) =
        open_provider("openai:gpt-4.1-mini", &ProviderConfig::default(), &env).unwrap();
    assert_eq!(model, "gpt-4.1-mini");
}
