//! Helpers shared by the `folio eval` end-to-end tests.
#![allow(dead_code)]

use std::process::Output;

#[path = "../common.rs"]
mod common;
// Shared by several test binaries; each uses a different part.
#[allow(unused_imports)]
pub use common::{Project, eval, folio, folio_bin, init_templates, project, run_of, write_files};
#[allow(unused_imports)]
pub use folio_test_support::eval_project;

/// Stdout and stderr as text, for failure messages.
pub fn texts(output: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The first four columns of the summary table's header and first `cases` rows of a report.
pub fn summary_rows(stdout: &str, cases: usize) -> Vec<Vec<&str>> {
    stdout
        .lines()
        .take(cases + 1)
        .map(|line| line.split_whitespace().take(4).collect())
        .collect()
}

/// The report's "Failures:" section (up to its blank line); panics naming the report when the
/// section is missing.
pub fn failures_section(stdout: &str) -> &str {
    stdout
        .split("Failures:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_else(|| panic!("no failures section: {stdout}"))
}
