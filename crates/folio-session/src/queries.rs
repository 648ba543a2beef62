//! Reading sessions without changing them: one session's summary, the paginated lists, and the
//! stored events.

use folio_protocol::{Event, Page, SessionSummary};

use crate::error::{ManagerError, store_error};
use crate::live::lock;
use crate::manager::SessionManager;
use crate::state::SessionMeta;

impl SessionManager {
    /// The session's summary.
    pub async fn get(
        &self,
        principal: &str,
        session_id: &str,
    ) -> Result<SessionSummary, ManagerError> {
        let stored = self.owned_meta(principal, session_id).await?;
        let last = |events: &[Event]| events.last().map_or(0, |e| e.index);
        let (meta, last_index) = match self.inner.live(session_id) {
            Some(live) => (lock(&live.meta).clone(), live.with_events(last)),
            None => {
                let last = self.last_stored_event(session_id).await?;
                let mut meta = stored;
                meta.settle(last.as_ref());
                (meta, last.map_or(0, |e| e.index))
            }
        };
        Ok(SessionSummary {
            last_index,
            ..summary(&meta)
        })
    }

    /// The caller's sessions, newest first; `q` filters title or id (case-insensitive).
    pub async fn list(
        &self,
        principal: &str,
        limit: usize,
        cursor: Option<&str>,
        q: Option<&str>,
    ) -> Result<Page<SessionSummary>, ManagerError> {
        self.list_owned_by(Some(principal), limit, cursor, q).await
    }

    /// Every principal's sessions, newest first: the Runs list of `folio dev` on loopback.
    /// Reading or continuing one of them still needs its owner.
    pub async fn list_every_principal(
        &self,
        limit: usize,
        cursor: Option<&str>,
        q: Option<&str>,
    ) -> Result<Page<SessionSummary>, ManagerError> {
        self.list_owned_by(None, limit, cursor, q).await
    }

    async fn list_owned_by(
        &self,
        principal: Option<&str>,
        limit: usize,
        cursor: Option<&str>,
        q: Option<&str>,
    ) -> Result<Page<SessionSummary>, ManagerError> {
        let q = q.map(str::to_lowercase).filter(|q| !q.is_empty());
        let limit = limit.clamp(1, 200);
        self.list_from_store(principal, limit, cursor, q.as_deref())
            .await
    }

    /// The store's pages of sessions, newest first, filtered by `q`.
    async fn list_from_store(
        &self,
        principal: Option<&str>,
        limit: usize,
        cursor: Option<&str>,
        q: Option<&str>,
    ) -> Result<Page<SessionSummary>, ManagerError> {
        let mut data: Vec<SessionSummary> = Vec::new();
        let mut before = cursor.map(str::to_string);
        loop {
            let query = folio_store::ListQuery {
                principal: principal.map(str::to_string),
                before: before.clone(),
                limit: limit + 1,
            };
            let page = self
                .inner
                .store
                .list_sessions(&query)
                .await
                .map_err(|err| store_error("cannot list sessions", err))?;
            let full = page.len() == query.limit;
            before = page.last().map(|meta| meta.session_id.clone());
            for mut meta in page {
                if let Some(q) = q {
                    let title = meta.title.as_deref().unwrap_or("").to_lowercase();
                    if !title.contains(q) && !meta.session_id.to_lowercase().contains(q) {
                        continue;
                    }
                }
                if data.len() == limit {
                    let next = data.last().map(|s| s.session_id.clone());
                    return Ok(Page::new(data, next));
                }
                meta = match self.inner.live(&meta.session_id) {
                    Some(live) => lock(&live.meta).clone(),
                    None => {
                        let last = self
                            .last_stored_event(&meta.session_id)
                            .await
                            .ok()
                            .flatten();
                        meta.settle(last.as_ref());
                        meta
                    }
                };
                data.push(summary(&meta));
            }
            if !full {
                return Ok(Page::new(data, None));
            }
        }
    }

    /// The session's last stored event (`None`: an empty log).
    async fn last_stored_event(&self, session_id: &str) -> Result<Option<Event>, ManagerError> {
        self.inner
            .store
            .last_event(session_id)
            .await
            .map_err(|err| store_error(&format!("cannot read session {session_id}"), err))
    }

    /// The metadata of a live session as its actor holds it; for an idle session, `stored`
    /// settled from its log's last event (read from the log's end, never the whole log). Token
    /// totals are the stored metadata's: written at each turn's end, repaired by a takeover
    /// after a crash. A log whose tail cannot be read leaves `stored` as it is: reading the
    /// session says why.
    pub(crate) async fn current_meta(&self, mut stored: SessionMeta) -> SessionMeta {
        if let Some(live) = self.inner.live(&stored.session_id) {
            return lock(&live.meta).clone();
        }
        let last = self.last_stored_event(&stored.session_id).await;
        stored.settle(last.ok().flatten().as_ref());
        stored
    }

    /// Every stored event of the session.
    pub async fn events(
        &self,
        principal: &str,
        session_id: &str,
    ) -> Result<Vec<Event>, ManagerError> {
        self.owned_meta(principal, session_id).await?;
        if let Some(live) = self.inner.live(session_id) {
            return Ok(live.visible_events());
        }
        self.inner
            .store
            .read_events(session_id, 0, None)
            .await
            .map_err(|err| store_error(&format!("cannot read session {session_id}"), err))
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
