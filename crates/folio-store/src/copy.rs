//! Copying everything one store keeps into another (`folio store copy`), and comparing the two.
//!
//! [`copy`] reads the source through the [`SessionStore`] trait and writes the destination
//! with its import-style methods, which keep ids, indexes and times: each session whole
//! ([`SessionStore::import_session`]: metadata and log in one go) with its reminders, then the
//! artifacts (records and contents), the records of idempotent creates, the storage entries and
//! the channels' records (deliveries, continuation keys, reported replies). Leases and the
//! claims and follows of channels are not copied (they belong to running servers), nor slot
//! claims (a schedule's next slot is claimed afresh) or MCP credentials (see the book, "Copying
//! a store").
//!
//! A copy can be stopped at any point and run again: a session whose metadata and last event
//! are already the source's is skipped, any other is written again whole; every other record
//! is written in place of its own. [`verify`] then compares what both stores show, record for
//! record, and names the first difference.
//!
//! Sessions are read a page at a time, newest first, and copied a few at once; nothing holds
//! more than a page of sessions and the logs being copied.

use std::sync::atomic::{AtomicU64, Ordering};

use chrono::SubsecRound;
use folio_protocol::{Event, StorageEntry};
use futures::TryStreamExt;
use serde::Serialize;

use crate::{ListQuery, Namespace, SessionMeta, SessionStore, StoreError};

/// Sessions listed per page.
const PAGE: usize = 200;
/// Sessions copied (or compared) at once.
const CONCURRENT: usize = 16;
/// Storage entries and create keys read per page.
const RECORDS: usize = 500;

/// Why a copy or its verification stopped.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// Reading the source or writing the destination failed.
    #[error("{what}: {source}")]
    Store {
        /// What was being done, naming the record and the store.
        what: String,
        /// What the store answered.
        #[source]
        source: StoreError,
    },
    /// The stores differ (found by [`verify`]).
    #[error(
        "the stores differ: {0}; run the same `folio store copy` again to copy what is missing"
    )]
    Differ(String),
}

/// Reports what a copy or verification did so far: a kind of record (`sessions`, `events`…)
/// and how many of it.
pub type Progress<'a> = &'a (dyn Fn(&'static str, u64) + Send + Sync);

/// What [`copy`] wrote (and skipped), per kind of record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CopyCounts {
    /// Sessions written.
    pub sessions: u64,
    /// Sessions the destination had already, identical (an earlier run copied them).
    pub sessions_skipped: u64,
    /// Events of the sessions written.
    pub events: u64,
    /// Reminders.
    pub reminders: u64,
    /// Artifact records (with their contents).
    pub artifacts: u64,
    /// Records of idempotent creates.
    pub create_keys: u64,
    /// Storage entries.
    pub storage_entries: u64,
    /// Channel deliveries (with the channels' continuation keys and replies).
    pub deliveries: u64,
}

/// What [`verify`] compared, per kind of record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyCounts {
    /// Sessions.
    pub sessions: u64,
    /// Their events.
    pub events: u64,
    /// Their reminders.
    pub reminders: u64,
    /// Artifact records and contents.
    pub artifacts: u64,
    /// Records of idempotent creates.
    pub create_keys: u64,
    /// Storage entries.
    pub storage_entries: u64,
    /// Channel deliveries.
    pub deliveries: u64,
}

/// A counter shared by the sessions copied at once.
#[derive(Default)]
struct Counter(AtomicU64);

impl Counter {
    fn add(&self, n: u64) -> u64 {
        self.0.fetch_add(n, Ordering::Relaxed) + n
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

fn failed(what: impl Into<String>) -> impl FnOnce(StoreError) -> CopyError {
    let what = what.into();
    move |source| CopyError::Store { what, source }
}

/// Every session of `store`, newest first, a page at a time.
fn sessions(
    store: &dyn SessionStore,
) -> impl futures::Stream<Item = Result<SessionMeta, CopyError>> + '_ {
    futures::stream::try_unfold(Some(None::<String>), move |cursor| async move {
        let Some(before) = cursor else {
            return Ok(None);
        };
        let page = store
            .list_sessions(&ListQuery {
                principal: None,
                before,
                limit: PAGE,
                ..ListQuery::default()
            })
            .await
            .map_err(failed(format!(
                "cannot list the sessions of the {} store",
                store.backend()
            )))?;
        let next = (page.len() == PAGE).then(|| page.last().map(|meta| meta.session_id.clone()));
        Ok(Some((
            futures::stream::iter(page.into_iter().map(Ok::<_, CopyError>)),
            next.flatten().map(Some),
        )))
    })
    .try_flatten()
}

/// Copies everything `from` keeps that `to` lacks or holds otherwise (see the module docs).
pub async fn copy(
    from: &dyn SessionStore,
    to: &dyn SessionStore,
    progress: Progress<'_>,
) -> Result<CopyCounts, CopyError> {
    let counters: &(Counter, Counter, Counter, Counter) = &Default::default();
    sessions(from)
        .map_ok(|meta| async move {
            let (copied, skipped, events, reminders) = counters;
            match copy_session(from, to, &meta).await? {
                Some(written) => {
                    events.add(written);
                    progress("sessions", copied.add(1) + skipped.get());
                }
                None => {
                    progress("sessions", skipped.add(1) + copied.get());
                }
            }
            let id = &meta.session_id;
            for reminder in from
                .session_reminders(id)
                .await
                .map_err(failed(format!("cannot read the reminders of session {id}")))?
            {
                to.put_reminder(&reminder).await.map_err(failed(format!(
                    "cannot write reminder {} of session {id}",
                    reminder.reminder_id
                )))?;
                reminders.add(1);
            }
            Ok(())
        })
        .try_buffer_unordered(CONCURRENT)
        .try_collect::<()>()
        .await?;
    let (copied, skipped, events, reminders) = counters;
    let mut counts = CopyCounts {
        sessions: copied.get(),
        sessions_skipped: skipped.get(),
        events: events.get(),
        reminders: reminders.get(),
        ..CopyCounts::default()
    };
    for record in from
        .list_artifacts()
        .await
        .map_err(failed("cannot list the artifacts"))?
    {
        let contents = from
            .artifact_content(&record.id)
            .await
            .map_err(failed(format!("cannot read artifact {}", record.id)))?;
        to.put_artifact(&record, contents.as_deref(), usize::MAX)
            .await
            .map_err(failed(format!("cannot write artifact {}", record.id)))?;
        counts.artifacts += 1;
        progress("artifacts", counts.artifacts);
    }
    let mut after: Option<(String, String)> = None;
    loop {
        let page = from
            .list_create_keys(
                after.as_ref().map(|(p, k)| (p.as_str(), k.as_str())),
                RECORDS,
            )
            .await
            .map_err(failed("cannot list the records of idempotent creates"))?;
        for record in &page {
            if let Some(kept) = to.record_create_key(record).await.map_err(failed(format!(
                "cannot write the create key {:?} of {}",
                record.key, record.principal
            )))? && kept != *record
            {
                return Err(CopyError::Differ(format!(
                    "the destination's create key {:?} of {} names session {}, the source's {}",
                    record.key, record.principal, kept.session_id, record.session_id
                )));
            }
            counts.create_keys += 1;
        }
        progress("create keys", counts.create_keys);
        match page.last() {
            Some(last) if page.len() == RECORDS => {
                after = Some((last.principal.clone(), last.key.clone()));
            }
            _ => break,
        }
    }
    let (source, destination) = (from.storage(), to.storage());
    let mut after = None;
    loop {
        let page = source
            .export(after.as_ref(), RECORDS)
            .await
            .map_err(failed("cannot read the storage entries"))?;
        for (namespace, entry) in &page {
            destination
                .import(namespace, entry)
                .await
                .map_err(failed(format!(
                    "cannot write the storage entry {:?} of {} {}",
                    entry.key,
                    namespace.scope.as_str(),
                    namespace.owner
                )))?;
            counts.storage_entries += 1;
        }
        progress("storage entries", counts.storage_entries);
        match page.last() {
            Some((namespace, entry)) if page.len() == RECORDS => {
                after = Some((namespace.clone(), entry.key.clone()));
            }
            _ => break,
        }
    }
    let (source, destination) = (from.deliveries(), to.deliveries());
    for channel in source
        .channels()
        .await
        .map_err(failed("cannot list the channels"))?
    {
        let record = source
            .export_channel(&channel)
            .await
            .map_err(failed(format!(
                "cannot read the deliveries of channel {channel}"
            )))?;
        destination
            .import_channel(&channel, &record)
            .await
            .map_err(failed(format!(
                "cannot write the deliveries of channel {channel}"
            )))?;
        counts.deliveries += record.deliveries.len() as u64;
        progress("deliveries", counts.deliveries);
    }
    Ok(counts)
}

/// Writes session `meta` of `from` into `to` unless `to` has it already with the same
/// metadata and last event; the events written (`None`: skipped).
async fn copy_session(
    from: &dyn SessionStore,
    to: &dyn SessionStore,
    meta: &SessionMeta,
) -> Result<Option<u64>, CopyError> {
    let id = &meta.session_id;
    let last = from
        .last_event(id)
        .await
        .map_err(failed(format!("cannot read the log of session {id}")))?;
    let kept = to.load_session(id).await.map_err(failed(format!(
        "cannot read session {id} in the destination"
    )))?;
    if kept.as_ref() == Some(meta) {
        let kept_last = to.last_event(id).await.map_err(failed(format!(
            "cannot read the log of session {id} in the destination"
        )))?;
        if kept_last == last {
            return Ok(None);
        }
    }
    let events = from
        .read_events(id, 0, None)
        .await
        .map_err(failed(format!("cannot read the log of session {id}")))?;
    to.import_session(meta, &events)
        .await
        .map_err(failed(format!("cannot write session {id}")))?;
    Ok(Some(events.len() as u64))
}

/// Compares what `from` and `to` keep (every session's metadata, log event for event and
/// reminders, the artifacts with their contents, the create keys, the storage entries) and
/// fails with [`CopyError::Differ`] naming the first difference.
pub async fn verify(
    from: &dyn SessionStore,
    to: &dyn SessionStore,
    progress: Progress<'_>,
) -> Result<VerifyCounts, CopyError> {
    let counters: &(Counter, Counter, Counter) = &Default::default();
    let mut theirs = std::pin::pin!(sessions(to));
    let mut ours = std::pin::pin!(sessions(from));
    // The lists first, in step (both newest first), then each session's contents.
    let mut pairs = Vec::new();
    loop {
        let (mine, other) = (ours.try_next().await?, theirs.try_next().await?);
        match (mine, other) {
            (None, None) => break,
            (Some(mine), None) => {
                return Err(CopyError::Differ(format!(
                    "session {} is missing from the destination",
                    mine.session_id
                )));
            }
            (None, Some(other)) => {
                return Err(CopyError::Differ(format!(
                    "session {} is in the destination only",
                    other.session_id
                )));
            }
            (Some(mine), Some(other)) if mine.session_id != other.session_id => {
                let (missing, extra) = if mine.session_id > other.session_id {
                    (mine.session_id, "missing from the destination")
                } else {
                    (other.session_id, "in the destination only")
                };
                return Err(CopyError::Differ(format!("session {missing} is {extra}")));
            }
            (Some(mine), Some(other)) if mine != other => {
                return Err(CopyError::Differ(format!(
                    "the metadata of session {} differs: {} against {}",
                    mine.session_id,
                    json(&mine),
                    json(&other)
                )));
            }
            (Some(mine), Some(_)) => pairs.push(mine.session_id),
        }
        if pairs.len() == PAGE {
            compare_sessions(from, to, std::mem::take(&mut pairs), counters, progress).await?;
        }
    }
    compare_sessions(from, to, pairs, counters, progress).await?;
    let (sessions, events, reminders) = counters;
    let mut counts = VerifyCounts {
        sessions: sessions.get(),
        events: events.get(),
        reminders: reminders.get(),
        ..VerifyCounts::default()
    };
    counts.artifacts = compare_artifacts(from, to).await?;
    progress("artifacts", counts.artifacts);
    counts.create_keys = compare_create_keys(from, to).await?;
    progress("create keys", counts.create_keys);
    counts.storage_entries = compare_storage(from, to).await?;
    progress("storage entries", counts.storage_entries);
    counts.deliveries = compare_channels(from, to).await?;
    progress("deliveries", counts.deliveries);
    Ok(counts)
}

/// Compares the logs and reminders of `ids` in both stores.
async fn compare_sessions(
    from: &dyn SessionStore,
    to: &dyn SessionStore,
    ids: Vec<String>,
    (sessions, events, reminders): &(Counter, Counter, Counter),
    progress: Progress<'_>,
) -> Result<(), CopyError> {
    futures::stream::iter(ids.into_iter().map(Ok::<_, CopyError>))
        .map_ok(|id| async move {
            let (mine, other) = futures::try_join!(read_log(from, &id), read_log(to, &id))?;
            if let Some(first) = first_difference(&mine, &other) {
                return Err(CopyError::Differ(format!("session {id}: {first}")));
            }
            events.add(mine.len() as u64);
            let (mine, other) = futures::try_join!(
                async {
                    from.session_reminders(&id)
                        .await
                        .map_err(failed(format!("cannot read the reminders of session {id}")))
                },
                async {
                    to.session_reminders(&id).await.map_err(failed(format!(
                        "cannot read the reminders of session {id} in the destination"
                    )))
                }
            )?;
            if mine != other {
                return Err(CopyError::Differ(format!(
                    "the reminders of session {id} differ: {} against {}",
                    json(&mine),
                    json(&other)
                )));
            }
            reminders.add(mine.len() as u64);
            progress("sessions verified", sessions.add(1));
            Ok(())
        })
        .try_buffer_unordered(CONCURRENT)
        .try_collect()
        .await
}

/// The whole log of session `id` in `store`.
async fn read_log(store: &dyn SessionStore, id: &str) -> Result<Vec<Event>, CopyError> {
    store.read_events(id, 0, None).await.map_err(failed(format!(
        "cannot read the log of session {id} in the {} store",
        store.backend()
    )))
}

/// The first event where two logs differ, in words.
fn first_difference(mine: &[Event], other: &[Event]) -> Option<String> {
    for (index, pair) in mine.iter().zip(other).enumerate() {
        if pair.0 != pair.1 {
            return Some(format!(
                "event {index} differs: {} against {}",
                json(pair.0),
                json(pair.1)
            ));
        }
    }
    (mine.len() != other.len()).then(|| {
        format!(
            "the source's log has {} events, the destination's {}",
            mine.len(),
            other.len()
        )
    })
}

async fn compare_artifacts(
    from: &dyn SessionStore,
    to: &dyn SessionStore,
) -> Result<u64, CopyError> {
    let (mine, other) = futures::try_join!(
        async {
            from.list_artifacts()
                .await
                .map_err(failed("cannot list the artifacts"))
        },
        async {
            to.list_artifacts()
                .await
                .map_err(failed("cannot list the artifacts in the destination"))
        }
    )?;
    if mine != other {
        let first = mine.iter().zip(&other).find(|(a, b)| a != b).map_or_else(
            || {
                format!(
                    "the source has {} artifacts, the destination {}",
                    mine.len(),
                    other.len()
                )
            },
            |(a, b)| format!("artifact {} differs: {} against {}", a.id, json(a), json(b)),
        );
        return Err(CopyError::Differ(first));
    }
    for record in &mine {
        let id = &record.id;
        let (a, b) = futures::try_join!(
            async {
                from.artifact_content(id)
                    .await
                    .map_err(failed(format!("cannot read artifact {id}")))
            },
            async {
                to.artifact_content(id).await.map_err(failed(format!(
                    "cannot read artifact {id} in the destination"
                )))
            }
        )?;
        if a != b {
            return Err(CopyError::Differ(format!(
                "the contents of artifact {id} differ"
            )));
        }
    }
    Ok(mine.len() as u64)
}

async fn compare_create_keys(
    from: &dyn SessionStore,
    to: &dyn SessionStore,
) -> Result<u64, CopyError> {
    let mut after: Option<(String, String)> = None;
    let mut count = 0;
    loop {
        let cursor = after.as_ref().map(|(p, k)| (p.as_str(), k.as_str()));
        let (mine, other) = futures::try_join!(
            async {
                from.list_create_keys(cursor, RECORDS)
                    .await
                    .map_err(failed("cannot list the records of idempotent creates"))
            },
            async {
                to.list_create_keys(cursor, RECORDS).await.map_err(failed(
                    "cannot list the records of idempotent creates in the destination",
                ))
            }
        )?;
        if mine != other {
            let first = mine.iter().zip(&other).find(|(a, b)| a != b).map_or_else(
                || "the stores hold different numbers of create keys".to_string(),
                |(a, b)| {
                    format!(
                        "the create key {:?} of {} (session {}) against {:?} of {} (session {})",
                        a.key, a.principal, a.session_id, b.key, b.principal, b.session_id
                    )
                },
            );
            return Err(CopyError::Differ(first));
        }
        count += mine.len() as u64;
        match mine.last() {
            Some(last) if mine.len() == RECORDS => {
                after = Some((last.principal.clone(), last.key.clone()));
            }
            _ => return Ok(count),
        }
    }
}

/// An entry's times to the microsecond, the precision every backend keeps.
fn to_micros(mut entry: StorageEntry) -> StorageEntry {
    entry.updated_at = entry.updated_at.trunc_subsecs(6);
    entry.expires_at = entry.expires_at.map(|at| at.trunc_subsecs(6));
    entry
}

async fn compare_storage(from: &dyn SessionStore, to: &dyn SessionStore) -> Result<u64, CopyError> {
    let (source, destination) = (from.storage(), to.storage());
    let mut after: Option<(Namespace, String)> = None;
    let mut count = 0;
    loop {
        let (mine, other) = futures::try_join!(
            async {
                source
                    .export(after.as_ref(), RECORDS)
                    .await
                    .map_err(failed("cannot read the storage entries"))
            },
            async {
                destination
                    .export(after.as_ref(), RECORDS)
                    .await
                    .map_err(failed("cannot read the storage entries in the destination"))
            }
        )?;
        let normal = |page: &[(Namespace, StorageEntry)]| {
            page.iter()
                .map(|(namespace, entry)| (namespace.clone(), to_micros(entry.clone())))
                .collect::<Vec<_>>()
        };
        let (mine, other) = (normal(&mine), normal(&other));
        if mine != other {
            let first = mine.iter().zip(&other).find(|(a, b)| a != b).map_or_else(
                || "the stores hold different numbers of storage entries".to_string(),
                |((namespace, a), (_, b))| {
                    format!(
                        "the storage entry {:?} of {} {} differs: {} against {}",
                        a.key,
                        namespace.scope.as_str(),
                        namespace.owner,
                        json(a),
                        json(b)
                    )
                },
            );
            return Err(CopyError::Differ(first));
        }
        count += mine.len() as u64;
        match mine.last() {
            Some((namespace, entry)) if mine.len() == RECORDS => {
                after = Some((namespace.clone(), entry.key.clone()));
            }
            _ => return Ok(count),
        }
    }
}

async fn compare_channels(
    from: &dyn SessionStore,
    to: &dyn SessionStore,
) -> Result<u64, CopyError> {
    let (source, destination) = (from.deliveries(), to.deliveries());
    let mut channels = source
        .channels()
        .await
        .map_err(failed("cannot list the channels"))?;
    channels.extend(
        destination
            .channels()
            .await
            .map_err(failed("cannot list the channels in the destination"))?,
    );
    channels.sort();
    channels.dedup();
    let mut count = 0;
    for channel in channels {
        let (mine, other) = futures::try_join!(
            async {
                source
                    .export_channel(&channel)
                    .await
                    .map_err(failed(format!(
                        "cannot read the deliveries of channel {channel}"
                    )))
            },
            async {
                destination
                    .export_channel(&channel)
                    .await
                    .map_err(failed(format!(
                        "cannot read the deliveries of channel {channel} in the destination"
                    )))
            }
        )?;
        if mine != other {
            let first = mine
                .deliveries
                .iter()
                .zip(&other.deliveries)
                .find(|(a, b)| a != b)
                .map(|((a, _), _)| format!("delivery {} of channel {channel} differs", a.id))
                .unwrap_or_else(|| {
                    format!(
                        "channel {channel} has {} deliveries, {} continuation keys and {} replies in the source, {}, {} and {} in the destination",
                        mine.deliveries.len(),
                        mine.continuations.len(),
                        mine.replies.len(),
                        other.deliveries.len(),
                        other.continuations.len(),
                        other.replies.len()
                    )
                });
            return Err(CopyError::Differ(first));
        }
        count += mine.deliveries.len() as u64;
    }
    Ok(count)
}

/// `value` as one line of JSON, for messages.
fn json(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|err| format!("(cannot show: {err})"))
}
