//! `folio validate` golden output on a corpus of broken projects (one per rule) and a clean
//! report for every `folio init` template.

mod common;

use std::path::Path;
use std::process::Command;

use common::{folio_bin, init_templates};
use folio_protocol::{AgentInfo, TransportInfo};
use folio_test_support::read_wire;

fn validate(dir: &Path) -> (String, i32) {
    let output = Command::new(folio_bin())
        .args(["validate", "--dir"])
        .arg(dir)
        .output()
        .unwrap();
    (
        String::from_utf8(output.stdout).unwrap(),
        output.status.code().unwrap_or(-1),
    )
}

#[test]
fn broken_projects_report_one_line_per_rule() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/broken");
    let mut cases: Vec<_> = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    cases.sort();
    assert!(cases.len() >= 20, "the corpus holds one project per rule");
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let (stdout, code) = validate(&case);
        let warnings_only = name == "skill-short-description" || name == "unknown-entry";
        assert_eq!(
            code,
            if warnings_only { 0 } else { 1 },
            "{name}: exit code; output:\n{stdout}"
        );
        for line in stdout
            .lines()
            .filter(|l| !l.starts_with("ok:") && !l.starts_with("failed:"))
        {
            assert!(
                line.starts_with("error: agent") || line.starts_with("warning: agent"),
                "{name}: every diagnostic names its file: {line}"
            );
        }
        insta::assert_snapshot!(name, format!("exit {code}\n{stdout}"));
    }
}

#[test]
fn every_init_template_validates_clean() {
    let templates = init_templates();
    assert_eq!(templates.len(), 9, "{templates:?}");
    for template in templates {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join(&template);
        let output = Command::new(folio_bin())
            .args(["init", "--template", &template])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(output.status.success(), "init {template}: {output:?}");
        let printed = String::from_utf8(output.stdout).unwrap();
        assert!(printed.contains("Next steps:"), "{printed}");
        let (stdout, code) = validate(&dir);
        assert_eq!(
            (code, stdout),
            (0, format!("ok: agent \"{template}\" has no problems\n")),
            "template {template}"
        );
    }
}

#[test]
fn init_refuses_a_non_empty_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), "mine").unwrap();
    let output = Command::new(folio_bin())
        .arg("init")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("is not empty"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("keep.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn info_describes_what_discovery_found() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo");
    let output = Command::new(folio_bin())
        .args(["info", "--dir"])
        .arg(&demo)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    insta::assert_snapshot!("info_demo", String::from_utf8(output.stdout).unwrap());
    let output = Command::new(folio_bin())
        .args(["info", "--json", "--dir"])
        .arg(&demo)
        .output()
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let info: AgentInfo = read_wire(&value);
    assert_eq!(info.tools[0].name, "word_stats");
    assert_eq!(
        info.tools[0].input_schema,
        serde_json::json!({
            "type": "object",
            "required": ["text"],
            "additionalProperties": false,
            "properties": {"text": {"type": "string", "description": "The text to measure."}},
        })
    );
    assert_eq!(info.skills[0].path, "agent/skills/haiku.md");
    assert_eq!(
        info.skills[0].frontmatter.license.as_deref(),
        Some("Apache-2.0")
    );
    assert!(
        matches!(
            info.mcp_connections[0].transport,
            TransportInfo::Stdio { .. }
        ),
        "{info:#?}"
    );
    assert_eq!(info.subagents[0].id, "critic");
    assert_eq!(info.diagnostics, []);
}
