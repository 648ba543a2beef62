//! `ReadLints`: runs the linters of `[tools.read_lints]` in the session workspace (over the
//! whole workspace, or the paths asked for) and returns their findings as one sorted list of
//! uniform diagnostics, `path:line:col: severity: message [linter code]`.
//!
//! **Decisions (Folio):** linters run one after another, each in its own process group with a
//! timeout; a linter's exit code is not a failure by itself (linters exit non-zero when they
//! find something), but one that cannot start, times out, or exits non-zero with nothing
//! readable fails the call — the error names each failing linter and still carries the other
//! linters' diagnostics. Paths outside the workspace are refused. Output is bounded by
//! `max_diagnostics` (default 200); the rest are counted.

mod formats;

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use folio_fs::{EntryKind, FileKind};
use folio_project::{LintCommand, ReadLintsConfig};
use futures::StreamExt;
use serde_json::Value;
use tokio::process::Command;

use super::input;
use super::process::{Finished, Outcome, resolve_program, run_in_group, tail_lines};
use super::{Tool, ToolContext, ToolError, ToolOutput};
use formats::{Diagnostic, Severity};

/// Diagnostics shown when `max_diagnostics` is omitted.
const DEFAULT_MAX_DIAGNOSTICS: usize = 200;
/// Seconds a linter may run when its `timeout_secs` is omitted.
const DEFAULT_TIMEOUT_SECS: u64 = 120;

/// `ReadLints`' arguments.
#[derive(Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadLintsInput {
    /// Files or directories to lint, relative to the workspace (default: the whole workspace).
    paths: Option<Vec<String>>,
}

/// The `ReadLints` tool over the configured linters.
#[derive(Debug, Clone)]
pub struct ReadLintsTool {
    config: ReadLintsConfig,
    agent_dir: PathBuf,
}

impl ReadLintsTool {
    /// A lint tool for `config`; relative program paths resolve against `agent_dir`.
    pub fn new(config: ReadLintsConfig, agent_dir: &Path) -> Self {
        ReadLintsTool {
            config,
            agent_dir: agent_dir.to_path_buf(),
        }
    }

    /// Runs one linter over `targets` (workspace-relative); its diagnostics, or why it failed.
    async fn run_one(
        &self,
        index: usize,
        lint: &LintCommand,
        targets: &[Target],
        ctx: &ToolContext,
    ) -> Result<Vec<Diagnostic>, LintFailure> {
        let name = lint.display_name();
        let Some((program, args)) = lint.command.split_first() else {
            return Err(LintFailure::EmptyCommand { name, index });
        };
        let files = match &lint.files {
            Some(pattern) => {
                let files = matching_files(pattern, targets, ctx)
                    .await
                    .map_err(|source| LintFailure::Files {
                        name: name.clone(),
                        source,
                    })?;
                if files.is_empty() {
                    return Ok(Vec::new());
                }
                files
            }
            None => targets.iter().map(|t| t.path.clone()).collect(),
        };
        let mut command = Command::new(resolve_program(program, &self.agent_dir));
        command.args(args).args(&files).current_dir(&ctx.workspace);
        let timeout = Duration::from_secs(lint.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1));
        let Finished {
            outcome,
            stdout,
            stderr,
        } = run_in_group(command, None, timeout, &ctx.cancel)
            .await
            .map_err(|source| LintFailure::Start {
                name: name.clone(),
                program: program.clone(),
                index,
                hint: if source.kind() == std::io::ErrorKind::NotFound {
                    "is it installed? install it, or fix the program path in"
                } else {
                    "check"
                },
                source,
            })?;
        let status = match outcome {
            Outcome::Exited(status) => status,
            Outcome::TimedOut => {
                return Err(LintFailure::TimedOut {
                    name,
                    index,
                    secs: timeout.as_secs(),
                });
            }
            Outcome::Cancelled => return Err(LintFailure::Cancelled { name }),
        };
        // rustc writes its JSON diagnostics to stderr; every other format reads stdout.
        let output = if lint.format == folio_project::LintFormat::Rustc {
            format!("{stdout}\n{stderr}")
        } else {
            stdout
        };
        match formats::parse(lint.format, &output) {
            Ok(found) if found.is_empty() && !status.success() => Err(LintFailure::Silent {
                name,
                status,
                stderr: tail_lines(&stderr, 10),
            }),
            Ok(found) => Ok(found),
            Err(err) => Err(LintFailure::Format {
                name,
                index,
                problem: err.0,
                status,
                stderr: tail_lines(&stderr, 10),
            }),
        }
    }
}

/// Why one linter gave no diagnostics; each message names the linter and what to change.
#[derive(Debug, thiserror::Error)]
enum LintFailure {
    #[error("{name}: commands[{index}].command is empty")]
    EmptyCommand { name: String, index: usize },
    #[error("{name}: {source}")]
    Files {
        name: String,
        #[source]
        source: FilesError,
    },
    #[error(
        "{name}: could not start {program}: {source} ({hint} [tools.read_lints] commands[{index}].command in agent.toml)"
    )]
    Start {
        name: String,
        program: String,
        index: usize,
        hint: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{name}: ran past {secs}s and was killed (raise commands[{index}].timeout_secs or pass fewer paths)"
    )]
    TimedOut {
        name: String,
        index: usize,
        secs: u64,
    },
    #[error("{name}: cancelled: the turn was stopped")]
    Cancelled { name: String },
    #[error("{name}: exited with {status} and reported no diagnostics: {stderr}")]
    Silent {
        name: String,
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("{name}: its output is {problem} ({status}); check commands[{index}].format: {stderr}")]
    Format {
        name: String,
        index: usize,
        problem: String,
        status: std::process::ExitStatus,
        stderr: String,
    },
}

/// Why the files a linter's `files` glob picks could not be listed.
#[derive(Debug, thiserror::Error)]
enum FilesError {
    #[error("files = \"{pattern}\" is not a valid glob: {source}")]
    Glob {
        pattern: String,
        #[source]
        source: globset::Error,
    },
    #[error(transparent)]
    Fs(#[from] folio_fs::PathError),
    #[error(transparent)]
    Outside(#[from] OutsideWorkspace),
}

/// A path that leaves the session workspace.
#[derive(Debug, thiserror::Error)]
#[error("path \"{path}\" is outside the session workspace; pass paths inside it")]
struct OutsideWorkspace {
    path: String,
}

/// A file or directory to lint, relative to the workspace (`.` for all of it).
struct Target {
    path: String,
    is_dir: bool,
}

/// `path` relative to the workspace, lexically normalized; refused when it leaves it.
fn workspace_relative(workspace: &Path, path: &str) -> Result<String, OutsideWorkspace> {
    let given = Path::new(path);
    let relative = if given.is_absolute() {
        let canonical = workspace
            .canonicalize()
            .unwrap_or_else(|_| workspace.to_path_buf());
        given
            .strip_prefix(workspace)
            .or_else(|_| given.strip_prefix(&canonical))
            .map_err(|_| OutsideWorkspace {
                path: path.to_string(),
            })?
    } else {
        given
    };
    let mut parts: Vec<String> = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Err(OutsideWorkspace {
                        path: path.to_string(),
                    });
                }
            }
        }
    }
    Ok(if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    })
}

/// The workspace files under `targets` matching `pattern`, workspace-relative and sorted.
async fn matching_files(
    pattern: &str,
    targets: &[Target],
    ctx: &ToolContext,
) -> Result<Vec<String>, FilesError> {
    let matcher = globset::Glob::new(pattern)
        .map_err(|source| FilesError::Glob {
            pattern: pattern.to_string(),
            source,
        })?
        .compile_matcher();
    let mut files = Vec::new();
    for target in targets {
        if !target.is_dir {
            if matcher.is_match(&target.path) {
                files.push(target.path.clone());
            }
            continue;
        }
        let mut entries = ctx.fs.glob(pattern, Some(target.path.as_str()));
        while let Some(entry) = entries.next().await {
            let entry = entry?;
            if entry.kind == EntryKind::File {
                files.push(workspace_relative(&ctx.workspace, &entry.path)?);
            }
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// The model-facing text: one line per diagnostic, sorted, at most `max`, then a summary.
fn render(mut found: Vec<(String, Diagnostic)>, linters: &[String], max: usize) -> String {
    found.sort_by(|(a_src, a), (b_src, b)| {
        (&a.path, a.line, a.column, a_src).cmp(&(&b.path, b.line, b.column, b_src))
    });
    found.dedup();
    let linters = linters.join(", ");
    if found.is_empty() {
        return format!("No diagnostics from {linters}.");
    }
    let mut out = String::new();
    for (source, d) in found.iter().take(max) {
        let tag = match &d.code {
            Some(code) => format!("{source} {code}"),
            None => source.clone(),
        };
        out.push_str(&format!(
            "{}:{}:{}: {}: {} [{tag}]\n",
            d.path,
            d.line,
            d.column,
            d.severity.as_str(),
            d.message.trim()
        ));
    }
    if found.len() > max {
        out.push_str(&format!(
            "… {} more diagnostics not shown (pass paths to narrow the run, or raise [tools.read_lints] max_diagnostics)\n",
            found.len() - max
        ));
    }
    let count = |severity| found.iter().filter(|(_, d)| d.severity == severity).count();
    out.push_str(&format!(
        "{} diagnostics ({} errors, {} warnings, {} info) from {linters}",
        found.len(),
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info),
    ));
    out
}

#[async_trait::async_trait]
impl Tool for ReadLintsTool {
    fn name(&self) -> &str {
        "ReadLints"
    }

    fn description(&self) -> &str {
        "Run the project's linters over the workspace (or the given paths) and list their diagnostics as path:line:col: severity: message."
    }

    fn input_schema(&self) -> Value {
        input::schema::<ReadLintsInput>()
    }

    fn prepare(&self, input: Value) -> Result<Value, ToolError> {
        input::prepare::<ReadLintsInput>(input)
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let ReadLintsInput { paths } = input::parse(input)?;
        let asked = paths.unwrap_or_default();
        let mut targets = Vec::new();
        for path in &asked {
            let relative = workspace_relative(&ctx.workspace, path)
                .map_err(|err| ToolError(err.to_string()))?;
            let kind = ctx.fs.stat(&relative).await?.kind;
            match kind {
                FileKind::Missing => return Err(ToolError(format!("not found: {path}"))),
                FileKind::File | FileKind::Directory => targets.push(Target {
                    path: relative,
                    is_dir: kind == FileKind::Directory,
                }),
            }
        }
        let whole_workspace = targets.is_empty();
        if whole_workspace {
            targets.push(Target {
                path: ".".into(),
                is_dir: true,
            });
        }
        let mut found = Vec::new();
        let mut failures = Vec::new();
        let mut linters = Vec::new();
        for (index, lint) in self.config.commands.iter().enumerate() {
            let name = lint.display_name();
            // Linters that walk on their own get no path argument for the whole workspace.
            let given: &[Target] = if whole_workspace && lint.files.is_none() {
                &[]
            } else {
                &targets
            };
            match self.run_one(index, lint, given, ctx).await {
                Ok(diagnostics) => found.extend(diagnostics.into_iter().map(|mut d| {
                    d.path = workspace_relative(&ctx.workspace, &d.path).unwrap_or(d.path);
                    (name.clone(), d)
                })),
                Err(failure) => failures.push(failure),
            }
            linters.push(name);
            if ctx.cancel.is_cancelled() {
                return Err(ToolError(
                    "ReadLints cancelled: the turn was stopped".into(),
                ));
            }
        }
        let max = self
            .config
            .max_diagnostics
            .unwrap_or(DEFAULT_MAX_DIAGNOSTICS)
            .max(1);
        let report = render(found, &linters, max);
        if failures.is_empty() {
            Ok(ToolOutput::Text(report))
        } else {
            Err(ToolError(format!(
                "ReadLints: {} of {} linters failed:\n{}\n\n{report}",
                failures.len(),
                linters.len(),
                failures
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_workspace() {
        let ws = Path::new("/w/ses");
        assert_eq!(workspace_relative(ws, "src/../a.py").unwrap(), "a.py");
        assert_eq!(
            workspace_relative(ws, "/w/ses/src/a.py").unwrap(),
            "src/a.py"
        );
        assert_eq!(workspace_relative(ws, "./").unwrap(), ".");
        for outside in ["../x", "/etc/passwd", "a/../../x"] {
            assert_eq!(
                workspace_relative(ws, outside).unwrap_err().to_string(),
                format!(
                    "path \"{outside}\" is outside the session workspace; pass paths inside it"
                )
            );
        }
    }

    #[test]
    fn render_sorts_caps_and_counts() {
        let diag = |path: &str, line, severity| Diagnostic {
            path: path.into(),
            line,
            column: 1,
            severity,
            code: Some("X1".into()),
            message: "m".into(),
        };
        let found = vec![
            ("b".to_string(), diag("z.py", 1, Severity::Warning)),
            ("a".to_string(), diag("a.py", 9, Severity::Error)),
            ("a".to_string(), diag("a.py", 2, Severity::Info)),
        ];
        assert_eq!(
            render(found, &["a".into(), "b".into()], 2),
            "a.py:2:1: info: m [a X1]\na.py:9:1: error: m [a X1]\n… 1 more diagnostics not shown (pass paths to narrow the run, or raise [tools.read_lints] max_diagnostics)\n3 diagnostics (1 errors, 1 warnings, 1 info) from a, b"
        );
        assert_eq!(
            render(Vec::new(), &["ruff".into()], 5),
            "No diagnostics from ruff."
        );
    }
}
