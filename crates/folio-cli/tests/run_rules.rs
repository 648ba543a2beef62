//! The allowlist table row by row (the tools each configuration offers the model), and every
//! fail-closed combination as a non-zero exit with a one-line diagnostic (docs/tools.md).

mod common;

use common::*;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;

const EIGHT: [&str; 8] = [
    "Delete",
    "Glob",
    "Grep",
    "LS",
    "Read",
    "SemanticSearch",
    "StrReplace",
    "Write",
];

/// The tool names the model was offered by a run of an agent with `agent_toml`.
async fn offered(agent_toml: &str) -> Vec<String> {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("ok"));
    let dir = project(agent_toml);
    let output = run_json(&mock.openai_base_url(), dir.path(), "hi").await;
    assert!(
        output.status.success(),
        "{agent_toml}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut names = mock.requests()[0].tool_names();
    names.sort();
    names
}

fn with(base: &[&str], extra: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = base.iter().chain(extra).map(|s| s.to_string()).collect();
    names.sort();
    names
}

const ROOT: &str = "model = \"openai:m\"\n[root]\n\"/notes\" = { temp = { \"/a.md\" = \"a\" } }\n";

fn rooted(tools: &str) -> String {
    format!(
        "model = \"openai:m\"\ntools = {tools}\n[root]\n\"/notes\" = {{ temp = {{ \"/a.md\" = \"a\" }} }}\n"
    )
}

#[tokio::test]
async fn host_default_rows() {
    assert_eq!(
        offered("model = \"openai:m\"\n").await,
        with(&EIGHT, &["ReadTodos", "Shell", "UpdateTodos", "WebFetch"])
    );
    assert_eq!(
        offered("model = \"openai:m\"\ntools = [\"read\", \"shell\"]\n").await,
        with(&["Read", "Shell"], &[])
    );
    assert_eq!(
        offered("model = \"openai:m\"\ntools = []\n").await,
        Vec::<String>::new()
    );
}

#[tokio::test]
async fn authored_root_rows() {
    assert_eq!(
        offered(ROOT).await,
        with(&EIGHT, &["ReadTodos", "UpdateTodos", "WebFetch"])
    );
    assert_eq!(
        offered(&rooted("[\"updateTodos\"]")).await,
        with(&EIGHT, &["UpdateTodos"])
    );
    assert_eq!(
        offered(&rooted("[\"semSearch\"]")).await,
        with(&["SemanticSearch"], &[])
    );
    assert_eq!(offered(&rooted("[]")).await, Vec::<String>::new());
    assert_eq!(
        offered(&rooted("[\"webFetch\"]")).await,
        with(&EIGHT, &["WebFetch"])
    );
    // No search endpoint is configured, so webSearch adds nothing (validate warns).
    assert_eq!(offered(&rooted("[\"webSearch\"]")).await, with(&EIGHT, &[]));
}

/// Runs `folio run` on a project that must fail discovery; returns its diagnostic lines.
async fn refused(files: &[(&str, &str)]) -> Vec<String> {
    let dir = project("model = \"openai:m\"\n");
    write_files(dir.path(), files);
    let output = run_json("http://127.0.0.1:9", dir.path(), "hi").await;
    assert_eq!(output.status.code(), Some(1), "{files:?}");
    assert!(output.stdout.is_empty());
    String::from_utf8(output.stderr)
        .unwrap()
        .lines()
        .filter(|line| line.starts_with("error: agent/"))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn fail_closed_combinations_exit_with_one_line_diagnostics() {
    let cases: &[(&str, &str)] = &[("[local]\nsandbox = true\n", "local.sandbox")];
    for (local, field) in cases {
        let toml = format!("{ROOT}{local}");
        let lines = refused(&[("agent/agent.toml", &toml)]).await;
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("error: agent/agent.toml"), "{lines:?}");
        assert!(
            lines[0].contains(field) && lines[0].contains("[root]"),
            "{lines:?}"
        );
    }
    for tool in ["shell", "task", "readLints"] {
        let lines = refused(&[("agent/agent.toml", &rooted(&format!("[\"{tool}\"]")))]).await;
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains(&format!("\"{tool}\"")) && lines[0].contains("[root]"),
            "{lines:?}"
        );
    }
    let lines = refused(&[(
        "agent/agent.toml",
        "model = \"openai:m\"\nruntime = \"cloud\"\n",
    )])
    .await;
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("runtime") && lines[0].contains("cloud"),
        "{lines:?}"
    );
    for root in [false, true] {
        let toml = if root { ROOT } else { "model = \"openai:m\"\n" };
        let lines = refused(&[
            ("agent/agent.toml", toml),
            (
                "agent/tools/Read.toml",
                "description = \"x\"\ncommand = [\"true\"]\n",
            ),
        ])
        .await;
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("error: agent/tools/Read.toml"),
            "{lines:?}"
        );
        assert!(lines[0].contains("Read"), "{lines:?}");
    }
}

#[tokio::test]
async fn settings_folio_would_ignore_are_errors_naming_the_field_and_the_fix() {
    let agent_toml = |local: &str| format!("model = \"openai:m\"\n[local]\n{local}");
    let cases = [
        (
            agent_toml("cwd = \"/srv\"\n"),
            "error: agent/agent.toml: local.cwd: not supported; each session's workspace is <state-root>/sessions/<id>/workspace (choose the state root with --state-root): remove local.cwd",
        ),
        (
            agent_toml("workspace_dir = \"/srv\"\n"),
            "error: agent/agent.toml: local.workspace_dir: not supported; sessions never share a workspace (one session could read another's files): put shared files in agent/sandbox/workspace/ (copied into every session) or memory/, and remove local.workspace_dir",
        ),
        (
            agent_toml("sandbox_read = [\"data\"]\n"),
            "error: agent/agent.toml: local.sandbox_read: has no effect without local.sandbox = true (the Shell sandbox is off): set sandbox = true or remove local.sandbox_read",
        ),
        (
            agent_toml("sandbox = false\nsandbox_network = true\n"),
            "error: agent/agent.toml: local.sandbox_network: has no effect without local.sandbox = true (the Shell sandbox is off): set sandbox = true or remove local.sandbox_network",
        ),
    ];
    for (toml, line) in &cases {
        let lines = refused(&[("agent/agent.toml", toml)]).await;
        assert_eq!(lines, [line.to_string()], "{toml}");
    }
    for (field, value) in [
        ("effect", "\"read\""),
        ("needs_approval", "true"),
        ("timeout_secs", "5"),
        ("dry_run_result", "\"skipped\""),
    ] {
        let tool = format!(
            "description = \"Stamp a file.\"\ncommand = [\"true\"]\nexecution = \"agent\"\n{field} = {value}\n"
        );
        let lines = refused(&[
            ("agent/agent.toml", "model = \"openai:m\"\n"),
            ("agent/tools/stamp.toml", &tool),
        ])
        .await;
        assert_eq!(
            lines,
            [format!(
                "error: agent/tools/stamp.toml: {field}: has no effect with execution = \"agent\" (the model runs the script through Shell, where Folio cannot apply it): remove {field} or use execution = \"server\""
            )]
        );
    }
}
