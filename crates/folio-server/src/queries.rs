//! Reading sessions without changing them: one session's summary, the paginated lists, and the
//! stored events.

use folio_protocol::{Event, Page, SessionSummary};

use crate::error::{ManagerError, io_error};
use crate::event_log::{last_event, read_events};
use crate::live::lock;
use crate::manager::SessionManager;
use crate::state::{SessionMeta, session_ids};

impl SessionManager {
    /// The session's summary.
    pub fn get(&self, principal: &str, session_id: &str) -> Result<SessionSummary, ManagerError> {
        let stored = self.owned_meta(principal, session_id)?;
        let last = |events: &[Event]| events.last().map_or(0, |e| e.index);
        let (meta, last_index) = match self.inner.live(session_id) {
            Some(live) => (lock(&live.meta).clone(), live.with_events(last)),
            None => {
                let events = read_events(&self.inner.state.trace_path(session_id))?;
                let mut meta = stored;
                meta.settle(events.last());
                (meta, last(&events))
            }
        };
        Ok(SessionSummary {
            last_index,
            ..summary(&meta)
        })
    }

    /// The caller's sessions, newest first; `q` filters title or id (case-insensitive).
    pub fn list(
        &self,
        principal: &str,
        limit: usize,
        cursor: Option<&str>,
        q: Option<&str>,
    ) -> Result<Page<SessionSummary>, ManagerError> {
        self.list_owned_by(Some(principal), limit, cursor, q)
    }

    /// Every principal's sessions, newest first: the Runs list of `folio dev` on loopback.
    /// Reading or continuing one of them still needs its owner.
    pub fn list_every_principal(
        &self,
        limit: usize,
        cursor: Option<&str>,
        q: Option<&str>,
    ) -> Result<Page<SessionSummary>, ManagerError> {
        self.list_owned_by(None, limit, cursor, q)
    }

    fn list_owned_by(
        &self,
        principal: Option<&str>,
        limit: usize,
        cursor: Option<&str>,
        q: Option<&str>,
    ) -> Result<Page<SessionSummary>, ManagerError> {
        let ids =
            session_ids(&self.inner.state).map_err(|err| io_error("cannot list sessions", err))?;
        let q = q.map(str::to_lowercase).filter(|q| !q.is_empty());
        let limit = limit.clamp(1, 200);
        let mut data = Vec::new();
        let mut next_cursor = None;
        for id in ids {
            if cursor.is_some_and(|cursor| id.as_str() >= cursor) {
                continue;
            }
            let Ok(Some(meta)) = crate::state::load_meta(&self.inner.state, &id) else {
                continue;
            };
            if principal.is_some_and(|principal| meta.principal != principal) {
                continue;
            }
            if let Some(q) = &q {
                let title = meta.title.as_deref().unwrap_or("").to_lowercase();
                if !title.contains(q) && !id.to_lowercase().contains(q) {
                    continue;
                }
            }
            if data.len() == limit {
                next_cursor = data.last().map(|s: &SessionSummary| s.session_id.clone());
                break;
            }
            data.push(summary(&self.current_meta(meta)));
        }
        Ok(Page::new(data, next_cursor))
    }

    /// The metadata of a live session as its actor holds it; for an idle session, `stored`
    /// settled from its log's last event (read from the log's end, never the whole log). Token
    /// totals are `session.json`'s: written at each turn's end, repaired by recovery after a
    /// crash. A log whose tail cannot be read leaves `stored` as it is: reading the session
    /// says why.
    pub(crate) fn current_meta(&self, mut stored: SessionMeta) -> SessionMeta {
        match self.inner.live(&stored.session_id) {
            Some(live) => lock(&live.meta).clone(),
            None => {
                let trace = self.inner.state.trace_path(&stored.session_id);
                stored.settle(last_event(&trace).ok().flatten().as_ref());
                stored
            }
        }
    }

    /// Every stored event of the session.
    pub fn events(&self, principal: &str, session_id: &str) -> Result<Vec<Event>, ManagerError> {
        self.owned_meta(principal, session_id)?;
        Ok(match self.inner.live(session_id) {
            Some(live) => live.events(),
            None => read_events(&self.inner.state.trace_path(session_id))?,
        })
    }
}

/// The summary of a session's metadata (`lastIndex` as of its last turn boundary).
fn summary(meta: &SessionMeta) -> SessionSummary {
    SessionSummary {
        session_id: meta.session_id.clone(),
        mode: meta.mode,
        status: meta.status,
        title: meta.title.clone().unwrap_or_default(),
        created_at: folio_protocol::format_at(&meta.created_at),
        updated_at: folio_protocol::format_at(&meta.updated_at),
        turns: meta.turns,
        last_index: meta.last_index,
        usage: meta.usage,
        continuation_key: meta.continuation_key.clone(),
    }
}
