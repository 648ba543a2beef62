//! The suite's copy cases: what `folio store copy` relies on (whole sessions imported with
//! their indexes and times, create keys and storage entries listed in one order and written
//! back as they were, the copy marker) and the copy itself between two stores of the backend.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use folio_protocol::{Event, StorageEntry, StorageScope};
use serde_json::json;

use crate::copy::{CopyError, copy, verify};
use crate::storage::Namespace;
use crate::{CreateKey, SessionStore};

/// Now, in whole milliseconds (what every backend keeps exactly).
fn now() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap_or_default()
}

fn quiet(_: &'static str, _: u64) {}

/// Fills `store` with two sessions (one with a reminder), an artifact with contents, two create
/// keys and storage entries in three namespaces (one expired); the ids of the sessions.
async fn fill(store: &dyn SessionStore) -> [String; 2] {
    let t0 = now() - chrono::Duration::minutes(10);
    let mut ids = Vec::new();
    for (n, principal) in ["alice", "bob"].into_iter().enumerate() {
        let mut meta = super::meta(principal);
        meta.title = Some(format!("session {n}"));
        store.create_session(&meta).await.unwrap();
        let events = vec![
            super::text(None, "created"),
            crate::NewEvent {
                at: Some(t0 + chrono::Duration::seconds(n as i64)),
                ..super::text(Some("turn_1"), "an answer")
            },
        ];
        store
            .append(&meta.session_id, 0, None, events)
            .await
            .unwrap();
        meta.last_index = 1;
        store.commit(&meta.session_id, Some(&meta)).await.unwrap();
        ids.push(meta.session_id);
    }
    store
        .put_reminder(&folio_protocol::Reminder {
            reminder_id: "rem_1".into(),
            session_id: ids[0].clone(),
            at: t0 + chrono::Duration::hours(1),
            message: "wake up".into(),
            created_at: t0,
        })
        .await
        .unwrap();
    let record = folio_protocol::ArtifactRecord {
        id: format!("art_{:026}", 1),
        kind: "report".into(),
        key: "q1".into(),
        title: "Q1".into(),
        data: json!({ "n": 1 }),
        content_type: Some("text/plain".into()),
        session_id: Some(ids[0].clone()),
        created_at: t0,
        updated_at: t0,
    };
    store
        .put_artifact(&record, Some(b"contents"), 10)
        .await
        .unwrap();
    for (principal, key, session) in [("alice", "k1", &ids[0]), ("bob", "k2", &ids[1])] {
        let record = CreateKey {
            principal: principal.into(),
            key: key.into(),
            session_id: session.clone(),
            digest: format!("digest of {key}"),
        };
        assert_eq!(store.record_create_key(&record).await.unwrap(), None);
    }
    let storage = store.storage();
    let spaces = [
        Namespace::of(StorageScope::Session, "demo", &ids[0], "alice"),
        Namespace::of(StorageScope::Agent, "demo", &ids[0], "alice"),
        Namespace::of(StorageScope::Principal, "demo", &ids[0], "alice"),
    ];
    for (n, namespace) in spaces.iter().enumerate() {
        for key in ["b", "a"] {
            let expires = (n == 2 && key == "a").then_some(t0 + chrono::Duration::minutes(1));
            storage
                .put(
                    namespace,
                    key,
                    &json!({ "n": n, "key": key }),
                    crate::Condition::Any,
                    expires,
                    t0,
                )
                .await
                .unwrap();
        }
    }
    let deliveries = store.deliveries();
    for (n, id) in ["d1", "d2"].into_iter().enumerate() {
        let mut decision = serde_json::Map::new();
        decision.insert("run".into(), json!({ "n": n }));
        let delivery = crate::ReceivedDelivery {
            id: id.into(),
            received_at: t0 + chrono::Duration::seconds(n as i64),
            route: "/hook".into(),
            retry: None,
            decision,
        };
        deliveries
            .receive_delivery(
                "hooks",
                &delivery,
                "server",
                std::time::Duration::from_secs(60),
            )
            .await
            .unwrap();
    }
    deliveries
        .finish_delivery(
            "hooks",
            "d1",
            &crate::DeliveryOutcome {
                status: folio_protocol::DeliveryStatus::Accepted,
                session_id: Some(ids[0].clone()),
                message: None,
            },
        )
        .await
        .unwrap();
    deliveries
        .bind_continuation("hooks", "thread-1", &ids[0])
        .await
        .unwrap();
    deliveries
        .record_reply("hooks", &ids[0], "turn_1", None)
        .await
        .unwrap();
    [ids[0].clone(), ids[1].clone()]
}

/// A session imported whole reads back event for event, with its indexes, turn ids and
/// times, in place of what its id held; the copy marker is kept until removed.
pub async fn sessions_import_whole(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let meta = super::meta("alice");
    let id = &meta.session_id;
    let at = now() - chrono::Duration::days(3);
    let events: Vec<Event> = (0..3u64)
        .map(|index| Event {
            index,
            session_id: id.clone(),
            turn_id: (index > 0).then(|| "turn_a".to_string()),
            at: at + chrono::Duration::milliseconds(index as i64),
            body: super::text(None, &format!("event {index}")).body,
        })
        .collect();
    store.import_session(&meta, &events).await.unwrap();
    assert_eq!(store.load_session(id).await.unwrap(), Some(meta.clone()));
    assert_eq!(
        store.read_events(id, 0, None).await.unwrap(),
        events,
        "{name}: an imported log reads back as given"
    );
    let mut shorter = meta.clone();
    shorter.title = Some("again".into());
    store.import_session(&shorter, &events[..1]).await.unwrap();
    assert_eq!(store.load_session(id).await.unwrap(), Some(shorter));
    assert_eq!(
        store.read_events(id, 0, None).await.unwrap(),
        events[..1],
        "{name}: an import replaces the whole session"
    );
    let appended = store
        .append(id, 1, None, vec![super::text(None, "after")])
        .await
        .unwrap();
    assert_eq!(appended[0].index, 1, "{name}: appends continue its log");
    assert_eq!(store.copy_marker().await.unwrap(), None);
    store.set_copy_marker(Some("a copy")).await.unwrap();
    assert_eq!(
        store.copy_marker().await.unwrap().as_deref(),
        Some("a copy")
    );
    store.set_copy_marker(None).await.unwrap();
    assert_eq!(store.copy_marker().await.unwrap(), None, "{name}: removed");
}

/// Create keys are listed by principal then key, a page at a time.
pub async fn create_keys_are_listed_in_order(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let mut expected = Vec::new();
    for (principal, key) in [("bob", "a"), ("alice", "b"), ("alice", "a"), ("Zed", "z")] {
        let record = CreateKey {
            principal: principal.into(),
            key: key.into(),
            session_id: crate::new_session_id(),
            digest: "d".into(),
        };
        store.record_create_key(&record).await.unwrap();
        expected.push(record);
    }
    expected.sort_by(|a, b| (&a.principal, &a.key).cmp(&(&b.principal, &b.key)));
    let mut listed = Vec::new();
    let mut after: Option<(String, String)> = None;
    loop {
        let cursor = after.as_ref().map(|(p, k)| (p.as_str(), k.as_str()));
        let page = store.list_create_keys(cursor, 3).await.unwrap();
        after = page
            .last()
            .map(|last| (last.principal.clone(), last.key.clone()));
        let more = page.len() == 3;
        listed.extend(page);
        if !more {
            break;
        }
    }
    assert_eq!(listed, expected, "{name}: every create key, in byte order");
}

/// Storage entries are exported by namespace and key (expired ones too) and imported with
/// their versions and times.
pub async fn storage_exports_and_imports_entries(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let storage = store.storage();
    let t0 = now();
    let entry = |key: &str, version: u64| StorageEntry {
        key: key.into(),
        value: json!({ "key": key }),
        version,
        updated_at: t0,
        expires_at: (key == "old").then_some(t0 - chrono::Duration::minutes(1)),
    };
    let spaces = [
        Namespace::of(StorageScope::Session, "demo", "ses_x", "p"),
        Namespace::of(StorageScope::Agent, "demo", "ses_x", "p"),
        Namespace::of(StorageScope::Principal, "demo", "ses_x", "p"),
        Namespace::of(StorageScope::Principal, "demo", "ses_x", "o"),
    ];
    let mut expected = Vec::new();
    for namespace in &spaces {
        for (key, version) in [("b", 7), ("a", 2), ("old", 1)] {
            storage
                .import(namespace, &entry(key, version))
                .await
                .unwrap();
            expected.push((namespace.clone(), entry(key, version)));
        }
    }
    expected.sort_by(|(a, x), (b, y)| {
        (a.scope.as_str(), &a.agent, &a.owner, &x.key).cmp(&(
            b.scope.as_str(),
            &b.agent,
            &b.owner,
            &y.key,
        ))
    });
    let mut exported = Vec::new();
    let mut after = None;
    loop {
        let page = storage.export(after.as_ref(), 5).await.unwrap();
        after = page
            .last()
            .map(|(namespace, entry)| (namespace.clone(), entry.key.clone()));
        let more = page.len() == 5;
        exported.extend(page);
        if !more {
            break;
        }
    }
    assert_eq!(
        exported, expected,
        "{name}: every entry, by scope name, agent, owner and key, as imported"
    );
}

/// Everything copied from one store into another compares equal; a second copy skips the
/// sessions already there; a difference is found and named, and copying again repairs it.
pub async fn a_copy_is_identical_and_resumable(
    from: Arc<dyn SessionStore>,
    to: Arc<dyn SessionStore>,
) {
    let name = from.backend();
    let ids = fill(&*from).await;
    let counts = copy(&*from, &*to, &quiet).await.unwrap();
    assert_eq!(
        (
            counts.sessions,
            counts.events,
            counts.reminders,
            counts.artifacts,
            counts.create_keys,
            counts.storage_entries,
            counts.deliveries
        ),
        (2, 4, 1, 1, 2, 6, 2),
        "{name}: everything is copied"
    );
    let verified = verify(&*from, &*to, &quiet).await.unwrap();
    assert_eq!(
        (verified.sessions, verified.events, verified.deliveries),
        (2, 4, 2)
    );
    assert_eq!(
        to.deliveries().export_channel("hooks").await.unwrap(),
        from.deliveries().export_channel("hooks").await.unwrap(),
        "{name}: the channel's record is copied"
    );
    let pending = to
        .deliveries()
        .claim_deliveries("hooks", "another", std::time::Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        pending.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(),
        ["d2"],
        "{name}: a pending delivery is claimed on the destination"
    );
    for id in &ids {
        assert_eq!(
            to.read_events(id, 0, None).await.unwrap(),
            from.read_events(id, 0, None).await.unwrap(),
            "{name}: event for event"
        );
    }
    let again = copy(&*from, &*to, &quiet).await.unwrap();
    assert_eq!(
        (again.sessions, again.sessions_skipped),
        (0, 2),
        "{name}: a second copy skips the sessions it copied"
    );
    to.append(&ids[1], 2, None, vec![super::text(None, "extra")])
        .await
        .unwrap();
    to.commit(&ids[1], None).await.unwrap();
    match verify(&*from, &*to, &quiet).await {
        Err(CopyError::Differ(message)) => assert!(
            message.contains(&ids[1]),
            "{name}: the difference names the session: {message}"
        ),
        other => panic!("{name}: a longer log is a difference, got {other:?}"),
    }
    let repaired = copy(&*from, &*to, &quiet).await.unwrap();
    assert_eq!((repaired.sessions, repaired.sessions_skipped), (1, 1));
    verify(&*from, &*to, &quiet).await.unwrap();
}
