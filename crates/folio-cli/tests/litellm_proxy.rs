//! Through a real LiteLLM proxy (PyPI `litellm[proxy]`) in front of an OpenAI-compatible server:
//! Folio's Anthropic provider speaks the Messages format to the proxy, which translates it to
//! Chat Completions. Without a cache breakpoint the system prompt reaches the server as a plain
//! string, the form llama.cpp's server accepts; with `[provider] cache = true` it arrives as
//! content blocks (the form that server answered with HTTP 500).
//!
//! `scripts/install-test-deps` installs the proxy into `target/test-deps/litellm-venv`.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use folio_test_support::otlp::free_port;
use folio_test_support::{MockModelServer, MockReply};
use serde_json::Value;

fn litellm() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps/litellm-venv/bin/litellm")
}

/// A running LiteLLM proxy routing the model `local` to `api_base`; killed when dropped.
struct Proxy {
    _child: tokio::process::Child,
    _config: tempfile::TempDir,
    url: String,
}

async fn start_proxy(api_base: &str) -> Proxy {
    let config = tempfile::tempdir().unwrap();
    let path = config.path().join("litellm.yaml");
    std::fs::write(
        &path,
        format!(
            "model_list:\n  - model_name: local\n    litellm_params:\n      model: openai/local\n      api_base: {api_base}\n      api_key: none\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let child = tokio::process::Command::new(litellm())
        .arg("--config")
        .arg(&path)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        // The bundled price map, not a download; no usage telemetry.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("LITELLM_TELEMETRY", "False")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|err| {
            panic!(
                "cannot start {}: {err}; run scripts/install-test-deps",
                litellm().display()
            )
        });
    let url = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let started = Instant::now();
    loop {
        if let Ok(response) = client.get(format!("{url}/health/liveliness")).send().await
            && response.status().is_success()
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the LiteLLM proxy did not answer on {url} within 120 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Proxy {
        _child: child,
        _config: config,
        url,
    }
}

/// `folio run --json` of an `anthropic:local` agent (with `extra` settings) through the proxy.
async fn run(proxy: &Proxy, extra: &str) -> std::process::Output {
    let dir = project(&format!("model = \"anthropic:local\"\ntools = []\n{extra}"));
    folio("http://127.0.0.1:9/unused")
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", &proxy.url)
        .args(["run", "--json", "--message", "hi", "--dir"])
        .arg(dir.path())
        .output()
        .await
        .unwrap()
}

/// The system message the OpenAI-compatible server received in request `n`.
fn system_content(mock: &MockModelServer, n: usize) -> Value {
    let requests = mock.requests();
    let request = &requests[n];
    assert!(
        request.path.ends_with("/chat/completions"),
        "{}",
        request.path
    );
    let messages = request.body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system", "{messages:?}");
    messages[0]["content"].clone()
}

#[tokio::test]
async fn the_anthropic_provider_works_through_a_litellm_proxy() {
    let mock = MockModelServer::start().await;
    let proxy = start_proxy(&mock.openai_base_url()).await;

    mock.push(MockReply::text("hello through the proxy"));
    let output = run(&proxy, "").await;
    assert!(
        output.status.success(),
        "stderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result = result_of(&output);
    assert_eq!(result.reply, "hello through the proxy");
    let system = system_content(&mock, 0);
    assert!(
        system
            .as_str()
            .is_some_and(|text| text.starts_with("You are a test agent.")),
        "the system prompt must reach the server as a plain string: {system:?}"
    );

    mock.push(MockReply::text("cached"));
    let output = run(&proxy, "[provider]\ncache = true\n").await;
    assert!(output.status.success());
    let system = system_content(&mock, 1);
    assert!(
        system.is_array(),
        "cache = true sends content blocks: {system:?}"
    );
}
