//! Log lines: `--log-format json` writes one object per line, and a line logged inside a turn
//! carries its session, turn and trace ids; `RUST_LOG` filters (with `FOLIO_LOG` as an alias).

mod common;

use common::*;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::Value;

/// Runs `folio --log-format json run` with `env`; returns the result and the JSON log lines.
async fn run_logged(mock: &MockModelServer, env: &[(&str, &str)]) -> (Value, Vec<Value>) {
    let dir = project("model = \"openai:gpt-test\"\n");
    let output = folio(&mock.openai_base_url())
        .env_remove("RUST_LOG")
        .env_remove("FOLIO_LOG")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_SDK_DISABLED")
        .envs(env.iter().copied())
        .args([
            "--log-format",
            "json",
            "run",
            "--json",
            "--message",
            "hi",
            "--dir",
        ])
        .arg(dir.path())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(output.status.success(), "stderr:\n{stderr}");
    let lines = stderr
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line.get("level").is_some())
        .collect();
    (result_of(&output), lines)
}

/// The log lines about the model request that was retried.
fn retry_lines(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|line| {
            line["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("model request failed, retrying"))
        })
        .collect()
}

#[tokio::test]
async fn json_lines_inside_a_turn_carry_its_ids_and_rust_log_filters() {
    let mock = MockModelServer::start().await;
    // A rate-limited first attempt makes the model client log a warning inside the turn.
    for _ in 0..3 {
        mock.push(MockReply::rate_limited(0));
        mock.push(MockReply::text("Hi."));
    }
    // Traced (to a collector that is down, which costs the turn nothing): the trace id shows.
    let down = format!(
        "http://{}",
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    );
    let (result, lines) = run_logged(&mock, &[("OTEL_EXPORTER_OTLP_ENDPOINT", &down)]).await;
    assert_eq!(result["reply"], "Hi.");
    let retried = retry_lines(&lines);
    assert_eq!(retried.len(), 1, "{lines:#?}");
    let line = retried[0];
    assert_eq!(line["level"], "WARN");
    assert_eq!(line["session_id"], result["sessionId"]);
    assert!(
        line["turn_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("turn_")),
        "{line}"
    );
    let trace_id = line["trace_id"].as_str().unwrap_or_default();
    assert!(
        trace_id.len() == 32 && trace_id.chars().all(|c| c.is_ascii_hexdigit()),
        "{line}"
    );

    // RUST_LOG=error hides the warning; FOLIO_LOG, when set too, wins.
    let (_, lines) = run_logged(&mock, &[("RUST_LOG", "error")]).await;
    assert_eq!(retry_lines(&lines).len(), 0, "{lines:#?}");
    let (_, lines) = run_logged(&mock, &[("RUST_LOG", "error"), ("FOLIO_LOG", "warn")]).await;
    let retried = retry_lines(&lines);
    assert_eq!(retried.len(), 1, "{lines:#?}");
    // Untraced: the ids, and no trace id.
    assert!(retried[0].get("trace_id").is_none(), "{}", retried[0]);
    assert!(retried[0]["session_id"].is_string());
}
