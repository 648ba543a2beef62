//! `folio eval --variants a,b` runs every case on each A/B variant (each case's session runs
//! with its variant's instructions, checked on the model's requests) and prints them side by
//! side; `folio eval compare <runA> <runB>` does the same for two stored runs.

mod eval_support;

use eval_support::*;
use folio_protocol::{EvalRun, Usage};
use folio_test_support::{MockModelServer, MockReply, read_wire, write_files};
use pretty_assertions::assert_eq;
use serde_json::Value;

const AGENT: &str = r#"model = "openai:gpt-test"

[variants.control]

[variants.terse]
instructions = "terse.md"
"#;

const GREETING: &str = r#"
[[cases]]
id = "hello"
  [[cases.steps]]
  send = "Say hello"
  expect = [{ reply_includes = "hello" }]
"#;

fn reply(text: &str, tokens: u64) -> MockReply {
    MockReply::text(text).with_usage(Usage {
        input_tokens: tokens,
        output_tokens: 1,
        ..Usage::default()
    })
}

/// The system prompt of each request the mock model received, in order.
fn systems(mock: &MockModelServer) -> Vec<String> {
    mock.requests()
        .iter()
        .map(|request| {
            request
                .messages()
                .iter()
                .filter(|m| m.role == "system")
                .map(|m| m.text())
                .collect()
        })
        .collect()
}

#[tokio::test]
async fn every_case_runs_on_each_variant_and_the_runs_compare() {
    let mock = MockModelServer::start().await;
    // Two iterations on `control` (both pass), then two on `terse` (one passes).
    mock.push(reply("hello there", 10));
    mock.push(reply("hello again", 10));
    mock.push(reply("hello", 4));
    mock.push(reply("bye", 4));
    let dir = eval_project(&[("greet.eval.toml", GREETING)]);
    write_files(
        dir.path(),
        &[
            ("agent/agent.toml", AGENT),
            ("agent/terse.md", "Answer in one word.\n"),
        ],
    );
    let output = eval(
        &mock.openai_base_url(),
        dir.path(),
        &[
            "--variants",
            "control,terse",
            "--iterations",
            "2",
            "--concurrency",
            "1",
            "--json",
        ],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{}", texts(&output));
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let runs: Vec<EvalRun> = printed["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(read_wire)
        .collect();
    let variants: Vec<Option<&str>> = runs.iter().map(|run| run.variant.as_deref()).collect();
    assert_eq!(variants, [Some("control"), Some("terse")]);
    let systems = systems(&mock);
    assert!(
        systems[..2]
            .iter()
            .all(|s| s.starts_with("You are a test agent.")),
        "{systems:#?}"
    );
    assert!(
        systems[2..]
            .iter()
            .all(|s| s.starts_with("Answer in one word.")),
        "{systems:#?}"
    );
    let comparison = &printed["comparisons"][0];
    assert_eq!(comparison["a"]["variant"], "control");
    assert_eq!(comparison["b"]["variant"], "terse");
    let pass = &comparison["metrics"][0];
    assert_eq!(
        (&pass["metric"], &pass["a"], &pass["b"], &pass["difference"]),
        (
            &Value::from("passRate"),
            &Value::from(1.0),
            &Value::from(0.5),
            &Value::from(-0.5)
        )
    );
    // Variances 0 and 0.5 over two attempts each: se = 0.5, the interval ±0.98.
    let ci: Vec<f64> = pass["ci95"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!(
        (ci[0] + 1.48).abs() < 1e-9 && (ci[1] - 0.48).abs() < 1e-9,
        "{ci:?}"
    );
    let tokens = &comparison["metrics"][2];
    assert_eq!(
        (&tokens["a"], &tokens["b"]),
        (&Value::from(11.0), &Value::from(5.0))
    );

    // The two stored runs, compared again from disk.
    let output = eval(
        &mock.openai_base_url(),
        dir.path(),
        &["compare", &runs[0].run_id, &runs[1].run_id],
    )
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", texts(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let row = |name: &str| -> Vec<String> {
        stdout
            .lines()
            .find(|line| line.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row in:\n{stdout}"))
            .split("  ")
            .map(str::trim)
            .filter(|cell| !cell.is_empty())
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        row("pass rate"),
        [
            "pass rate",
            "100.0%",
            "50.0%",
            "-50.0%",
            "[-148.0%, +48.0%]"
        ]
    );
    assert_eq!(row("tokens")[..4], ["tokens", "11", "5", "-6"]);
    assert_eq!(row("greet/hello"), ["greet/hello", "100.0%", "50.0%"]);
    assert!(
        stdout.starts_with(&format!("A: control ({}) · 2 attempts", runs[0].run_id)),
        "{stdout}"
    );

    // An unknown variant is refused before anything runs.
    let output = eval(
        &mock.openai_base_url(),
        dir.path(),
        &["--variants", "control,nope"],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{}", texts(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains(
            "--variants: \"nope\" is not a variant of agent.toml (defined: control, terse)"
        ),
        "{}",
        texts(&output)
    );
}
