//! Channel deliveries on disk ([`DiskDeliveries`]): per channel, `<state>/channels/<id>/
//! deliveries.ndjson`, one JSON line per event (received with its decision, a duplicate, its
//! outcome, a reported reply, a follow started or ended), each synced before anyone relies on
//! it. Opening a channel replays its file: ids seen within 24 h are duplicates, received
//! deliveries without an outcome are pending, and follows never ended are followed again.
//!
//! Lines are synced by group commit: a writer appends its line, then waits until one
//! `fdatasync` covers it; whoever finds no sync running starts one for every line written so
//! far, so concurrent deliveries share a sync instead of queueing for one each. A failed sync
//! poisons the record (every later write fails until a restart re-reads the file), since the
//! kernel may have dropped the unsynced lines.
//!
//! The continuation keys of the channel live beside it (`continuations.ndjson`: key → session).
//! One process opens a state root, so claims (of pending work, of a key being bound, of a
//! follow) live in its memory: after a restart nothing is claimed, and the pending work and the
//! follows are claimed again by the first [`DeliveryStore::claim_deliveries`] and
//! [`DeliveryStore::claim_follows`].

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use folio_protocol::{DeliveryInfo, DeliveryRetry, DeliveryStatus};
use folio_store::{
    Admitted, ChannelRecord, Continuation, DeliveryOutcome, DeliveryStore, Follow, Followed,
    ReceivedDelivery, StoreError, dedup_window,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::lock;

/// One line of `deliveries.ndjson`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "camelCase")]
enum Line {
    Received(ReceivedDelivery),
    #[serde(rename_all = "camelCase")]
    Duplicate {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry: Option<DeliveryRetry>,
    },
    #[serde(rename_all = "camelCase")]
    Reply {
        session_id: String,
        turn_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failed: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Outcome {
        id: String,
        status: DeliveryStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A delivery reached a followed session (the first one starts the follow).
    #[serde(rename_all = "camelCase")]
    Follow {
        session_id: String,
        delivery_id: String,
        #[serde(default)]
        context: Value,
    },
    /// The follow of a session ended (it was idle, no newer delivery).
    #[serde(rename_all = "camelCase")]
    Unfollow {
        session_id: String,
    },
}

/// A continuation key → session line of `continuations.ndjson`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Bound {
    key: String,
    session_id: String,
}

struct Entry {
    info: DeliveryInfo,
    received: ReceivedDelivery,
}

/// Who holds a claim, until when.
#[derive(Clone)]
struct Claim {
    owner: String,
    until: Instant,
}

impl Claim {
    fn new(owner: &str, ttl: Duration) -> Claim {
        Claim {
            owner: owner.to_string(),
            until: Instant::now() + ttl,
        }
    }

    fn live(&self) -> bool {
        self.until > Instant::now()
    }
}

/// A followed session and who follows it (`None`: nobody since the record was opened).
struct FollowEntry {
    follow: Follow,
    claim: Option<Claim>,
}

struct Inner {
    deliveries: File,
    continuations: File,
    entries: HashMap<String, Entry>,
    /// Ids in arrival order (for listing, newest last).
    order: Vec<String>,
    /// Pending deliveries' claims, by id.
    claims: HashMap<String, Claim>,
    sessions: HashMap<String, String>,
    /// Keys being bound, by key.
    reservations: HashMap<String, Claim>,
    /// `(session, turn)` whose reply was delivered (or given up).
    replies: HashSet<(String, String)>,
    /// Followed sessions, by session id.
    follows: HashMap<String, FollowEntry>,
}

/// One channel's durable record.
#[derive(Clone)]
struct Record {
    channel: String,
    dir: PathBuf,
    inner: Arc<Mutex<Inner>>,
    commit: Arc<GroupCommit>,
}

/// The group commit of `deliveries.ndjson`.
struct GroupCommit {
    /// The file, for syncing outside the [`Inner`] lock.
    file: File,
    state: Mutex<Synced>,
    /// Signalled when a sync ends.
    done: Condvar,
}

/// What is written and synced, counted in lines.
#[derive(Default)]
struct Synced {
    /// Lines appended (the last one's ticket).
    written: u64,
    /// Lines known durable.
    synced: u64,
    /// A sync is running.
    syncing: bool,
    /// A sync failed: nothing written since can be trusted.
    poisoned: Option<String>,
}

fn io_error(action: &str, path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        context: format!("{action} {}", path.display()),
        source,
    }
}

impl Record {
    /// Opens (creating) the record of `channel` under `state_dir/channels/<channel>/`.
    fn open(state_dir: &Path, channel: &str) -> Result<Record, StoreError> {
        let dir = state_dir.join("channels").join(channel);
        std::fs::create_dir_all(&dir).map_err(|e| io_error("cannot create", &dir, e))?;
        let deliveries_path = dir.join("deliveries.ndjson");
        let continuations_path = dir.join("continuations.ndjson");
        let mut inner = Inner {
            deliveries: append(&deliveries_path)
                .map_err(|e| io_error("cannot open", &deliveries_path, e))?,
            continuations: append(&continuations_path)
                .map_err(|e| io_error("cannot open", &continuations_path, e))?,
            entries: HashMap::new(),
            order: Vec::new(),
            claims: HashMap::new(),
            sessions: HashMap::new(),
            reservations: HashMap::new(),
            replies: HashSet::new(),
            follows: HashMap::new(),
        };
        for line in read_lines::<Line>(&deliveries_path)? {
            apply(&mut inner, channel, line);
        }
        for line in read_lines::<Bound>(&continuations_path)? {
            inner.sessions.insert(line.key, line.session_id);
        }
        // The new files are entries of the directory: synced before anything relies on them.
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_error("cannot sync", &dir, e))?;
        let file = inner
            .deliveries
            .try_clone()
            .map_err(|e| io_error("cannot open", &deliveries_path, e))?;
        Ok(Record {
            channel: channel.to_string(),
            dir,
            inner: Arc::new(Mutex::new(inner)),
            commit: Arc::new(GroupCommit {
                file,
                state: Mutex::new(Synced::default()),
                done: Condvar::new(),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    fn error(&self, action: &str, source: std::io::Error) -> StoreError {
        io_error(action, &self.dir.join("deliveries.ndjson"), source)
    }

    /// Appends `line` and applies it (not yet synced: see [`Record::sync_through`]); its
    /// ticket.
    fn write(&self, inner: &mut Inner, line: Line) -> Result<u64, StoreError> {
        let mut state = lock(&self.commit.state);
        if let Some(reason) = &state.poisoned {
            return Err(self.error(
                "cannot append to",
                std::io::Error::other(format!(
                    "an earlier sync failed ({reason}); restart the server to re-read the record"
                )),
            ));
        }
        let mut bytes = serde_json::to_vec(&line).unwrap_or_default();
        bytes.push(b'\n');
        inner
            .deliveries
            .write_all(&bytes)
            .map_err(|source| self.error("cannot append to", source))?;
        state.written += 1;
        apply(inner, &self.channel, line);
        Ok(state.written)
    }

    /// Returns once line `ticket` is durable: a sync already covering it, or one this call runs
    /// for every line written so far.
    fn sync_through(&self, ticket: u64) -> Result<(), StoreError> {
        let commit = &self.commit;
        let mut state = lock(&commit.state);
        loop {
            if let Some(reason) = &state.poisoned {
                return Err(self.error("cannot sync", std::io::Error::other(reason.clone())));
            }
            if state.synced >= ticket {
                return Ok(());
            }
            if state.syncing {
                state = commit.done.wait(state).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            state.syncing = true;
            let target = state.written;
            drop(state);
            let result = commit.file.sync_data();
            state = lock(&commit.state);
            state.syncing = false;
            match result {
                Ok(()) => state.synced = state.synced.max(target),
                Err(err) => state.poisoned = Some(err.to_string()),
            }
            commit.done.notify_all();
        }
    }

    /// Writes `line` and waits until it is durable.
    fn write_synced(&self, mut inner: MutexGuard<'_, Inner>, line: Line) -> Result<(), StoreError> {
        let ticket = self.write(&mut inner, line)?;
        drop(inner);
        self.sync_through(ticket)
    }

    fn receive(
        &self,
        delivery: ReceivedDelivery,
        owner: &str,
        ttl: Duration,
    ) -> Result<Admitted, StoreError> {
        let mut inner = self.lock();
        let seen = inner
            .entries
            .get(&delivery.id)
            .is_some_and(|entry| delivery.received_at - entry.info.received_at < dedup_window());
        if seen {
            let line = Line::Duplicate {
                id: delivery.id,
                retry: delivery.retry,
            };
            self.write_synced(inner, line)?;
            return Ok(Admitted::Duplicate);
        }
        inner
            .claims
            .insert(delivery.id.clone(), Claim::new(owner, ttl));
        self.write_synced(inner, Line::Received(delivery))?;
        Ok(Admitted::New)
    }

    fn bind(&self, key: &str, session_id: &str) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let line = Bound {
            key: key.to_string(),
            session_id: session_id.to_string(),
        };
        let mut bytes = serde_json::to_vec(&line).unwrap_or_default();
        bytes.push(b'\n');
        inner
            .continuations
            .write_all(&bytes)
            .and_then(|()| inner.continuations.sync_data())
            .map_err(|source| {
                io_error(
                    "cannot append to",
                    &self.dir.join("continuations.ndjson"),
                    source,
                )
            })?;
        inner.reservations.remove(key);
        inner.sessions.insert(line.key, line.session_id);
        Ok(())
    }
}

fn apply(inner: &mut Inner, channel: &str, line: Line) {
    match line {
        Line::Received(received) => {
            if !inner.entries.contains_key(&received.id) {
                inner.order.push(received.id.clone());
            }
            inner.entries.insert(
                received.id.clone(),
                Entry {
                    info: DeliveryInfo {
                        id: received.id.clone(),
                        channel: channel.to_string(),
                        received_at: received.received_at,
                        route: received.route.clone(),
                        status: DeliveryStatus::Pending,
                        session_id: None,
                        message: None,
                        duplicates: 0,
                        retries: received.retry.clone().into_iter().collect(),
                    },
                    received,
                },
            );
        }
        Line::Duplicate { id, retry } => {
            if let Some(entry) = inner.entries.get_mut(&id) {
                entry.info.duplicates += 1;
                entry.info.retries.extend(retry);
            }
        }
        Line::Reply {
            session_id,
            turn_id,
            ..
        } => {
            inner.replies.insert((session_id, turn_id));
        }
        Line::Outcome {
            id,
            status,
            session_id,
            message,
        } => {
            inner.claims.remove(&id);
            if let Some(entry) = inner.entries.get_mut(&id) {
                entry.info.status = status;
                entry.info.session_id = session_id;
                entry.info.message = message;
            }
        }
        Line::Follow {
            session_id,
            delivery_id,
            context,
        } => match inner.follows.get_mut(&session_id) {
            Some(followed) => {
                followed.follow.generation += 1;
                followed.follow.context = context;
            }
            None => {
                let follow = Follow {
                    session_id: session_id.clone(),
                    delivery_id,
                    context,
                    queued_check: None,
                    generation: 0,
                };
                let followed = FollowEntry {
                    follow,
                    claim: None,
                };
                inner.follows.insert(session_id, followed);
            }
        },
        Line::Unfollow { session_id } => {
            inner.follows.remove(&session_id);
        }
    }
}

fn append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// The records of an NDJSON file. A torn last line (a crash mid-write: no newline yet) was
/// never relied on: it is cut off, so the next append starts on a line of its own. Any other
/// line that is not a record stops the open, naming the file and the line.
fn read_lines<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, StoreError> {
    let text = std::fs::read(path).map_err(|e| io_error("cannot read", path, e))?;
    let whole = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    if whole < text.len() {
        let file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| io_error("cannot open", path, e))?;
        file.set_len(whole as u64)
            .and_then(|()| file.sync_data())
            .map_err(|e| io_error("cannot cut the torn last line of", path, e))?;
    }
    text[..whole]
        .split(|b| *b == b'\n')
        .enumerate()
        .filter(|(_, line)| !line.is_empty())
        .map(|(number, line)| {
            serde_json::from_slice(line).map_err(|err| {
                StoreError::backend(format!(
                    "{} line {}: not a record this folio reads ({err}); move the file aside to start the channel's record afresh, or run the folio that wrote it",
                    path.display(),
                    number + 1
                ))
            })
        })
        .collect()
}

/// The channel deliveries of one state root, each channel's record opened on first use (see
/// the module docs).
pub struct DiskDeliveries {
    state_dir: PathBuf,
    records: Mutex<HashMap<String, Record>>,
}

impl DiskDeliveries {
    /// The deliveries under `state_dir` (the state root's path).
    pub fn new(state_dir: &Path) -> DiskDeliveries {
        DiskDeliveries {
            state_dir: state_dir.to_path_buf(),
            records: Mutex::new(HashMap::new()),
        }
    }

    /// The record of `channel`, opened (reading its file) on first use.
    fn record(&self, channel: &str) -> Result<Record, StoreError> {
        let mut records = lock(&self.records);
        if let Some(record) = records.get(channel) {
            return Ok(record.clone());
        }
        if channel.is_empty() || channel.contains(['/', '\\']) || channel.starts_with('.') {
            return Err(StoreError::backend(format!(
                "{channel:?} is not a channel id (a channel's file name without .toml)"
            )));
        }
        let record = Record::open(&self.state_dir, channel)?;
        records.insert(channel.to_string(), record.clone());
        Ok(record)
    }

    /// Runs `work` on `channel`'s record off the async workers (it may wait on the disk).
    async fn blocking<T: Send + 'static>(
        &self,
        channel: &str,
        work: impl FnOnce(Record) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let record = self.record(channel)?;
        tokio::task::spawn_blocking(move || work(record))
            .await
            .map_err(|err| StoreError::backend_from("a delivery record write stopped", err))?
    }
}

#[async_trait::async_trait]
impl DeliveryStore for DiskDeliveries {
    async fn receive_delivery(
        &self,
        channel: &str,
        delivery: &ReceivedDelivery,
        owner: &str,
        ttl: Duration,
    ) -> Result<Admitted, StoreError> {
        let (delivery, owner) = (delivery.clone(), owner.to_string());
        self.blocking(channel, move |record| record.receive(delivery, &owner, ttl))
            .await
    }

    async fn finish_delivery(
        &self,
        channel: &str,
        id: &str,
        outcome: &DeliveryOutcome,
    ) -> Result<(), StoreError> {
        let line = Line::Outcome {
            id: id.to_string(),
            status: outcome.status,
            session_id: outcome.session_id.clone(),
            message: outcome.message.clone(),
        };
        self.blocking(channel, move |record| {
            record.write_synced(record.lock(), line)
        })
        .await
    }

    async fn claim_deliveries(
        &self,
        channel: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Vec<ReceivedDelivery>, StoreError> {
        let record = self.record(channel)?;
        let mut inner = record.lock();
        let inner = &mut *inner;
        let mut claimed = Vec::new();
        for entry in inner.order.iter().filter_map(|id| inner.entries.get(id)) {
            let id = &entry.info.id;
            if entry.info.status != DeliveryStatus::Pending
                || inner.claims.get(id).is_some_and(Claim::live)
            {
                continue;
            }
            inner.claims.insert(id.clone(), Claim::new(owner, ttl));
            claimed.push(entry.received.clone());
        }
        Ok(claimed)
    }

    async fn list_deliveries(&self, channel: &str) -> Result<Vec<DeliveryInfo>, StoreError> {
        let record = self.record(channel)?;
        let inner = record.lock();
        Ok(inner
            .order
            .iter()
            .rev()
            .filter_map(|id| inner.entries.get(id))
            .map(|entry| entry.info.clone())
            .collect())
    }

    async fn continuation(&self, channel: &str, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self.record(channel)?.lock().sessions.get(key).cloned())
    }

    async fn reserve_continuation(
        &self,
        channel: &str,
        key: &str,
        stale: Option<&str>,
        owner: &str,
        ttl: Duration,
    ) -> Result<Continuation, StoreError> {
        let record = self.record(channel)?;
        let mut inner = record.lock();
        if let Some(session) = inner.sessions.get(key)
            && Some(session.as_str()) != stale
        {
            return Ok(Continuation::Bound(session.clone()));
        }
        if let Some(claim) = inner.reservations.get(key)
            && claim.live()
            && claim.owner != owner
        {
            return Ok(Continuation::Busy);
        }
        inner
            .reservations
            .insert(key.to_string(), Claim::new(owner, ttl));
        Ok(Continuation::Reserved)
    }

    async fn bind_continuation(
        &self,
        channel: &str,
        key: &str,
        session_id: &str,
    ) -> Result<(), StoreError> {
        let (key, session_id) = (key.to_string(), session_id.to_string());
        self.blocking(channel, move |record| record.bind(&key, &session_id))
            .await
    }

    async fn replied(
        &self,
        channel: &str,
        session_id: &str,
        turn_id: &str,
    ) -> Result<bool, StoreError> {
        let record = self.record(channel)?;
        let key = (session_id.to_string(), turn_id.to_string());
        Ok(record.lock().replies.contains(&key))
    }

    async fn record_reply(
        &self,
        channel: &str,
        session_id: &str,
        turn_id: &str,
        failed: Option<&str>,
    ) -> Result<(), StoreError> {
        let line = Line::Reply {
            session_id: session_id.to_string(),
            turn_id: turn_id.to_string(),
            failed: failed.map(str::to_string),
        };
        self.blocking(channel, move |record| {
            record.write_synced(record.lock(), line)
        })
        .await
    }

    async fn follow_session(
        &self,
        channel: &str,
        session_id: &str,
        delivery_id: &str,
        context: &Value,
        queued_check: Option<u64>,
        owner: &str,
        ttl: Duration,
    ) -> Result<Followed, StoreError> {
        let line = Line::Follow {
            session_id: session_id.to_string(),
            delivery_id: delivery_id.to_string(),
            context: context.clone(),
        };
        let (session_id, owner) = (session_id.to_string(), owner.to_string());
        self.blocking(channel, move |record| {
            let mut inner = record.lock();
            let running = inner
                .follows
                .get(&session_id)
                .is_some_and(|f| f.claim.as_ref().is_some_and(Claim::live));
            if !running && inner.follows.contains_key(&session_id) {
                // Its follower is gone: the caller follows it, from this delivery.
                let unfollow = Line::Unfollow {
                    session_id: session_id.clone(),
                };
                record.write(&mut inner, unfollow)?;
            }
            let ticket = record.write(&mut inner, line)?;
            let followed = inner
                .follows
                .get_mut(&session_id)
                .ok_or_else(|| StoreError::backend("a follow vanished while it was recorded"))?;
            if queued_check.is_some() {
                followed.follow.queued_check = queued_check;
            }
            let answer = if running {
                Followed::Running
            } else {
                followed.claim = Some(Claim::new(&owner, ttl));
                Followed::Started(followed.follow.clone())
            };
            drop(inner);
            record.sync_through(ticket)?;
            Ok(answer)
        })
        .await
    }

    async fn renew_follow(
        &self,
        channel: &str,
        session_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<Follow>, StoreError> {
        let record = self.record(channel)?;
        let mut inner = record.lock();
        let Some(followed) = inner.follows.get_mut(session_id) else {
            return Ok(None);
        };
        if followed.claim.as_ref().is_none_or(|c| c.owner != owner) {
            return Ok(None);
        }
        followed.claim = Some(Claim::new(owner, ttl));
        Ok(Some(followed.follow.clone()))
    }

    async fn take_queued_check(
        &self,
        channel: &str,
        session_id: &str,
        owner: &str,
    ) -> Result<Option<u64>, StoreError> {
        let record = self.record(channel)?;
        let mut inner = record.lock();
        Ok(inner
            .follows
            .get_mut(session_id)
            .filter(|f| f.claim.as_ref().is_some_and(|c| c.owner == owner))
            .and_then(|f| f.follow.queued_check.take()))
    }

    async fn end_follow(
        &self,
        channel: &str,
        session_id: &str,
        owner: &str,
        generation: u64,
    ) -> Result<bool, StoreError> {
        let (session_id, owner) = (session_id.to_string(), owner.to_string());
        self.blocking(channel, move |record| {
            let inner = record.lock();
            let ends = inner.follows.get(&session_id).is_some_and(|f| {
                f.follow.generation == generation
                    && f.claim.as_ref().is_some_and(|c| c.owner == owner)
            });
            if ends {
                record.write_synced(inner, Line::Unfollow { session_id })?;
            }
            Ok(ends)
        })
        .await
    }

    async fn channels(&self) -> Result<Vec<String>, StoreError> {
        let dir = self.state_dir.join("channels");
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(io_error("cannot read", &dir, err)),
        };
        let mut channels = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|err| io_error("cannot read", &dir, err))?;
            if let Ok(name) = entry.file_name().into_string()
                && !name.starts_with('.')
                && entry.path().join("deliveries.ndjson").is_file()
            {
                channels.push(name);
            }
        }
        channels.sort();
        Ok(channels)
    }

    async fn export_channel(&self, channel: &str) -> Result<ChannelRecord, StoreError> {
        let record = self.record(channel)?;
        let inner = record.lock();
        let mut continuations: Vec<(String, String)> = inner
            .sessions
            .iter()
            .map(|(key, session)| (key.clone(), session.clone()))
            .collect();
        continuations.sort();
        let mut replies: Vec<(String, String)> = inner.replies.iter().cloned().collect();
        replies.sort();
        Ok(ChannelRecord {
            deliveries: inner
                .order
                .iter()
                .filter_map(|id| inner.entries.get(id))
                .map(|entry| (entry.received.clone(), entry.info.clone()))
                .collect(),
            continuations,
            replies,
        })
    }

    async fn import_channel(
        &self,
        channel: &str,
        imported: &ChannelRecord,
    ) -> Result<(), StoreError> {
        let imported = imported.clone();
        self.blocking(channel, move |record| {
            let mut inner = record.lock();
            let mut ticket = None;
            for (received, info) in imported.deliveries {
                if inner.entries.contains_key(&received.id) {
                    continue;
                }
                let id = received.id.clone();
                let announced = usize::from(received.retry.is_some());
                ticket = Some(record.write(&mut inner, Line::Received(received))?);
                for n in 0..info.duplicates as usize {
                    let retry = info.retries.get(announced + n).cloned();
                    let line = Line::Duplicate {
                        id: id.clone(),
                        retry,
                    };
                    ticket = Some(record.write(&mut inner, line)?);
                }
                if info.status != DeliveryStatus::Pending {
                    let line = Line::Outcome {
                        id,
                        status: info.status,
                        session_id: info.session_id,
                        message: info.message,
                    };
                    ticket = Some(record.write(&mut inner, line)?);
                }
            }
            for (session_id, turn_id) in imported.replies {
                if inner
                    .replies
                    .contains(&(session_id.clone(), turn_id.clone()))
                {
                    continue;
                }
                let line = Line::Reply {
                    session_id,
                    turn_id,
                    failed: None,
                };
                ticket = Some(record.write(&mut inner, line)?);
            }
            let unbound: Vec<(String, String)> = imported
                .continuations
                .into_iter()
                .filter(|(key, session)| inner.sessions.get(key) != Some(session))
                .collect();
            drop(inner);
            if let Some(ticket) = ticket {
                record.sync_through(ticket)?;
            }
            for (key, session_id) in unbound {
                record.bind(&key, &session_id)?;
            }
            Ok(())
        })
        .await
    }

    async fn claim_follows(
        &self,
        channel: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Vec<Follow>, StoreError> {
        let record = self.record(channel)?;
        let mut inner = record.lock();
        let mut claimed = Vec::new();
        for followed in inner.follows.values_mut() {
            if followed.claim.as_ref().is_some_and(Claim::live) {
                continue;
            }
            followed.claim = Some(Claim::new(owner, ttl));
            claimed.push(followed.follow.clone());
        }
        claimed.sort_by(|a, b| a.session_id.cmp(&b.session_id));
        Ok(claimed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};
    use pretty_assertions::assert_eq;

    fn received(id: &str, at: DateTime<Utc>) -> ReceivedDelivery {
        let decision = serde_json::json!({"work": {"message": "hi"}});
        ReceivedDelivery {
            id: id.into(),
            received_at: at,
            route: "/ticket".into(),
            retry: None,
            decision: decision.as_object().cloned().unwrap_or_default(),
        }
    }

    const TTL: Duration = Duration::from_secs(10);

    #[test]
    fn concurrent_deliveries_share_syncs_and_a_repeated_id_is_new_once() {
        let dir = tempfile::tempdir().unwrap();
        let record = Record::open(dir.path(), "tickets").unwrap();
        let now = Utc::now();
        let admitted: Vec<(String, Admitted)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..40)
                .map(|i| {
                    let record = record.clone();
                    // Every fourth thread repeats one id; the others bring their own.
                    let id = if i % 4 == 0 {
                        "same".to_string()
                    } else {
                        format!("d{i}")
                    };
                    scope.spawn(move || {
                        let admitted = record.receive(received(&id, now), "a", TTL).unwrap();
                        (id, admitted)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let new_same = admitted
            .iter()
            .filter(|(id, a)| id == "same" && *a == Admitted::New)
            .count();
        assert_eq!(new_same, 1);
        assert!(
            admitted
                .iter()
                .all(|(id, a)| id == "same" || *a == Admitted::New)
        );
        let state = lock(&record.commit.state);
        assert_eq!((state.written, state.synced), (40, 40));
        drop(state);
        let reopened = Record::open(dir.path(), "tickets").unwrap();
        let inner = reopened.lock();
        assert_eq!(inner.order.len(), 31);
        assert_eq!(inner.entries["same"].info.duplicates, 9);
    }

    #[tokio::test]
    async fn pending_work_and_unended_follows_are_claimed_again_after_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let now = Utc::now();
        let store = DiskDeliveries::new(dir.path());
        for id in ["a", "b"] {
            let admitted = store
                .receive_delivery("t", &received(id, now), "one", TTL)
                .await
                .unwrap();
            assert_eq!(admitted, Admitted::New);
        }
        // Claimed by their receiver: nobody else runs them.
        assert_eq!(store.claim_deliveries("t", "one", TTL).await.unwrap(), []);
        let context = serde_json::json!({"n": 1});
        let followed = store
            .follow_session("t", "ses_1", "a", &context, None, "one", TTL)
            .await
            .unwrap();
        assert!(matches!(followed, Followed::Started(_)));
        drop(store);

        let store = DiskDeliveries::new(dir.path());
        let pending: Vec<String> = store
            .claim_deliveries("t", "two", TTL)
            .await
            .unwrap()
            .into_iter()
            .map(|d| d.id)
            .collect();
        assert_eq!(pending, ["a", "b"]);
        let follows = store.claim_follows("t", "two", TTL).await.unwrap();
        assert_eq!(
            follows
                .iter()
                .map(|f| (f.session_id.as_str(), f.delivery_id.as_str(), &f.context))
                .collect::<Vec<_>>(),
            [("ses_1", "a", &context)]
        );
        assert!(store.end_follow("t", "ses_1", "two", 0).await.unwrap());
        drop(store);
        let store = DiskDeliveries::new(dir.path());
        assert_eq!(store.claim_follows("t", "three", TTL).await.unwrap(), []);
    }

    #[tokio::test]
    async fn a_channel_id_that_leaves_the_channels_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = DiskDeliveries::new(dir.path());
        for channel in ["../x", "", ".hidden", "a/b"] {
            let err = store.list_deliveries(channel).await.unwrap_err();
            assert!(err.to_string().contains("is not a channel id"), "{err}");
        }
    }

    #[test]
    fn a_torn_last_line_is_cut_off_and_a_corrupt_line_stops_the_open_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let record = Record::open(dir.path(), "t").unwrap();
        record
            .receive(received("a", Utc::now()), "one", TTL)
            .unwrap();
        drop(record);
        let path = dir.path().join("channels/t/deliveries.ndjson");
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(br#"{"record":"received","id":"b","#)
            .unwrap();
        drop(file);
        // Reopened: the torn line is gone, and the next append stands on its own line.
        let record = Record::open(dir.path(), "t").unwrap();
        record
            .receive(received("c", Utc::now()), "one", TTL)
            .unwrap();
        drop(record);
        let reopened = Record::open(dir.path(), "t").unwrap();
        assert_eq!(reopened.lock().order, ["a", "c"]);
        drop(reopened);
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"not json\n").unwrap();
        drop(file);
        let Err(err) = Record::open(dir.path(), "t") else {
            panic!("a corrupt record opened");
        };
        let err = err.to_string();
        assert!(
            err.contains("line 3") && err.contains("move the file aside"),
            "{err}"
        );
    }

    /// A step of the generated receipts.
    #[derive(Debug, Clone)]
    enum Step {
        /// Delivery `id` arrives `hours` after the step before.
        Receive { id: u8, hours: u8 },
        /// Its work finished.
        Finish { id: u8 },
        /// The process restarts.
        Reopen,
    }

    fn steps() -> impl proptest::strategy::Strategy<Value = Vec<Step>> {
        use proptest::prelude::*;
        let step = prop_oneof![
            4 => (0u8..4, 0u8..30).prop_map(|(id, hours)| Step::Receive { id, hours }),
            2 => (0u8..4).prop_map(|id| Step::Finish { id }),
            1 => Just(Step::Reopen),
        ];
        proptest::collection::vec(step, 1..40)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// However receipts, outcomes and restarts interleave, an id is new once per 24 h, the
        /// list shows each id once (first arrival first) with its duplicates and status, and a
        /// restart claims exactly the pending work, in arrival order.
        #[test]
        fn receipts_outcomes_and_restarts_keep_the_record_a_model_predicts(steps in steps()) {
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let dir = tempfile::tempdir().unwrap();
            let mut store = DiskDeliveries::new(dir.path());
            let start = Utc::now();
            let mut now = start;
            // id → (first received at of its window, duplicates, finished); ids by first arrival.
            let mut model: HashMap<String, (DateTime<Utc>, u32, bool)> = HashMap::new();
            let mut arrival: Vec<String> = Vec::new();
            for step in steps {
                match step {
                    Step::Receive { id, hours } => {
                        now += chrono::Duration::hours(i64::from(hours));
                        let id = format!("d{id}");
                        let admitted = runtime
                            .block_on(store.receive_delivery("t", &received(&id, now), "one", TTL))
                            .unwrap();
                        let expected = match model.get_mut(&id) {
                            Some((at, duplicates, _)) if now - *at < dedup_window() => {
                                *duplicates += 1;
                                Admitted::Duplicate
                            }
                            _ => {
                                if !model.contains_key(&id) {
                                    arrival.push(id.clone());
                                }
                                model.insert(id.clone(), (now, 0, false));
                                Admitted::New
                            }
                        };
                        proptest::prop_assert_eq!(admitted, expected);
                    }
                    Step::Finish { id } => {
                        let id = format!("d{id}");
                        if let Some(entry) = model.get_mut(&id) {
                            let outcome = DeliveryOutcome {
                                status: DeliveryStatus::Accepted,
                                session_id: Some("ses_1".into()),
                                message: None,
                            };
                            runtime.block_on(store.finish_delivery("t", &id, &outcome)).unwrap();
                            entry.2 = true;
                        }
                    }
                    Step::Reopen => {
                        store = DiskDeliveries::new(dir.path());
                        let claimed: Vec<String> = runtime
                            .block_on(store.claim_deliveries("t", "two", TTL))
                            .unwrap()
                            .into_iter()
                            .map(|d| d.id)
                            .collect();
                        let pending: Vec<String> = arrival
                            .iter()
                            .filter(|id| !model[*id].2)
                            .cloned()
                            .collect();
                        proptest::prop_assert_eq!(claimed, pending);
                    }
                }
                let listed: Vec<(String, u32, bool)> = runtime
                    .block_on(store.list_deliveries("t"))
                    .unwrap()
                    .into_iter()
                    .map(|d| (d.id, d.duplicates, d.status == DeliveryStatus::Accepted))
                    .collect();
                let expected: Vec<(String, u32, bool)> = arrival
                    .iter()
                    .rev()
                    .map(|id| (id.clone(), model[id].1, model[id].2))
                    .collect();
                proptest::prop_assert_eq!(listed, expected);
            }
        }
    }
}
