//! Stored eval runs under the state root (`evals/<runId>.json`): written by `folio eval`, read
//! by `--rescore` and served by `GET /v1/evals` and `GET /v1/evals/:runId`.
//!
//! A project has one place for its runs, [`eval_runs_root`]: `<root>/<slug>/evals/`, where
//! `<root>` is `--state-root` (default `<project>/.folio/state`) and `<slug>` the project
//! folder's name. `folio eval` writes there, and `folio serve` reads there in both layouts, so
//! one run is listed whether the project is served alone (`--mode single`) or among others.
//! It is the slugged root rather than the single layout's `<root>` because a state root shared
//! by several projects keeps each project's runs apart only under its slug. `folio eval` has
//! always stored runs there (only `--mode single` read `<root>/evals/`, where nothing wrote), so
//! there is no older location to keep reading.

use folio_protocol::{EvalRun, EvalRunSummary, valid_run_id};

use crate::state::{StateRoot, write_durably};

/// Why a stored eval run could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum EvalRunError {
    /// The state root's `evals/` could not be read or written.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file or folder.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A stored run is not valid JSON of an eval run.
    #[error("{path} is not a stored eval run ({source}): delete it or run the evals again")]
    Corrupt {
        /// The file.
        path: String,
        /// The parse error.
        source: serde_json::Error,
    },
}

/// The state root whose `evals/` holds the runs of the project `slug` on the state root `root`
/// (`--state-root`, or the project's `.folio/state`): `<root>/<slug>`, for `folio eval` and for
/// `folio serve` in both layouts (the module docs say why). Cases' sessions run beneath it too
/// (`evals/<runId>/…`).
pub fn eval_runs_root(root: &StateRoot, slug: &str) -> StateRoot {
    root.for_agent(slug)
}

/// Stores `run` as `evals/<runId>.json`, atomically and durably.
pub async fn write_eval_run(state: &StateRoot, run: &EvalRun) -> Result<(), EvalRunError> {
    let path = state.eval_run_path(&run.run_id);
    let bytes = serde_json::to_vec_pretty(run).map_err(|source| EvalRunError::Corrupt {
        path: path.display().to_string(),
        source,
    })?;
    write_durably(&path, &bytes)
        .await
        .map_err(|source| EvalRunError::Io {
            what: "cannot write the eval run",
            path: path.display().to_string(),
            source,
        })
}

/// The stored run `run_id`; `None` when there is none (or the id is not a run id).
pub fn read_eval_run(state: &StateRoot, run_id: &str) -> Result<Option<EvalRun>, EvalRunError> {
    if !valid_run_id(run_id) {
        return Ok(None);
    }
    let path = state.eval_run_path(run_id);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(EvalRunError::Io {
                what: "cannot read the eval run",
                path: path.display().to_string(),
                source,
            });
        }
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|source| EvalRunError::Corrupt {
            path: path.display().to_string(),
            source,
        })
}

/// Every stored run's summary, newest first.
pub fn list_eval_runs(state: &StateRoot) -> Result<Vec<EvalRunSummary>, EvalRunError> {
    let dir = state.evals_dir();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(EvalRunError::Io {
                what: "cannot list the eval runs in",
                path: dir.display().to_string(),
                source,
            });
        }
    };
    let mut runs = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(run_id) = name.strip_suffix(".json") else {
            continue;
        };
        if let Some(run) = read_eval_run(state, run_id)? {
            runs.push(run.summary());
        }
    }
    runs.sort_by(|a, b| {
        b.started_at
            .cmp(&a.started_at)
            .then_with(|| b.run_id.cmp(&a.run_id))
    });
    Ok(runs)
}
