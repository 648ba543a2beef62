//! Evals: regression tests for agents.
//!
//! An eval is a file of cases under `evals/` (`evals/<path>.eval.toml`, read by
//! [`folio_project::discover_evals`]). [`run_evals`] runs each case in a fresh session through
//! the same [`SessionManager`](folio_session::SessionManager) as `folio serve` (purpose `eval`,
//! optionally a dry run), its steps in that one session, and evaluates every assertion of every
//! step ([`evaluate`]): reply text and patterns, tool calls with `exact | subset | ignore`
//! argument matching and JSON paths, trajectories with `exact | in_order | any_order` and a
//! precision/recall/F1 score ([`score_trajectory`]), tool errors, approvals, step, token and
//! time budgets, files, a command of any language, a `result_schema` the reply read as JSON
//! ([`parse_result`]) must satisfy, and an LLM [`judge`]. A step can answer approvals, write
//! workspace files and be sent with an admission while the previous turn still runs. Runs are stored under the state root
//! (`evals/<runId>.json`, an [`EvalRun`](folio_protocol::EvalRun)), re-scored without a model by
//! [`rescore`], and reported as a table ([`summary_table`]), JUnit XML ([`junit`]) or JSON.
//! With [`EvalOptions::variant`] every case runs on one A/B variant of the agent; [`compare`]
//! sets two runs side by side (pass rate, score, tokens, cost, latency, with the difference and
//! its confidence interval) for `folio eval --variants` and `folio eval compare`.
//! [`folio_project::eval_from_session`] turns a recorded session into a case; [`Case`] writes one
//! in Rust.
//!
//! ```
//! use folio_eval::score_trajectory;
//! use folio_project::{ArgMode, ExpectedCall, OrderMode};
//! use folio_protocol::ToolCallRecord;
//! use serde_json::{Value, json};
//!
//! let call = |tool: &str| ToolCallRecord {
//!     call_id: tool.into(), tool: tool.into(), input: json!({}), output: Value::Null,
//!     is_error: false, duration_ms: 0, subagent: None,
//! };
//! let expected = ["a", "b", "c", "d"].map(|tool| ExpectedCall { tool: tool.into(), input: None });
//! let actual = [call("a"), call("b"), call("x"), call("d")];
//! // Three of four expected tools were called: partial credit, not zero.
//! let score = score_trajectory(&expected, &actual, OrderMode::InOrder, ArgMode::Subset);
//! assert_eq!((score.matched, score.f1, score.strict_pass), (3, 0.75, false));
//! ```

#![warn(missing_docs)]

mod assert;
mod case;
mod command;
mod compare;
mod judge;
mod observe;
mod progress;
mod report;
mod rescore;
mod result;
mod runner;

pub use assert::{TrajectoryScore, args_match, describe, evaluate, json_path, score_trajectory};
pub use case::Case;
pub use compare::{
    CaseComparison, Comparison, MetricComparison, RunLabel, compare, comparison_table,
};
pub use judge::{JUDGE_SYSTEM, judge, judge_prompt};
pub use observe::{observe, turn_started_after};
pub use progress::{LineObserver, ProgressObserver};
pub use report::{
    attempt_failures, attempt_line, case_failures, case_list_table, junit, summary_table,
};
pub use rescore::rescore;
pub use result::parse_result;
pub use runner::{
    DEFAULT_MAX_CONCURRENCY, EVAL_PRINCIPAL, EVAL_PURPOSE, EvalOptions, Observer, OpenModel,
    fixture_path, list_cases, run_evals,
};

/// Why an eval run could not run or be stored (a failing case is not an error: it is reported).
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The filter and tags selected no case.
    #[error(
        "no case matches the filter or tags ({evals} evals found): check --filter and --tag, or add evals under evals/"
    )]
    NothingSelected {
        /// Evals discovered.
        evals: usize,
    },
    /// A model could not be opened.
    #[error("cannot open the model {spec}: {message}")]
    Model {
        /// The model spec.
        spec: String,
        /// Why.
        message: String,
    },
    /// The agent could not be loaded for a case.
    #[error("cannot load the agent: {0}")]
    Agent(#[source] folio_agent::LoadError),
    /// The case's state root could not be opened for the agent's sessions.
    #[error("cannot load the agent: {0}")]
    Sessions(#[source] folio_session::OpenError),
    /// The session refused a step's message (or a read of its events).
    #[error("the case's session failed: {0}")]
    Send(#[source] folio_session::ManagerError),
    /// The session's event stream closed before the step's turn ended.
    #[error("the case's session failed: the session's stream ended before the turn did")]
    StreamEnded,
    /// A step's message started no turn.
    #[error("step {step}: the message started no turn")]
    NoTurn {
        /// The 1-based step.
        step: usize,
    },
    /// The case ran past its timeout.
    #[error("timed out after {secs}s{}: raise timeout_secs in the eval (or in evals/evals.toml)", if *.default { " (the default)" } else { "" })]
    Timeout {
        /// The timeout.
        secs: u64,
        /// Whether it was the default timeout.
        default: bool,
    },
    /// A file (fixture, eval file) could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `--rescore` named no stored run.
    #[error(
        "no stored eval run {0}: `folio eval` prints the run id of each run (GET /v1/evals lists them)"
    )]
    NoSuchRun(String),
    /// A stored run could not be read or written.
    #[error(transparent)]
    Store(#[from] folio_store_disk::EvalRunError),
}
