//! Recovery on open: the sessions a dead process left running get their turns recorded as
//! `server restarted`; parked approvals stay parked.

use folio_agent::TurnOutcome;
use folio_agent::turn::pending_approvals;
use folio_protocol::{EventBody, SERVER_RESTARTED, SessionStatus, TurnFailed};

use crate::actor::{finish_session, open_turn};
use crate::error::ManagerError;
use crate::live::Live;
use crate::manager::SessionManager;
use crate::state::{SessionMeta, valid_session_id};

impl SessionManager {
    pub(crate) fn recover(&self) -> Result<(), String> {
        let dir = self.inner.state.sessions_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(format!("cannot read {}: {err}", dir.display())),
        };
        for entry in entries.flatten() {
            let id = entry.file_name().to_string_lossy().to_string();
            if !valid_session_id(&id) {
                continue;
            }
            let Ok(Some(meta)) = SessionMeta::load(&self.inner.state, &id) else {
                continue;
            };
            if meta.status != SessionStatus::Running {
                continue;
            }
            if let Err(err) = self.recover_session(meta) {
                self.inner
                    .logs
                    .about(&id)
                    .error(format!("could not recover session {id}: {err}"));
            }
        }
        Ok(())
    }

    fn recover_session(&self, meta: SessionMeta) -> Result<(), ManagerError> {
        let live = Live::open(&self.inner.state, meta)?;
        live.bind_hooks(&self.agent().hooks);
        let Some(turn_id) = live.with_events(open_turn) else {
            finish_session(&live, None, &self.inner.state)?;
            return Ok(());
        };
        if live.with_events(|events| !pending_approvals(events, &turn_id).is_empty()) {
            self.inner.logs.about(&live.id).info(format!(
                "session {} stays parked on an approval after the restart",
                live.id
            ));
            return Ok(());
        }
        live.append(
            Some(&turn_id),
            EventBody::TurnFailed(TurnFailed {
                message: SERVER_RESTARTED.to_string(),
            }),
        )?;
        let outcome = TurnOutcome::Failed {
            message: SERVER_RESTARTED.to_string(),
        };
        finish_session(&live, Some(&outcome), &self.inner.state)?;
        self.inner.logs.about(&live.id).warn(format!(
            "session {}: turn {turn_id} was running when the server stopped; recorded as failed",
            live.id
        ));
        Ok(())
    }
}
