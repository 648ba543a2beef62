//! The suite's storage cases ([`SessionStore::storage`]): versions and compare-and-set,
//! expiry, listing in byte order, namespaces, usage, and entries that go with their session.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use folio_protocol::{StorageEntry, StorageScope};
use serde_json::{Value, json};

use crate::storage::{Condition, Namespace, StorageStore, StorageUsage, Written};
use crate::{SessionStore, StoreError};

/// Now, in whole milliseconds (what every backend keeps exactly).
fn now() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap_or_default()
}

fn agent_space(agent: &str) -> Namespace {
    Namespace::of(StorageScope::Agent, agent, "ses_unused", "nobody")
}

fn session_space(agent: &str, session_id: &str) -> Namespace {
    Namespace::of(StorageScope::Session, agent, session_id, "nobody")
}

/// The entry a put stored (panics on a conflict).
fn done(name: &str, written: Written) -> StorageEntry {
    match written {
        Written::Done(Some(entry)) => entry,
        other => panic!("{name}: expected a written entry, got {other:?}"),
    }
}

async fn put(
    storage: &dyn StorageStore,
    namespace: &Namespace,
    key: &str,
    value: Value,
    condition: Condition,
    now: DateTime<Utc>,
) -> Written {
    storage
        .put(namespace, key, &value, condition, None, now)
        .await
        .unwrap()
}

async fn keys(
    storage: &dyn StorageStore,
    namespace: &Namespace,
    prefix: &str,
    now: DateTime<Utc>,
) -> Vec<String> {
    let page = storage
        .list(namespace, prefix, None, crate::MAX_LIST, now)
        .await
        .unwrap();
    page.entries.into_iter().map(|entry| entry.key).collect()
}

/// Writes raise the version from 1; a get reads back what the put answered; a delete answers
/// what it removed; keys and values no backend can store are refused.
pub async fn storage_round_trips_with_versions(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let storage = store.storage();
    let space = agent_space("demo");
    let t0 = now();
    assert_eq!(storage.get(&space, "k", t0).await.unwrap(), None);
    for (version, value) in [
        (1, json!({"n": 1})),
        (2, json!([1, "two"])),
        (3, json!("x")),
    ] {
        let at = t0 + chrono::Duration::seconds(version);
        let stored = done(
            name,
            put(&*storage, &space, "k", value.clone(), Condition::Any, at).await,
        );
        assert_eq!(
            stored,
            StorageEntry {
                key: "k".into(),
                value,
                version: version as u64,
                updated_at: at,
                expires_at: None,
            },
            "{name}: write {version}"
        );
        assert_eq!(
            storage.get(&space, "k", at).await.unwrap(),
            Some(stored),
            "{name}: read back after write {version}"
        );
    }
    let expires = t0 + chrono::Duration::days(1);
    let with_expiry = storage
        .put(&space, "e", &json!(null), Condition::Any, Some(expires), t0)
        .await
        .unwrap();
    assert_eq!(
        done(name, with_expiry).expires_at,
        Some(expires),
        "{name}: the expiry is kept"
    );
    let last = storage.get(&space, "k", t0).await.unwrap();
    assert_eq!(
        storage
            .delete(&space, "k", Condition::Any, t0)
            .await
            .unwrap(),
        Written::Done(last),
        "{name}: a delete answers the entry it removed"
    );
    assert_eq!(storage.get(&space, "k", t0).await.unwrap(), None);
    assert_eq!(
        storage
            .delete(&space, "k", Condition::Absent, t0)
            .await
            .unwrap(),
        Written::Done(None),
        "{name}: deleting nothing is done, with no entry"
    );
    let again = done(
        name,
        put(&*storage, &space, "k", json!(1), Condition::Any, t0).await,
    );
    assert_eq!(again.version, 1, "{name}: a deleted key starts again at 1");
    for key in ["", &"k".repeat(crate::MAX_KEY_BYTES + 1), "nul\0"] {
        assert!(
            matches!(
                storage
                    .put(&space, key, &json!(1), Condition::Any, None, t0)
                    .await,
                Err(StoreError::Backend { .. })
            ),
            "{name}: key {key:?} is refused"
        );
    }
    let big = json!("x".repeat(crate::MAX_VALUE_BYTES));
    for value in [big, json!({"a": "nul\0"})] {
        assert!(
            matches!(
                storage
                    .put(&space, "v", &value, Condition::Any, None, t0)
                    .await,
                Err(StoreError::Backend { .. })
            ),
            "{name}: a value too big or holding a NUL is refused"
        );
    }
    assert_eq!(storage.get(&space, "v", t0).await.unwrap(), None);
    let longest = "k".repeat(crate::MAX_KEY_BYTES);
    let stored = done(
        name,
        put(&*storage, &space, &longest, json!(2), Condition::Absent, t0).await,
    );
    assert_eq!(
        storage.get(&space, &longest, t0).await.unwrap(),
        Some(stored),
        "{name}: the longest key is kept"
    );
}

/// `Absent` and `Version(n)` that do not hold answer the entry there and write nothing.
pub async fn storage_conditions_conflict_without_writing(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let storage = store.storage();
    let space = agent_space("demo");
    let t0 = now();
    assert_eq!(
        put(&*storage, &space, "k", json!(0), Condition::Version(1), t0).await,
        Written::Conflict(None),
        "{name}: a version of a missing key conflicts"
    );
    let first = done(
        name,
        put(&*storage, &space, "k", json!(1), Condition::Absent, t0).await,
    );
    let later = t0 + chrono::Duration::seconds(1);
    assert_eq!(
        put(&*storage, &space, "k", json!(2), Condition::Absent, later).await,
        Written::Conflict(Some(first.clone())),
        "{name}: absent conflicts with an entry"
    );
    for wrong in [0, 2, 7] {
        assert_eq!(
            put(
                &*storage,
                &space,
                "k",
                json!(2),
                Condition::Version(wrong),
                later
            )
            .await,
            Written::Conflict(Some(first.clone())),
            "{name}: version {wrong} conflicts with version 1"
        );
        assert_eq!(
            storage
                .delete(&space, "k", Condition::Version(wrong), later)
                .await
                .unwrap(),
            Written::Conflict(Some(first.clone())),
            "{name}: a delete at version {wrong} conflicts"
        );
    }
    assert_eq!(
        storage.get(&space, "k", later).await.unwrap(),
        Some(first),
        "{name}: conflicts wrote nothing"
    );
    let second = done(
        name,
        put(
            &*storage,
            &space,
            "k",
            json!(2),
            Condition::Version(1),
            later,
        )
        .await,
    );
    assert_eq!((second.version, second.value.clone()), (2, json!(2)));
    assert_eq!(
        storage
            .delete(&space, "k", Condition::Version(2), later)
            .await
            .unwrap(),
        Written::Done(Some(second)),
        "{name}: a delete at the right version removes"
    );
    assert_eq!(
        storage
            .delete(&space, "k", Condition::Version(2), later)
            .await
            .unwrap(),
        Written::Conflict(None),
        "{name}: a delete at a version of a missing key conflicts"
    );
}

/// An entry expired at `now` reads absent, is not listed, counts as absent for `Absent` (and
/// not for a version), is counted until purged, and `purge_expired` removes it.
pub async fn storage_entries_expire(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let storage = store.storage();
    let space = agent_space("demo");
    let t0 = now();
    let ttl = t0 + chrono::Duration::seconds(10);
    for key in ["a", "c"] {
        storage
            .put(&space, key, &json!(key), Condition::Any, Some(ttl), t0)
            .await
            .unwrap();
    }
    done(
        name,
        put(&*storage, &space, "b", json!("b"), Condition::Any, t0).await,
    );
    let before = ttl - chrono::Duration::milliseconds(1);
    assert!(storage.get(&space, "a", before).await.unwrap().is_some());
    assert_eq!(keys(&*storage, &space, "", before).await, ["a", "b", "c"]);
    assert_eq!(
        storage.get(&space, "a", ttl).await.unwrap(),
        None,
        "{name}: expired at its expiry"
    );
    assert_eq!(
        keys(&*storage, &space, "", ttl).await,
        ["b"],
        "{name}: expired entries are not listed"
    );
    assert_eq!(
        put(&*storage, &space, "a", json!(1), Condition::Version(1), ttl).await,
        Written::Conflict(None),
        "{name}: an expired entry has no version to match"
    );
    assert_eq!(
        storage
            .delete(&space, "a", Condition::Version(1), ttl)
            .await
            .unwrap(),
        Written::Conflict(None),
        "{name}: nor to delete at"
    );
    let renewed = done(
        name,
        put(&*storage, &space, "a", json!("new"), Condition::Absent, ttl).await,
    );
    assert_eq!(
        (renewed.version, renewed.expires_at),
        (1, None),
        "{name}: absent holds over an expired entry, which starts again"
    );
    assert_eq!(
        storage.usage(&space).await.unwrap().entries,
        3,
        "{name}: an expired entry counts until purged"
    );
    assert_eq!(
        storage.purge_expired(before).await.unwrap(),
        0,
        "{name}: nothing expired before"
    );
    assert_eq!(
        storage.purge_expired(ttl).await.unwrap(),
        1,
        "{name}: the expired entry is purged"
    );
    assert_eq!(storage.usage(&space).await.unwrap().entries, 2);
    assert_eq!(keys(&*storage, &space, "", t0).await, ["a", "b"]);
    storage
        .put(&space, "d", &json!(1), Condition::Any, Some(ttl), t0)
        .await
        .unwrap();
    assert_eq!(
        storage
            .delete(&space, "d", Condition::Any, ttl)
            .await
            .unwrap(),
        Written::Done(None),
        "{name}: deleting an expired entry removes it and answers none"
    );
    assert_eq!(storage.usage(&space).await.unwrap().entries, 2);
}

/// Lists answer unexpired entries under a prefix in byte order, a page at a time.
pub async fn storage_lists_by_prefix_in_byte_order(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let storage = store.storage();
    let space = agent_space("demo");
    let t0 = now();
    let mut under: Vec<&str> = vec![
        "a/1", "a/10", "a/2", "a/Z", "a/_", "a/~", "a/é", "a/😀", "a/a b",
    ];
    for key in under.iter().chain(&["a", "b", "a0", "A/1"]) {
        put(&*storage, &space, key, json!(key), Condition::Any, t0).await;
    }
    storage
        .put(&space, "a/expired", &json!(0), Condition::Any, Some(t0), t0)
        .await
        .unwrap();
    under.sort_unstable();
    assert_eq!(
        keys(&*storage, &space, "a/", t0).await,
        under,
        "{name}: byte order, expired entries left out"
    );
    let mut all = under.clone();
    all.extend(["a", "b", "a0", "A/1"]);
    all.sort_unstable();
    assert_eq!(keys(&*storage, &space, "", t0).await, all);
    let mut paged = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = storage
            .list(&space, "a/", after.as_deref(), 4, t0)
            .await
            .unwrap();
        assert!(page.entries.len() <= 4, "{name}: at most the limit");
        for entry in &page.entries {
            assert_eq!(entry.value, json!(entry.key), "{name}: values are listed");
        }
        paged.extend(page.entries.into_iter().map(|entry| entry.key));
        match page.next {
            Some(next) => {
                assert_eq!(
                    Some(&next),
                    paged.last(),
                    "{name}: next is the page's last key"
                );
                after = Some(next);
            }
            None => break,
        }
    }
    assert_eq!(
        paged, under,
        "{name}: pages cover the prefix once, in order"
    );
    let page = storage
        .list(&space, "a/", Some("a/3"), 2, t0)
        .await
        .unwrap();
    let keys_after: Vec<_> = page
        .entries
        .iter()
        .map(|entry| entry.key.as_str())
        .collect();
    assert_eq!(
        (keys_after, page.next.as_deref()),
        (vec!["a/Z", "a/_"], Some("a/_")),
        "{name}: after need not be a key"
    );
    let last = storage
        .list(&space, "a/", Some("a/é"), 10, t0)
        .await
        .unwrap();
    assert_eq!(
        (last.entries.len(), last.next),
        (1, None),
        "{name}: the last page has no next"
    );
    let exact = storage.list(&space, "a/1", None, 2, t0).await.unwrap();
    assert_eq!(
        exact.next, None,
        "{name}: a page that holds the rest exactly has no next"
    );
}

/// The same key in another scope, agent or owner is another entry.
pub async fn storage_namespaces_are_isolated(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let storage = store.storage();
    let t0 = now();
    let spaces = [
        Namespace::of(StorageScope::Session, "demo", "ses_a", "alice"),
        Namespace::of(StorageScope::Session, "demo", "ses_b", "alice"),
        Namespace::of(StorageScope::Session, "other", "ses_a", "alice"),
        Namespace::of(StorageScope::Agent, "demo", "ses_a", "alice"),
        Namespace::of(StorageScope::Agent, "other", "ses_a", "alice"),
        Namespace::of(StorageScope::Principal, "demo", "ses_a", "alice"),
        Namespace::of(StorageScope::Principal, "demo", "ses_a", "bob"),
        Namespace::of(StorageScope::Principal, "demo", "ses_a", "../../alice"),
        Namespace::of(StorageScope::Principal, "demo", "ses_a", ""),
        Namespace::of(StorageScope::Principal, "../demo", "ses_a", "alice"),
    ];
    for (i, space) in spaces.iter().enumerate() {
        done(
            name,
            put(&*storage, space, "k", json!(i), Condition::Absent, t0).await,
        );
    }
    for (i, space) in spaces.iter().enumerate() {
        let entry = storage.get(space, "k", t0).await.unwrap();
        assert_eq!(
            entry.map(|entry| (entry.value, entry.version)),
            Some((json!(i), 1)),
            "{name}: {space:?} keeps its own entry"
        );
        assert_eq!(storage.usage(space).await.unwrap().entries, 1);
    }
    storage
        .delete(&spaces[0], "k", Condition::Any, t0)
        .await
        .unwrap();
    for space in &spaces[1..] {
        assert!(
            storage.get(space, "k", t0).await.unwrap().is_some(),
            "{name}: a delete in one namespace leaves {space:?}"
        );
    }
}

/// Usage counts each namespace's entries and the bytes of their keys and values' JSON text;
/// the total counts every namespace.
pub async fn storage_usage_counts_entries_and_bytes(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let storage = store.storage();
    let t0 = now();
    let (one, two) = (agent_space("one"), agent_space("two"));
    assert_eq!(
        storage.total_usage().await.unwrap(),
        StorageUsage::default()
    );
    assert_eq!(storage.usage(&one).await.unwrap(), StorageUsage::default());
    let value = json!({"list": [1, 2, 3], "text": "héllo"});
    let text = crate::value_text(&value).unwrap();
    put(&*storage, &one, "key", value.clone(), Condition::Any, t0).await;
    put(&*storage, &one, "é", json!(true), Condition::Any, t0).await;
    put(&*storage, &two, "k", json!("ab"), Condition::Any, t0).await;
    let usage_one = StorageUsage {
        entries: 2,
        bytes: (3 + text.len() + "é".len() + 4) as u64,
    };
    assert_eq!(storage.usage(&one).await.unwrap(), usage_one, "{name}");
    let usage_two = StorageUsage {
        entries: 1,
        bytes: 1 + 4,
    };
    assert_eq!(storage.usage(&two).await.unwrap(), usage_two, "{name}");
    assert_eq!(
        storage.total_usage().await.unwrap(),
        StorageUsage {
            entries: 3,
            bytes: usage_one.bytes + usage_two.bytes
        },
        "{name}: the total counts every namespace"
    );
    put(&*storage, &one, "key", json!(1), Condition::Any, t0).await;
    assert_eq!(
        storage.usage(&one).await.unwrap(),
        StorageUsage {
            entries: 2,
            bytes: (3 + 1 + "é".len() + 4) as u64
        },
        "{name}: an overwrite counts its new value"
    );
    storage.delete(&one, "é", Condition::Any, t0).await.unwrap();
    assert_eq!(
        storage.usage(&one).await.unwrap(),
        StorageUsage {
            entries: 1,
            bytes: 3 + 1
        },
        "{name}: a delete uncounts"
    );
}

/// `delete_session_entries` removes one session's session-scope entries only; deleting a
/// session, by hand or by retention, removes them too.
pub async fn storage_session_entries_go_with_the_session(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let storage = store.storage();
    let t0 = now();
    let gone = super::meta("alice");
    let kept = super::meta("alice");
    let old = {
        let mut meta = super::meta("alice");
        meta.updated_at = Utc::now() - chrono::Duration::days(10);
        meta
    };
    for meta in [&gone, &kept, &old] {
        store.create_session(meta).await.unwrap();
        store.commit(&meta.session_id, None).await.unwrap();
    }
    let session = |meta: &crate::SessionMeta| session_space("demo", &meta.session_id);
    let other_agent = session_space("other", &gone.session_id);
    // A principal (or an agent) whose name is a session id is not that session's.
    let lookalikes = [
        Namespace::of(StorageScope::Principal, "demo", "x", &gone.session_id),
        Namespace::of(StorageScope::Agent, &gone.session_id, "x", "y"),
    ];
    let spaces: Vec<Namespace> = [session(&gone), session(&kept), session(&old), other_agent]
        .into_iter()
        .chain(lookalikes.clone())
        .collect();
    for space in &spaces {
        for key in ["a", "b"] {
            put(&*storage, space, key, json!(1), Condition::Any, t0).await;
        }
    }
    assert_eq!(
        storage
            .delete_session_entries(&gone.session_id)
            .await
            .unwrap(),
        4,
        "{name}: the session's entries, under every agent"
    );
    assert_eq!(
        keys(&*storage, &session(&gone), "", t0).await,
        Vec::<String>::new()
    );
    for space in [session(&kept), session(&old)].iter().chain(&lookalikes) {
        assert_eq!(
            keys(&*storage, space, "", t0).await,
            ["a", "b"],
            "{name}: {space:?} keeps its entries"
        );
    }
    put(
        &*storage,
        &session(&gone),
        "c",
        json!(1),
        Condition::Any,
        t0,
    )
    .await;
    store.delete_session(&gone.session_id).await.unwrap();
    assert_eq!(
        keys(&*storage, &session(&gone), "", t0).await,
        Vec::<String>::new(),
        "{name}: deleting a session removes its entries"
    );
    let week = Duration::from_secs(7 * 24 * 3600);
    let report = store
        .delete_expired_sessions(Utc::now() - week)
        .await
        .unwrap();
    assert_eq!(report.sessions, 1, "{name}: the old session expires");
    assert_eq!(
        keys(&*storage, &session(&old), "", t0).await,
        Vec::<String>::new(),
        "{name}: retention removes the session's entries"
    );
    assert_eq!(
        storage.total_usage().await.unwrap().entries,
        2 + 2 * lookalikes.len() as u64,
        "{name}: what is left"
    );
}

/// 16 tasks each add 1 to one counter 10 times with compare-and-set, retrying on conflict:
/// the counter ends at 160, at version 160.
pub async fn storage_compare_and_set_counts_every_increment(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let storage = store.storage();
    let space = agent_space("demo");
    let t0 = now();
    let tasks = (0..16).map(|_| {
        let (storage, space) = (storage.clone(), space.clone());
        tokio::spawn(async move {
            for _ in 0..10 {
                loop {
                    let current = storage.get(&space, "counter", t0).await.unwrap();
                    let (condition, count) = match &current {
                        None => (Condition::Absent, 0),
                        Some(entry) => (
                            Condition::Version(entry.version),
                            entry.value.as_u64().unwrap_or_default(),
                        ),
                    };
                    let written = storage
                        .put(&space, "counter", &json!(count + 1), condition, None, t0)
                        .await
                        .unwrap();
                    if matches!(written, Written::Done(_)) {
                        break;
                    }
                }
            }
        })
    });
    for task in futures::future::join_all(tasks).await {
        task.unwrap();
    }
    let counter = storage.get(&space, "counter", t0).await.unwrap().unwrap();
    assert_eq!(
        (counter.value, counter.version),
        (json!(160), 160),
        "{name}: no increment lost"
    );
}
