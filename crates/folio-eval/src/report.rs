//! Reports of a run: the summary table with each failed assertion's expected vs actual, one
//! plain line per finished attempt, and JUnit XML.

use std::fmt::Write as _;

use folio_protocol::{Attempt, CaseResult, EvalCaseList, EvalRun, Usage};
use serde_json::Value;

/// One line about a finished attempt, for output that is not a terminal.
pub fn attempt_line(label: &str, attempt: &Attempt) -> String {
    let mark = if attempt.ok { "✓" } else { "✗" };
    let failed = failed_count(attempt);
    let detail = match (&attempt.error, failed) {
        (Some(error), _) => format!(": {}", first_line(error)),
        (None, 0) => String::new(),
        (None, n) => format!(": {n} assertion(s) failed"),
    };
    format!("{mark} {label} ({}){detail}", seconds(attempt.duration_ms))
}

/// The summary table of `run`: one row per case, then every failure with expected vs actual,
/// then the counts.
pub fn summary_table(run: &EvalRun) -> String {
    let rows: Vec<[String; 7]> = run
        .cases
        .iter()
        .map(|case| {
            let passed = case.attempts.iter().filter(|a| a.ok).count();
            let usage = Usage::sum_reported(case.attempts.iter().map(|a| a.usage));
            [
                format!("{}/{}", case.eval_id, case.case_id),
                if case.ok { "pass" } else { "FAIL" }.to_string(),
                format!("{:.2}", case.score),
                format!("{passed}/{}", case.attempts.len()),
                seconds(case.attempts.iter().map(|a| a.duration_ms).sum()),
                tokens(usage),
                cost(usage),
            ]
        })
        .collect();
    let mut out = table(
        [
            "CASE", "RESULT", "SCORE", "PASSED", "DURATION", "TOKENS", "COST",
        ],
        &rows,
    );
    let failures: Vec<String> = run.cases.iter().flat_map(case_failures).collect();
    if !failures.is_empty() {
        let _ = writeln!(out, "\nFailures:");
        for failure in failures {
            let _ = writeln!(out, "{failure}");
        }
    }
    let passed = run.cases.iter().filter(|c| c.ok).count();
    let _ = writeln!(
        out,
        "\n{passed} passed, {} failed ({} cases) in {}; run {}",
        run.cases.len() - passed,
        run.cases.len(),
        seconds(run.duration_ms),
        run.run_id
    );
    out
}

/// What `folio eval --list` prints: one row per case (its name, its eval's tags, its step
/// count), then every tag and the number of cases.
pub fn case_list_table(list: &EvalCaseList) -> String {
    let rows: Vec<[String; 3]> = list
        .cases
        .iter()
        .map(|case| {
            [
                format!("{}/{}", case.eval_id, case.case_id),
                if case.tags.is_empty() {
                    "-".to_string()
                } else {
                    case.tags.join(",")
                },
                case.steps.to_string(),
            ]
        })
        .collect();
    let mut out = table(["CASE", "TAGS", "STEPS"], &rows);
    let tags = if list.tags.is_empty() {
        "none".to_string()
    } else {
        list.tags.join(", ")
    };
    let _ = writeln!(out, "\n{} cases; tags: {tags}", list.cases.len());
    out
}

/// `header` and `rows` as left-aligned columns two spaces apart, one line each.
pub(crate) fn table<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    let mut widths = header.map(str::len);
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; N]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        padded.join("  ").trim_end().to_string()
    };
    let mut out = String::new();
    let _ = writeln!(out, "{}", line(header));
    for row in rows {
        let _ = writeln!(out, "{}", line(row.each_ref().map(String::as_str)));
    }
    out
}

/// Every failure of a case: attempt errors and failed assertions with expected vs actual.
pub fn case_failures(case: &CaseResult) -> Vec<String> {
    let name = format!("{}/{}", case.eval_id, case.case_id);
    let several = case.attempts.len() > 1;
    case.attempts
        .iter()
        .flat_map(|attempt| {
            let at = if several {
                format!("{name} #{}", attempt.iteration)
            } else {
                name.clone()
            };
            attempt_failures_at(&at, attempt)
        })
        .collect()
}

/// Every failure of one attempt, as text (what a `cargo test` of a [`crate::Case`] prints).
pub fn attempt_failures(attempt: &Attempt) -> String {
    attempt_failures_at("case", attempt).join("\n")
}

fn attempt_failures_at(at: &str, attempt: &Attempt) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(error) = &attempt.error {
        out.push(format!("✗ {at}: {error}"));
    }
    for (n, step) in attempt.steps.iter().enumerate() {
        for assertion in step.assertions.iter().filter(|a| !a.passed) {
            out.push(format!(
                "✗ {at} step {}: {}: {}\n    expected: {}\n    actual:   {}",
                n + 1,
                assertion.kind,
                assertion.message,
                compact(&assertion.expected),
                compact(&assertion.actual)
            ));
        }
    }
    out
}

/// JUnit XML of `run`: one `<testsuite>` per eval, one `<testcase>` per case, a `<failure>` per
/// failing case listing its failures.
pub fn junit(run: &EvalRun) -> String {
    let mut suites: Vec<(&str, Vec<&CaseResult>)> = Vec::new();
    for case in &run.cases {
        match suites.last_mut() {
            Some((eval, cases)) if *eval == case.eval_id => cases.push(case),
            _ => suites.push((&case.eval_id, vec![case])),
        }
    }
    let failures = run.cases.iter().filter(|c| !c.ok).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"folio eval\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{:.3}\">",
        run.cases.len(),
        run.duration_ms as f64 / 1000.0
    );
    for (eval, cases) in suites {
        let time = |case: &CaseResult| case.attempts.iter().map(|a| a.duration_ms).sum::<u64>();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" time=\"{:.3}\" timestamp=\"{}\">",
            xml(eval),
            cases.len(),
            cases.iter().filter(|c| !c.ok).count(),
            cases.iter().map(|c| time(c)).sum::<u64>() as f64 / 1000.0,
            run.started_at.format("%Y-%m-%dT%H:%M:%S")
        );
        for case in cases {
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
                xml(eval),
                xml(&case.case_id),
                time(case) as f64 / 1000.0
            );
            if case.ok {
                let _ = writeln!(out, "/>");
            } else {
                let failures = case_failures(case);
                let message = failures
                    .first()
                    .map(|f| first_line(f).to_string())
                    .unwrap_or_else(|| "the case failed".into());
                let _ = writeln!(
                    out,
                    ">\n      <failure message=\"{}\" type=\"AssertionFailed\">{}</failure>\n    </testcase>",
                    xml(&message),
                    xml(&failures.join("\n"))
                );
            }
        }
        let _ = writeln!(out, "  </testsuite>");
    }
    out.push_str("</testsuites>\n");
    out
}

fn failed_count(attempt: &Attempt) -> usize {
    attempt
        .steps
        .iter()
        .flat_map(|s| &s.assertions)
        .filter(|a| !a.passed)
        .count()
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

fn seconds(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

fn tokens(usage: Option<Usage>) -> String {
    match usage {
        Some(u) => u.tokens().to_string(),
        None => "-".into(),
    }
}

/// What the case cost, or `-` when a model it used has no price.
fn cost(usage: Option<Usage>) -> String {
    match usage.and_then(|u| u.cost_usd) {
        Some(cost) => folio_protocol::format_usd(cost),
        None => "-".into(),
    }
}

/// A value on one line, strings shown whole (a drift diff keeps its lines, indented).
fn compact(value: &Value) -> String {
    let text = value.to_string();
    if text.contains("\\n") && text.len() > 200 {
        // Multi-line text (a replay drift's diff) reads better unescaped.
        serde_json::to_string_pretty(value)
            .unwrap_or(text)
            .replace("\\n", "\n      ")
    } else {
        text
    }
}

/// Escapes text for an XML attribute or element; drops characters XML 1.0 cannot hold.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}
