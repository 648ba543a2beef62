//! The runner: each case in a fresh session through the same `SessionManager` as `serve`
//! (purpose `eval`), its steps in that one session, then every assertion evaluated.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use folio_agent::{Agent, LoadOptions, StateLayout};
use folio_fs::Content;
use folio_model::{Provider, RecordingProvider};
use folio_project::{
    AgentDefinition, ApprovalAnswer, Assertion, CaseDefinition, DEFAULT_EVAL_TIMEOUT_SECS,
    EvalDefinition, EvalDiscovery, StepDefinition,
};
use folio_protocol::{
    ActionApprovalRequested, ApprovalDecision, ApprovalRequest, Attempt, CaseResult, CreateSession,
    EvalCaseInfo, EvalCaseList, EvalRun, EventBody, StepResult, Usage,
};
use folio_session::{
    ChannelMessage, LogBuffer, SessionManager, SessionOptions, StateRoot, VariantChoice,
};
use futures::StreamExt;

use crate::EvalError;
use crate::assert::evaluate;
use crate::judge::judge;
use crate::observe::{observe, turn_started_after};
use crate::result::record_result;

/// The principal eval sessions belong to.
pub const EVAL_PRINCIPAL: &str = "eval";
/// The channel and the purpose of eval sessions (hooks see `purpose = "eval"`).
pub const EVAL_PURPOSE: &str = "eval";
/// Why the runner denies a call its step's `approvals` do not approve.
const DENIED: &str = "the eval step's approvals do not approve this tool";
/// Why the runner declines an elicitation.
const NO_FORM: &str = "folio eval fills in no forms; assert approval_requested instead";
/// The default number of cases run at once.
pub const DEFAULT_MAX_CONCURRENCY: u32 = 4;
/// How long the runner waits for hooks still observing a case.
const HOOK_FLUSH: Duration = Duration::from_secs(30);

/// Opens a model: `Some(spec)` (`provider:model`, `replay:` paths already absolute), or `None`
/// for the agent's own model. Answers the provider and the model name it serves.
pub type OpenModel =
    Arc<dyn Fn(Option<&str>) -> Result<(Arc<dyn Provider>, String), EvalError> + Send + Sync>;

/// Told as cases run (progress bars on a terminal, plain lines otherwise).
pub trait Observer: Send + Sync {
    /// A case's attempt starts; it has `steps` steps.
    fn attempt_started(&self, label: &str, steps: usize);
    /// Step `step` (1-based) of the attempt starts.
    fn step_started(&self, label: &str, step: usize);
    /// The attempt ended.
    fn attempt_finished(&self, label: &str, attempt: &Attempt);
}

/// How `folio eval` runs: which agent, where runs are stored, which cases, which model.
#[derive(Clone)]
pub struct EvalOptions {
    /// The agent every case runs.
    pub definition: AgentDefinition,
    /// The project's state root for runs ([`folio_store_disk::eval_runs_root`], where `folio
    /// serve` reads them): runs are stored under its `evals/`, cases run beneath it.
    pub state: StateRoot,
    /// Opens the models of cases and judges.
    pub open_model: OpenModel,
    /// A model for every case, overriding the evals' (`--model`).
    pub model: Option<String>,
    /// Only cases whose `evalId/caseId` contains this text.
    pub filter: Option<String>,
    /// Only evals with one of these tags (all when empty).
    pub tags: Vec<String>,
    /// Write a replay fixture per case (`evals/fixtures/<evalId>/<caseId>.jsonl`).
    pub record: bool,
    /// Cases at once, overriding `evals.toml`.
    pub max_concurrency: Option<u32>,
    /// Runs of each case, overriding the evals'.
    pub iterations: Option<u32>,
    /// Runs every case as a dry run.
    pub dry_run: bool,
    /// The A/B variant every case runs with (`--variants`); `None`: the agent as written. A
    /// model the case (or `--model`) names wins over the variant's, so replayed fixtures stay
    /// the same for every variant.
    pub variant: Option<String>,
}

/// One attempt to run: a case of an eval, and which iteration.
struct Job<'a> {
    eval: &'a EvalDefinition,
    case: &'a CaseDefinition,
    iteration: u32,
    label: String,
    /// The variant the case runs with (`None`: the agent as written).
    variant: Option<&'a str>,
}

/// Runs the selected cases of `suite` and stores the run under the state root.
pub async fn run_evals(
    suite: &EvalDiscovery,
    options: &EvalOptions,
    observer: &dyn Observer,
) -> Result<EvalRun, EvalError> {
    let selected = select(suite, options.filter.as_deref(), &options.tags);
    if selected.is_empty() {
        return Err(EvalError::NothingSelected {
            evals: suite.evals.len(),
        });
    }
    let run_id = format!("evr_{}", ulid::Ulid::generate());
    let started_at = Utc::now();
    let clock = Instant::now();
    let mut jobs = Vec::new();
    for (eval, case) in &selected {
        let iterations = if options.record {
            1
        } else {
            options.iterations.unwrap_or(eval.iterations).max(1)
        };
        for iteration in 1..=iterations {
            let mut label = format!("{}/{}", eval.id, case.id);
            if iterations > 1 {
                label.push_str(&format!(" #{iteration}"));
            }
            jobs.push(Job {
                eval,
                case,
                iteration,
                label,
                variant: options.variant.as_deref(),
            });
        }
    }
    let concurrency = options
        .max_concurrency
        .or(suite.defaults.max_concurrency)
        .unwrap_or(DEFAULT_MAX_CONCURRENCY)
        .max(1) as usize;
    let id = run_id.as_str();
    let runs = jobs.iter().enumerate().map(|(n, job)| async move {
        observer.attempt_started(&job.label, job.case.steps.len());
        let attempt = run_attempt(suite, options, id, job, observer).await;
        observer.attempt_finished(&job.label, &attempt);
        (n, attempt)
    });
    let mut attempts: Vec<(usize, Attempt)> = futures::stream::iter(runs)
        .buffer_unordered(concurrency)
        .collect()
        .await;
    attempts.sort_by_key(|(n, _)| *n);
    let mut cases: Vec<CaseResult> = Vec::new();
    for ((_, attempt), job) in attempts.into_iter().zip(&jobs) {
        match cases.last_mut() {
            Some(case) if case.eval_id == job.eval.id && case.case_id == job.case.id => {
                case.attempts.push(attempt);
            }
            _ => cases.push(CaseResult {
                eval_id: job.eval.id.clone(),
                case_id: job.case.id.clone(),
                tags: job.eval.tags.clone(),
                ok: false,
                pass_rate: 0.0,
                score: 0.0,
                attempts: vec![attempt],
            }),
        }
    }
    for case in &mut cases {
        summarize_case(case);
    }
    let run = EvalRun {
        run_id,
        started_at,
        duration_ms: clock.elapsed().as_millis() as u64,
        ok: cases.iter().all(|case| case.ok),
        rescored_from: None,
        variant: options.variant.clone(),
        cases,
    };
    folio_store_disk::write_eval_run(&options.state, &run).await?;
    Ok(run)
}

/// The evals and cases `filter` (text of `evalId/caseId`) and `tags` (any of them; all evals
/// when empty) select, in discovery order.
fn select<'a>(
    suite: &'a EvalDiscovery,
    filter: Option<&str>,
    tags: &[String],
) -> Vec<(&'a EvalDefinition, &'a CaseDefinition)> {
    suite
        .evals
        .iter()
        .filter(|eval| tags.is_empty() || eval.tags.iter().any(|t| tags.contains(t)))
        .flat_map(|eval| eval.cases.iter().map(move |case| (eval, case)))
        .filter(|(eval, case)| {
            filter.is_none_or(|filter| format!("{}/{}", eval.id, case.id).contains(filter))
        })
        .collect()
}

/// The cases a run with `filter` and `tags` would run (`folio eval --list`), without running
/// them; the same error as [`run_evals`] when they select none.
pub fn list_cases(
    suite: &EvalDiscovery,
    filter: Option<&str>,
    tags: &[String],
) -> Result<EvalCaseList, EvalError> {
    let selected = select(suite, filter, tags);
    if selected.is_empty() {
        return Err(EvalError::NothingSelected {
            evals: suite.evals.len(),
        });
    }
    let mut all_tags: Vec<String> = selected
        .iter()
        .flat_map(|(eval, _)| eval.tags.iter().cloned())
        .collect();
    all_tags.sort_unstable();
    all_tags.dedup();
    Ok(EvalCaseList {
        cases: selected
            .iter()
            .map(|(eval, case)| EvalCaseInfo {
                eval_id: eval.id.clone(),
                case_id: case.id.clone(),
                tags: eval.tags.clone(),
                steps: case.steps.len() as u32,
            })
            .collect(),
        tags: all_tags,
    })
}

/// Sets a case's verdict from its attempts: ok when every attempt passed (`pass^k`), the pass
/// rate, and the mean score.
pub(crate) fn summarize_case(case: &mut CaseResult) {
    let total = case.attempts.len().max(1) as f64;
    let passed = case.attempts.iter().filter(|a| a.ok).count();
    case.ok = !case.attempts.is_empty() && passed == case.attempts.len();
    case.pass_rate = passed as f64 / total;
    case.score = case.attempts.iter().map(|a| a.score).sum::<f64>() / total;
}

/// Sets an attempt's verdict from its steps: ok when it ran to its end and every assertion
/// passed; the score is the mean of its assertions' scores.
pub(crate) fn summarize_attempt(attempt: &mut Attempt, steps_expected: usize) {
    let scores: Vec<f64> = attempt
        .steps
        .iter()
        .flat_map(|step| step.assertions.iter().map(|a| a.score))
        .collect();
    attempt.ok = attempt.error.is_none()
        && attempt.steps.len() == steps_expected
        && attempt
            .steps
            .iter()
            .all(|step| step.assertions.iter().all(|a| a.passed));
    attempt.score = if scores.is_empty() {
        0.0
    } else {
        scores.iter().sum::<f64>() / scores.len() as f64
    };
    attempt.usage = Usage::sum_reported(attempt.steps.iter().map(|step| step.observed.usage));
}

/// A `replay:` fixture named relative to `evals/` made absolute; other specs unchanged.
pub(crate) fn resolve_spec(spec: &str, evals_dir: &Path) -> String {
    match spec.strip_prefix("replay:") {
        Some(path) if Path::new(path).is_relative() => {
            format!("replay:{}", evals_dir.join(path).display())
        }
        _ => spec.to_string(),
    }
}

/// Where `--record` writes the fixture of a case (`judge`: of its judges).
pub fn fixture_path(evals_dir: &Path, eval_id: &str, case_id: &str, judge: bool) -> PathBuf {
    let name = if judge {
        format!("{case_id}.judge.jsonl")
    } else {
        format!("{case_id}.jsonl")
    };
    evals_dir.join("fixtures").join(eval_id).join(name)
}

/// Opens `spec` (or the agent's model), wrapped to record into `record` when given.
fn open(
    options: &EvalOptions,
    spec: Option<&str>,
    record: Option<PathBuf>,
) -> Result<(Arc<dyn Provider>, String), EvalError> {
    let (provider, model) = (options.open_model)(spec)?;
    let Some(fixture) = record else {
        return Ok((provider, model));
    };
    let failed = |source| EvalError::Write {
        path: fixture.display().to_string(),
        source,
    };
    if let Some(dir) = fixture.parent() {
        std::fs::create_dir_all(dir).map_err(failed)?;
    }
    // A fixture holds one session's exchanges: start it empty.
    std::fs::write(&fixture, "").map_err(failed)?;
    Ok((Arc::new(RecordingProvider::new(provider, fixture)), model))
}

async fn run_attempt(
    suite: &EvalDiscovery,
    options: &EvalOptions,
    run_id: &str,
    job: &Job<'_>,
    observer: &dyn Observer,
) -> Attempt {
    let clock = Instant::now();
    let spec = options
        .model
        .as_deref()
        .or(job.case.model.as_deref())
        .or(job.eval.model.as_deref())
        .or(suite.defaults.model.as_deref())
        .map(|spec| resolve_spec(spec, &suite.dir));
    let recording = options.record && job.iteration == 1;
    let fixture =
        |judge| recording.then(|| fixture_path(&suite.dir, &job.eval.id, &job.case.id, judge));
    let mut attempt = Attempt {
        iteration: job.iteration,
        ok: false,
        score: 0.0,
        session_id: None,
        model: spec.clone().unwrap_or_default(),
        duration_ms: 0,
        usage: None,
        error: None,
        steps: Vec::new(),
    };
    let state = StateLayout::new(
        options
            .state
            .evals_dir()
            .join(run_id)
            .join(&job.eval.id)
            .join(&job.case.id)
            .join(job.iteration.to_string()),
    );
    let ran = async {
        let (provider, model) = open(options, spec.as_deref(), fixture(false))?;
        if attempt.model.is_empty() {
            attempt.model.clone_from(&model);
        }
        let load = LoadOptions {
            state_root: Some(state.clone()),
            ..LoadOptions::default()
        };
        let definition = crate::compare::for_case(&options.definition, spec.is_some());
        let agent = Agent::load_with(definition, provider, model, load)
            .await
            .map(Arc::new)
            .map_err(EvalError::Agent)?;
        let manager = SessionManager::open(state.clone(), agent.clone(), LogBuffer::new())
            .await
            .map_err(EvalError::Sessions)?;
        let judges = Judges {
            options,
            case_spec: spec.clone(),
            evals_dir: &suite.dir,
            record: fixture(true),
            opened: HashMap::new(),
        };
        let secs = job
            .case
            .timeout_secs
            .unwrap_or(job.eval.timeout_secs)
            .max(1);
        let steps = run_steps(
            &manager,
            &agent,
            job,
            options.dry_run || job.eval.dry_run,
            judges,
            &mut attempt,
            observer,
        );
        let timed_out = tokio::time::timeout(Duration::from_secs(secs), steps).await;
        let result = match timed_out {
            Ok(result) => result,
            Err(_) => Err(EvalError::Timeout {
                secs,
                default: secs == DEFAULT_EVAL_TIMEOUT_SECS,
            }),
        };
        manager.shutdown().await;
        if !agent.hooks.flush(HOOK_FLUSH).await {
            tracing::warn!("hooks still running after {HOOK_FLUSH:?} were stopped");
        }
        agent.shutdown().await;
        result
    };
    if let Err(err) = ran.await {
        attempt.error = Some(err.to_string());
    }
    attempt.duration_ms = clock.elapsed().as_millis() as u64;
    summarize_attempt(&mut attempt, job.case.steps.len());
    attempt
}

/// The judges of one attempt: their models, opened once each.
struct Judges<'a> {
    options: &'a EvalOptions,
    case_spec: Option<String>,
    evals_dir: &'a Path,
    record: Option<PathBuf>,
    opened: HashMap<Option<String>, (Arc<dyn Provider>, String)>,
}

impl Judges<'_> {
    /// The judge model of `model` (else the case's; a case replaying `X.jsonl` judges with
    /// `X.judge.jsonl`), opened on first use.
    fn provider(&mut self, model: Option<&str>) -> Result<(Arc<dyn Provider>, String), EvalError> {
        let spec = match model {
            Some(spec) => Some(resolve_spec(spec, self.evals_dir)),
            None => self
                .case_spec
                .as_deref()
                .map(|spec| match spec.strip_suffix(".jsonl") {
                    Some(stem) if spec.starts_with("replay:") => format!("{stem}.judge.jsonl"),
                    _ => spec.to_string(),
                }),
        };
        if let Some(opened) = self.opened.get(&spec) {
            return Ok(opened.clone());
        }
        let replaying = spec.as_deref().is_some_and(|s| s.starts_with("replay:"));
        let record = if replaying { None } else { self.record.take() };
        let opened = open(self.options, spec.as_deref(), record)?;
        self.opened.insert(spec, opened.clone());
        Ok(opened)
    }
}

async fn run_steps(
    manager: &SessionManager,
    agent: &Agent,
    job: &Job<'_>,
    dry_run: bool,
    mut judges: Judges<'_>,
    attempt: &mut Attempt,
    observer: &dyn Observer,
) -> Result<(), EvalError> {
    let steps = &job.case.steps;
    let project_dir = agent.definition.project_dir.as_path();
    let mut session_id: Option<String> = None;
    // Steps sent but not yet observed (a step followed by one with `admission` is observed
    // with it): the step's index and the event index its message followed.
    let mut sent: Vec<(usize, u64)> = Vec::new();
    for (n, step) in steps.iter().enumerate() {
        observer.step_started(&job.label, n + 1);
        let (id, from) = match &session_id {
            None => {
                let mut request = CreateSession::message(step.send.clone());
                request.workspace_files = job.case.workspace_files.clone();
                request.workspace_files.extend(step.workspace_files.clone());
                let options = SessionOptions {
                    purpose: Some(EVAL_PURPOSE.to_string()),
                    dry_run,
                    peer_depth: 0,
                    continuation_key: None,
                    prepare: None,
                    variant: job.variant.map_or(VariantChoice::Unassigned, |v| {
                        VariantChoice::Chosen(v.into())
                    }),
                };
                let accepted = manager
                    .sessions()
                    .create_with(EVAL_PRINCIPAL, EVAL_PURPOSE, request, options)
                    .await
                    .map_err(EvalError::Send)?;
                attempt.session_id = Some(accepted.session_id.clone());
                session_id = Some(accepted.session_id.clone());
                (accepted.session_id, 0)
            }
            Some(id) => {
                let events = manager
                    .events()
                    .read(EVAL_PRINCIPAL, id)
                    .await
                    .map_err(EvalError::Send)?;
                let from = events.last().map_or(0, |event| event.index + 1);
                let message = ChannelMessage {
                    text: step.send.clone(),
                    workspace_files: step.workspace_files.clone(),
                    admission: step.admission,
                    key: None,
                    prepare: None,
                };
                manager
                    .turns()
                    .send_message(EVAL_PRINCIPAL, id, message)
                    .await
                    .map_err(EvalError::Send)?;
                (id.clone(), from)
            }
        };
        sent.push((n, from));
        let overlapped = steps
            .get(n + 1)
            .is_some_and(|next| next.admission.is_some());
        let until = if overlapped {
            Until::Acting
        } else {
            Until::Settled
        };
        follow(manager, &id, from, step, until).await?;
        if overlapped {
            continue;
        }
        let events = manager
            .events()
            .read(EVAL_PRINCIPAL, &id)
            .await
            .map_err(EvalError::Send)?;
        for (m, from) in std::mem::take(&mut sent) {
            let step = &steps[m];
            let turn_id =
                turn_started_after(&events, from).ok_or(EvalError::NoTurn { step: m + 1 })?;
            let mut observed = observe(&events, &turn_id, &step.send);
            record_result(&step.expect, &mut observed);
            for assertion in &step.expect {
                match assertion {
                    Assertion::File { path, .. } => {
                        let content = read_file(agent, manager, &id, path).await;
                        observed.files.insert(path.clone(), content);
                    }
                    Assertion::Judge { rubric, model, .. } => {
                        let (provider, model) = judges.provider(model.as_deref())?;
                        let verdict = judge(provider.as_ref(), &model, rubric, &observed).await;
                        observed.verdicts.insert(rubric.clone(), verdict);
                    }
                    _ => {}
                }
            }
            let assertions = evaluate(&step.expect, &observed, project_dir).await;
            attempt.steps.push(StepResult {
                observed,
                assertions,
            });
        }
    }
    Ok(())
}

/// How far [`follow`] follows a step's turn.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Until {
    /// Until the turn asks for its first tool calls, or ends without any: the next step is
    /// then sent with its admission while the turn runs its tools.
    Acting,
    /// Until the turn ended and the session settled (waiting, completed or failed).
    Settled,
}

/// Follows the session from `from`, where `step`'s message was sent, until its turn reached
/// `until`, answering every approval request meanwhile as `step`'s `approvals` say.
async fn follow(
    manager: &SessionManager,
    id: &str,
    from: u64,
    step: &StepDefinition,
    until: Until,
) -> Result<(), EvalError> {
    let mut stream = manager
        .events()
        .stream(EVAL_PRINCIPAL, id, from)
        .await
        .map_err(EvalError::Send)?;
    // The turn of the step's message: the first `message.received` from `from` on.
    let mut turn: Option<String> = None;
    let mut turn_ended = false;
    while let Some(item) = stream.rx.recv().await {
        let Some(event) = item else { continue };
        let of_turn = turn.is_some() && event.turn_id == turn;
        match &event.body {
            EventBody::MessageReceived(_) if turn.is_none() => turn.clone_from(&event.turn_id),
            EventBody::ActionsRequested(_) if of_turn && until == Until::Acting => return Ok(()),
            EventBody::ActionApprovalRequested(requested) => {
                manager
                    .approvals()
                    .resolve(
                        EVAL_PRINCIPAL,
                        id,
                        &requested.call_id,
                        answer(step, requested),
                    )
                    .await
                    .map_err(EvalError::Send)?;
            }
            EventBody::TurnCompleted(_) | EventBody::TurnFailed(_) if of_turn => {
                if until == Until::Acting {
                    return Ok(());
                }
                turn_ended = true;
            }
            EventBody::SessionWaiting(_)
            | EventBody::SessionCompleted(_)
            | EventBody::SessionFailed(_)
                if turn_ended =>
            {
                return Ok(());
            }
            _ => {}
        }
    }
    Err(EvalError::StreamEnded)
}

/// The runner's answer to an approval request: the step's `approvals` for a tool call; an
/// elicitation is declined (no one can fill in its form).
fn answer(step: &StepDefinition, requested: &ActionApprovalRequested) -> ApprovalRequest {
    if requested.elicitation.is_some() {
        return ApprovalRequest::refusal(requested, NO_FORM);
    }
    match step.approval_for(&requested.tool) {
        ApprovalAnswer::Approve => ApprovalRequest {
            decision: ApprovalDecision::Approve,
            reason: None,
            content: None,
        },
        ApprovalAnswer::Deny => ApprovalRequest::refusal(requested, DENIED),
    }
}

/// The text of `path` as the case's turns see it (the workspace, or the agent's root); `None`
/// when it cannot be read.
async fn read_file(
    agent: &Agent,
    manager: &SessionManager,
    session_id: &str,
    path: &str,
) -> Option<String> {
    let workspace = manager
        .sessions()
        .workspace_dir(EVAL_PRINCIPAL, session_id)
        .await
        .ok()?;
    let session = folio_agent::TurnSession {
        session_id,
        continuation_key: None,
        principal: EVAL_PRINCIPAL,
        ..Default::default()
    };
    let fs = agent.bind_turn_fs(&workspace, &session).await.ok()?.fs;
    match fs.read(path).await.ok()? {
        Content::Text(text) => Some(text),
        Content::Image { bytes, mime } => Some(format!("<{mime} image, {} bytes>", bytes.len())),
    }
}
