//! Stored eval runs (`<state-root>/<slug>/evals/<runId>.json`): what `folio eval` writes and
//! `GET /v1/evals` / `GET /v1/evals/:runId` serve.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{OkTrue, ToolCallRecord, Usage};

/// One `folio eval` run: every case it ran, each with its assertions' verdicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalRun {
    /// `evr_…`.
    pub run_id: String,
    /// When the run started.
    pub started_at: DateTime<Utc>,
    /// How long the whole run took, in milliseconds.
    pub duration_ms: u64,
    /// Whether every case passed.
    pub ok: bool,
    /// The run this one re-scored (`folio eval --rescore`), without calling a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rescored_from: Option<String>,
    /// The A/B variant every case ran with (`folio eval --variants`); absent: the agent as
    /// written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// Every case, in eval and case order.
    pub cases: Vec<CaseResult>,
}

/// One case of an [`EvalRun`]: its attempts (one per iteration) and their verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaseResult {
    /// The eval's id: its path under `evals/` without `.eval.toml`.
    pub eval_id: String,
    /// The case's id within its eval.
    pub case_id: String,
    /// The eval's tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Whether every attempt passed (`pass^k` over the iterations).
    pub ok: bool,
    /// The share of attempts that passed (0 to 1).
    pub pass_rate: f64,
    /// The mean assertion score over the attempts (0 to 1).
    pub score: f64,
    /// One attempt per iteration.
    pub attempts: Vec<Attempt>,
}

/// One run of a case: a fresh session, its steps and their assertions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    /// 1-based iteration.
    pub iteration: u32,
    /// Whether the attempt ran and every assertion passed.
    pub ok: bool,
    /// The mean score of its assertions (0 to 1).
    pub score: f64,
    /// The case's session (`ses_…`), when one was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The model the attempt ran with (`provider:model` or `replay:<fixture>`).
    pub model: String,
    /// Wall time of the attempt in milliseconds.
    pub duration_ms: u64,
    /// Usage over its turns; `null` when the provider reported none.
    pub usage: Option<Usage>,
    /// Why the attempt could not run to its end (timeout, a replay drift, a refused send).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every step that ran.
    pub steps: Vec<StepResult>,
}

/// One step of an [`Attempt`]: what was observed and every assertion's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepResult {
    /// What the step's turn did (what `--rescore` evaluates again).
    pub observed: StepObservation,
    /// Every assertion of the step, in the order written.
    pub assertions: Vec<AssertionResult>,
}

/// What one step's turn did, as assertions see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepObservation {
    /// The message the step sent.
    pub message: String,
    /// Whether the turn completed.
    pub succeeded: bool,
    /// The turn's reply (for a failed turn, its last assistant text).
    pub reply: String,
    /// The failure message of a failed turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every tool call of the turn, in request order, with its result.
    pub tool_calls: Vec<ToolCallRecord>,
    /// The tools whose calls asked for approval, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals_requested: Vec<String>,
    /// Model calls the turn made.
    pub model_steps: u32,
    /// Turn duration in milliseconds.
    pub duration_ms: u64,
    /// The turn's usage; `null` when the provider reported none.
    pub usage: Option<Usage>,
    /// The reply read as JSON, for a step with a `result_schema` whose reply is JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The files the step's assertions read after the turn: path → contents (`null`: absent).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, Option<String>>,
    /// The judges' verdicts, by rubric.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub verdicts: BTreeMap<String, JudgeVerdict>,
}

/// What an LLM judge answered about a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JudgeVerdict {
    /// The grader model.
    pub model: String,
    /// Whether the judge passed the step.
    pub pass: bool,
    /// The judge's score (0 to 1).
    pub score: f64,
    /// The judge's reasoning.
    pub reasoning: String,
}

/// One assertion's verdict, with what it expected and what it found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssertionResult {
    /// The assertion's key (`called_tool`, `reply_matches`, `trajectory`, …).
    pub kind: String,
    /// Whether it passed.
    pub passed: bool,
    /// Its score (0 to 1): 1 or 0, or partial credit for trajectory scores and judges.
    pub score: f64,
    /// What it expected.
    pub expected: Value,
    /// What it found.
    pub actual: Value,
    /// One line for a person: why it failed, or what it checked.
    pub message: String,
}

/// One run in `GET /v1/evals`: its counts, without the cases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalRunSummary {
    /// `evr_…`.
    pub run_id: String,
    /// When the run started.
    pub started_at: DateTime<Utc>,
    /// How long the whole run took, in milliseconds.
    pub duration_ms: u64,
    /// Whether every case passed.
    pub ok: bool,
    /// Cases that passed.
    pub passed: u32,
    /// Cases that failed.
    pub failed: u32,
    /// The run this one re-scored, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rescored_from: Option<String>,
    /// The A/B variant its cases ran with, if one was chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

/// `GET /v1/evals/:runId`: one stored run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalRunResponse {
    /// Always `true`.
    pub ok: OkTrue,
    /// The run.
    pub run: EvalRun,
}

/// `POST /v1/session/:id/eval-case`: save the session as an eval case named `name` (the file
/// `evals/from-session/<name>.eval.toml` and its one case's id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SaveEvalCase {
    /// Letters, digits, `-` and `_` (at most 64, starting with a letter or digit).
    pub name: String,
}

/// The answer to [`SaveEvalCase`]: where the case was written and how `folio eval` names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalCaseSaved {
    /// Always `true`.
    pub ok: OkTrue,
    /// The eval's id (`from-session/<name>`), what `folio eval --filter` matches.
    pub eval_id: String,
    /// The case's id (the name).
    pub case_id: String,
    /// The file written, relative to the project folder (`evals/from-session/<name>.eval.toml`).
    pub path: String,
}

/// What `folio eval --list --json` prints: the cases a run with the same `--filter` and `--tag`
/// would run, without running them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalCaseList {
    /// Every selected case, in eval and case order.
    pub cases: Vec<EvalCaseInfo>,
    /// The tags of the selected cases' evals, sorted, each once.
    pub tags: Vec<String>,
}

/// One case of an [`EvalCaseList`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalCaseInfo {
    /// The eval's id: its path under `evals/` without `.eval.toml`.
    pub eval_id: String,
    /// The case's id within its eval (`evalId/caseId` is what `--filter` matches).
    pub case_id: String,
    /// The eval's tags (what `--tag` selects by).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// How many steps (messages) the case sends.
    pub steps: u32,
}

impl EvalRun {
    /// The run's counts for lists.
    pub fn summary(&self) -> EvalRunSummary {
        let passed = self.cases.iter().filter(|case| case.ok).count() as u32;
        EvalRunSummary {
            run_id: self.run_id.clone(),
            started_at: self.started_at,
            duration_ms: self.duration_ms,
            ok: self.ok,
            passed,
            failed: self.cases.len() as u32 - passed,
            rescored_from: self.rescored_from.clone(),
            variant: self.variant.clone(),
        }
    }
}

/// Whether `run_id` has the shape of a run id (`evr_` + letters and digits), so it can name a
/// file under the state root.
pub fn valid_run_id(run_id: &str) -> bool {
    run_id.strip_prefix("evr_").is_some_and(|rest| {
        !rest.is_empty() && rest.len() <= 64 && rest.chars().all(|c| c.is_ascii_alphanumeric())
    })
}
