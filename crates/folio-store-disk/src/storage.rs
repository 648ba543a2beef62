//! Storage entries on disk ([`StorageStore`] for the disk store): one file per entry,
//! `storage/<scope>/<agent>/<owner>/<key>.entry` under the state root.
//!
//! Every name in that path is untrusted (an agent, a principal, a key a tool chose), so none is
//! used as it is: each becomes one path segment of lowercase hex of its bytes (`_` for the empty
//! name; `~` and the SHA-256 of the name when it is longer than [`HEX_BYTES`] bytes). No name
//! can leave its folder, two names never share a file, and names that differ only in case stay
//! apart on a case-insensitive filesystem.
//!
//! An entry's file is its header (`{"key", "version", "updatedAt", "expiresAt"}`, one JSON
//! line) then its value's JSON text. A write replaces the file whole: the new file is written
//! beside it (`<key>.entry.tmp`), synced, renamed over it, and the folder is synced (a new
//! namespace's folders are synced into their parents first); a delete removes the file and syncs
//! the folder. So a `kill -9` (or a power loss) at any point leaves each entry at its old or its
//! new value, never a torn file, and a write is durable when it returns. A temporary file a
//! crash left behind is removed when its namespace is next read.
//!
//! Writes to one namespace run one at a time (an async mutex per namespace), so a
//! compare-and-set reads and writes without another writer between. Each namespace read in
//! this process keeps an index of its keys (version, expiry, bytes; not values) for listing,
//! conditions and usage: one process has the state root, so the index is the folder.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use folio_protocol::{StorageEntry, StorageScope};
use folio_store::{
    Condition, EntryPage, MAX_LIST, Namespace, StorageStore, StorageUsage, StoreError, Written,
    check_key, value_text,
};
use serde::{Deserialize, Serialize};

use crate::create_keys::sha256_hex;
use crate::lock;
use crate::state::{SyncTarget, commit, write_durably};

/// The longest name (in bytes) written as hex; a longer one is written as its SHA-256, so that
/// a segment, with `.entry.tmp`, stays within the 255 bytes a file name may have.
const HEX_BYTES: usize = 100;

/// How many namespaces' indexes stay in memory; past it, those not in use are dropped (and read
/// again on their next use).
const SPACES: usize = 1024;

/// The scopes, in the order of their folders.
const SCOPES: [StorageScope; 3] = [
    StorageScope::Session,
    StorageScope::Agent,
    StorageScope::Principal,
];

/// The storage entries of one state root (see the module docs).
pub struct DiskStorage {
    /// `<state-root>/storage`.
    root: PathBuf,
    /// The namespaces in use, by folder.
    spaces: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<Space>>>>,
}

/// One namespace's folder and, once read, its index.
struct Space {
    dir: PathBuf,
    index: Option<Index>,
}

/// What a namespace's folder holds, by key.
#[derive(Default)]
struct Index {
    entries: BTreeMap<String, Meta>,
    /// Whether the folder exists, synced into its parent.
    exists: bool,
}

/// What the index keeps of an entry.
#[derive(Debug, Clone, Copy)]
struct Meta {
    version: u64,
    expires_at: Option<DateTime<Utc>>,
    /// Its key's bytes and its value's JSON text's.
    bytes: u64,
}

impl Meta {
    fn live(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_none_or(|expires| expires > now)
    }
}

/// The first line of an entry's file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    key: String,
    version: u64,
    updated_at: DateTime<Utc>,
    #[serde(default)]
    expires_at: Option<DateTime<Utc>>,
}

/// `name` as one safe path segment (see the module docs).
fn segment(name: &str) -> String {
    if name.is_empty() {
        "_".to_string()
    } else if name.len() > HEX_BYTES {
        format!("~{}", sha256_hex(name))
    } else {
        name.bytes().map(|byte| format!("{byte:02x}")).collect()
    }
}

/// The name a folder `dir` of [`segment`] stands for; refused for a name written as its
/// SHA-256, which cannot be read back.
fn name_of(dir: &Path) -> Result<String, StoreError> {
    let segment = dir.file_name().and_then(|name| name.to_str()).unwrap_or("");
    if segment == "_" {
        return Ok(String::new());
    }
    let bytes = (0..segment.len())
        .step_by(2)
        .map(|at| {
            segment
                .get(at..at + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        })
        .collect::<Option<Vec<u8>>>();
    bytes
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| {
            StoreError::backend(format!(
                "the storage folder {} names an agent or owner longer than {HEX_BYTES} bytes (kept as its SHA-256), which cannot be copied: copy its entries by hand or remove them",
                dir.display()
            ))
        })
}

/// A namespace's place in [`StorageStore::export`]'s order: scope (by its wire name), agent,
/// owner.
fn export_order(namespace: &Namespace) -> (&str, &str, &str) {
    (namespace.scope.as_str(), &namespace.agent, &namespace.owner)
}

/// The file of `key` in the namespace folder `dir`.
fn entry_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{}.entry", segment(key)))
}

fn io(context: impl std::fmt::Display, source: std::io::Error) -> StoreError {
    StoreError::Io {
        context: context.to_string(),
        source,
    }
}

fn corrupt(path: &Path, err: impl std::fmt::Display) -> StoreError {
    StoreError::backend(format!(
        "the storage entry {} is not valid ({err}): remove it",
        path.display()
    ))
}

/// The folders under `dir` (none when it does not exist).
fn subdirs(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(io(format!("cannot read {}", dir.display()), err)),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| io(format!("cannot read {}", dir.display()), err))?;
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            dirs.push(entry.path());
        }
    }
    Ok(dirs)
}

/// Reads the header and value of the entry file at `path`.
fn read_entry(path: &Path) -> Result<StorageEntry, StoreError> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| io(format!("cannot read {}", path.display()), err))?;
    let (header, value) = text
        .split_once('\n')
        .ok_or_else(|| corrupt(path, "no header line"))?;
    let header: Header = serde_json::from_str(header).map_err(|err| corrupt(path, err))?;
    Ok(StorageEntry {
        key: header.key,
        value: serde_json::from_str(value).map_err(|err| corrupt(path, err))?,
        version: header.version,
        updated_at: header.updated_at,
        expires_at: header.expires_at,
    })
}

/// Reads the index of the namespace folder `dir`: each entry's header and size; removes the
/// temporary files of writes a crash interrupted.
fn read_index(dir: &Path) -> Result<Index, StoreError> {
    use std::io::BufRead;
    let files = match std::fs::read_dir(dir) {
        Ok(files) => files,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Index::default()),
        Err(err) => return Err(io(format!("cannot read {}", dir.display()), err)),
    };
    let mut index = Index {
        entries: BTreeMap::new(),
        exists: true,
    };
    for file in files {
        let path = file
            .map_err(|err| io(format!("cannot read {}", dir.display()), err))?
            .path();
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or("");
        if name.ends_with(".entry.tmp") {
            std::fs::remove_file(&path)
                .map_err(|err| io(format!("cannot remove {}", path.display()), err))?;
            continue;
        }
        if !name.ends_with(".entry") {
            continue;
        }
        let file = std::fs::File::open(&path)
            .map_err(|err| io(format!("cannot read {}", path.display()), err))?;
        let size = file
            .metadata()
            .map_err(|err| io(format!("cannot read {}", path.display()), err))?
            .len();
        let mut line = String::new();
        std::io::BufReader::new(file)
            .read_line(&mut line)
            .map_err(|err| io(format!("cannot read {}", path.display()), err))?;
        if !line.ends_with('\n') {
            return Err(corrupt(&path, "no header line"));
        }
        let header: Header = serde_json::from_str(&line).map_err(|err| corrupt(&path, err))?;
        if entry_path(dir, &header.key) != path {
            return Err(corrupt(&path, "its key is another file's"));
        }
        let value_bytes = size.saturating_sub(line.len() as u64);
        index.entries.insert(
            header.key.clone(),
            Meta {
                version: header.version,
                expires_at: header.expires_at,
                bytes: header.key.len() as u64 + value_bytes,
            },
        );
    }
    Ok(index)
}

impl Space {
    /// The index, read from the folder on first use.
    fn index(&mut self) -> Result<&mut Index, StoreError> {
        if self.index.is_none() {
            self.index = Some(read_index(&self.dir)?);
        }
        Ok(self.index.get_or_insert_default())
    }

    /// The entry at `key` when the index has a live one at `now`.
    fn live_entry(
        &mut self,
        key: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<StorageEntry>, StoreError> {
        let live = self
            .index()?
            .entries
            .get(key)
            .is_some_and(|meta| meta.live(now));
        if !live {
            return Ok(None);
        }
        read_entry(&entry_path(&self.dir, key)).map(Some)
    }

    /// Creates the folder, synced into its parents up to the state root, when it is missing.
    async fn create_dir(&mut self, root: &Path) -> Result<(), StoreError> {
        if self.index()?.exists {
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir)
            .map_err(|err| io(format!("cannot create {}", self.dir.display()), err))?;
        let parents = self
            .dir
            .ancestors()
            .skip(1)
            .take_while(|dir| dir.starts_with(root) || Some(*dir) == root.parent())
            .map(|dir| SyncTarget::Path(dir.to_path_buf()))
            .collect();
        commit(parents)
            .await
            .map_err(|err| io("cannot sync the storage folders", err))?;
        self.index()?.exists = true;
        Ok(())
    }

    /// Replaces the file of `entry` (whose value's JSON text is `text`) durably, creating the
    /// folder when missing, and indexes it.
    async fn write(
        &mut self,
        root: &Path,
        entry: &StorageEntry,
        text: &str,
    ) -> Result<(), StoreError> {
        let header = serde_json::to_string(&Header {
            key: entry.key.clone(),
            version: entry.version,
            updated_at: entry.updated_at,
            expires_at: entry.expires_at,
        })
        .map_err(|err| StoreError::backend_from("cannot encode a storage entry", err))?;
        self.create_dir(root).await?;
        let path = entry_path(&self.dir, &entry.key);
        if let Err(err) = write_durably(&path, format!("{header}\n{text}").as_bytes()).await {
            // Whether the rename happened is unknown: read the folder again next time.
            self.index = None;
            return Err(io(format!("cannot write {}", path.display()), err));
        }
        self.index()?.entries.insert(
            entry.key.clone(),
            Meta {
                version: entry.version,
                expires_at: entry.expires_at,
                bytes: (entry.key.len() + text.len()) as u64,
            },
        );
        Ok(())
    }

    /// Removes the files of `keys` and syncs the folder; drops them from the index.
    async fn remove(&mut self, keys: &[String]) -> Result<(), StoreError> {
        if keys.is_empty() {
            return Ok(());
        }
        for key in keys {
            let path = entry_path(&self.dir, key);
            match std::fs::remove_file(&path) {
                Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                    self.index = None;
                    return Err(io(format!("cannot remove {}", path.display()), err));
                }
                _ => {}
            }
            if let Some(index) = self.index.as_mut() {
                index.entries.remove(key);
            }
        }
        commit(vec![SyncTarget::Path(self.dir.clone())])
            .await
            .map_err(|err| io("cannot sync a storage folder", err))
    }
}

impl DiskStorage {
    /// The storage of the state root at `state_root` (`<state_root>/storage`).
    pub fn new(state_root: &Path) -> DiskStorage {
        DiskStorage {
            root: state_root.join("storage"),
            spaces: Mutex::new(HashMap::new()),
        }
    }

    /// The folder of `namespace`.
    fn dir(&self, namespace: &Namespace) -> PathBuf {
        self.root
            .join(namespace.scope.as_str())
            .join(segment(&namespace.agent))
            .join(segment(&namespace.owner))
    }

    /// The namespace folder `dir`, locked: no other call of this process reads or writes it
    /// until the guard drops.
    async fn space(&self, dir: PathBuf) -> tokio::sync::OwnedMutexGuard<Space> {
        let space = {
            let mut spaces = lock(&self.spaces);
            if spaces.len() >= SPACES {
                spaces.retain(|_, space| Arc::strong_count(space) > 1);
            }
            spaces
                .entry(dir.clone())
                .or_insert_with(|| Arc::new(tokio::sync::Mutex::new(Space { dir, index: None })))
                .clone()
        };
        space.lock_owned().await
    }

    /// Every namespace on disk with its folder, in [`StorageStore::export`]'s order. A name
    /// written as its SHA-256 (longer than [`HEX_BYTES`]) cannot be read back: refused.
    fn namespaces(&self) -> Result<Vec<(Namespace, PathBuf)>, StoreError> {
        let mut spaces = Vec::new();
        for scope in SCOPES {
            for agent in subdirs(&self.root.join(scope.as_str()))? {
                for owner in subdirs(&agent)? {
                    let namespace = Namespace {
                        scope,
                        agent: name_of(&agent)?,
                        owner: name_of(&owner)?,
                    };
                    spaces.push((namespace, owner));
                }
            }
        }
        spaces.sort_by(|(a, _), (b, _)| export_order(a).cmp(&export_order(b)));
        Ok(spaces)
    }

    /// Every namespace folder on disk.
    fn namespace_dirs(&self) -> Result<Vec<PathBuf>, StoreError> {
        let mut dirs = Vec::new();
        for scope in SCOPES {
            for agent in subdirs(&self.root.join(scope.as_str()))? {
                dirs.extend(subdirs(&agent)?);
            }
        }
        Ok(dirs)
    }
}

#[async_trait::async_trait]
impl StorageStore for DiskStorage {
    async fn get(
        &self,
        namespace: &Namespace,
        key: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<StorageEntry>, StoreError> {
        check_key(key)?;
        self.space(self.dir(namespace)).await.live_entry(key, now)
    }

    async fn put(
        &self,
        namespace: &Namespace,
        key: &str,
        value: &serde_json::Value,
        condition: Condition,
        expires_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<Written, StoreError> {
        check_key(key)?;
        let text = value_text(value)?;
        let mut space = self.space(self.dir(namespace)).await;
        let current = space
            .index()?
            .entries
            .get(key)
            .filter(|meta| meta.live(now))
            .copied();
        let holds = match condition {
            Condition::Any => true,
            Condition::Absent => current.is_none(),
            Condition::Version(version) => current.is_some_and(|meta| meta.version == version),
        };
        if !holds {
            return Ok(Written::Conflict(space.live_entry(key, now)?));
        }
        let entry = StorageEntry {
            key: key.to_string(),
            value: value.clone(),
            version: current.map_or(1, |meta| meta.version + 1),
            updated_at: now,
            expires_at,
        };
        space.write(&self.root, &entry, &text).await?;
        Ok(Written::Done(Some(entry)))
    }

    async fn delete(
        &self,
        namespace: &Namespace,
        key: &str,
        condition: Condition,
        now: DateTime<Utc>,
    ) -> Result<Written, StoreError> {
        check_key(key)?;
        let mut space = self.space(self.dir(namespace)).await;
        let current = space.live_entry(key, now)?;
        if let Condition::Version(version) = condition
            && current
                .as_ref()
                .is_none_or(|entry| entry.version != version)
        {
            return Ok(Written::Conflict(current));
        }
        if space.index()?.entries.contains_key(key) {
            space.remove(&[key.to_string()]).await?;
        }
        Ok(Written::Done(current))
    }

    async fn list(
        &self,
        namespace: &Namespace,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<EntryPage, StoreError> {
        let limit = limit.min(MAX_LIST);
        let mut space = self.space(self.dir(namespace)).await;
        let start = match after {
            Some(after) if after >= prefix => Bound::Excluded(after),
            _ => Bound::Included(prefix),
        };
        let keys: Vec<String> = space
            .index()?
            .entries
            .range::<str, _>((start, Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix))
            .filter(|(_, meta)| meta.live(now))
            .map(|(key, _)| key.clone())
            .take(limit + 1)
            .collect();
        let more = keys.len() > limit;
        let entries = keys
            .iter()
            .take(limit)
            .map(|key| read_entry(&entry_path(&space.dir, key)))
            .collect::<Result<Vec<_>, _>>()?;
        let next = if more {
            entries.last().map(|entry| entry.key.clone())
        } else {
            None
        };
        Ok(EntryPage { entries, next })
    }

    async fn usage(&self, namespace: &Namespace) -> Result<StorageUsage, StoreError> {
        let mut space = self.space(self.dir(namespace)).await;
        let index = space.index()?;
        Ok(StorageUsage {
            entries: index.entries.len() as u64,
            bytes: index.entries.values().map(|meta| meta.bytes).sum(),
        })
    }

    async fn total_usage(&self) -> Result<StorageUsage, StoreError> {
        let mut total = StorageUsage::default();
        for dir in self.namespace_dirs()? {
            let mut space = self.space(dir).await;
            let index = space.index()?;
            total.entries += index.entries.len() as u64;
            total.bytes += index.entries.values().map(|meta| meta.bytes).sum::<u64>();
        }
        Ok(total)
    }

    /// Removes the session's folder under every agent, then syncs the agent's folder.
    async fn delete_session_entries(&self, session_id: &str) -> Result<u64, StoreError> {
        let mut deleted = 0;
        for agent in subdirs(&self.root.join(StorageScope::Session.as_str()))? {
            let mut space = self.space(agent.join(segment(session_id))).await;
            let index = space.index()?;
            if !index.exists {
                continue;
            }
            deleted += index.entries.len() as u64;
            space.index = None;
            std::fs::remove_dir_all(&space.dir)
                .map_err(|err| io(format!("cannot remove {}", space.dir.display()), err))?;
            commit(vec![SyncTarget::Path(agent)])
                .await
                .map_err(|err| io("cannot sync a storage folder", err))?;
            space.index = Some(Index::default());
        }
        Ok(deleted)
    }

    async fn export(
        &self,
        after: Option<&(Namespace, String)>,
        limit: usize,
    ) -> Result<Vec<(Namespace, StorageEntry)>, StoreError> {
        let limit = limit.min(MAX_LIST);
        let mut page = Vec::new();
        for (namespace, dir) in self.namespaces()? {
            let start = match after {
                Some((at, _)) if export_order(&namespace) < export_order(at) => continue,
                Some((at, key)) if export_order(&namespace) == export_order(at) => {
                    Bound::Excluded(key.as_str())
                }
                _ => Bound::Unbounded,
            };
            let mut space = self.space(dir).await;
            let keys: Vec<String> = space
                .index()?
                .entries
                .range::<str, _>((start, Bound::Unbounded))
                .map(|(key, _)| key.clone())
                .take(limit - page.len())
                .collect();
            for key in keys {
                page.push((
                    namespace.clone(),
                    read_entry(&entry_path(&space.dir, &key))?,
                ));
            }
            if page.len() == limit {
                break;
            }
        }
        Ok(page)
    }

    async fn import(&self, namespace: &Namespace, entry: &StorageEntry) -> Result<(), StoreError> {
        check_key(&entry.key)?;
        let text = value_text(&entry.value)?;
        let mut space = self.space(self.dir(namespace)).await;
        space.write(&self.root, entry, &text).await
    }

    async fn purge_expired(&self, now: DateTime<Utc>) -> Result<u64, StoreError> {
        let mut purged = 0;
        for dir in self.namespace_dirs()? {
            let mut space = self.space(dir).await;
            let expired: Vec<String> = space
                .index()?
                .entries
                .iter()
                .filter(|(_, meta)| !meta.live(now))
                .map(|(key, _)| key.clone())
                .collect();
            space.remove(&expired).await?;
            purged += expired.len() as u64;
        }
        Ok(purged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the name, its segment is one plain path component, and distinct names get
        /// distinct segments.
        #[test]
        fn every_name_is_one_segment_of_its_own(a in ".{0,120}", b in ".{0,120}") {
            let (sa, sb) = (segment(&a), segment(&b));
            let components: Vec<_> = Path::new(&sa).components().collect();
            prop_assert_eq!(components.len(), 1);
            prop_assert!(matches!(components[0], std::path::Component::Normal(_)));
            prop_assert!(sa.len() + ".entry.tmp".len() <= 255);
            prop_assert_eq!(a == b, sa == sb);
        }
    }

    #[test]
    fn names_are_hex_and_long_ones_hashed() {
        assert_eq!(segment(""), "_");
        assert_eq!(segment("../A"), "2e2e2f41");
        assert_eq!(segment("a"), "61");
        assert_eq!(
            segment(&"k".repeat(101)),
            format!("~{}", sha256_hex(&"k".repeat(101)))
        );
    }

    #[tokio::test]
    async fn a_write_leaves_one_file_and_a_stale_temporary_file_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let storage = DiskStorage::new(dir.path());
        let space = Namespace::of(StorageScope::Principal, "demo", "ses_x", "../../x");
        let now = Utc::now();
        storage
            .put(
                &space,
                "k",
                &serde_json::json!({"a": 1}),
                Condition::Any,
                None,
                now,
            )
            .await
            .unwrap();
        let folder = storage.dir(&space);
        assert!(folder.starts_with(dir.path().join("storage/principal")));
        let files = |folder: &Path| -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(folder)
                .unwrap()
                .map(|entry| entry.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            names
        };
        assert_eq!(files(&folder), ["6b.entry"]);
        assert_eq!(
            std::fs::read_to_string(folder.join("6b.entry")).unwrap(),
            format!(
                "{{\"key\":\"k\",\"version\":1,\"updatedAt\":{},\"expiresAt\":null}}\n{{\"a\":1}}",
                serde_json::to_string(&now).unwrap()
            )
        );
        // What a crash between writing the temporary file and renaming it leaves.
        std::fs::write(folder.join("6c.entry.tmp"), b"{\"key\":\"l\"").unwrap();
        let reopened = DiskStorage::new(dir.path());
        assert_eq!(
            reopened.usage(&space).await.unwrap(),
            StorageUsage {
                entries: 1,
                bytes: 1 + 7
            }
        );
        assert_eq!(files(&folder), ["6b.entry"]);
    }
}
