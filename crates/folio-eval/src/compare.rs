//! Two eval runs side by side: `folio eval --variants a,b` (every case run on each variant) and
//! `folio eval compare <runA> <runB>`. Each metric — pass rate, mean score, tokens, cost and
//! latency — is the mean over the run's attempts (every iteration of every case), with the
//! difference B − A and its 95% confidence interval (Welch's normal approximation over the
//! attempts; none with fewer than two attempts on a side).

use std::fmt::Write as _;

use folio_project::AgentDefinition;
use folio_protocol::{Attempt, EvalRun};
use serde::Serialize;

use crate::report::table;

/// The comparison of run B against run A.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// The baseline run.
    pub a: RunLabel,
    /// The run compared with it.
    pub b: RunLabel,
    /// Pass rate, mean score, tokens, cost and latency.
    pub metrics: Vec<MetricComparison>,
    /// Each case's pass rate in both runs (cases of either run, A's order first).
    pub cases: Vec<CaseComparison>,
}

/// Which run a side is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunLabel {
    /// The run's id (`evr_…`).
    pub run_id: String,
    /// The variant its cases ran with, when one was chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// Its attempts (iterations of every case).
    pub attempts: usize,
}

/// One metric in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricComparison {
    /// `passRate`, `score`, `tokens`, `costUsd` or `latencyMs`.
    pub metric: &'static str,
    /// Its mean over A's attempts (`null`: no attempt reported it).
    pub a: Option<f64>,
    /// Its mean over B's attempts.
    pub b: Option<f64>,
    /// B − A.
    pub difference: Option<f64>,
    /// The 95% confidence interval of the difference, `[low, high]`.
    pub ci95: Option<[f64; 2]>,
}

/// One case's pass rate in both runs (`null`: the run does not have the case).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseComparison {
    /// `evalId/caseId`.
    pub case: String,
    /// Its pass rate in A.
    pub a: Option<f64>,
    /// Its pass rate in B.
    pub b: Option<f64>,
}

/// What one attempt measures for a metric (`None`: not reported, as tokens without usage).
type Measure = fn(&Attempt) -> Option<f64>;

/// The metrics compared, in the order they are shown.
const METRICS: [(&str, Measure); 5] = [
    ("passRate", |a| Some(if a.ok { 1.0 } else { 0.0 })),
    ("score", |a| Some(a.score)),
    ("tokens", |a| a.usage.map(|u| u.tokens() as f64)),
    ("costUsd", |a| a.usage.and_then(|u| u.cost_usd)),
    ("latencyMs", |a| Some(a.duration_ms as f64)),
];

/// The agent a case runs: `definition`, whose variants drop their own model when the case
/// names one (`case_names_model`: the eval, the case or `--model` does), so a replayed fixture
/// answers every variant alike.
pub(crate) fn for_case(definition: &AgentDefinition, case_names_model: bool) -> AgentDefinition {
    let mut definition = definition.clone();
    if case_names_model {
        for variant in &mut definition.variants {
            variant.model = None;
        }
    }
    definition
}

/// Compares run `b` with run `a`.
pub fn compare(a: &EvalRun, b: &EvalRun) -> Comparison {
    let attempts = |run: &EvalRun| -> Vec<Attempt> {
        run.cases
            .iter()
            .flat_map(|case| case.attempts.iter().cloned())
            .collect()
    };
    let (in_a, in_b) = (attempts(a), attempts(b));
    let metrics = METRICS
        .iter()
        .map(|(metric, measure)| {
            let sample = |attempts: &[Attempt]| -> Vec<f64> {
                attempts.iter().filter_map(measure).collect()
            };
            let (xs, ys) = (sample(&in_a), sample(&in_b));
            let (mean_a, mean_b) = (mean(&xs), mean(&ys));
            let difference = mean_a.zip(mean_b).map(|(a, b)| b - a);
            MetricComparison {
                metric,
                a: mean_a,
                b: mean_b,
                difference,
                ci95: difference.zip(standard_error(&xs, &ys)).map(|(d, se)| {
                    let half = 1.96 * se;
                    [d - half, d + half]
                }),
            }
        })
        .collect();
    let name = |eval: &str, case: &str| format!("{eval}/{case}");
    let mut cases: Vec<CaseComparison> = a
        .cases
        .iter()
        .map(|case| CaseComparison {
            case: name(&case.eval_id, &case.case_id),
            a: Some(case.pass_rate),
            b: None,
        })
        .collect();
    for case in &b.cases {
        let key = name(&case.eval_id, &case.case_id);
        match cases.iter_mut().find(|row| row.case == key) {
            Some(row) => row.b = Some(case.pass_rate),
            None => cases.push(CaseComparison {
                case: key,
                a: None,
                b: Some(case.pass_rate),
            }),
        }
    }
    let label = |run: &EvalRun, attempts: usize| RunLabel {
        run_id: run.run_id.clone(),
        variant: run.variant.clone(),
        attempts,
    };
    Comparison {
        a: label(a, in_a.len()),
        b: label(b, in_b.len()),
        metrics,
        cases,
    }
}

fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// The sample variance (n − 1); `None` below two values.
fn variance(xs: &[f64]) -> Option<f64> {
    let mean = mean(xs).filter(|_| xs.len() > 1)?;
    Some(xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (xs.len() - 1) as f64)
}

/// The standard error of the difference of the two means (Welch).
fn standard_error(xs: &[f64], ys: &[f64]) -> Option<f64> {
    let (vx, vy) = (variance(xs)?, variance(ys)?);
    Some((vx / xs.len() as f64 + vy / ys.len() as f64).sqrt())
}

/// What `folio eval --variants` and `folio eval compare` print: one row per metric (A, B,
/// B − A and its 95% interval), then each case's pass rate in both runs.
pub fn comparison_table(comparison: &Comparison) -> String {
    let side = |label: &RunLabel| match &label.variant {
        Some(variant) => format!("{variant} ({})", label.run_id),
        None => label.run_id.clone(),
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "A: {} · {} attempts\nB: {} · {} attempts\n",
        side(&comparison.a),
        comparison.a.attempts,
        side(&comparison.b),
        comparison.b.attempts
    );
    let rows: Vec<[String; 5]> = comparison
        .metrics
        .iter()
        .map(|row| {
            let show =
                |value: Option<f64>| value.map_or("-".to_string(), |v| shown(row.metric, v, false));
            let signed =
                |value: Option<f64>| value.map_or("-".to_string(), |v| shown(row.metric, v, true));
            [
                label(row.metric).to_string(),
                show(row.a),
                show(row.b),
                signed(row.difference),
                row.ci95.map_or("-".to_string(), |[low, high]| {
                    format!(
                        "[{}, {}]",
                        shown(row.metric, low, true),
                        shown(row.metric, high, true)
                    )
                }),
            ]
        })
        .collect();
    out.push_str(&table(["METRIC", "A", "B", "B − A", "95% CI"], &rows));
    let rows: Vec<[String; 3]> = comparison
        .cases
        .iter()
        .map(|row| {
            let rate =
                |value: Option<f64>| value.map_or("-".to_string(), |v| shown("passRate", v, false));
            [row.case.clone(), rate(row.a), rate(row.b)]
        })
        .collect();
    out.push('\n');
    out.push_str(&table(["CASE", "A PASS", "B PASS"], &rows));
    out
}

fn label(metric: &str) -> &str {
    match metric {
        "passRate" => "pass rate",
        "score" => "mean score",
        "tokens" => "tokens",
        "costUsd" => "cost",
        "latencyMs" => "latency",
        other => other,
    }
}

/// `value` of `metric` as the table shows it (`signed`: with its sign, for differences).
fn shown(metric: &str, value: f64, signed: bool) -> String {
    let sign = if signed && value >= 0.0 { "+" } else { "" };
    match metric {
        "passRate" => format!("{sign}{:.1}%", value * 100.0),
        "score" => format!("{sign}{value:.2}"),
        "tokens" => format!("{sign}{value:.0}"),
        "costUsd" if value < 0.0 => format!("-{}", folio_protocol::format_usd(-value)),
        "costUsd" => format!("{sign}{}", folio_protocol::format_usd(value)),
        _ => format!("{sign}{:.2}s", value / 1000.0),
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use folio_protocol::{CaseResult, Usage};
    use pretty_assertions::assert_eq;

    use super::*;

    fn attempt(ok: bool, tokens: u64, ms: u64) -> Attempt {
        Attempt {
            iteration: 1,
            ok,
            score: if ok { 1.0 } else { 0.0 },
            session_id: None,
            model: "m".into(),
            duration_ms: ms,
            usage: Some(Usage {
                input_tokens: tokens,
                cost_usd: Some(tokens as f64 / 1_000_000.0),
                ..Usage::default()
            }),
            error: None,
            steps: Vec::new(),
        }
    }

    fn run(id: &str, variant: &str, attempts: Vec<Attempt>) -> EvalRun {
        EvalRun {
            run_id: id.into(),
            started_at: Utc::now(),
            duration_ms: 0,
            ok: false,
            rescored_from: None,
            variant: Some(variant.into()),
            cases: vec![CaseResult {
                eval_id: "e".into(),
                case_id: "c".into(),
                tags: Vec::new(),
                ok: attempts.iter().all(|a| a.ok),
                pass_rate: attempts.iter().filter(|a| a.ok).count() as f64 / attempts.len() as f64,
                score: 0.0,
                attempts,
            }],
        }
    }

    #[test]
    fn differences_and_intervals_over_attempts() {
        let a = run(
            "evr_a",
            "control",
            vec![attempt(true, 100, 1000), attempt(false, 300, 3000)],
        );
        let b = run(
            "evr_b",
            "concise",
            vec![attempt(true, 50, 500), attempt(true, 150, 1500)],
        );
        let comparison = compare(&a, &b);
        let pass = &comparison.metrics[0];
        assert_eq!(
            (pass.metric, pass.a, pass.b, pass.difference),
            ("passRate", Some(0.5), Some(1.0), Some(0.5))
        );
        // Variances 0.5 and 0: se = sqrt(0.5 / 2) = 0.5, so the half-width is 0.98.
        let [low, high] = pass.ci95.unwrap();
        assert!((low - (0.5 - 0.98)).abs() < 1e-9 && (high - 1.48).abs() < 1e-9);
        let tokens = &comparison.metrics[2];
        assert_eq!(
            (tokens.a, tokens.b, tokens.difference),
            (Some(200.0), Some(100.0), Some(-100.0))
        );
        assert_eq!(
            comparison.cases,
            [CaseComparison {
                case: "e/c".into(),
                a: Some(0.5),
                b: Some(1.0)
            }]
        );
        let one = run("evr_c", "x", vec![attempt(true, 1, 1)]);
        assert_eq!(
            compare(&one, &b).metrics[0].ci95,
            None,
            "one attempt has no interval"
        );
        let table = comparison_table(&comparison);
        assert!(table.contains("A: control (evr_a) · 2 attempts"), "{table}");
        assert!(table.contains("pass rate   50.0%"), "{table}");
        assert!(table.contains("+50.0%"), "{table}");
    }
}
