//! The durable delivery record of one channel: `<state>/channels/<id>/deliveries.ndjson`, one
//! JSON line per event (received with its work, then its outcome), each synced before anyone
//! relies on it. Opening replays the file: ids seen within 24 h are duplicates, and received
//! deliveries without an outcome are the work a restart still has to run.
//!
//! Lines are synced by group commit: a writer appends its line, then waits until one
//! `fdatasync` covers it; whoever finds no sync running starts one for every line written so
//! far, so concurrent deliveries share a sync instead of queueing for one each. A failed sync
//! poisons the record (every later write fails until a restart re-reads the file), since the
//! kernel may have dropped the unsynced lines.
//!
//! The continuation keys of the channel live beside it (`continuations.ndjson`: key → session).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use chrono::{DateTime, Duration, Utc};
use folio_protocol::{Admission, DeliveryInfo, DeliveryRetry, DeliveryStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How long a delivery id is remembered for deduplication.
const DEDUP_WINDOW_HOURS: i64 = 24;

/// What a delivery asks of its session, decided when it was received (so a restart re-runs
/// exactly what was acknowledged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Work {
    /// The message.
    pub(crate) message: String,
    /// The continuation key (`ticket:42`, `pr:o/r#1`): same key → same session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) continuation: Option<String>,
    /// A new session's title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) title: Option<String>,
    /// What a busy session does with it.
    pub(crate) admission: Admission,
    /// Files written into the workspace before the turn.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) workspace_files: BTreeMap<String, String>,
    /// The delivery's body (`state` of reply templates).
    #[serde(default)]
    pub(crate) body: Value,
    /// Stop the session's turn and clear its queue instead of sending a message (Slack `stop`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) stop: bool,
}

/// One received delivery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Received {
    /// The delivery id.
    pub(crate) id: String,
    /// When it arrived.
    pub(crate) received_at: DateTime<Utc>,
    /// Its route or event.
    pub(crate) route: String,
    /// What it asks (absent: nothing to run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) work: Option<Work>,
    /// Why nothing runs (an event the channel does not act on, the bot's own comment, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ignored: Option<String>,
    /// The provider announced this request as a retry (Slack's `X-Slack-Retry-Num`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) retry: Option<DeliveryRetry>,
}

/// One line of the record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "camelCase")]
enum Line {
    Received(Received),
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
}

/// A continuation key → session line of `continuations.ndjson`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Continuation {
    key: String,
    session_id: String,
}

/// Whether a received delivery is new.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admitted {
    /// First time within 24 h: recorded, its work must run.
    New,
    /// Seen within 24 h: acknowledged, not run again.
    Duplicate,
}

struct Entry {
    info: DeliveryInfo,
    received: Received,
}

struct Inner {
    deliveries: File,
    continuations: File,
    entries: HashMap<String, Entry>,
    /// Ids in arrival order (for listing, newest last).
    order: Vec<String>,
    sessions: HashMap<String, String>,
    /// `(session, turn)` whose reply was delivered (or given up).
    replies: HashSet<(String, String)>,
}

/// A channel's durable deliveries and continuation keys.
#[derive(Clone)]
pub(crate) struct Store {
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

/// A store that cannot be opened or written.
#[derive(Debug, thiserror::Error)]
#[error("{action} {}: {source}", path.display())]
pub struct StoreError {
    action: &'static str,
    path: PathBuf,
    source: std::io::Error,
}

impl Store {
    /// Opens (creating) the record of `channel` under `state_dir/channels/<channel>/`.
    pub(crate) fn open(state_dir: &Path, channel: &str) -> Result<Store, StoreError> {
        let dir = state_dir.join("channels").join(channel);
        let fail = |action, path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError {
                action,
                path,
                source,
            }
        };
        std::fs::create_dir_all(&dir).map_err(fail("cannot create", &dir))?;
        let deliveries_path = dir.join("deliveries.ndjson");
        let continuations_path = dir.join("continuations.ndjson");
        let mut inner = Inner {
            deliveries: append(&deliveries_path).map_err(fail("cannot open", &deliveries_path))?,
            continuations: append(&continuations_path)
                .map_err(fail("cannot open", &continuations_path))?,
            entries: HashMap::new(),
            order: Vec::new(),
            sessions: HashMap::new(),
            replies: HashSet::new(),
        };
        for line in
            read_lines::<Line>(&deliveries_path).map_err(fail("cannot read", &deliveries_path))?
        {
            apply(&mut inner, channel, line);
        }
        for line in read_lines::<Continuation>(&continuations_path)
            .map_err(fail("cannot read", &continuations_path))?
        {
            inner.sessions.insert(line.key, line.session_id);
        }
        // The new files are entries of the directory: synced before anything relies on them.
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(fail("cannot sync", &dir))?;
        let file = inner
            .deliveries
            .try_clone()
            .map_err(fail("cannot open", &deliveries_path))?;
        Ok(Store {
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

    fn error(&self, action: &'static str, source: std::io::Error) -> StoreError {
        StoreError {
            action,
            path: self.dir.join("deliveries.ndjson"),
            source,
        }
    }

    /// Appends `line` (not yet synced: see [`Store::sync_through`]); its ticket.
    fn write(&self, inner: &mut Inner, line: &Line) -> Result<u64, StoreError> {
        let mut state = lock(&self.commit.state);
        if let Some(reason) = &state.poisoned {
            return Err(self.error(
                "cannot append to",
                std::io::Error::other(format!(
                    "an earlier sync failed ({reason}); restart the server to re-read the record"
                )),
            ));
        }
        let mut bytes = serde_json::to_vec(line).unwrap_or_default();
        bytes.push(b'\n');
        inner
            .deliveries
            .write_all(&bytes)
            .map_err(|source| self.error("cannot append to", source))?;
        state.written += 1;
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

    /// Records a delivery durably unless its id was seen within 24 h (then the duplicate is
    /// counted and nothing else happens). Blocks on the disk: call it off the async workers.
    pub(crate) fn receive(&self, received: Received) -> Result<Admitted, StoreError> {
        let mut inner = self.lock();
        let window = Duration::hours(DEDUP_WINDOW_HOURS);
        let seen = inner
            .entries
            .get(&received.id)
            .is_some_and(|entry| received.received_at - entry.info.received_at < window);
        let line = if seen {
            Line::Duplicate {
                id: received.id.clone(),
                retry: received.retry.clone(),
            }
        } else {
            Line::Received(received)
        };
        let ticket = self.write(&mut inner, &line)?;
        apply(&mut inner, &self.channel, line);
        drop(inner);
        self.sync_through(ticket)?;
        Ok(if seen {
            Admitted::Duplicate
        } else {
            Admitted::New
        })
    }

    /// Records what became of a delivery.
    pub(crate) fn finish(
        &self,
        id: &str,
        status: DeliveryStatus,
        session_id: Option<String>,
        message: Option<String>,
    ) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let line = Line::Outcome {
            id: id.to_string(),
            status,
            session_id,
            message,
        };
        let ticket = self.write(&mut inner, &line)?;
        apply(&mut inner, &self.channel, line);
        drop(inner);
        self.sync_through(ticket)
    }

    /// Whether the reply of `turn` in `session` was already posted (or given up).
    pub(crate) fn replied(&self, session: &str, turn: &str) -> bool {
        self.lock()
            .replies
            .contains(&(session.to_string(), turn.to_string()))
    }

    /// Records that the reply of `turn` was posted (`failed`: given up, and why).
    pub(crate) fn record_reply(
        &self,
        session: &str,
        turn: &str,
        failed: Option<String>,
    ) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let line = Line::Reply {
            session_id: session.to_string(),
            turn_id: turn.to_string(),
            failed,
        };
        let ticket = self.write(&mut inner, &line)?;
        apply(&mut inner, &self.channel, line);
        drop(inner);
        self.sync_through(ticket)
    }

    /// The deliveries whose work has not finished: what a restart runs.
    pub(crate) fn pending(&self) -> Vec<Received> {
        let inner = self.lock();
        inner
            .order
            .iter()
            .filter_map(|id| inner.entries.get(id))
            .filter(|entry| entry.info.status == DeliveryStatus::Pending)
            .map(|entry| entry.received.clone())
            .collect()
    }

    /// Every delivery, newest first.
    pub(crate) fn list(&self) -> Vec<DeliveryInfo> {
        let inner = self.lock();
        inner
            .order
            .iter()
            .rev()
            .filter_map(|id| inner.entries.get(id))
            .map(|entry| entry.info.clone())
            .collect()
    }

    /// The session a continuation key names.
    pub(crate) fn session_for(&self, key: &str) -> Option<String> {
        self.lock().sessions.get(key).cloned()
    }

    /// Binds a continuation key to a session, durably.
    pub(crate) fn bind(&self, key: &str, session_id: &str) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let line = Continuation {
            key: key.to_string(),
            session_id: session_id.to_string(),
        };
        let mut bytes = serde_json::to_vec(&line).unwrap_or_default();
        bytes.push(b'\n');
        inner
            .continuations
            .write_all(&bytes)
            .and_then(|()| inner.continuations.sync_data())
            .map_err(|source| StoreError {
                action: "cannot append to",
                path: self.dir.join("continuations.ndjson"),
                source,
            })?;
        inner.sessions.insert(line.key, line.session_id);
        Ok(())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
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
            if let Some(entry) = inner.entries.get_mut(&id) {
                entry.info.status = status;
                entry.info.session_id = session_id;
                entry.info.message = message;
            }
        }
    }
}

fn append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// The lines of an NDJSON file; a torn last line (a crash mid-write) is skipped.
fn read_lines<T: serde::de::DeserializeOwned>(path: &Path) -> std::io::Result<Vec<T>> {
    let reader = BufReader::new(File::open(path)?);
    let mut lines = Vec::new();
    for line in reader.lines() {
        let line = line?;
        if let Ok(value) = serde_json::from_str(&line) {
            lines.push(value);
        }
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn received(id: &str, at: DateTime<Utc>) -> Received {
        Received {
            id: id.into(),
            received_at: at,
            route: "/ticket".into(),
            work: Some(Work {
                message: "hi".into(),
                continuation: Some("ticket:1".into()),
                title: None,
                admission: Admission::Coalesce,
                workspace_files: BTreeMap::new(),
                body: serde_json::json!({"ticketId": 1}),
                stop: false,
            }),
            ignored: None,
            retry: None,
        }
    }

    #[test]
    fn concurrent_deliveries_share_syncs_and_a_repeated_id_is_new_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), "tickets").unwrap();
        let now = Utc::now();
        let admitted: Vec<(String, Admitted)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..40)
                .map(|i| {
                    let store = store.clone();
                    // Every fourth thread repeats one id; the others bring their own.
                    let id = if i % 4 == 0 {
                        "same".to_string()
                    } else {
                        format!("d{i}")
                    };
                    scope.spawn(move || (id.clone(), store.receive(received(&id, now)).unwrap()))
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
        let state = lock(&store.commit.state);
        assert_eq!((state.written, state.synced), (40, 40));
        drop(state);
        let reopened = Store::open(dir.path(), "tickets").unwrap();
        let listed = reopened.list();
        assert_eq!(listed.len(), 31);
        let same = listed.iter().find(|d| d.id == "same").unwrap();
        assert_eq!(same.duplicates, 9);
    }

    #[test]
    fn ids_are_deduplicated_for_a_day_across_reopens_and_pending_work_survives() {
        let dir = tempfile::tempdir().unwrap();
        let now = Utc::now();
        let store = Store::open(dir.path(), "tickets").unwrap();
        assert_eq!(store.receive(received("a", now)).unwrap(), Admitted::New);
        assert_eq!(store.receive(received("b", now)).unwrap(), Admitted::New);
        assert_eq!(
            store.receive(received("a", now)).unwrap(),
            Admitted::Duplicate
        );
        store
            .finish("b", DeliveryStatus::Accepted, Some("ses_1".into()), None)
            .unwrap();
        store.bind("ticket:1", "ses_1").unwrap();
        drop(store);

        let store = Store::open(dir.path(), "tickets").unwrap();
        assert_eq!(
            store.receive(received("a", now)).unwrap(),
            Admitted::Duplicate
        );
        let later = now + Duration::hours(25);
        assert_eq!(store.receive(received("b", later)).unwrap(), Admitted::New);
        assert_eq!(store.session_for("ticket:1").as_deref(), Some("ses_1"));
        let pending: Vec<String> = store.pending().into_iter().map(|r| r.id).collect();
        assert_eq!(pending, ["a", "b"]);
        let listed: Vec<(String, DeliveryStatus, u32)> = store
            .list()
            .into_iter()
            .map(|d| (d.id, d.status, d.duplicates))
            .collect();
        assert_eq!(
            listed,
            [
                ("b".to_string(), DeliveryStatus::Pending, 0),
                ("a".to_string(), DeliveryStatus::Pending, 2)
            ]
        );
    }

    #[test]
    fn announced_retries_are_noted_on_their_delivery_across_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let now = Utc::now();
        let retry = |num| DeliveryRetry {
            num,
            reason: Some("http_timeout".into()),
        };
        let store = Store::open(dir.path(), "slack").unwrap();
        // The first attempt never got recorded: its retry is the delivery, new.
        let first = Received {
            retry: Some(retry(1)),
            ..received("Ev1", now)
        };
        assert_eq!(store.receive(first).unwrap(), Admitted::New);
        let second = Received {
            retry: Some(retry(2)),
            ..received("Ev1", now)
        };
        assert_eq!(store.receive(second).unwrap(), Admitted::Duplicate);
        assert_eq!(
            store.receive(received("Ev1", now)).unwrap(),
            Admitted::Duplicate
        );
        drop(store);
        let listed = Store::open(dir.path(), "slack").unwrap().list();
        assert_eq!(
            listed
                .iter()
                .map(|d| (d.duplicates, d.retries.clone()))
                .collect::<Vec<_>>(),
            [(2, vec![retry(1), retry(2)])]
        );
    }
}
