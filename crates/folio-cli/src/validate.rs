//! `folio validate`: discovery diagnostics of the agent and its evals, one line each (file,
//! field, rule); exit 1 on errors.

use std::path::PathBuf;
use std::process::ExitCode;

use folio_project::{AgentDefinition, Diagnostic, Severity, discover, discover_evals};

/// Arguments of `folio validate`.
#[derive(Debug, clap::Args)]
pub(crate) struct ValidateArgs {
    /// The agent project (a folder holding `agent/`).
    #[arg(long, default_value = ".")]
    dir: PathBuf,
}

/// The report `validate` prints for the project in `dir`, and whether it has errors.
pub(crate) fn report(dir: &std::path::Path) -> (String, bool) {
    let discovery = discover(dir);
    // Evals are checked too, but never stop the agent from running: only `validate` and
    // `eval` report them.
    let evals = discover_evals(dir);
    let mounts = discovery
        .definition
        .as_ref()
        .map(mount_diagnostics)
        .unwrap_or_default();
    let diagnostics: Vec<&Diagnostic> = discovery
        .diagnostics
        .iter()
        .chain(&mounts)
        .chain(&evals.diagnostics)
        .collect();
    let mut out = String::new();
    for diagnostic in &diagnostics {
        out.push_str(&format!("{diagnostic}\n"));
    }
    let errors = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = diagnostics.len() - errors;
    let plural = |n: usize, word: &str| {
        if n == 1 {
            format!("{n} {word}")
        } else {
            format!("{n} {word}s")
        }
    };
    match discovery.definition.as_ref().filter(|_| errors == 0) {
        Some(definition) if warnings == 0 => {
            out.push_str(&format!(
                "ok: agent \"{}\" has no problems\n",
                definition.name
            ));
        }
        Some(definition) => out.push_str(&format!(
            "ok: agent \"{}\" ({})\n",
            definition.name,
            plural(warnings, "warning")
        )),
        None => out.push_str(&format!(
            "failed: {}, {}\n",
            plural(errors, "error"),
            plural(warnings, "warning")
        )),
    }
    (out, errors > 0)
}

/// Errors of the `[root]` mounts the manifest parser cannot judge: object-store URLs and option
/// names, checked by the object-store crate (the same check that runs when the agent loads).
fn mount_diagnostics(definition: &AgentDefinition) -> Vec<Diagnostic> {
    let Some(mounts) = &definition.config.root else {
        return Vec::new();
    };
    let manifest = definition.agent_dir.join("agent.toml");
    let file = manifest
        .strip_prefix(&definition.project_dir)
        .unwrap_or(&manifest)
        .to_string_lossy()
        .into_owned();
    folio_agent::check_root(mounts)
        .into_iter()
        .map(|err| Diagnostic {
            severity: Severity::Error,
            file: file.clone(),
            line: None,
            message: format!("root: mount \"{}\": {}", err.mount, err.reason),
        })
        .collect()
}

/// Prints the diagnostics of `args.dir`; exit 1 when any is an error.
pub(crate) fn validate(args: ValidateArgs) -> anyhow::Result<ExitCode> {
    let (out, failed) = report(&args.dir);
    print!("{out}");
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
