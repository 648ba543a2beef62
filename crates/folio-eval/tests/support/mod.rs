//! The eval tests' runner: [`eval`] runs a project's evals in this process through
//! [`folio_eval::run_evals`] (what `folio eval` calls), its models opened on the mock model
//! server, and hands back the [`EvalRun`] `folio eval --json` would print.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use folio_eval::{EvalError, EvalOptions, LineObserver, OpenModel, run_evals};
use folio_model::ProviderConfig;
use folio_protocol::{EvalRun, StepResult};
use folio_session::StateRoot;

#[allow(unused_imports)]
pub use folio_test_support::{Project, eval_project, project, write_files};

/// The state root the runs of `dir` are stored under.
pub fn state_of(dir: &Path) -> StateRoot {
    StateRoot::new(dir.join(".folio/state"))
}

/// The options `folio eval --dir DIR` runs with, its models (the agent's, a case's or a
/// judge's `provider:model`) opened on the mock model server at `base_url`.
pub fn options(base_url: &str, dir: &Path) -> EvalOptions {
    let definition = folio_project::discover(dir)
        .definition
        .expect("a valid agent");
    let default = definition.config.model.clone();
    let base_url = base_url.to_string();
    let open_model: OpenModel = Arc::new(move |spec| {
        let spec = spec
            .map(str::to_string)
            .or_else(|| default.clone())
            .expect("a model");
        let config = ProviderConfig {
            base_url: Some(base_url.clone()),
            ..ProviderConfig::default()
        };
        let env = |name: &str| (name == "OPENAI_API_KEY").then(|| "test-key".to_string());
        folio_model::open_provider(&spec, &config, &env).map_err(|err| EvalError::Model {
            spec: spec.clone(),
            message: err.to_string(),
        })
    });
    EvalOptions {
        definition,
        state: state_of(dir),
        open_model,
        model: None,
        filter: None,
        tags: Vec::new(),
        record: false,
        max_concurrency: None,
        iterations: None,
        dry_run: false,
        variant: None,
    }
}

/// Runs the evals of `dir` with `options` (the run is stored under the state root).
pub async fn eval(dir: &Path, options: &EvalOptions) -> Result<EvalRun, EvalError> {
    let suite = folio_project::discover_evals(dir);
    assert!(
        !suite.has_errors(),
        "eval diagnostics: {:#?}",
        suite.diagnostics
    );
    run_evals(&suite, options, &LineObserver).await
}

/// Step `step` of the first attempt of case `case`.
pub fn step_of(run: &EvalRun, case: usize, step: usize) -> &StepResult {
    run.cases
        .get(case)
        .and_then(|case| case.attempts.first())
        .and_then(|attempt| attempt.steps.get(step))
        .unwrap_or_else(|| panic!("no step {step} in case {case} of {run:#?}"))
}

/// `(kind, passed)` of every assertion of step `step` of the first attempt of case `case`.
pub fn verdicts(run: &EvalRun, case: usize, step: usize) -> Vec<(String, bool)> {
    step_of(run, case, step)
        .assertions
        .iter()
        .map(|a| (a.kind.clone(), a.passed))
        .collect()
}

/// `(kind, passed)` pairs from a compact list.
pub fn expected(pairs: &[(&str, bool)]) -> Vec<(String, bool)> {
    pairs.iter().map(|(k, p)| (k.to_string(), *p)).collect()
}
