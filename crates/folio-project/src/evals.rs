//! The `evals/` folder: `evals.toml` defaults and one eval per `**/*.eval.toml`, read into
//! [`EvalDefinition`]s with diagnostics (file, line, field, rule) like the agent folder's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use folio_protocol::Admission;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::diagnostic::{Diagnostic, Severity};
use crate::eval_assertions::{Assertion, ExpectTable, decode_assertion};
use crate::report::{Report, is_slug, line_column};
use crate::schema_check::compile_schema;

/// The folder evals live in, beside `agent/`.
pub const EVALS_DIR: &str = "evals";
/// The defaults file inside `evals/`.
pub const EVALS_DEFAULTS_FILE: &str = "evals.toml";
/// The suffix of an eval file.
pub const EVAL_SUFFIX: &str = ".eval.toml";

/// `evals/evals.toml`: defaults for every eval.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalDefaults {
    /// Cases run at once (default 4).
    #[schemars(range(min = 1))]
    pub max_concurrency: Option<u32>,
    /// Per-case timeout in seconds (default 300).
    #[schemars(range(min = 1))]
    pub timeout_secs: Option<u64>,
    /// `provider:model` (or `replay:<fixture>`) every eval runs with unless it names its own.
    pub model: Option<String>,
    /// Runs of each case (default 1).
    #[schemars(range(min = 1))]
    pub iterations: Option<u32>,
    /// Runs every case as a dry run: write tools return their `dry_run_result`.
    pub dry_run: Option<bool>,
}

/// One `*.eval.toml` as written.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EvalManifest {
    /// What the eval checks.
    description: Option<String>,
    /// Tags `folio eval --tag` selects by.
    #[serde(default)]
    tags: Vec<String>,
    /// Runs of each case (default: evals.toml's, else 1); the case passes only if all do.
    #[schemars(range(min = 1))]
    iterations: Option<u32>,
    /// `provider:model` or `replay:<fixture>` (relative to evals/) of its cases.
    model: Option<String>,
    /// Per-case timeout in seconds (default: evals.toml's, else 300).
    #[schemars(range(min = 1))]
    timeout_secs: Option<u64>,
    /// Runs its cases as dry runs: write tools return their `dry_run_result`.
    dry_run: Option<bool>,
    /// The cases, each in a fresh session.
    #[serde(default)]
    #[schemars(with = "Vec<CaseManifest>", length(min = 1))]
    cases: Vec<toml::Spanned<CaseManifest>>,
}

/// One `[[cases]]` as written.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CaseManifest {
    /// Unique within its eval: letters, digits, `_` and `-`.
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"))]
    id: String,
    /// The case's own model, overriding the eval's.
    model: Option<String>,
    /// The case's own timeout in seconds.
    #[schemars(range(min = 1))]
    timeout_secs: Option<u64>,
    /// Files written into the workspace before the first step (path → contents).
    #[serde(default)]
    workspace_files: BTreeMap<String, String>,
    /// How the runner answers approval requests of tools a step's `approvals` does not name
    /// (default `deny`).
    approvals_default: Option<ApprovalAnswer>,
    /// The messages, in order, all in the case's one session.
    #[serde(default)]
    #[schemars(with = "Vec<StepManifest>", length(min = 1))]
    steps: Vec<toml::Spanned<StepManifest>>,
}

/// One `[[cases.steps]]` as written.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StepManifest {
    /// The user message.
    #[schemars(length(min = 1))]
    send: String,
    /// Files written into the session workspace before this step's message (path → contents).
    #[serde(default)]
    workspace_files: BTreeMap<String, String>,
    /// What the busy session does with this follow-up (`preempt` or `coalesce`): given, the
    /// message is sent when the previous step's turn asks for its first tool calls (while they
    /// run), not after the turn ended.
    admission: Option<Admission>,
    /// How the runner answers the approval requests of this step's turn, by tool name.
    #[serde(default)]
    approvals: BTreeMap<String, ApprovalAnswer>,
    /// The answer for tools `approvals` does not name (default: the case's, else `deny`).
    approvals_default: Option<ApprovalAnswer>,
    /// A JSON Schema the turn's final reply, read as JSON, must satisfy: a table, or the path
    /// of a `.json` file relative to `evals/`.
    result_schema: Option<ResultSchemaManifest>,
    /// Every assertion, evaluated after the turn.
    #[serde(default)]
    #[schemars(with = "Vec<ExpectTable>")]
    expect: Vec<toml::Spanned<toml::Table>>,
}

/// A step's `result_schema` as written.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum ResultSchemaManifest {
    /// The path of a `.json` file relative to `evals/`.
    File(String),
    /// The schema itself.
    Inline(serde_json::Map<String, Value>),
}

/// How the eval runner answers a tool call's approval request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalAnswer {
    /// The call runs.
    Approve,
    /// The call is refused (the model is told so).
    #[default]
    Deny,
}

/// One eval: a file of cases.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalDefinition {
    /// Its path under `evals/` without `.eval.toml` (`builds/api`); `index` names the folder.
    pub id: String,
    /// The file.
    pub file: PathBuf,
    /// What it checks.
    pub description: Option<String>,
    /// Tags `folio eval --tag` selects by.
    pub tags: Vec<String>,
    /// Runs of each case (≥ 1).
    pub iterations: u32,
    /// The model of its cases, unless a case names its own.
    pub model: Option<String>,
    /// Per-case timeout in seconds.
    pub timeout_secs: u64,
    /// Cases run as dry runs.
    pub dry_run: bool,
    /// Its cases, in file order.
    pub cases: Vec<CaseDefinition>,
}

/// One case: a fresh session and its steps.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseDefinition {
    /// Unique within its eval.
    pub id: String,
    /// The case's own model, overriding the eval's.
    pub model: Option<String>,
    /// Per-case timeout in seconds, overriding the eval's.
    pub timeout_secs: Option<u64>,
    /// Files written into the workspace before the first step (path → contents).
    pub workspace_files: BTreeMap<String, String>,
    /// The messages, in order, all in the case's one session.
    pub steps: Vec<StepDefinition>,
}

/// One step: a message and what its turn must do.
#[derive(Debug, Clone, PartialEq)]
pub struct StepDefinition {
    /// The user message.
    pub send: String,
    /// Files written into the session workspace before the message (path → contents).
    pub workspace_files: BTreeMap<String, String>,
    /// The admission the message is sent with; given, it is sent when the previous step's
    /// turn asks for its first tool calls (or ends without any).
    pub admission: Option<Admission>,
    /// How approval requests of the step's turn are answered, by tool name.
    pub approvals: BTreeMap<String, ApprovalAnswer>,
    /// The answer for tools `approvals` does not name.
    pub approvals_default: ApprovalAnswer,
    /// Every assertion, evaluated after the turn (a `result_schema` is the first).
    pub expect: Vec<Assertion>,
}

impl StepDefinition {
    /// A step sending `send`, checked by `expect`, every approval denied.
    pub fn new(send: impl Into<String>, expect: Vec<Assertion>) -> StepDefinition {
        StepDefinition {
            send: send.into(),
            workspace_files: BTreeMap::new(),
            admission: None,
            approvals: BTreeMap::new(),
            approvals_default: ApprovalAnswer::Deny,
            expect,
        }
    }

    /// How a call of `tool` that asks for approval is answered.
    pub fn approval_for(&self, tool: &str) -> ApprovalAnswer {
        self.approvals
            .get(tool)
            .copied()
            .unwrap_or(self.approvals_default)
    }
}

/// What eval discovery found: the defaults, the evals without errors and every diagnostic.
#[derive(Debug, Clone, Default)]
pub struct EvalDiscovery {
    /// The `evals/` folder.
    pub dir: PathBuf,
    /// `evals/evals.toml`.
    pub defaults: EvalDefaults,
    /// The evals that have no errors, by id.
    pub evals: Vec<EvalDefinition>,
    /// Errors and warnings, errors first.
    pub diagnostics: Vec<Diagnostic>,
}

impl EvalDiscovery {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }
}

/// The default per-case timeout.
pub const DEFAULT_EVAL_TIMEOUT_SECS: u64 = 300;

/// Discovers the evals of the project in `project_dir` (none when it has no `evals/`).
pub fn discover_evals(project_dir: &Path) -> EvalDiscovery {
    let dir = project_dir.join(EVALS_DIR);
    let mut findings = Report::new(project_dir);
    let defaults: EvalDefaults = findings
        .parse_optional(&dir.join(EVALS_DEFAULTS_FILE))
        .unwrap_or_default();
    check_positive(
        &mut findings,
        &dir.join(EVALS_DEFAULTS_FILE),
        &[
            ("max_concurrency", defaults.max_concurrency.map(u64::from)),
            ("timeout_secs", defaults.timeout_secs),
            ("iterations", defaults.iterations.map(u64::from)),
        ],
    );
    let mut evals: Vec<EvalDefinition> = Vec::new();
    let mut ids: BTreeMap<String, PathBuf> = BTreeMap::new();
    for file in eval_files(&dir, &mut findings) {
        let Some(id) = eval_id(&dir, &file) else {
            findings.error(
                &file,
                "an index.eval.toml directly in evals/ names no folder: give it a name (e.g. evals/smoke.eval.toml)".into(),
            );
            continue;
        };
        if let Some(other) = ids.insert(id.clone(), file.clone()) {
            findings.error(
                &file,
                format!(
                    "eval id `{id}` is also the id of {}: rename one of them",
                    other.strip_prefix(project_dir).unwrap_or(&other).display()
                ),
            );
            continue;
        }
        if let Some(eval) = read_eval(&dir, &file, id, &defaults, &mut findings) {
            evals.push(eval);
        }
    }
    let mut diagnostics = findings.diagnostics;
    diagnostics.sort_by_key(|d| d.severity);
    let failed_files: BTreeSet<String> = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.file.clone())
        .collect();
    evals.retain(|eval| {
        let relative = eval.file.strip_prefix(project_dir).unwrap_or(&eval.file);
        !failed_files.contains(relative.to_string_lossy().as_ref())
    });
    EvalDiscovery {
        dir,
        defaults,
        evals,
        diagnostics,
    }
}

/// Every `*.eval.toml` under `dir`, sorted by path; other `.toml` files (but `evals.toml`) are
/// warned about, since they are never read.
fn eval_files(dir: &Path, findings: &mut Report) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for path in entries.filter_map(Result::ok).map(|e| e.path()) {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if path.is_dir() {
                folders.push(path);
            } else if name.ends_with(EVAL_SUFFIX) {
                files.push(path);
            } else if name.ends_with(".toml") && !(folder == dir && name == EVALS_DEFAULTS_FILE) {
                findings.warning(
                    &path,
                    format!("not read: eval files end in {EVAL_SUFFIX} (rename it, or move it out of evals/)"),
                );
            }
        }
    }
    files.sort();
    files
}

/// The id of the eval at `file`: its path under `dir` without the suffix, `/`-separated;
/// `index` names its folder. `None` for `evals/index.eval.toml`.
pub fn eval_id(dir: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(dir).ok()?;
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    let stem = last.strip_suffix(EVAL_SUFFIX)?;
    if stem != "index" {
        parts.push(stem.to_string());
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

fn read_eval(
    dir: &Path,
    file: &Path,
    id: String,
    defaults: &EvalDefaults,
    findings: &mut Report,
) -> Option<EvalDefinition> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(err) => {
            findings.error(file, format!("cannot read: {err}"));
            return None;
        }
    };
    let manifest: EvalManifest = findings.parse_text(file, &text, &[])?;
    let line_of = |span: std::ops::Range<usize>| line_column(&text, span.start).0;
    check_positive(
        findings,
        file,
        &[
            ("iterations", manifest.iterations.map(u64::from)),
            ("timeout_secs", manifest.timeout_secs),
        ],
    );
    if manifest.cases.is_empty() {
        findings.error(
            file,
            "cases: an eval needs at least one [[cases]] with steps".into(),
        );
    }
    let mut case_ids = BTreeSet::new();
    let mut cases = Vec::new();
    for spanned in manifest.cases {
        let line = line_of(spanned.span());
        let case = spanned.into_inner();
        if !is_slug(&case.id) {
            findings.push(
                Severity::Error,
                file,
                Some(line),
                format!(
                    "cases.id: `{}` is not a valid case id (letters, digits, `_` and `-`, starting with a letter or digit)",
                    case.id
                ),
            );
        } else if !case_ids.insert(case.id.clone()) {
            findings.push(
                Severity::Error,
                file,
                Some(line),
                format!(
                    "cases.id: `{}` is used by two cases of this eval: ids must be unique",
                    case.id
                ),
            );
        }
        if case.timeout_secs == Some(0) {
            findings.push(
                Severity::Error,
                file,
                Some(line),
                "cases.timeout_secs: must be at least 1".into(),
            );
        }
        if case.steps.is_empty() {
            findings.push(
                Severity::Error,
                file,
                Some(line),
                format!(
                    "cases.steps: case `{}` has no [[cases.steps]]: add one with send = \"…\"",
                    case.id
                ),
            );
        }
        let mut steps = Vec::new();
        for (n, step) in case.steps.into_iter().enumerate() {
            let step_line = line_of(step.span());
            let step = step.into_inner();
            if step.send.trim().is_empty() {
                findings.push(
                    Severity::Error,
                    file,
                    Some(step_line),
                    "cases.steps.send: the message is empty".into(),
                );
            }
            if n == 0 && step.admission.is_some() {
                findings.push(
                    Severity::Error,
                    file,
                    Some(step_line),
                    "cases.steps.admission: the first step starts the session, so no turn is running to admit it against: remove it, or give it to a later step".into(),
                );
            }
            let mut expect = Vec::new();
            if let Some(schema) = step.result_schema {
                match result_schema(dir, schema) {
                    Ok(schema) => expect.push(Assertion::ResultSchema(schema)),
                    Err(message) => findings.push(
                        Severity::Error,
                        file,
                        Some(step_line),
                        format!("cases.steps.result_schema: {message}"),
                    ),
                }
            }
            for table in step.expect {
                let at = line_of(table.span());
                match decode_assertion(table.get_ref()) {
                    Ok(assertion) => expect.push(assertion),
                    Err(message) => findings.push(
                        Severity::Error,
                        file,
                        Some(at),
                        format!("cases.steps.expect: {message}"),
                    ),
                }
            }
            steps.push(StepDefinition {
                send: step.send,
                workspace_files: step.workspace_files,
                admission: step.admission,
                approvals: step.approvals,
                approvals_default: step
                    .approvals_default
                    .or(case.approvals_default)
                    .unwrap_or_default(),
                expect,
            });
        }
        cases.push(CaseDefinition {
            id: case.id,
            model: case.model,
            timeout_secs: case.timeout_secs,
            workspace_files: case.workspace_files,
            steps,
        });
    }
    Some(EvalDefinition {
        id,
        file: file.to_path_buf(),
        description: manifest.description,
        tags: manifest.tags,
        iterations: manifest.iterations.or(defaults.iterations).unwrap_or(1),
        model: manifest.model,
        timeout_secs: manifest
            .timeout_secs
            .or(defaults.timeout_secs)
            .unwrap_or(DEFAULT_EVAL_TIMEOUT_SECS),
        dry_run: manifest.dry_run.or(defaults.dry_run).unwrap_or(false),
        cases,
    })
}

/// Why a step's `result_schema` cannot be used.
#[derive(Debug, thiserror::Error)]
enum ResultSchemaError {
    /// Its file cannot be read.
    #[error("cannot read {path} (a path relative to evals/): {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    /// Its file is not JSON.
    #[error("{path} is not JSON: {source}")]
    NotJson {
        path: String,
        source: serde_json::Error,
    },
    /// It does not compile as a JSON Schema.
    #[error(transparent)]
    Invalid(#[from] crate::schema_check::InvalidSchema),
}

/// The schema of a step's `result_schema` (read from its file relative to `dir` when it names
/// one), checked to compile.
fn result_schema(dir: &Path, written: ResultSchemaManifest) -> Result<Value, ResultSchemaError> {
    let schema = match written {
        ResultSchemaManifest::Inline(schema) => Value::Object(schema),
        ResultSchemaManifest::File(path) => {
            let text = match std::fs::read_to_string(dir.join(&path)) {
                Ok(text) => text,
                Err(source) => return Err(ResultSchemaError::Read { path, source }),
            };
            serde_json::from_str(&text)
                .map_err(|source| ResultSchemaError::NotJson { path, source })?
        }
    };
    compile_schema(&schema)?;
    Ok(schema)
}

/// Records an error for every count in `fields` that is 0.
fn check_positive(findings: &mut Report, file: &Path, fields: &[(&str, Option<u64>)]) {
    for (field, value) in fields {
        if *value == Some(0) {
            findings.error(file, format!("{field}: must be at least 1"));
        }
    }
}
