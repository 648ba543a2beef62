//! Recovery on open: the sessions a dead process left between two durable steps get their
//! turns recorded as `server restarted`, their queued messages run and their `session.json`
//! repaired; parked approvals stay parked. A turn that waited for an MCP server's question or
//! an MCP authorization (held in the dead process's memory: the MCP call that asked, the PKCE
//! verifier) gets them answered as abandoned in its log and resumes: the question's call fails
//! saying to call again, the authorization's call runs again and asks anew.

use std::sync::Arc;

use folio_agent::TurnOutcome;
use folio_agent::{pending_approvals, restart_answers};
use folio_protocol::{Event, EventBody, SERVER_RESTARTED, SessionMode, SessionStatus, TurnFailed};

use crate::actor::{open_turn, record_end};
use crate::command::{Command, queued_messages};
use crate::error::ManagerError;
use crate::error::OpenError;
use crate::live::{Live, lock};
use crate::manager::{SessionManager, remember};
use crate::state::{SessionMeta, boundary_status, session_ids};
use folio_store_disk::last_event;

impl SessionManager {
    /// Repairs every session a dead process left between two durable steps: a turn still open
    /// (recorded as `server restarted`), messages queued but not run (run now), a
    /// `session.json` that missed the last message or the end of the last turn.
    pub(crate) fn recover(&self) -> Result<(), OpenError> {
        let ids = session_ids(&self.inner.state).map_err(|err| {
            OpenError::Io(format!(
                "cannot read {}: {err}",
                self.inner.state.sessions_dir().display()
            ))
        })?;
        for id in ids {
            let meta = match crate::state::load_meta(&self.inner.state, &id) {
                Ok(Some(meta)) => meta,
                Ok(None) if crate::state::meta_never_written(&self.inner.state, &id) => {
                    self.forget_unacknowledged(&id);
                    continue;
                }
                _ => continue,
            };
            let last = match last_event(&self.inner.state.trace_path(&id)) {
                Ok(last) => last,
                Err(err) => {
                    self.inner
                        .logs
                        .about(&id)
                        .error(format!("could not recover session {id}: {err}"));
                    continue;
                }
            };
            // Events after the last recorded turn boundary: a message was recorded (and maybe
            // a turn ran) but `session.json` did not follow.
            let moved = last
                .as_ref()
                .is_some_and(|last| last.index > meta.last_index);
            // A log that ends a turn `session.json` missed (a crash before its rewrite) is
            // repaired too: lists read the session's token totals from `session.json`.
            if meta.status != SessionStatus::Running && !moved {
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

    /// Removes a session whose create a crash interrupted before it was acknowledged: its
    /// `session.json` was never written out (it is synced with the first message, in the round
    /// that precedes the `201`), so no client knows it and nothing in it was acknowledged.
    fn forget_unacknowledged(&self, id: &str) {
        let state = &self.inner.state;
        let removed =
            std::fs::remove_dir_all(state.session_dir(id)).and_then(
                |()| match std::fs::remove_file(state.trace_path(id)) {
                    Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(err),
                    _ => Ok(()),
                },
            );
        let logs = self.inner.logs.about(id);
        match removed {
            Ok(()) => logs.warn(format!(
                "session {id}: removed a create the server stopped before acknowledging (its session.json was never written)"
            )),
            Err(err) => logs.error(format!(
                "session {id}: cannot remove a create the server stopped before acknowledging: {err}; remove {} by hand",
                state.session_dir(id).display()
            )),
        }
    }

    fn recover_session(&self, meta: SessionMeta) -> Result<(), ManagerError> {
        let live = Arc::new(Live::open(&self.inner.state, meta)?);
        live.bind_hooks(&self.agent().hooks);
        let mut outcome = live.with_events(last_outcome);
        match live.with_events(restart_of) {
            Restart::Closed(_) => {}
            Restart::Parked => {
                self.inner.logs.about(&live.id).info(format!(
                    "session {} stays parked on an approval after the restart",
                    live.id
                ));
                return Ok(());
            }
            Restart::Answer(turn_id, answers) => {
                for answer in answers {
                    live.append(Some(&turn_id), answer)?;
                }
                live.log.sync()?;
                self.inner.logs.about(&live.id).info(format!(
                    "session {}: turn {turn_id} waited for an MCP question or authorization of the stopped process; answered as abandoned, the turn resumes",
                    live.id
                ));
                remember(&mut lock(&self.inner.live), &live.id, &live);
                return self.post(&live, Command::Resume);
            }
            Restart::Failed(turn_id) => {
                live.append(
                    Some(&turn_id),
                    EventBody::TurnFailed(TurnFailed {
                        message: SERVER_RESTARTED.to_string(),
                    }),
                )?;
                outcome = Some(TurnOutcome::Failed {
                    message: SERVER_RESTARTED.to_string(),
                });
                self.inner.logs.about(&live.id).warn(format!(
                "session {}: turn {turn_id} was running when the server stopped; recorded as failed",
                live.id
            ));
            }
        }
        let turns = live.with_events(|events| {
            events
                .iter()
                .filter(|e| matches!(e.body, EventBody::MessageReceived(_)))
                .count() as u32
        });
        lock(&live.meta).turns = turns;
        let queued = live.with_events(queued_messages).len();
        if queued > 0 && lock(&live.meta).mode == SessionMode::Chat {
            self.inner.logs.about(&live.id).info(format!(
                "session {}: running {queued} message(s) queued before the restart",
                live.id
            ));
            remember(&mut lock(&self.inner.live), &live.id, &live);
            return self.post(&live, Command::Drain);
        }
        let boundary = live.with_events(|events| {
            let last = events.last()?;
            Some((boundary_status(&last.body)?, last.index))
        });
        let (status, index) = match boundary {
            // The end of the turn is in the log; only `session.json` missed it (and the token
            // totals, which `Live::open` summed from the log).
            Some(boundary) => boundary,
            None => {
                let (event, status) = record_end(&live, outcome.as_ref())?;
                live.log.sync()?;
                (status, event.index)
            }
        };
        // A repair: when a crash loses it, the next start repairs it again.
        live.repair_on_disk(&self.inner.state, |meta| {
            meta.status = status;
            meta.last_index = index;
        })
    }
}

/// What a restart (or a takeover of a dead server's turn) does with a session's log.
pub(crate) enum Restart {
    /// No turn is open; how the last one ended, when one did.
    Closed(Option<TurnOutcome>),
    /// The open turn waits for an approval: it stays parked.
    Parked,
    /// The open turn waited for what the dead process held in memory (an MCP question or
    /// authorization): these answers (abandoned) are recorded and the turn resumes.
    Answer(String, Vec<EventBody>),
    /// The open turn was running: it is recorded as failed (`server restarted`).
    Failed(String),
}

/// What a restart does with the session whose log is `events`.
pub(crate) fn restart_of(events: &[Event]) -> Restart {
    let Some(turn_id) = open_turn(events) else {
        return Restart::Closed(last_outcome(events));
    };
    if !pending_approvals(events, &turn_id).is_empty() {
        return Restart::Parked;
    }
    let answers = restart_answers(events, &turn_id);
    if answers.is_empty() {
        Restart::Failed(turn_id)
    } else {
        Restart::Answer(turn_id, answers)
    }
}

/// How the last finished turn ended, from its `turn.completed` / `turn.failed`.
fn last_outcome(events: &[Event]) -> Option<TurnOutcome> {
    events.iter().rev().find_map(|event| match &event.body {
        EventBody::TurnCompleted(done) => Some(TurnOutcome::Completed {
            reply: done.reply.clone(),
        }),
        EventBody::TurnFailed(failed) => Some(TurnOutcome::Failed {
            message: failed.message.clone(),
        }),
        _ => None,
    })
}
