//! `folio eval --rescore RUN_ID`: the assertions of the evals as they are now, evaluated again
//! against what a stored run observed, without running the agent or calling a model.

use std::time::Instant;

use chrono::Utc;
use folio_project::EvalDiscovery;
use folio_protocol::EvalRun;
use folio_session::StateRoot;

use crate::EvalError;
use crate::assert::evaluate;
use crate::result::record_result;
use crate::runner::{summarize_attempt, summarize_case};

/// Re-scores the stored run `run_id` with the assertions of `suite` and stores the result as a
/// new run (`rescoredFrom` names the old one). A case or step the evals no longer have is failed
/// with a message saying so.
pub async fn rescore(
    suite: &EvalDiscovery,
    state: &StateRoot,
    run_id: &str,
) -> Result<EvalRun, EvalError> {
    let clock = Instant::now();
    let stored = folio_store_disk::read_eval_run(state, run_id)?
        .ok_or_else(|| EvalError::NoSuchRun(run_id.to_string()))?;
    let mut cases = stored.cases;
    // `command` assertions run in the project folder, the parent of `evals/`.
    let project_dir = suite.dir.parent().unwrap_or(&suite.dir);
    for case in &mut cases {
        let definition = suite
            .evals
            .iter()
            .find(|eval| eval.id == case.eval_id)
            .and_then(|eval| eval.cases.iter().find(|c| c.id == case.case_id));
        for attempt in &mut case.attempts {
            let Some(definition) = definition else {
                attempt.error = Some(format!(
                    "the evals no longer have case {}/{}: nothing to re-score it with",
                    case.eval_id, case.case_id
                ));
                summarize_attempt(attempt, usize::MAX);
                continue;
            };
            for (step, expected) in attempt.steps.iter_mut().zip(&definition.steps) {
                record_result(&expected.expect, &mut step.observed);
                step.assertions = evaluate(&expected.expect, &step.observed, project_dir).await;
            }
            summarize_attempt(attempt, definition.steps.len());
        }
        summarize_case(case);
    }
    let run = EvalRun {
        run_id: format!("evr_{}", ulid::Ulid::generate()),
        started_at: Utc::now(),
        duration_ms: clock.elapsed().as_millis() as u64,
        ok: cases.iter().all(|case| case.ok),
        rescored_from: Some(stored.run_id),
        variant: stored.variant,
        cases,
    };
    folio_store_disk::write_eval_run(state, &run).await?;
    Ok(run)
}
