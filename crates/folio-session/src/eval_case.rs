//! "Save this run as an eval case": a session written as a case of the agent's evals
//! (`evals/from-session/<name>.eval.toml`), by the piece `folio eval --from-session` uses
//! ([`folio_project::eval_from_session`]). Owner only, like every session route.
//!
//! When the server records sessions (`folio serve --record-dir`) and holds the session's
//! fixture, the case replays a copy of it (`evals/fixtures/from-session/<name>.jsonl`).
//!
//! Decisions: a case is saved only between turns (a running turn has no outcome to expect
//! yet); a name already taken is refused (`409 already_exists`), never replaced; a project
//! folder the server cannot write is refused (`403 forbidden`) with how to write the case
//! elsewhere.

use folio_project::{
    EVALS_DIR, SaveCaseError, eval_from_session, eval_id, session_case_path, write_session_eval,
};
use folio_protocol::{EvalCaseSaved, OkTrue, SessionStatus};

use crate::error::ManagerError;
use std::sync::Arc;

use crate::engine::Engine;
use crate::state::session_fixture;

/// Turns sessions into eval cases.
#[derive(Clone)]
pub struct Evals {
    pub(crate) engine: Arc<Engine>,
}

impl Evals {
    /// Writes `session_id` (owned by `principal`) as the eval case `name` of the agent's
    /// project; answers where it went.
    pub async fn save_case(
        &self,
        principal: &str,
        session_id: &str,
        name: &str,
    ) -> Result<EvalCaseSaved, ManagerError> {
        let meta = crate::queries::current_meta(
            &self.engine,
            self.engine.owned_meta(principal, session_id).await?,
        )
        .await;
        if meta.status == SessionStatus::Running {
            return Err(ManagerError::Busy(session_id.to_string()));
        }
        let project = self.engine.agent().definition.project_dir.clone();
        let path = session_case_path(&project, name).map_err(refused)?;
        let text = eval_from_session(
            &crate::events::read(&self.engine, principal, session_id).await?,
            name,
        );
        // Recorded by `folio serve --record-dir`: the case replays the recording, offline.
        let fixture = self
            .engine
            .settings
            .record_dir()
            .and_then(|dir| session_fixture(&dir, session_id))
            .filter(|fixture| fixture.is_file());
        let (written, dir, case) = (path.clone(), project.clone(), name.to_string());
        tokio::task::spawn_blocking(move || {
            write_session_eval(&dir, &written, &case, &text, fixture.as_deref())
        })
        .await
        .map_err(|err| ManagerError::internal_from("the eval case writer failed", err))?
        .map_err(refused)?;
        let relative = path.strip_prefix(&project).unwrap_or(&path);
        Ok(EvalCaseSaved {
            ok: OkTrue,
            eval_id: eval_id(&project.join(EVALS_DIR), &path).unwrap_or_default(),
            case_id: name.to_string(),
            path: relative.to_string_lossy().into_owned(),
        })
    }
}

/// The wire error of a case that could not be written.
fn refused(err: SaveCaseError) -> ManagerError {
    let message = err.to_string();
    match err {
        SaveCaseError::InvalidName(_) => ManagerError::Invalid(format!("name: {message}")),
        SaveCaseError::Exists(_) => ManagerError::Exists(message),
        SaveCaseError::ReadOnly { .. } => ManagerError::Refused(message),
        err @ SaveCaseError::Io { .. } => {
            ManagerError::internal_from("cannot save the eval case", err)
        }
    }
}
