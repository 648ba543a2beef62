//! [`Case`]: an eval case written in Rust, run under `cargo test` through the same runner as
//! `folio eval`.

use std::collections::BTreeMap;

use folio_project::{
    AgentDefinition, Assertion, CaseDefinition, DEFAULT_EVAL_TIMEOUT_SECS, EvalDefinition,
    EvalDiscovery, StepDefinition,
};
use folio_protocol::{Attempt, CaseResult};
use folio_session::StateRoot;

use crate::EvalError;
use crate::runner::{EvalOptions, Observer, OpenModel, run_evals};

/// An eval case built in code: steps in one session, each with its assertions.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    case: CaseDefinition,
    dry_run: bool,
    iterations: u32,
}

impl Case {
    /// A case named `id` without steps.
    pub fn new(id: impl Into<String>) -> Case {
        Case {
            case: CaseDefinition {
                id: id.into(),
                model: None,
                timeout_secs: None,
                workspace_files: BTreeMap::new(),
                steps: Vec::new(),
            },
            dry_run: false,
            iterations: 1,
        }
    }

    /// Writes `contents` at `path` in the workspace before the first step.
    pub fn workspace_file(mut self, path: impl Into<String>, contents: impl Into<String>) -> Case {
        self.case
            .workspace_files
            .insert(path.into(), contents.into());
        self
    }

    /// Adds a step: `message`, then `expect` evaluated after its turn.
    pub fn step(
        mut self,
        message: impl Into<String>,
        expect: impl IntoIterator<Item = Assertion>,
    ) -> Case {
        self.case
            .steps
            .push(StepDefinition::new(message, expect.into_iter().collect()));
        self
    }

    /// The case's model (`provider:model`, or `replay:` with an absolute fixture path).
    pub fn model(mut self, spec: impl Into<String>) -> Case {
        self.case.model = Some(spec.into());
        self
    }

    /// Fails the case after `secs` seconds.
    pub fn timeout_secs(mut self, secs: u64) -> Case {
        self.case.timeout_secs = Some(secs);
        self
    }

    /// Runs the case `iterations` times (its verdict is `pass^k`).
    pub fn iterations(mut self, iterations: u32) -> Case {
        self.iterations = iterations.max(1);
        self
    }

    /// Runs the case as a dry run: write tools return their `dry_run_result`.
    pub fn dry_run(mut self) -> Case {
        self.dry_run = true;
        self
    }

    /// Runs the case with `definition`'s agent, storing the run under `state`; `open_model`
    /// opens its model. The result's attempts say what failed
    /// ([`attempt_failures`](crate::attempt_failures) prints it).
    pub async fn run(
        &self,
        definition: AgentDefinition,
        state: StateRoot,
        open_model: OpenModel,
    ) -> Result<CaseResult, EvalError> {
        let suite = EvalDiscovery {
            dir: definition.project_dir.join(folio_project::EVALS_DIR),
            evals: vec![EvalDefinition {
                id: "rust".into(),
                file: definition.project_dir.clone(),
                description: None,
                tags: Vec::new(),
                iterations: self.iterations,
                model: None,
                timeout_secs: DEFAULT_EVAL_TIMEOUT_SECS,
                dry_run: self.dry_run,
                cases: vec![self.case.clone()],
            }],
            ..EvalDiscovery::default()
        };
        let options = EvalOptions {
            definition,
            state,
            open_model,
            model: None,
            filter: None,
            tags: Vec::new(),
            record: false,
            max_concurrency: Some(1),
            iterations: None,
            dry_run: false,
            variant: None,
        };
        let mut run = run_evals(&suite, &options, &Quiet).await?;
        run.cases
            .pop()
            .ok_or(EvalError::NothingSelected { evals: 1 })
    }
}

/// Reports nothing while a [`Case`] runs.
struct Quiet;

impl Observer for Quiet {
    fn attempt_started(&self, _label: &str, _steps: usize) {}

    fn step_started(&self, _label: &str, _step: usize) {}

    fn attempt_finished(&self, _label: &str, _attempt: &Attempt) {}
}
