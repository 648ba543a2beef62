//! The session index: one compact record per session (id, principal, status, times, title and
//! the metadata fields lists filter on), so that opening a state root reads O(active sessions)
//! and a page of a list reads about `limit` `session.json` files, whatever is stored.
//!
//! On disk, beside `sessions/`:
//! - `sessions.index`: a snapshot (magic, generation, count, the count of other folders in
//!   `sessions/`, its stamp, the names entries share, the records, a CRC-32 of it all), written
//!   to `sessions.index.tmp`, synced and renamed over the old one (then the state root is
//!   synced);
//! - `sessions.index.log`: the changes since that snapshot (a header naming its generation,
//!   then records of length, CRC-32 and payload), appended as sessions change and synced with
//!   the commit of the session they are about. Past [`COMPACT_AFTER`] changes or a quarter of
//!   the sessions, whichever is more, the index is written as a new snapshot and the log starts
//!   over: the log an open replays stays a fraction of the snapshot it reads (a start that
//!   settled a million sessions after a rebuild logged a million changes, which each later start
//!   replayed: 40 % of its time).
//!
//! Loading checks the snapshot's checksum and count, ignores a log of an older generation (its
//! changes are in the snapshot: a crash between the two renames), stops the log at its first
//! torn record (and cuts it there), and checks that `sessions/` is as the index last saw it:
//! its *stamp* (modification time, which every folder added or removed there moves) must be
//! the one recorded after the index's last change of the folder set, and the number of folders
//! the filesystem counts (`sessions/`'s link count, where it keeps one: not btrfs, not an ext4
//! folder past 65,000 subfolders) must match. So sessions another program added or removed while
//! no server ran (a backup restored, an older Folio) are noticed; a change within the
//! filesystem's timestamp granularity of the index's own last one, where the link count says
//! nothing, is not. A missing, torn or stale index is rebuilt from the sessions'
//! `session.json` files (O(stored), once) and written again; a crash at any point of that
//! leaves the old index, none, or the new one.
//!
//! Each entry also says whether its session is *active*: its status is `running`, or its log
//! may have moved past its `session.json` (appended since its metadata was last written with
//! an idle status). Only active sessions are visited when a state root is opened.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use folio_protocol::SessionStatus;
use folio_store::{Filterable, ListQuery, MetaKey, SessionMeta};

use crate::state::{StateRoot, load_meta, meta_never_written, session_ids};

/// The snapshot's file name in the state root.
const SNAPSHOT: &str = "sessions.index";
/// The change log's file name in the state root.
const LOG: &str = "sessions.index.log";
const SNAPSHOT_MAGIC: &[u8; 8] = b"FOLIOIX2";
const LOG_MAGIC: &[u8; 8] = b"FOLIOIL1";
/// Changes logged (at least; a quarter of the sessions where that is more) before the index is
/// written as a new snapshot.
const COMPACT_AFTER: usize = 4096;
/// Statuses as one byte each, in this order.
const STATUSES: [SessionStatus; 4] = [
    SessionStatus::Running,
    SessionStatus::Waiting,
    SessionStatus::Completed,
    SessionStatus::Failed,
];

/// A change in the log.
const PUT: u8 = 1;
const REMOVE: u8 = 2;
const ACTIVE: u8 = 3;
/// `sessions/`'s stamp after the index changed its folder set.
const FOLDERS: u8 = 4;
/// The stamp of a `sessions/` that does not exist.
const NO_FOLDER: i64 = i64::MIN;
/// The stamp recorded by a rebuild that could not read every session's `session.json`: no
/// folder has it, so each open rebuilds until they are readable (or removed).
const SKIPPED: i64 = i64::MIN + 1;

/// One session in the index.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    principal: u32,
    channel: u32,
    variant: u32,
    purpose: u32,
    status: SessionStatus,
    active: bool,
    /// Microseconds since the epoch (what PostgreSQL keeps too).
    created: i64,
    updated: i64,
    title: Option<Box<str>>,
    continuation_key: Option<Box<str>>,
}

/// Strings many entries share (principals, channels, variants, purposes), kept once; 0 is none.
#[derive(Default)]
struct Names {
    all: Vec<Arc<str>>,
    ids: std::collections::HashMap<Arc<str>, u32>,
}

impl Names {
    fn id(&mut self, name: Option<&str>) -> u32 {
        let Some(name) = name else { return 0 };
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let name: Arc<str> = name.into();
        self.all.push(name.clone());
        let id = u32::try_from(self.all.len()).unwrap_or(u32::MAX);
        self.ids.insert(name, id);
        id
    }

    fn get(&self, id: u32) -> Option<&str> {
        id.checked_sub(1)
            .and_then(|at| self.all.get(at as usize))
            .map(|name| &**name)
    }
}

/// An entry read with the names it points to.
struct Row<'a> {
    entry: &'a Entry,
    names: &'a Names,
}

impl Filterable for Row<'_> {
    fn status(&self) -> SessionStatus {
        self.entry.status
    }

    fn created_at(&self) -> DateTime<Utc> {
        time(self.entry.created)
    }

    fn updated_at(&self) -> DateTime<Utc> {
        time(self.entry.updated)
    }

    fn field(&self, key: MetaKey) -> Option<&str> {
        match key {
            MetaKey::Channel => self.names.get(self.entry.channel),
            MetaKey::Variant => self.names.get(self.entry.variant),
            MetaKey::Purpose => self.names.get(self.entry.purpose),
            MetaKey::ContinuationKey => self.entry.continuation_key.as_deref(),
        }
    }
}

fn time(micros: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(micros).unwrap_or_default()
}

/// A session id without its `ses_` (ids sort as these bytes do).
type Id = [u8; 26];

/// The index key of a session id (`None`: not a session id).
fn id_key(session_id: &str) -> Option<Id> {
    if !crate::state::valid_session_id(session_id) {
        return None;
    }
    session_id.as_bytes()[4..].try_into().ok()
}

/// The session id of an index key.
fn id_text(id: &Id) -> String {
    format!("ses_{}", String::from_utf8_lossy(id))
}

/// The entry a session's metadata makes.
fn entry_of(names: &mut Names, meta: &SessionMeta, active: bool) -> Entry {
    Entry {
        principal: names.id(Some(&meta.principal)),
        channel: names.id(Some(&meta.channel)),
        variant: names.id(meta.variant.as_deref()),
        purpose: names.id(meta.purpose.as_deref()),
        status: meta.status,
        active,
        created: meta.created_at.timestamp_micros(),
        updated: meta.updated_at.timestamp_micros(),
        title: meta.title.as_deref().map(Into::into),
        continuation_key: meta.continuation_key.as_deref().map(Into::into),
    }
}

/// The sessions in memory: sorted by id, removed ones left as `None` until they are a
/// quarter of the vector (new ids sort last, so a create is a push and a delete is O(1)).
struct Table {
    entries: Vec<(Id, Option<Entry>)>,
    live: usize,
    names: Names,
    /// `sessions/`'s stamp as last recorded ([`folders_stamp`]).
    folders: i64,
}

impl Table {
    fn find(&self, id: &Id) -> Result<usize, usize> {
        self.entries.binary_search_by(|(other, _)| other.cmp(id))
    }

    /// Puts the entry in; `true` when the session was not indexed.
    fn insert(&mut self, id: Id, entry: Entry) -> bool {
        let new = match self.find(&id) {
            Ok(at) => self.entries[at].1.replace(entry).is_none(),
            Err(at) => {
                self.entries.insert(at, (id, Some(entry)));
                true
            }
        };
        self.live += usize::from(new);
        new
    }

    fn remove(&mut self, id: &Id) -> bool {
        let Ok(at) = self.find(id) else { return false };
        if self.entries[at].1.take().is_none() {
            return false;
        }
        self.live -= 1;
        if (self.entries.len() - self.live) * 4 > self.entries.len() {
            self.entries.retain(|(_, entry)| entry.is_some());
        }
        true
    }

    fn set_active(&mut self, id: &Id, active: bool) -> bool {
        let Ok(at) = self.find(id) else { return false };
        match &mut self.entries[at].1 {
            Some(entry) if entry.active != active => {
                entry.active = active;
                true
            }
            _ => false,
        }
    }

    /// Applies one logged change; `None` at the end or at a torn record.
    fn replay(&mut self, reader: &mut Reader<'_>) -> Option<()> {
        let len = reader.u32()? as usize;
        let crc = reader.u32()?;
        let payload = reader.take(len)?;
        if crc32fast::hash(payload) != crc {
            return None;
        }
        let mut change = Reader { bytes: payload };
        match change.u8()? {
            PUT => {
                let (id, entry) = change.entry(&mut self.names, Form::Texts)?;
                self.insert(id, entry);
            }
            REMOVE => {
                self.remove(&change.id()?);
            }
            ACTIVE => {
                let id = change.id()?;
                let active = change.u8()? != 0;
                self.set_active(&id, active);
            }
            FOLDERS => self.folders = change.u64()? as i64,
            _ => return None,
        }
        Some(())
    }
}

/// The session index of a state root, in memory and in its files (see the module docs).
pub(crate) struct SessionIndex {
    dir: PathBuf,
    /// The `sessions/` folder it indexes.
    sessions: PathBuf,
    table: Table,
    generation: u64,
    log: Arc<std::fs::File>,
    /// Changes in the log.
    logged: usize,
    /// The folders in `sessions/` that are not indexed sessions, as of the snapshot.
    others: i64,
}

/// What [`SessionIndex::open`] found.
pub(crate) struct Opened {
    /// The index, loaded or rebuilt.
    pub index: SessionIndex,
    /// Why it was rebuilt (`None`: it was loaded).
    pub rebuilt: Option<String>,
    /// Sessions whose `session.json` was never written (creates a crash interrupted), found by
    /// a rebuild: the caller removes them.
    pub unwritten: Vec<String>,
}

/// Where a crash test pauses a rebuild (see the tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pause {
    /// Half of the new snapshot's temporary file is written.
    HalfSnapshot,
    /// The new snapshot is in place; the log still has the old generation.
    SnapshotRenamed,
}

fn io_context(what: impl std::fmt::Display, err: std::io::Error) -> std::io::Error {
    std::io::Error::new(err.kind(), format!("{what}: {err}"))
}

impl SessionIndex {
    /// Loads the index of `state` or rebuilds it from the sessions (see the module docs).
    pub(crate) fn open(state: &StateRoot, pause: Option<Pause>) -> std::io::Result<Opened> {
        let reason = match load(state) {
            Ok(mut index) => match index.stale() {
                None => {
                    if index.wants_snapshot() {
                        index.snapshot(None)?;
                    }
                    return Ok(Opened {
                        index,
                        rebuilt: None,
                        unwritten: Vec::new(),
                    });
                }
                Some(stale) => stale.to_string(),
            },
            Err(why) => why.to_string(),
        };
        let (index, unwritten) = rebuild(state, pause)?;
        Ok(Opened {
            index,
            rebuilt: Some(reason),
            unwritten,
        })
    }

    /// Why the index does not describe `sessions/` (`None`: it does, as far as its stamp and
    /// the filesystem's count of its folders tell).
    fn stale(&self) -> Option<Unusable> {
        if self.table.folders == SKIPPED {
            return Some(Unusable::Skipped(self.sessions.clone()));
        }
        if folders_stamp(&self.sessions) != self.table.folders {
            return Some(Unusable::Changed(self.sessions.clone()));
        }
        let folders = folder_count(&self.sessions)?;
        let expected = self.table.live as i64 + self.others;
        (folders != expected).then(|| Unusable::Counted {
            sessions: self.sessions.clone(),
            expected,
            folders,
        })
    }

    /// Records `sessions/`'s stamp after the index changed its set of folders (a session
    /// added or removed, or folders removed beside the index), so that the next open finds
    /// the index describing it.
    pub(crate) fn folders_changed(&mut self) -> std::io::Result<()> {
        let stamp = folders_stamp(&self.sessions);
        if stamp == self.table.folders {
            return Ok(());
        }
        let mut record = vec![FOLDERS];
        record.extend_from_slice(&stamp.to_le_bytes());
        self.append(&record)?;
        self.table.folders = stamp;
        Ok(())
    }

    /// The file to sync to make the changes logged so far durable.
    pub(crate) fn log_file(&self) -> Arc<std::fs::File> {
        self.log.clone()
    }

    fn entry(&self, session_id: &str) -> Option<&Entry> {
        let at = self.table.find(&id_key(session_id)?).ok()?;
        self.table.entries[at].1.as_ref()
    }

    /// Whether the session is active (see the module docs).
    pub(crate) fn is_active(&self, session_id: &str) -> bool {
        self.entry(session_id).is_some_and(|entry| entry.active)
    }

    /// The active sessions, newest first.
    pub(crate) fn active(&self) -> Vec<String> {
        self.table
            .entries
            .iter()
            .rev()
            .filter(|(_, entry)| entry.as_ref().is_some_and(|entry| entry.active))
            .map(|(id, _)| id_text(id))
            .collect()
    }

    /// How many sessions are indexed.
    pub(crate) fn len(&self) -> usize {
        self.table.live
    }

    /// Records `meta` (a new session, or its metadata rewritten) as `active` or not.
    pub(crate) fn put(&mut self, meta: &SessionMeta, active: bool) -> std::io::Result<()> {
        let Some(id) = id_key(&meta.session_id) else {
            return Ok(());
        };
        let entry = entry_of(&mut self.table.names, meta, active);
        if self.entry(&meta.session_id) == Some(&entry) {
            return Ok(());
        }
        let mut record = vec![PUT];
        encode(&mut record, &id, &entry, &self.table.names, Form::Texts);
        let new = self.table.insert(id, entry);
        self.append(&record)?;
        if new {
            self.folders_changed()?;
        }
        Ok(())
    }

    /// Marks the session active or idle (see the module docs); `false` when it already was.
    pub(crate) fn set_active(&mut self, session_id: &str, active: bool) -> std::io::Result<bool> {
        let Some(id) = id_key(session_id) else {
            return Ok(false);
        };
        if !self.table.set_active(&id, active) {
            return Ok(false);
        }
        let mut record = vec![ACTIVE];
        record.extend_from_slice(&id);
        record.push(u8::from(active));
        self.append(&record)?;
        Ok(true)
    }

    /// Forgets the session (deleted).
    pub(crate) fn remove(&mut self, session_id: &str) -> std::io::Result<()> {
        let Some(id) = id_key(session_id) else {
            return Ok(());
        };
        if !self.table.remove(&id) {
            return Ok(());
        }
        let mut record = vec![REMOVE];
        record.extend_from_slice(&id);
        self.append(&record)?;
        self.folders_changed()
    }

    /// The ids of the sessions `query` lists, newest first (at most `query.limit`).
    pub(crate) fn list(&self, query: &ListQuery) -> Vec<String> {
        let entries = &self.table.entries;
        let end = match query.before.as_deref() {
            Some(before) => match id_key(before) {
                Some(id) => self.table.find(&id).unwrap_or_else(|at| at),
                // A cursor that is no session id: ids sort as text, so compare as text.
                None => entries.partition_point(|(id, _)| id_text(id).as_str() < before),
            },
            None => entries.len(),
        };
        let names = &self.table.names;
        let principal = match &query.principal {
            Some(principal) => match names.ids.get(principal.as_str()) {
                Some(id) => Some(*id),
                None => return Vec::new(),
            },
            None => None,
        };
        entries[..end]
            .iter()
            .rev()
            .filter_map(|(id, entry)| Some((id, entry.as_ref()?)))
            .filter(|(_, entry)| principal.is_none_or(|principal| entry.principal == principal))
            .filter(|(_, entry)| query.filter.matches(&Row { entry, names }))
            .take(query.limit)
            .map(|(id, _)| id_text(id))
            .collect()
    }

    /// Appends one change to the log (not synced: the session's next commit syncs it).
    fn append(&mut self, payload: &[u8]) -> std::io::Result<()> {
        let mut record = Vec::with_capacity(payload.len() + 8);
        record.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        record.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        record.extend_from_slice(payload);
        (&*self.log).write_all(&record).map_err(|err| {
            io_context(
                format!("cannot append to {}", self.dir.join(LOG).display()),
                err,
            )
        })?;
        self.logged += 1;
        Ok(())
    }

    /// Whether enough changes were logged that the index should be written as a snapshot.
    pub(crate) fn wants_snapshot(&self) -> bool {
        self.logged > COMPACT_AFTER.max(self.table.live / 4)
    }

    /// Writes the index as a new snapshot and starts a new log (see the module docs).
    pub(crate) fn snapshot(&mut self, pause: Option<Pause>) -> std::io::Result<()> {
        let table = &self.table;
        let generation = self.generation + 1;
        let mut bytes = Vec::with_capacity(64 + table.live * 64);
        bytes.extend_from_slice(SNAPSHOT_MAGIC);
        bytes.extend_from_slice(&generation.to_le_bytes());
        bytes.extend_from_slice(&(table.live as u64).to_le_bytes());
        bytes.extend_from_slice(&self.others.to_le_bytes());
        bytes.extend_from_slice(&table.folders.to_le_bytes());
        bytes.extend_from_slice(&(table.names.all.len() as u32).to_le_bytes());
        for name in &table.names.all {
            put_text(&mut bytes, Some(name));
        }
        for (id, entry) in &table.entries {
            if let Some(entry) = entry {
                encode(&mut bytes, id, entry, &table.names, Form::Ids);
            }
        }
        let crc = crc32fast::hash(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        write_synced(&self.dir, SNAPSHOT, &bytes, pause)?;
        if pause == Some(Pause::SnapshotRenamed) {
            paused();
        }
        self.log = Arc::new(new_log(&self.dir, generation)?);
        self.generation = generation;
        self.logged = 0;
        Ok(())
    }
}

/// A crash test's pause: says so on stdout and waits to be killed.
fn paused() {
    println!("index-paused");
    let _ = std::io::stdout().flush();
    loop {
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}

/// Starts a new, empty log of `generation` (written whole, synced) and opens it to append.
fn new_log(dir: &Path, generation: u64) -> std::io::Result<std::fs::File> {
    let mut header = Vec::with_capacity(16);
    header.extend_from_slice(LOG_MAGIC);
    header.extend_from_slice(&generation.to_le_bytes());
    write_synced(dir, LOG, &header, None)?;
    open_log(&dir.join(LOG))
}

fn open_log(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|err| io_context(format!("cannot open {}", path.display()), err))
}

/// Replaces `dir/name` with `bytes`: temporary file, fsync, rename, fsync of `dir`.
fn write_synced(dir: &Path, name: &str, bytes: &[u8], pause: Option<Pause>) -> std::io::Result<()> {
    let path = dir.join(name);
    let tmp = dir.join(format!("{name}.tmp"));
    let context = |err| io_context(format!("cannot write {}", tmp.display()), err);
    let mut file = std::fs::File::create(&tmp).map_err(context)?;
    if pause == Some(Pause::HalfSnapshot) {
        file.write_all(&bytes[..bytes.len() / 2]).map_err(context)?;
        file.sync_all().map_err(context)?;
        paused();
    }
    file.write_all(bytes).map_err(context)?;
    file.sync_all().map_err(context)?;
    drop(file);
    std::fs::rename(&tmp, &path).map_err(|err| {
        io_context(
            format!("cannot rename {} over {}", tmp.display(), path.display()),
            err,
        )
    })?;
    std::fs::File::open(dir)
        .and_then(|dir| dir.sync_all())
        .map_err(|err| io_context(format!("cannot sync {}", dir.display()), err))
}

/// How many folders `sessions/` holds, from its link count (`None`: the filesystem does not
/// count them there, or there is no `sessions/`).
fn folder_count(sessions: &Path) -> Option<i64> {
    use std::os::unix::fs::MetadataExt;
    let links = std::fs::metadata(sessions).ok()?.nlink();
    // ext4 and xfs count `.`, the parent's entry and each subfolder's `..`; btrfs and an
    // ext4 folder past 65,000 subfolders say 1.
    (links >= 2).then(|| links as i64 - 2)
}

/// `sessions/`'s stamp: its modification time in nanoseconds ([`NO_FOLDER`] when there is
/// none). Adding or removing a folder in it moves it; writing inside a session's folder does
/// not.
fn folders_stamp(sessions: &Path) -> i64 {
    let Ok(modified) = std::fs::metadata(sessions).and_then(|meta| meta.modified()) else {
        return NO_FOLDER;
    };
    match modified.duration_since(std::time::UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_nanos()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_nanos()).map_or(SKIPPED + 1, |n| -n),
    }
}

/// How an encoded entry names its principal, channel, variant and purpose.
#[derive(Clone, Copy)]
enum Form {
    /// As text: a change in the log, readable on its own.
    Texts,
    /// As ids into the snapshot's table of names.
    Ids,
}

/// Writes `text` as its length and bytes (`None`: the length `u32::MAX`).
fn put_text(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        Some(text) => {
            out.extend_from_slice(&(text.len() as u32).to_le_bytes());
            out.extend_from_slice(text.as_bytes());
        }
        None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
    }
}

fn encode(out: &mut Vec<u8>, id: &Id, entry: &Entry, names: &Names, form: Form) {
    out.extend_from_slice(id);
    let status = STATUSES
        .iter()
        .position(|status| *status == entry.status)
        .unwrap_or(0) as u8;
    out.push(status);
    out.push(u8::from(entry.active));
    out.extend_from_slice(&entry.created.to_le_bytes());
    out.extend_from_slice(&entry.updated.to_le_bytes());
    for name in [entry.principal, entry.channel, entry.variant, entry.purpose] {
        match form {
            Form::Texts => put_text(out, names.get(name)),
            Form::Ids => out.extend_from_slice(&name.to_le_bytes()),
        }
    }
    put_text(out, entry.title.as_deref());
    put_text(out, entry.continuation_key.as_deref());
}

/// Reads records from bytes; each read is `None` where they end or do not parse.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.bytes.split_at_checked(n)?;
        self.bytes = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn id(&mut self) -> Option<Id> {
        self.take(26)?.try_into().ok()
    }

    fn text(&mut self) -> Option<Option<&'a str>> {
        let len = self.u32()?;
        if len == u32::MAX {
            return Some(None);
        }
        std::str::from_utf8(self.take(len as usize)?).ok().map(Some)
    }

    /// A name as `form` writes it: its id in `names` (0: none).
    fn name(&mut self, names: &mut Names, form: Form) -> Option<u32> {
        match form {
            Form::Texts => Some(names.id(self.text()?)),
            Form::Ids => Some(self.u32()?).filter(|id| *id as usize <= names.all.len()),
        }
    }

    fn entry(&mut self, names: &mut Names, form: Form) -> Option<(Id, Entry)> {
        let id = self.id()?;
        let status = *STATUSES.get(self.u8()? as usize)?;
        let active = self.u8()? != 0;
        let created = self.u64()? as i64;
        let updated = self.u64()? as i64;
        let principal = self.name(names, form).filter(|id| *id != 0)?;
        let channel = self.name(names, form).filter(|id| *id != 0)?;
        let variant = self.name(names, form)?;
        let purpose = self.name(names, form)?;
        let title = self.text()?.map(Into::into);
        let continuation_key = self.text()?.map(Into::into);
        let entry = Entry {
            principal,
            channel,
            variant,
            purpose,
            status,
            active,
            created,
            updated,
            title,
            continuation_key,
        };
        Some((id, entry))
    }
}

/// Why a state root's index files cannot be used as they are (so the index is rebuilt).
#[derive(Debug, thiserror::Error)]
enum Unusable {
    /// No snapshot yet (a new state root, or one from before the index).
    #[error("{} does not exist", .0.display())]
    Missing(PathBuf),
    /// The snapshot could not be read.
    #[error("cannot read {}: {source}", .path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The snapshot's checksum, count or order is wrong.
    #[error("{} is torn or corrupt (its checksum or count is wrong)", .0.display())]
    Torn(PathBuf),
    /// The snapshot is of another format (another Folio version wrote it).
    #[error("{} was written in another format (by another Folio version)", .0.display())]
    Format(PathBuf),
    /// The last rebuild could not read some sessions' `session.json`.
    #[error("the last rebuild could not read some session.json files in {} (see its errors)", .0.display())]
    Skipped(PathBuf),
    /// Folders were added to or removed from `sessions/` since the index last changed it.
    #[error("{} changed since the index last recorded it (sessions added or removed by another program)", .0.display())]
    Changed(PathBuf),
    /// The filesystem counts another number of folders in `sessions/` than the index.
    #[error("the index accounts for {expected} folders in {}, which holds {folders}", .sessions.display())]
    Counted {
        sessions: PathBuf,
        expected: i64,
        folders: i64,
    },
    /// The log was started after a snapshot that is not there.
    #[error("{} is of a newer generation than {}", .log.display(), .snapshot.display())]
    NewerLog { log: PathBuf, snapshot: PathBuf },
    /// The log could not be cut, opened or started.
    #[error("cannot use {}: {source}", .path.display())]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Loads the snapshot of `state` and replays its log; `Err` says why the index must be
/// rebuilt.
fn load(state: &StateRoot) -> Result<SessionIndex, Unusable> {
    let dir = state.path();
    let path = dir.join(SNAPSHOT);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(Unusable::Missing(path));
        }
        Err(source) => return Err(Unusable::Unreadable { path, source }),
    };
    let torn = || Unusable::Torn(path.clone());
    let (body, crc) = bytes
        .split_at_checked(bytes.len().wrapping_sub(4))
        .ok_or_else(torn)?;
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err(torn());
    }
    if !body.starts_with(SNAPSHOT_MAGIC) {
        return Err(Unusable::Format(path));
    }
    let mut reader = Reader { bytes: &body[8..] };
    let generation = reader.u64().ok_or_else(torn)?;
    let count = reader.u64().ok_or_else(torn)? as usize;
    let others = reader.u64().ok_or_else(torn)? as i64;
    let folders = reader.u64().ok_or_else(torn)? as i64;
    let mut table = Table {
        entries: Vec::with_capacity(count.min(body.len() / 40) + 1024),
        live: 0,
        names: Names::default(),
        folders,
    };
    for at in 0..reader.u32().ok_or_else(torn)? {
        let name = reader.text().ok_or_else(torn)?;
        // Each name once, in order: its place is its id.
        if table.names.id(name) != at + 1 {
            return Err(torn());
        }
    }
    for _ in 0..count {
        let (id, entry) = reader.entry(&mut table.names, Form::Ids).ok_or_else(torn)?;
        table.entries.push((id, Some(entry)));
    }
    table.live = table.entries.len();
    if !reader.bytes.is_empty() || !table.entries.windows(2).all(|w| w[0].0 < w[1].0) {
        return Err(torn());
    }
    let log_path = dir.join(LOG);
    let log = std::fs::read(&log_path).unwrap_or_default();
    let header_generation = (log.len() >= 16 && log.starts_with(LOG_MAGIC))
        .then(|| u64::from_le_bytes(log[8..16].try_into().unwrap_or_default()));
    let mut logged = 0;
    let file = match header_generation {
        Some(newer) if newer > generation => {
            return Err(Unusable::NewerLog {
                log: log_path,
                snapshot: path,
            });
        }
        Some(same) if same == generation => {
            let mut reader = Reader { bytes: &log[16..] };
            let mut kept = 16;
            while let Some(()) = table.replay(&mut reader) {
                kept = log.len() - reader.bytes.len();
                logged += 1;
            }
            if kept < log.len() {
                // A torn last change: cut it off (its session's commit never returned).
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&log_path)
                    .and_then(|file| file.set_len(kept as u64))
                    .map_err(|source| Unusable::Log {
                        path: log_path.clone(),
                        source,
                    })?;
            }
            open_log(&log_path).map_err(|source| Unusable::Log {
                path: log_path.clone(),
                source,
            })?
        }
        // None, or an older generation whose changes are in the snapshot (a crash between
        // the snapshot's rename and the new log's).
        _ => new_log(dir, generation).map_err(|source| Unusable::Log {
            path: log_path.clone(),
            source,
        })?,
    };
    Ok(SessionIndex {
        dir: dir.to_path_buf(),
        sessions: state.sessions_dir(),
        table,
        generation,
        log: Arc::new(file),
        logged,
        others,
    })
}

/// Rebuilds the index from every session's `session.json` (each active, so that opening the
/// state root settles them all once) and writes it as a snapshot with a new log.
fn rebuild(
    state: &StateRoot,
    pause: Option<Pause>,
) -> std::io::Result<(SessionIndex, Vec<String>)> {
    let sessions = state.sessions_dir();
    // Taken before the folders are read: a change while they are makes the next open rebuild.
    let folders = folders_stamp(&sessions);
    let counted = folder_count(&sessions);
    let ids = session_ids(state)
        .map_err(|err| io_context(format!("cannot read {}", sessions.display()), err))?;
    let mut table = Table {
        entries: Vec::with_capacity(ids.len()),
        live: 0,
        names: Names::default(),
        folders,
    };
    let mut unwritten = Vec::new();
    let mut skipped = 0;
    for id in ids.iter().rev() {
        match load_meta(state, id) {
            Ok(Some(meta)) => {
                if let Some(key) = id_key(id) {
                    let entry = entry_of(&mut table.names, &meta, true);
                    table.insert(key, entry);
                }
            }
            Ok(None) if meta_never_written(state, id) => unwritten.push(id.clone()),
            Ok(None) => {}
            Err(err) => {
                skipped += 1;
                tracing::error!(
                    "session {id}: cannot read {}: {err}; it is left out of the session index (rebuilt at each start while it is) until it is repaired or its folder removed",
                    state.meta_path(id).display()
                );
            }
        }
    }
    if skipped > 0 {
        table.folders = SKIPPED;
    }
    // The folders that are no sessions; the unwritten ones are about to be removed.
    let others = counted.map_or(0, |counted| {
        counted - table.live as i64 - unwritten.len() as i64 - skipped
    });
    let dir = state.path();
    // The old generation, when a snapshot is readable, so that the new one is newer than
    // any log left beside it.
    let generation = std::fs::read(dir.join(LOG))
        .ok()
        .filter(|log| log.len() >= 16 && log.starts_with(LOG_MAGIC))
        .map_or(0, |log| {
            u64::from_le_bytes(log[8..16].try_into().unwrap_or_default())
        });
    std::fs::create_dir_all(dir)
        .map_err(|err| io_context(format!("cannot create {}", dir.display()), err))?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(LOG))
        .map_err(|err| io_context(format!("cannot open {}", dir.join(LOG).display()), err))?;
    let mut index = SessionIndex {
        dir: dir.to_path_buf(),
        sessions,
        table,
        generation,
        log: Arc::new(log),
        logged: 0,
        others,
    };
    index.snapshot(pause)?;
    Ok((index, unwritten))
}

#[cfg(test)]
mod tests {
    use std::io::BufRead as _;
    use std::sync::Arc;

    use folio_protocol::SessionStatus;
    use folio_store::{ListQuery, SessionStore};

    use super::{LOG, Pause, SNAPSHOT};
    use crate::state::StateRoot;
    // layering: the crash tests open the store over the index they check.
    use crate::store::DiskStore;

    /// The child's variable: `<state root>|<pause>` (`half`, `renamed` or `none`).
    const CHILD: &str = "FOLIO_INDEX_CRASH_CHILD";

    /// Fills a state root with `count` sessions of every status; answers them, newest first
    /// (by id: ids made in one millisecond are in no order).
    async fn fill(dir: &std::path::Path, count: usize) -> Vec<folio_store::SessionMeta> {
        let store = DiskStore::open(StateRoot::new(dir)).unwrap();
        let statuses = [
            SessionStatus::Running,
            SessionStatus::Waiting,
            SessionStatus::Completed,
            SessionStatus::Failed,
        ];
        let mut metas = Vec::new();
        for n in 0..count {
            let mut meta = folio_store::suite::meta(if n % 2 == 0 { "alice" } else { "bob" });
            meta.title = Some(format!("session {n}"));
            store.create_session(&meta).await.unwrap();
            store.commit(&meta.session_id, None).await.unwrap();
            meta.status = statuses[n % 4];
            store.save_session(&meta).await.unwrap();
            metas.push(meta);
        }
        metas.sort_by(|a, b| b.session_id.cmp(&a.session_id));
        store.close().await;
        metas
    }

    /// What a store opened on `dir` lists, and the sessions it takes over.
    async fn listed(dir: &std::path::Path) -> (Vec<folio_store::SessionMeta>, Vec<String>) {
        let store = DiskStore::open(StateRoot::new(dir)).unwrap();
        let all = store
            .list_sessions(&ListQuery {
                limit: usize::MAX,
                ..Default::default()
            })
            .await
            .unwrap();
        let mut taken: Vec<String> = store
            .expired_leases()
            .await
            .unwrap()
            .into_iter()
            .map(|lease| lease.session_id)
            .collect();
        taken.sort_unstable_by(|a, b| b.cmp(a));
        store.close().await;
        (all, taken)
    }

    fn running(metas: &[folio_store::SessionMeta]) -> Vec<String> {
        metas
            .iter()
            .filter(|meta| meta.status == SessionStatus::Running)
            .map(|meta| meta.session_id.clone())
            .collect()
    }

    #[tokio::test]
    async fn a_missing_torn_or_stale_index_is_rebuilt_and_a_torn_log_end_cut() {
        let dir = tempfile::tempdir().unwrap();
        let metas = fill(dir.path(), 12).await;
        let expected = (metas.clone(), running(&metas));
        assert_eq!(listed(dir.path()).await, expected, "loaded as written");
        // Missing.
        std::fs::remove_file(dir.path().join(SNAPSHOT)).unwrap();
        assert_eq!(listed(dir.path()).await, expected, "rebuilt when missing");
        // Torn: a byte of the snapshot flipped.
        let path = dir.path().join(SNAPSHOT);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[40] ^= 0xff;
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(listed(dir.path()).await, expected, "rebuilt when torn");
        // A torn change at the log's end is cut off; the changes before it hold.
        let log = dir.path().join(LOG);
        let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        std::io::Write::write_all(&mut file, &[40, 0, 0, 0, 1, 2, 3]).unwrap();
        drop(file);
        assert_eq!(listed(dir.path()).await, expected, "a torn log end is cut");
        // Stale: a session an older Folio wrote, unknown to the index.
        let extra = folio_store::suite::meta("carol");
        let state = StateRoot::new(dir.path());
        std::fs::create_dir_all(state.session_dir(&extra.session_id)).unwrap();
        std::fs::write(
            state.meta_path(&extra.session_id),
            serde_json::to_vec(&extra).unwrap(),
        )
        .unwrap();
        let (all, taken) = listed(dir.path()).await;
        assert_eq!(all.len(), metas.len() + 1, "rebuilt when stale");
        assert_eq!(all[0], extra);
        let mut with_extra = running(&metas);
        with_extra.insert(0, extra.session_id.clone());
        assert_eq!(
            taken, with_extra,
            "a rebuilt index settles every session once"
        );
    }

    /// Whether opening `dir`'s index now would rebuild it, and why.
    fn rebuild_reason(dir: &std::path::Path) -> Option<String> {
        super::SessionIndex::open(&StateRoot::new(dir), None)
            .unwrap()
            .rebuilt
    }

    #[tokio::test]
    async fn sessions_added_behind_the_index_are_noticed_where_the_link_count_says_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateRoot::new(dir.path());
        // A folder that is no session, counted among the others.
        std::fs::create_dir_all(state.sessions_dir().join("notes")).unwrap();
        let metas = fill(dir.path(), 6).await;
        assert_eq!(rebuild_reason(dir.path()), None, "loaded as written");
        // Another program swaps the folder for a session: the folder count stays the same,
        // so only the stamp tells.
        std::fs::remove_dir(state.sessions_dir().join("notes")).unwrap();
        let extra = folio_store::suite::meta("carol");
        std::fs::create_dir_all(state.session_dir(&extra.session_id)).unwrap();
        std::fs::write(
            state.meta_path(&extra.session_id),
            serde_json::to_vec(&extra).unwrap(),
        )
        .unwrap();
        // The filesystem moved the stamp; set it a second on, so that a coarse timestamp
        // granularity cannot make this test pass or fail by chance.
        let folder = std::fs::File::open(state.sessions_dir()).unwrap();
        let moved =
            folder.metadata().unwrap().modified().unwrap() + std::time::Duration::from_secs(1);
        folder.set_modified(moved).unwrap();
        let reason = rebuild_reason(dir.path()).expect("rebuilt");
        assert!(reason.contains("changed since the index"), "{reason}");
        let (all, _) = listed(dir.path()).await;
        assert_eq!(all.len(), metas.len() + 1);
        assert_eq!(all[0], extra);
        assert_eq!(rebuild_reason(dir.path()), None, "loaded after the rebuild");
    }

    #[tokio::test]
    async fn an_index_rebuilt_around_an_unacknowledged_create_is_loaded_next_time() {
        let dir = tempfile::tempdir().unwrap();
        let metas = fill(dir.path(), 4).await;
        // What a crash leaves of a create: its folder, its session.json never written out.
        let state = StateRoot::new(dir.path());
        let lost = folio_store::suite::meta("alice");
        std::fs::create_dir_all(state.session_dir(&lost.session_id)).unwrap();
        std::fs::write(state.meta_path(&lost.session_id), b"").unwrap();
        std::fs::remove_file(dir.path().join(SNAPSHOT)).unwrap();
        let (all, _) = listed(dir.path()).await;
        assert_eq!(all, metas, "the unacknowledged create is gone");
        assert!(!state.session_dir(&lost.session_id).exists());
        assert_eq!(rebuild_reason(dir.path()), None, "no second rebuild");
        // Deleting and creating through the store keeps the index loadable too.
        let store = DiskStore::open(StateRoot::new(dir.path())).unwrap();
        store.delete_session(&metas[0].session_id).await.unwrap();
        let added = folio_store::suite::meta("bob");
        store.create_session(&added).await.unwrap();
        store.commit(&added.session_id, None).await.unwrap();
        store.close().await;
        assert_eq!(
            rebuild_reason(dir.path()),
            None,
            "loaded after a delete and a create"
        );
    }

    #[tokio::test]
    async fn opening_visits_only_the_active_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let metas = fill(dir.path(), 8).await;
        // An idle session's session.json edited behind the store's back: opening does not
        // read it (the index says it is idle), so it is not taken over.
        let idle = metas
            .iter()
            .find(|meta| meta.status == SessionStatus::Waiting)
            .unwrap();
        let mut edited = idle.clone();
        edited.status = SessionStatus::Running;
        let state = StateRoot::new(dir.path());
        std::fs::write(
            state.meta_path(&idle.session_id),
            serde_json::to_vec(&edited).unwrap(),
        )
        .unwrap();
        let (_, taken) = listed(dir.path()).await;
        assert_eq!(taken, running(&metas));
    }

    /// The child of [`a_kill_during_a_rebuild_leaves_a_usable_index`]: rebuilds the index of
    /// the state root `FOLIO_INDEX_CRASH_CHILD` names, pausing where it says; without it,
    /// nothing.
    #[test]
    fn child_rebuilds_the_index() {
        let Ok(spec) = std::env::var(CHILD) else {
            return;
        };
        let (dir, pause) = spec.split_once('|').unwrap();
        let pause = match pause {
            "half" => Some(Pause::HalfSnapshot),
            "renamed" => Some(Pause::SnapshotRenamed),
            _ => None,
        };
        let _store = DiskStore::open_with(StateRoot::new(dir), pause).unwrap();
        println!("index-open");
    }

    /// Starts the child on `dir`; with a pause, kills it (SIGKILL) once it is there; without,
    /// after `after`.
    fn kill_child(dir: &std::path::Path, pause: &str, after: std::time::Duration) {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "index::tests::child_rebuilds_the_index",
                "--exact",
                "--nocapture",
            ])
            .env(CHILD, format!("{}|{pause}", dir.display()))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        if pause == "none" {
            std::thread::sleep(after);
        } else {
            let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
            let paused = stdout
                .lines()
                .map_while(Result::ok)
                .any(|line| line.contains("index-paused"));
            assert!(paused, "the child reached its pause");
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[tokio::test]
    async fn a_kill_during_a_rebuild_leaves_a_usable_index() {
        let dir = tempfile::tempdir().unwrap();
        let metas = Arc::new(fill(dir.path(), 300).await);
        let expected = (metas.to_vec(), running(&metas));
        // Killed with half the new snapshot written (no index before): rebuilt again.
        std::fs::remove_file(dir.path().join(SNAPSHOT)).unwrap();
        kill_child(dir.path(), "half", std::time::Duration::ZERO);
        assert!(dir.path().join(format!("{SNAPSHOT}.tmp")).exists());
        assert_eq!(
            listed(dir.path()).await,
            expected,
            "after a kill mid-snapshot"
        );
        // Killed with the new snapshot renamed, the log of the old generation still there.
        std::fs::remove_file(dir.path().join(SNAPSHOT)).unwrap();
        kill_child(dir.path(), "renamed", std::time::Duration::ZERO);
        assert_eq!(
            listed(dir.path()).await,
            expected,
            "after a kill between renames"
        );
        // Killed at any moment of a rebuild.
        for ms in [0, 2, 5, 10, 20, 40] {
            let _ = std::fs::remove_file(dir.path().join(SNAPSHOT));
            kill_child(dir.path(), "none", std::time::Duration::from_millis(ms));
            assert_eq!(
                listed(dir.path()).await,
                expected,
                "after a kill at {ms} ms"
            );
        }
    }
}
