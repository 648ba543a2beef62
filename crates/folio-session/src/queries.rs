//! Reading sessions without changing them: one session's summary, the paginated lists, and the
//! stored events.

use folio_protocol::{Event, Page, SessionStatus, SessionSummary};
use folio_store::SessionFilter;

use crate::engine::Engine;
use crate::error::{ManagerError, store_error};
use crate::live::Live;
use crate::state::SessionMeta;
use crate::sync::lock;

/// The summary of `principal`'s session `session_id`.
pub(crate) async fn get(
    engine: &Engine,
    principal: &str,
    session_id: &str,
) -> Result<SessionSummary, ManagerError> {
    let stored = engine.owned_meta(principal, session_id).await?;
    let last = |events: &[Event]| events.last().map_or(0, |e| e.index);
    let (meta, last_index) = match engine.live.get(session_id) {
        Some(live) => (live_meta(&live), live.with_events(last)),
        None => {
            let last = last_stored_event(engine, session_id).await?;
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

/// The sessions of `principal` (`None`: every principal's) matching `filter`, newest first;
/// `q` filters title or id (case-insensitive).
pub(crate) async fn list(
    engine: &Engine,
    principal: Option<&str>,
    limit: usize,
    cursor: Option<&str>,
    q: Option<&str>,
    filter: &SessionFilter,
) -> Result<Page<SessionSummary>, ManagerError> {
    let q = q.map(str::to_lowercase).filter(|q| !q.is_empty());
    let limit = limit.clamp(1, 200);
    list_from_store(engine, principal, limit, cursor, q.as_deref(), filter).await
}

/// The store's pages of sessions, newest first, filtered by the store's index and by `q`.
/// An idle session is shown as its metadata records it (a list reads no log); one recorded
/// `running` that this server does not hold is settled from its log's last event (its turn
/// may have ended a moment before its metadata was written, or its server died).
async fn list_from_store(
    engine: &Engine,
    principal: Option<&str>,
    limit: usize,
    cursor: Option<&str>,
    q: Option<&str>,
    filter: &SessionFilter,
) -> Result<Page<SessionSummary>, ManagerError> {
    let mut data: Vec<SessionSummary> = Vec::new();
    let mut before = cursor.map(str::to_string);
    loop {
        let query = folio_store::ListQuery {
            principal: principal.map(str::to_string),
            before: before.clone(),
            limit: limit + 1,
            filter: filter.clone(),
        };
        let page = engine
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
            meta = match engine.live.get(&meta.session_id) {
                Some(live) => live_meta(&live),
                None if meta.status == SessionStatus::Running => {
                    let last = last_stored_event(engine, &meta.session_id)
                        .await
                        .ok()
                        .flatten();
                    meta.settle(last.as_ref());
                    meta
                }
                None => meta,
            };
            data.push(summary(&meta));
        }
        if !full {
            return Ok(Page::new(data, None));
        }
    }
}

/// The session's last stored event (`None`: an empty log).
async fn last_stored_event(
    engine: &Engine,
    session_id: &str,
) -> Result<Option<Event>, ManagerError> {
    engine
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
pub(crate) async fn current_meta(engine: &Engine, mut stored: SessionMeta) -> SessionMeta {
    if let Some(live) = engine.live.get(&stored.session_id) {
        return live_meta(&live);
    }
    let last = last_stored_event(engine, &stored.session_id).await;
    stored.settle(last.ok().flatten().as_ref());
    stored
}

/// A live session's metadata, settled from its last event: a turn's end is in the log (and
/// streamed) a moment before the actor saves the status it leaves, and a reader that has seen
/// `session.waiting` must not be told the session is still running.
fn live_meta(live: &Live) -> SessionMeta {
    let mut meta = lock(&live.meta).clone();
    live.with_events(|events| meta.settle(events.last()));
    meta
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
        variant: meta.variant.clone(),
    }
}
