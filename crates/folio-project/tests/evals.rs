//! Eval discovery: ids from paths (`index` names its folder), defaults, and what a case holds.

use folio_project::{Assertion, FileCheck, discover_evals};
use pretty_assertions::assert_eq;

fn write(dir: &std::path::Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

const CASE: &str = "[[cases]]\nid = \"one\"\n  [[cases.steps]]\n  send = \"hi\"\n  expect = [{ file = \"/notes.md\" }]\n";

#[test]
fn eval_ids_come_from_paths_and_defaults_fill_what_an_eval_leaves_out() {
    let project = tempfile::tempdir().unwrap();
    write(
        project.path(),
        &[
            ("evals/evals.toml", "timeout_secs = 30\niterations = 2\n"),
            ("evals/builds/api.eval.toml", CASE),
            ("evals/builds/index.eval.toml", CASE),
            (
                "evals/smoke.eval.toml",
                &format!("iterations = 5\ntags = [\"fast\"]\n{CASE}"),
            ),
        ],
    );
    let found = discover_evals(project.path());
    assert_eq!(found.diagnostics, []);
    let summary: Vec<(String, u32, u64, Vec<String>)> = found
        .evals
        .iter()
        .map(|e| (e.id.clone(), e.iterations, e.timeout_secs, e.tags.clone()))
        .collect();
    assert_eq!(
        summary,
        [
            ("builds/api".to_string(), 2, 30, vec![]),
            ("builds".to_string(), 2, 30, vec![]),
            ("smoke".to_string(), 5, 30, vec!["fast".to_string()]),
        ]
    );
    assert_eq!(
        found.evals[0].cases[0].steps[0].expect,
        [Assertion::File {
            path: "/notes.md".into(),
            check: FileCheck::Exists(true)
        }]
    );
}

#[test]
fn an_index_directly_in_evals_and_a_clashing_id_are_errors() {
    let project = tempfile::tempdir().unwrap();
    write(
        project.path(),
        &[
            ("evals/index.eval.toml", CASE),
            ("evals/a.eval.toml", CASE),
            ("evals/a/index.eval.toml", CASE),
        ],
    );
    let found = discover_evals(project.path());
    let lines: Vec<String> = found.diagnostics.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "error: evals/a.eval.toml: eval id `a` is also the id of evals/a/index.eval.toml: rename one of them".to_string(),
            "error: evals/index.eval.toml: an index.eval.toml directly in evals/ names no folder: give it a name (e.g. evals/smoke.eval.toml)".to_string(),
        ]
    );
    assert_eq!(found.evals.len(), 1);
}
