//! The conformance suite every [`SessionStore`] backend runs from its own tests: one suite, so
//! the disk store and PostgreSQL promise the same things.
//!
//! Each case takes a fresh, empty store; [`run_all`] runs every case, each on a store its
//! factory makes:
//!
//! ```no_run
//! # async fn backend_passes(make: impl AsyncFn() -> std::sync::Arc<dyn folio_store::SessionStore>) {
//! folio_store::suite::run_all(make).await;
//! # }
//! ```
//!
//! A case panics (with the backend's name and what broke) when the store breaks a promise.
//! The storage cases ([`SessionStore::storage`]) are in [`storage`], those `folio store copy`
//! relies on in [`copy`].

pub mod copy;
pub mod storage;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use folio_protocol::{EventBody, MessageCompleted, SessionMode, SessionStatus, SessionWaiting};
use futures::StreamExt;

use crate::{
    Admitted, Continuation, CreateKey, DeliveryOutcome, FieldFilter, Followed, ListQuery, MetaKey,
    NewEvent, ReceivedDelivery, SessionFilter, SessionMeta, SessionStore, Signal, StoreError,
    TimeRange,
};

/// How long a case waits for something a store must do promptly (a followed append).
const PATIENCE: Duration = Duration::from_secs(10);

/// Runs every case of the suite, each on a fresh store from `make`.
pub async fn run_all(make: impl AsyncFn() -> Arc<dyn SessionStore>) {
    sessions_round_trip(make().await).await;
    lists_are_newest_first_per_principal(make().await).await;
    lists_filter_by_status_times_and_fields(make().await).await;
    deletes_remove_everything(make().await).await;
    appends_are_ordered_and_read_back(make().await).await;
    concurrent_appenders_never_interleave(make().await).await;
    followers_see_every_append(make().await).await;
    leases_exclude_and_expire(make().await).await;
    a_taken_over_lease_is_fenced(make().await).await;
    a_slot_is_claimed_once(make().await).await;
    a_create_key_is_recorded_once(make().await).await;
    retention_deletes_old_idle_sessions(make().await).await;
    signals_reach_every_follower(make().await).await;
    reminders_are_kept_until_removed(make().await).await;
    artifacts_upsert_by_kind_and_key(make().await).await;
    deliveries_are_new_once_a_day_and_claimed(make().await).await;
    concurrent_receivers_admit_an_id_once(make().await).await;
    a_continuation_key_opens_one_session(make().await).await;
    a_session_is_followed_by_one_server(make().await).await;
    mcp_credentials_are_kept_per_principal_and_connection(make().await).await;
    unacknowledged_creates_are_deleted(make().await).await;
    storage::storage_round_trips_with_versions(make().await).await;
    storage::storage_conditions_conflict_without_writing(make().await).await;
    storage::storage_entries_expire(make().await).await;
    storage::storage_lists_by_prefix_in_byte_order(make().await).await;
    storage::storage_namespaces_are_isolated(make().await).await;
    storage::storage_usage_counts_entries_and_bytes(make().await).await;
    storage::storage_session_entries_go_with_the_session(make().await).await;
    storage::storage_compare_and_set_counts_every_increment(make().await).await;
    copy::sessions_import_whole(make().await).await;
    copy::create_keys_are_listed_in_order(make().await).await;
    copy::storage_exports_and_imports_entries(make().await).await;
    copy::a_copy_is_identical_and_resumable(make().await, make().await).await;
}

/// A chat session of `principal` with a fresh id, status `running`.
pub fn meta(principal: &str) -> SessionMeta {
    let now = Utc::now();
    SessionMeta {
        session_id: crate::new_session_id(),
        mode: SessionMode::Chat,
        status: SessionStatus::Running,
        channel: "http".into(),
        principal: principal.into(),
        title: None,
        created_at: now,
        updated_at: now,
        token_hash: None,
        turns: 1,
        last_index: 0,
        usage: Default::default(),
        accepted_keys: Vec::new(),
        purpose: None,
        dry_run: false,
        peer_depth: 0,
        continuation_key: None,
        workspace_root: None,
        variant: None,
    }
}

fn text(turn: Option<&str>, text: &str) -> NewEvent {
    NewEvent::new(
        turn,
        EventBody::MessageCompleted(MessageCompleted { text: text.into() }),
    )
}

fn text_of(body: &EventBody) -> &str {
    match body {
        EventBody::MessageCompleted(m) => &m.text,
        _ => "",
    }
}

/// Metadata is created once, loaded back equal, replaced by `save` and by `commit`.
pub async fn sessions_round_trip(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let mut meta = meta("alice");
    meta.title = Some("a title".into());
    assert_eq!(store.load_session(&meta.session_id).await.unwrap(), None);
    store.create_session(&meta).await.unwrap();
    store.commit(&meta.session_id, None).await.unwrap();
    assert_eq!(
        store.load_session(&meta.session_id).await.unwrap(),
        Some(meta.clone()),
        "{name}: a created session loads back"
    );
    assert!(
        matches!(
            store.create_session(&meta).await,
            Err(StoreError::AlreadyExists(_))
        ),
        "{name}: a second create with the same id is refused"
    );
    meta.status = SessionStatus::Waiting;
    meta.turns = 3;
    store.save_session(&meta).await.unwrap();
    assert_eq!(
        store.load_session(&meta.session_id).await.unwrap(),
        Some(meta.clone()),
        "{name}: save replaces the metadata"
    );
    meta.token_hash = Some("ab".repeat(32));
    store.commit(&meta.session_id, Some(&meta)).await.unwrap();
    assert_eq!(
        store.load_session(&meta.session_id).await.unwrap(),
        Some(meta.clone()),
        "{name}: commit with metadata replaces it"
    );
    let missing = self::meta("alice");
    assert!(
        matches!(
            store.save_session(&missing).await,
            Err(StoreError::NotFound(_))
        ),
        "{name}: saving a session that does not exist is refused"
    );
}

/// Lists are newest first, per principal, paged by a `before` cursor.
pub async fn lists_are_newest_first_per_principal(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let mut alices = Vec::new();
    for n in 0..7 {
        let meta = meta(if n % 3 == 2 { "bob" } else { "alice" });
        store.create_session(&meta).await.unwrap();
        store.commit(&meta.session_id, None).await.unwrap();
        if meta.principal == "alice" {
            alices.push(meta.session_id);
        }
    }
    alices.sort_unstable_by(|a, b| b.cmp(a));
    let page = |before: Option<String>, limit| ListQuery {
        principal: Some("alice".into()),
        before,
        limit,
        ..Default::default()
    };
    let ids = |metas: Vec<SessionMeta>| -> Vec<String> {
        metas.into_iter().map(|meta| meta.session_id).collect()
    };
    let all = ids(store.list_sessions(&page(None, 100)).await.unwrap());
    assert_eq!(all, alices, "{name}: alice's sessions, newest first");
    let first = ids(store.list_sessions(&page(None, 2)).await.unwrap());
    assert_eq!(first, alices[..2], "{name}: a page holds `limit` sessions");
    let rest = ids(store
        .list_sessions(&page(first.last().cloned(), 100))
        .await
        .unwrap());
    assert_eq!(rest, alices[2..], "{name}: the cursor continues the list");
    let every = store
        .list_sessions(&ListQuery {
            principal: None,
            before: None,
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(every.len(), 7, "{name}: without a principal, every session");
    assert!(
        every.windows(2).all(|w| w[0].session_id > w[1].session_id),
        "{name}: every principal's sessions, newest first"
    );
}

/// Every filter of a list (status, created and updated ranges, a metadata field with or
/// without a value, with a principal or not) returns exactly the matching sessions, newest
/// first, and pages through them with the cursor; a metadata change moves a session between
/// filters.
pub async fn lists_filter_by_status_times_and_fields(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let base: DateTime<Utc> = "2026-01-01T00:00:00Z".parse().unwrap();
    let hours = |n: i64| base + chrono::Duration::hours(n);
    let statuses = [
        SessionStatus::Running,
        SessionStatus::Waiting,
        SessionStatus::Completed,
        SessionStatus::Failed,
    ];
    let mut metas = Vec::new();
    for n in 0..12_i64 {
        let mut meta = meta(if n % 3 == 0 { "bob" } else { "alice" });
        meta.created_at = hours(n);
        meta.updated_at = hours(n + 30 - 2 * n);
        meta.channel = if n % 2 == 0 {
            "http".into()
        } else {
            "slack".into()
        };
        meta.variant = (n % 4 != 0).then(|| if n % 4 == 1 { "a" } else { "b" }.to_string());
        meta.purpose = (n == 5).then(|| "eval".to_string());
        meta.continuation_key = (n % 5 == 0).then(|| format!("thread-{n}"));
        meta.title = Some(format!("session {n}"));
        store.create_session(&meta).await.unwrap();
        store.commit(&meta.session_id, None).await.unwrap();
        meta.status = statuses[n as usize % 4];
        store.save_session(&meta).await.unwrap();
        metas.push(meta);
    }
    // One session changes status, field and update time after it was listed once.
    let changed = &mut metas[4];
    changed.status = SessionStatus::Completed;
    changed.variant = Some("c".into());
    changed.updated_at = hours(100);
    store
        .commit(&changed.session_id, Some(&changed.clone()))
        .await
        .unwrap();
    metas.sort_by(|a, b| b.session_id.cmp(&a.session_id));
    let field = |key, value: Option<&str>| {
        Some(FieldFilter {
            key,
            value: value.map(str::to_string),
        })
    };
    let filters = [
        SessionFilter {
            status: Some(SessionStatus::Running),
            ..Default::default()
        },
        SessionFilter {
            status: Some(SessionStatus::Completed),
            ..Default::default()
        },
        SessionFilter {
            created: TimeRange {
                from: Some(hours(3)),
                until: Some(hours(9)),
            },
            ..Default::default()
        },
        SessionFilter {
            created: TimeRange {
                from: Some(hours(6)),
                until: None,
            },
            ..Default::default()
        },
        SessionFilter {
            updated: TimeRange {
                from: None,
                until: Some(hours(25)),
            },
            ..Default::default()
        },
        SessionFilter {
            updated: TimeRange {
                from: Some(hours(99)),
                until: Some(hours(101)),
            },
            ..Default::default()
        },
        SessionFilter {
            field: field(MetaKey::Variant, None),
            ..Default::default()
        },
        SessionFilter {
            field: field(MetaKey::Variant, Some("b")),
            ..Default::default()
        },
        SessionFilter {
            field: field(MetaKey::Variant, Some("c")),
            ..Default::default()
        },
        SessionFilter {
            field: field(MetaKey::Channel, Some("slack")),
            ..Default::default()
        },
        SessionFilter {
            field: field(MetaKey::Purpose, Some("eval")),
            ..Default::default()
        },
        SessionFilter {
            field: field(MetaKey::ContinuationKey, None),
            ..Default::default()
        },
        SessionFilter {
            status: Some(SessionStatus::Waiting),
            field: field(MetaKey::Channel, Some("slack")),
            created: TimeRange {
                from: Some(hours(1)),
                until: None,
            },
            ..Default::default()
        },
    ];
    for filter in &filters {
        for principal in [None, Some("alice"), Some("nobody")] {
            let expected: Vec<String> = metas
                .iter()
                .filter(|meta| principal.is_none_or(|p| meta.principal == p))
                .filter(|meta| filter.matches(*meta))
                .map(|meta| meta.session_id.clone())
                .collect();
            let query = |before: Option<String>, limit| ListQuery {
                principal: principal.map(str::to_string),
                before,
                limit,
                filter: filter.clone(),
            };
            let whole: Vec<String> = store
                .list_sessions(&query(None, 100))
                .await
                .unwrap()
                .into_iter()
                .map(|meta| meta.session_id)
                .collect();
            assert_eq!(whole, expected, "{name}: {filter:?} of {principal:?}");
            let mut paged = Vec::new();
            let mut before = None;
            loop {
                let page = store.list_sessions(&query(before, 2)).await.unwrap();
                assert!(page.len() <= 2, "{name}: a page holds at most `limit`");
                paged.extend(page.iter().map(|meta| meta.session_id.clone()));
                if page.len() < 2 {
                    break;
                }
                before = page.last().map(|meta| meta.session_id.clone());
            }
            assert_eq!(
                paged, expected,
                "{name}: {filter:?} of {principal:?}, paged by 2"
            );
        }
    }
    assert!(
        filters
            .iter()
            .all(|filter| metas.iter().any(|meta| filter.matches(meta))),
        "every filter of the case matches some session"
    );
    let listed = store
        .list_sessions(&ListQuery {
            limit: 100,
            filter: SessionFilter {
                field: field(MetaKey::Variant, Some("c")),
                ..Default::default()
            },
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        listed.iter().map(|meta| &meta.title).collect::<Vec<_>>(),
        [&Some("session 4".to_string())],
        "{name}: a listed session is its metadata as last written"
    );
}

/// A deleted session is gone: metadata, log, lease; it is not listed and cannot be appended to.
pub async fn deletes_remove_everything(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let kept = meta("alice");
    let gone = meta("alice");
    for meta in [&kept, &gone] {
        store.create_session(meta).await.unwrap();
        store
            .append(&meta.session_id, 0, None, vec![text(None, "hi")])
            .await
            .unwrap();
        store.commit(&meta.session_id, None).await.unwrap();
    }
    let mut follower = store.follow(&gone.session_id).await.unwrap();
    store
        .acquire_lease(&gone.session_id, "a", Duration::from_secs(60))
        .await
        .unwrap();
    store.delete_session(&gone.session_id).await.unwrap();
    assert_eq!(store.load_session(&gone.session_id).await.unwrap(), None);
    assert!(
        matches!(
            store.read_events(&gone.session_id, 0, None).await,
            Err(StoreError::NotFound(_))
        ),
        "{name}: a deleted session's log is gone"
    );
    assert!(
        matches!(
            store
                .append(&gone.session_id, 1, None, vec![text(None, "late")])
                .await,
            Err(StoreError::NotFound(_))
        ),
        "{name}: a deleted session cannot be appended to"
    );
    assert!(
        matches!(
            store.delete_session(&gone.session_id).await,
            Err(StoreError::NotFound(_))
        ),
        "{name}: deleting twice says it is gone"
    );
    let listed = store
        .list_sessions(&ListQuery {
            principal: Some("alice".into()),
            before: None,
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        listed,
        vec![kept.clone()],
        "{name}: only the kept one is listed"
    );
    assert_eq!(
        store
            .read_events(&kept.session_id, 0, None)
            .await
            .unwrap()
            .len(),
        1,
        "{name}: the other session keeps its log"
    );
    let ended =
        tokio::time::timeout(PATIENCE, async { while follower.next().await.is_some() {} }).await;
    assert!(ended.is_ok(), "{name}: a deleted session's followers end");
    assert!(
        store
            .expired_leases()
            .await
            .unwrap()
            .iter()
            .all(|lease| lease.session_id != gone.session_id),
        "{name}: a deleted session's lease is gone"
    );
}

/// Appends get consecutive indexes from 0 and read back whole, from any start index; an append
/// at the wrong index is a conflict that appends nothing.
pub async fn appends_are_ordered_and_read_back(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let meta = meta("alice");
    let id = &meta.session_id;
    store.create_session(&meta).await.unwrap();
    assert_eq!(store.last_event(id).await.unwrap(), None);
    let first = store
        .append(
            id,
            0,
            None,
            vec![text(Some("turn_1"), "a"), text(None, "b")],
        )
        .await
        .unwrap();
    assert_eq!(
        first.iter().map(|e| e.index).collect::<Vec<_>>(),
        [0, 1],
        "{name}: indexes from 0"
    );
    assert!(first.iter().all(|e| &e.session_id == id));
    assert_eq!(first[0].turn_id.as_deref(), Some("turn_1"));
    match store.append(id, 5, None, vec![text(None, "x")]).await {
        Err(StoreError::Conflict {
            expected, actual, ..
        }) => assert_eq!(
            (expected, actual),
            (5, 2),
            "{name}: the conflict says where"
        ),
        other => panic!("{name}: an append at the wrong index must conflict, got {other:?}"),
    }
    store
        .append(id, 2, None, vec![text(None, "c")])
        .await
        .unwrap();
    store
        .append(
            id,
            3,
            None,
            vec![NewEvent::new(
                None,
                EventBody::SessionWaiting(SessionWaiting {}),
            )],
        )
        .await
        .unwrap();
    store.commit(id, None).await.unwrap();
    let all = store.read_events(id, 0, None).await.unwrap();
    assert_eq!(
        all.iter().map(|e| text_of(&e.body)).collect::<Vec<_>>(),
        ["a", "b", "c", ""],
        "{name}: everything appended, in order, nothing from the refused append"
    );
    assert_eq!(all[..2], first[..], "{name}: events read back as appended");
    let tail = store.read_events(id, 2, Some(1)).await.unwrap();
    assert_eq!(tail, all[2..3], "{name}: a range from a start index");
    assert!(store.read_events(id, 9, None).await.unwrap().is_empty());
    assert_eq!(store.last_event(id).await.unwrap().as_ref(), all.last());
    let (stored, since) = store
        .read_back(id, 2)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{name}: read back a session that exists"));
    assert_eq!(
        (stored.session_id.as_str(), since.as_slice()),
        (id.as_str(), &all[2..]),
        "{name}: read back from an index: the metadata and the events from there"
    );
    let (_, past_the_end) = store.read_back(id, 9).await.unwrap().unwrap();
    assert!(
        past_the_end.is_empty(),
        "{name}: nothing read back past the log's end"
    );
    assert!(
        store
            .read_back("ses_00000000000000000000000000", 0)
            .await
            .unwrap()
            .is_none(),
        "{name}: reading back a session that does not exist answers none"
    );
    assert!(
        matches!(
            store
                .append(
                    "ses_00000000000000000000000000",
                    0,
                    None,
                    vec![text(None, "x")]
                )
                .await,
            Err(StoreError::NotFound(_))
        ),
        "{name}: appending to a session that does not exist is refused"
    );
}

/// Many writers racing on one log: every append lands exactly once, a batch is never split
/// or interleaved, indexes have no gaps, each writer's appends keep their order.
pub async fn concurrent_appenders_never_interleave(store: Arc<dyn SessionStore>) {
    const WRITERS: usize = 8;
    const BATCHES: usize = 12;
    let name = store.backend();
    let meta = meta("alice");
    store.create_session(&meta).await.unwrap();
    let writers = (0..WRITERS).map(|writer| {
        let store = store.clone();
        let id = meta.session_id.clone();
        tokio::spawn(async move {
            for batch in 0..BATCHES {
                let events = || {
                    vec![
                        text(None, &format!("{writer}:{batch}:0")),
                        text(None, &format!("{writer}:{batch}:1")),
                    ]
                };
                loop {
                    let next = store
                        .last_event(&id)
                        .await
                        .unwrap()
                        .map_or(0, |e| e.index + 1);
                    match store.append(&id, next, None, events()).await {
                        Ok(_) => break,
                        Err(StoreError::Conflict { .. }) => tokio::task::yield_now().await,
                        Err(err) => panic!("append failed: {err}"),
                    }
                }
            }
        })
    });
    for writer in futures::future::join_all(writers).await {
        writer.unwrap();
    }
    store.commit(&meta.session_id, None).await.unwrap();
    let events = store.read_events(&meta.session_id, 0, None).await.unwrap();
    assert_eq!(
        events.len(),
        WRITERS * BATCHES * 2,
        "{name}: every append once"
    );
    assert!(
        events.iter().enumerate().all(|(n, e)| e.index == n as u64),
        "{name}: indexes 0.. without gaps"
    );
    let texts: Vec<&str> = events.iter().map(|e| text_of(&e.body)).collect();
    for pair in texts.chunks(2) {
        let first = pair[0].strip_suffix(":0");
        assert_eq!(
            first.map(|batch| format!("{batch}:1")).as_deref(),
            Some(pair[1]),
            "{name}: a batch is never split: {pair:?}"
        );
    }
    for writer in 0..WRITERS {
        let own: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| t.starts_with(&format!("{writer}:")) && t.ends_with(":0"))
            .collect();
        let expected: Vec<String> = (0..BATCHES).map(|b| format!("{writer}:{b}:0")).collect();
        assert_eq!(
            own, expected,
            "{name}: writer {writer}'s appends in its order"
        );
    }
}

/// A follower sees every append made after it subscribed, by index, up to the last.
pub async fn followers_see_every_append(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let meta = meta("alice");
    let id = &meta.session_id;
    store.create_session(&meta).await.unwrap();
    store
        .append(id, 0, None, vec![text(None, "before")])
        .await
        .unwrap();
    let mut follower = store.follow(id).await.unwrap();
    let writer = {
        let store = store.clone();
        let id = id.clone();
        tokio::spawn(async move {
            for n in 1..=20u64 {
                store
                    .append(&id, n, None, vec![text(None, &n.to_string())])
                    .await
                    .unwrap();
                store.commit(&id, None).await.unwrap();
            }
        })
    };
    let mut seen = Vec::new();
    let caught_up = tokio::time::timeout(PATIENCE, async {
        while let Some(index) = follower.next().await {
            seen.push(index);
            if index == 20 {
                return;
            }
        }
    })
    .await;
    writer.await.unwrap();
    assert!(
        caught_up.is_ok(),
        "{name}: the follower reached the last index; it saw {seen:?}"
    );
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]) && seen.first().is_some_and(|&i| i >= 1),
        "{name}: indexes increase and start after the subscription: {seen:?}"
    );
}

/// One owner at a time: a live lease refuses others, can be renewed and released, and once
/// expired is listed and can be taken over.
pub async fn leases_exclude_and_expire(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let meta = meta("alice");
    let id = &meta.session_id;
    store.create_session(&meta).await.unwrap();
    let long = Duration::from_secs(60);
    let a = store.acquire_lease(id, "server-a", long).await.unwrap();
    assert_eq!(
        (a.owner.as_str(), a.took_over.as_deref()),
        ("server-a", None)
    );
    match store.acquire_lease(id, "server-b", long).await {
        Err(StoreError::LeaseHeld { owner, .. }) => {
            assert_eq!(owner, "server-a", "{name}: the refusal names the owner")
        }
        other => panic!("{name}: a live lease must refuse another owner, got {other:?}"),
    }
    let renewed = store.renew_lease(&a, long).await.unwrap();
    assert_eq!(renewed.fence, a.fence, "{name}: a renewal keeps the token");
    assert!(renewed.expires_at >= a.expires_at);
    assert!(store.expired_leases().await.unwrap().is_empty());
    store.release_lease(&renewed).await.unwrap();
    let b = store.acquire_lease(id, "server-b", long).await.unwrap();
    assert!(b.fence > a.fence, "{name}: tokens only grow");
    assert_eq!(
        b.took_over, None,
        "{name}: a released lease is not taken over"
    );
    store.release_lease(&b).await.unwrap();
    let short = store
        .acquire_lease(id, "server-c", Duration::from_millis(100))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let expired = store.expired_leases().await.unwrap();
    assert_eq!(
        expired
            .iter()
            .map(|l| (&*l.session_id, &*l.owner))
            .collect::<Vec<_>>(),
        [(id.as_str(), "server-c")],
        "{name}: an expired lease is listed for takeover"
    );
    let d = store.acquire_lease(id, "server-d", long).await.unwrap();
    assert_eq!(
        d.took_over.as_deref(),
        Some("server-c"),
        "{name}: taken over"
    );
    assert!(d.fence > short.fence);
    assert!(store.expired_leases().await.unwrap().is_empty());
}

/// After a takeover, the old owner's fencing token is refused on append and on renewal; the
/// new owner's works.
pub async fn a_taken_over_lease_is_fenced(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let meta = meta("alice");
    let id = &meta.session_id;
    store.create_session(&meta).await.unwrap();
    let old = store
        .acquire_lease(id, "server-a", Duration::from_millis(100))
        .await
        .unwrap();
    store
        .append(id, 0, Some(old.fence), vec![text(None, "a")])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    store
        .append(
            id,
            1,
            Some(old.fence),
            vec![text(None, "late but not taken over")],
        )
        .await
        .expect("an expired lease nobody took over still fences its owner's appends");
    let new = store
        .acquire_lease(id, "server-b", Duration::from_secs(60))
        .await
        .unwrap();
    match store
        .append(id, 2, Some(old.fence), vec![text(None, "stale")])
        .await
    {
        Err(StoreError::Fenced { fence, .. }) => assert_eq!(fence, old.fence),
        other => panic!("{name}: a stale token's append must be fenced, got {other:?}"),
    }
    assert!(
        matches!(
            store.renew_lease(&old, Duration::from_secs(60)).await,
            Err(StoreError::Fenced { .. })
        ),
        "{name}: a taken-over lease cannot be renewed"
    );
    store.release_lease(&old).await.unwrap();
    store
        .append(id, 2, Some(new.fence), vec![text(None, "new owner")])
        .await
        .expect("releasing a taken-over lease leaves the new one");
    store.release_lease(&new).await.unwrap();
    assert!(
        matches!(
            store
                .append(id, 3, Some(new.fence), vec![text(None, "x")])
                .await,
            Err(StoreError::Fenced { .. })
        ),
        "{name}: a released lease's token is refused"
    );
    let texts: Vec<String> = store
        .read_events(id, 0, None)
        .await
        .unwrap()
        .iter()
        .map(|e| text_of(&e.body).to_string())
        .collect();
    assert_eq!(texts, ["a", "late but not taken over", "new owner"]);
}

/// However many servers race for one slot, exactly one claims it; other slots and other
/// schedules are separate.
pub async fn a_slot_is_claimed_once(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let slot: DateTime<Utc> = "2026-12-01T09:00:00Z".parse().unwrap();
    let claims = (0..16).map(|n| {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .claim_slot("nightly", slot, &format!("server-{n}"))
                .await
                .unwrap()
        })
    });
    let won: usize = futures::future::join_all(claims)
        .await
        .into_iter()
        .map(|claimed| usize::from(claimed.unwrap()))
        .sum();
    assert_eq!(won, 1, "{name}: exactly one claimer wins the slot");
    assert!(!store.claim_slot("nightly", slot, "late").await.unwrap());
    let next = slot + chrono::Duration::hours(1);
    assert!(store.claim_slot("nightly", next, "a").await.unwrap());
    assert!(store.claim_slot("weekly", slot, "a").await.unwrap());
}

/// A create key is recorded once per principal; a retry gets the first record back.
pub async fn a_create_key_is_recorded_once(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let record = |principal: &str, session: &str| CreateKey {
        principal: principal.into(),
        key: "msg-1".into(),
        session_id: session.into(),
        digest: format!("digest-of-{session}"),
    };
    let first = record("alice", "ses_1");
    assert_eq!(store.record_create_key(&first).await.unwrap(), None);
    assert_eq!(
        store
            .record_create_key(&record("alice", "ses_2"))
            .await
            .unwrap(),
        Some(first),
        "{name}: a retry finds the first create"
    );
    assert_eq!(
        store
            .record_create_key(&record("bob", "ses_3"))
            .await
            .unwrap(),
        None,
        "{name}: keys are per principal"
    );
    let racers = (0..8).map(|n| {
        let store = store.clone();
        let racer = record("carol", &format!("ses_c{n}"));
        tokio::spawn(async move { store.record_create_key(&racer).await.unwrap() })
    });
    let recorded = futures::future::join_all(racers)
        .await
        .into_iter()
        .filter(|answer| answer.as_ref().unwrap().is_none())
        .count();
    assert_eq!(recorded, 1, "{name}: exactly one racer records the key");
    let kept = store
        .record_create_key(&record("carol", "ses_again"))
        .await
        .unwrap()
        .expect("recorded");
    assert!(
        kept.session_id.starts_with("ses_c"),
        "{name}: a racer's record is kept"
    );
}

/// Retention deletes the sessions idle for longer than the period, with their events; a
/// recent session stays, and so does an old one whose turn a server holds a lease on.
pub async fn retention_deletes_old_idle_sessions(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let long_ago = Utc::now() - chrono::Duration::days(10);
    let old = |principal: &str| {
        let mut meta = meta(principal);
        meta.created_at = long_ago;
        meta.updated_at = long_ago;
        meta
    };
    let expired = old("alice");
    let leased = old("alice");
    let recent = meta("alice");
    for meta in [&expired, &leased, &recent] {
        store.create_session(meta).await.unwrap();
        store
            .append(
                &meta.session_id,
                0,
                None,
                vec![text(None, "a"), text(None, "b")],
            )
            .await
            .unwrap();
        store.commit(&meta.session_id, None).await.unwrap();
    }
    let lease = store
        .acquire_lease(&leased.session_id, "server-a", Duration::from_secs(60))
        .await
        .unwrap();
    let week = Duration::from_secs(7 * 24 * 3600);
    let report = store
        .delete_expired_sessions(Utc::now() - week)
        .await
        .unwrap();
    assert_eq!(
        (report.sessions, report.events),
        (1, 2),
        "{name}: one session idle past the period, with its two events"
    );
    assert_eq!(
        store.load_session(&expired.session_id).await.unwrap(),
        None,
        "{name}: the expired session is gone"
    );
    for kept in [&leased, &recent] {
        assert!(
            store
                .load_session(&kept.session_id)
                .await
                .unwrap()
                .is_some(),
            "{name}: a leased or recent session stays"
        );
    }
    store.release_lease(&lease).await.unwrap();
    let again = store
        .delete_expired_sessions(Utc::now() - week)
        .await
        .unwrap();
    assert_eq!(
        again.sessions, 1,
        "{name}: once its lease is released, the old session goes too"
    );
}

/// A signal reaches every follower with its session and message. A backend may miss signals
/// sent while its notification connection is still coming up, so the case repeats the signal
/// until both followers have heard it, as a server repeats a stop until the turn ends.
pub async fn signals_reach_every_follower(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let meta = meta("alice");
    store.create_session(&meta).await.unwrap();
    let expected = Signal {
        session_id: meta.session_id.clone(),
        message: "stop".into(),
    };
    let mut followers = [
        store.signals().await.unwrap(),
        store.signals().await.unwrap(),
    ];
    let heard = tokio::time::timeout(PATIENCE, async {
        let mut heard = [false, false];
        while heard != [true, true] {
            store.signal(&meta.session_id, "stop").await.unwrap();
            let round = tokio::time::sleep(Duration::from_millis(200));
            tokio::pin!(round);
            loop {
                let [first, second] = &mut followers;
                tokio::select! {
                    _ = &mut round => break,
                    Some(signal) = first.next() => {
                        assert_eq!(signal, expected, "{name}: the first follower's signal");
                        heard[0] = true;
                    }
                    Some(signal) = second.next() => {
                        assert_eq!(signal, expected, "{name}: the second follower's signal");
                        heard[1] = true;
                    }
                }
            }
        }
    })
    .await;
    assert!(heard.is_ok(), "{name}: every follower hears the signal");
}

/// Reminders are kept until removed, listed per session and by due time (earliest first);
/// a session with one is kept by retention; deleting the session removes its reminders.
pub async fn reminders_are_kept_until_removed(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let long_ago = Utc::now() - chrono::Duration::days(10);
    let mut first = meta("alice");
    first.created_at = long_ago;
    first.updated_at = long_ago;
    let second = meta("bob");
    for meta in [&first, &second] {
        store.create_session(meta).await.unwrap();
        store.commit(&meta.session_id, None).await.unwrap();
    }
    let at = |minutes: i64| {
        DateTime::from_timestamp_millis(
            (Utc::now() + chrono::Duration::minutes(minutes)).timestamp_millis(),
        )
        .unwrap()
    };
    let reminder = |meta: &SessionMeta, n: u32, minutes: i64| folio_protocol::Reminder {
        reminder_id: format!("rem_{:026}", n),
        session_id: meta.session_id.clone(),
        at: at(minutes),
        message: format!("reminder {n}"),
        created_at: at(0),
    };
    let later = reminder(&first, 1, 60);
    let sooner = reminder(&first, 2, 5);
    let past = reminder(&second, 3, -5);
    for reminder in [&later, &sooner, &past] {
        store.put_reminder(reminder).await.unwrap();
    }
    assert_eq!(
        store.session_reminders(&first.session_id).await.unwrap(),
        [sooner.clone(), later.clone()],
        "{name}: a session's reminders, earliest first"
    );
    assert_eq!(
        store.due_reminders(Some(at(10)), 10).await.unwrap(),
        [past.clone(), sooner.clone()],
        "{name}: the reminders due by a time, earliest first"
    );
    assert_eq!(
        store.due_reminders(None, 2).await.unwrap(),
        [past.clone(), sooner.clone()],
        "{name}: at most the limit"
    );
    let week = Duration::from_secs(7 * 24 * 3600);
    assert_eq!(
        store
            .delete_expired_sessions(Utc::now() - week)
            .await
            .unwrap()
            .sessions,
        0,
        "{name}: retention keeps an old session with a reminder to deliver"
    );
    assert!(
        store
            .remove_reminder(&first.session_id, &sooner.reminder_id)
            .await
            .unwrap()
    );
    assert!(
        !store
            .remove_reminder(&first.session_id, &sooner.reminder_id)
            .await
            .unwrap(),
        "{name}: a reminder is removed once"
    );
    store.delete_session(&second.session_id).await.unwrap();
    assert_eq!(
        store.due_reminders(None, 10).await.unwrap(),
        std::slice::from_ref(&later),
        "{name}: deleting a session removes its reminders"
    );
    assert!(
        store
            .remove_reminder(&first.session_id, &later.reminder_id)
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .delete_expired_sessions(Utc::now() - week)
            .await
            .unwrap()
            .sessions,
        1,
        "{name}: without reminders, the old session goes"
    );
}

/// An artifact is upserted by kind and key (keeping its id and creation time), its contents
/// replaced or removed; past `max` the least recently updated go; lists are newest first.
pub async fn artifacts_upsert_by_kind_and_key(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let t0 = DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap();
    let record = |n: u32, kind: &str, key: &str, minutes: i64| folio_protocol::ArtifactRecord {
        id: format!("art_{:026}", n),
        kind: kind.into(),
        key: key.into(),
        title: format!("{kind} {key}"),
        data: serde_json::json!({ "n": n }),
        content_type: None,
        session_id: None,
        created_at: t0 + chrono::Duration::minutes(minutes),
        updated_at: t0 + chrono::Duration::minutes(minutes),
    };
    let first = with_contents(record(1, "report", "q1", 0), "text/plain");
    let stored = store
        .put_artifact(&first, Some(b"draft"), 10)
        .await
        .unwrap();
    assert_eq!(stored, first, "{name}: a new artifact is stored as given");
    let again = record(2, "report", "q1", 5);
    let updated = store.put_artifact(&again, None, 10).await.unwrap();
    assert_eq!(
        (
            updated.id.as_str(),
            updated.created_at,
            updated.updated_at,
            &updated.data
        ),
        (
            first.id.as_str(),
            first.created_at,
            again.updated_at,
            &again.data
        ),
        "{name}: the same kind and key keep their id and creation time"
    );
    assert_eq!(
        store.artifact_content(&updated.id).await.unwrap(),
        None,
        "{name}: tagged again without contents, it has none"
    );
    let other = with_contents(record(3, "note", "q1", 10), "text/markdown");
    store
        .put_artifact(&other, Some(b"# note"), 10)
        .await
        .unwrap();
    assert_eq!(
        store.artifact_content(&other.id).await.unwrap(),
        Some(b"# note".to_vec())
    );
    assert_eq!(
        store.get_artifact(&updated.id).await.unwrap(),
        Some(updated.clone())
    );
    assert_eq!(store.get_artifact("art_missing").await.unwrap(), None);
    assert_eq!(
        store.list_artifacts().await.unwrap(),
        [other.clone(), updated.clone()],
        "{name}: newest first"
    );
    // A third record with a cap of two: the least recently updated goes, with its contents.
    let third = record(4, "note", "q2", 15);
    store.put_artifact(&third, None, 2).await.unwrap();
    assert_eq!(
        store.list_artifacts().await.unwrap(),
        [third.clone(), other.clone()],
        "{name}: past the cap the least recently updated record goes"
    );
    assert_eq!(store.get_artifact(&updated.id).await.unwrap(), None);
}

/// `record` with contents of `content_type`.
fn with_contents(
    mut record: folio_protocol::ArtifactRecord,
    content_type: &str,
) -> folio_protocol::ArtifactRecord {
    record.content_type = Some(content_type.into());
    record
}

/// A received delivery `id` of route `/t` at `at`, with a decision to run `message`.
pub fn delivery(id: &str, at: DateTime<Utc>) -> ReceivedDelivery {
    let decision = serde_json::json!({ "work": { "message": format!("hello from {id}") } });
    ReceivedDelivery {
        id: id.to_string(),
        received_at: at,
        route: "/t".to_string(),
        retry: None,
        decision: decision.as_object().cloned().unwrap_or_default(),
    }
}

/// A claim that lives long enough for any case.
const LONG: Duration = Duration::from_secs(60);
/// A claim that expires within a case.
const SHORT: Duration = Duration::from_millis(300);

/// A delivery id is new once within 24 h (then counted as a duplicate, with its announced
/// retries), new again after; a new one is claimed by its receiver, its work claimed by
/// another server only once that claim expired, and not at all once finished; listing is
/// newest first.
pub async fn deliveries_are_new_once_a_day_and_claimed(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let store = store.deliveries();
    // Stores keep times to the microsecond at least.
    let now = chrono::SubsecRound::trunc_subsecs(Utc::now(), 6);
    let admitted = store
        .receive_delivery("hooks", &delivery("a", now), "server-a", SHORT)
        .await
        .unwrap();
    assert_eq!(admitted, Admitted::New, "{name}: a first delivery is new");
    let retry = folio_protocol::DeliveryRetry {
        num: 1,
        reason: Some("http_timeout".into()),
    };
    let again = ReceivedDelivery {
        retry: Some(retry.clone()),
        ..delivery("a", now + chrono::Duration::hours(1))
    };
    let admitted = store
        .receive_delivery("hooks", &again, "server-b", LONG)
        .await
        .unwrap();
    assert_eq!(
        admitted,
        Admitted::Duplicate,
        "{name}: the same id is a duplicate"
    );
    let other_channel = store
        .receive_delivery("other", &delivery("a", now), "server-b", LONG)
        .await
        .unwrap();
    assert_eq!(other_channel, Admitted::New, "{name}: ids are per channel");
    store
        .receive_delivery("hooks", &delivery("b", now), "server-a", LONG)
        .await
        .unwrap();
    assert!(
        store
            .claim_deliveries("hooks", "server-b", LONG)
            .await
            .unwrap()
            .is_empty(),
        "{name}: work claimed by its receiver is not claimed by another server"
    );
    tokio::time::sleep(SHORT + Duration::from_millis(200)).await;
    let claimed = store
        .claim_deliveries("hooks", "server-b", LONG)
        .await
        .unwrap();
    assert_eq!(
        claimed,
        [delivery("a", now)],
        "{name}: once its claim expired, the pending work is claimed by another server, as received"
    );
    assert!(
        store
            .claim_deliveries("hooks", "server-c", LONG)
            .await
            .unwrap()
            .is_empty(),
        "{name}: claimed work is claimed once"
    );
    let outcome = DeliveryOutcome {
        status: folio_protocol::DeliveryStatus::Accepted,
        session_id: Some("ses_1".into()),
        message: None,
    };
    store.finish_delivery("hooks", "a", &outcome).await.unwrap();
    let listed = store.list_deliveries("hooks").await.unwrap();
    let summary: Vec<_> = listed
        .iter()
        .map(|d| {
            (
                d.id.as_str(),
                d.status,
                d.session_id.as_deref(),
                d.duplicates,
                d.retries.clone(),
            )
        })
        .collect();
    use folio_protocol::DeliveryStatus::{Accepted, Pending};
    assert_eq!(
        summary,
        [
            ("b", Pending, None, 0, vec![]),
            ("a", Accepted, Some("ses_1"), 1, vec![retry])
        ],
        "{name}: deliveries are listed newest first, with outcome and duplicates"
    );
    assert_eq!(listed[1].channel, "hooks");
    let a_day_later = delivery("a", now + chrono::Duration::hours(25));
    let admitted = store
        .receive_delivery("hooks", &a_day_later, "server-a", LONG)
        .await
        .unwrap();
    assert_eq!(
        admitted,
        Admitted::New,
        "{name}: an id is new again after 24 h"
    );
    store
        .record_reply("hooks", "ses_1", "turn_1", None)
        .await
        .unwrap();
    store
        .record_reply("hooks", "ses_1", "turn_1", Some("again"))
        .await
        .unwrap();
    assert!(store.replied("hooks", "ses_1", "turn_1").await.unwrap());
    assert!(!store.replied("hooks", "ses_1", "turn_2").await.unwrap());
    assert!(!store.replied("other", "ses_1", "turn_1").await.unwrap());
}

/// Receivers racing with one id (a provider's retry reaching two servers at once) admit it
/// once.
pub async fn concurrent_receivers_admit_an_id_once(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let store = store.deliveries();
    let now = Utc::now();
    let receivers = (0..8).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            let owner = format!("server-{i}");
            store
                .receive_delivery("hooks", &delivery("same", now), &owner, LONG)
                .await
                .unwrap()
        })
    });
    let admitted = futures::future::join_all(receivers).await;
    let new = admitted
        .into_iter()
        .filter(|a| matches!(a, Ok(Admitted::New)))
        .count();
    assert_eq!(
        new, 1,
        "{name}: one of eight racing receivers admits the id"
    );
    let listed = store.list_deliveries("hooks").await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0].duplicates, 7,
        "{name}: the others count duplicates"
    );
}

/// A continuation key names no session until bound; one server at a time reserves it to open
/// one (another is told to wait until the reservation is bound or expires); a stale binding
/// (its session gone) can be reserved again.
pub async fn a_continuation_key_opens_one_session(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let store = store.deliveries();
    let reserve = |owner: &'static str, stale: Option<&'static str>, ttl| {
        let store = store.clone();
        async move {
            store
                .reserve_continuation("hooks", "ticket:1", stale, owner, ttl)
                .await
                .unwrap()
        }
    };
    assert_eq!(store.continuation("hooks", "ticket:1").await.unwrap(), None);
    assert_eq!(reserve("a", None, SHORT).await, Continuation::Reserved);
    assert_eq!(
        reserve("b", None, LONG).await,
        Continuation::Busy,
        "{name}: a reserved key is busy for another server"
    );
    assert_eq!(reserve("a", None, SHORT).await, Continuation::Reserved);
    tokio::time::sleep(SHORT + Duration::from_millis(200)).await;
    assert_eq!(
        reserve("b", None, LONG).await,
        Continuation::Reserved,
        "{name}: an expired reservation is taken"
    );
    store
        .bind_continuation("hooks", "ticket:1", "ses_1")
        .await
        .unwrap();
    assert_eq!(
        reserve("a", None, LONG).await,
        Continuation::Bound("ses_1".into())
    );
    assert_eq!(
        store.continuation("hooks", "ticket:1").await.unwrap(),
        Some("ses_1".into())
    );
    assert_eq!(
        reserve("a", Some("ses_0"), LONG).await,
        Continuation::Bound("ses_1".into()),
        "{name}: only the stale session's binding is replaced"
    );
    assert_eq!(
        reserve("a", Some("ses_1"), LONG).await,
        Continuation::Reserved,
        "{name}: a binding to a session that is gone is reserved anew"
    );
    store
        .bind_continuation("hooks", "ticket:1", "ses_2")
        .await
        .unwrap();
    assert_eq!(
        store.continuation("hooks", "ticket:1").await.unwrap(),
        Some("ses_2".into())
    );
    assert_eq!(store.continuation("other", "ticket:1").await.unwrap(), None);
}

/// One server follows a session: a delivery reaching a followed session bumps its generation
/// and context instead; the follow ends only at the generation its follower saw; a follow
/// whose server stopped renewing it is claimed by another, and the old follower loses it.
pub async fn a_session_is_followed_by_one_server(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let store = store.deliveries();
    let first = serde_json::json!({ "n": 1 });
    let second = serde_json::json!({ "n": 2 });
    let followed = store
        .follow_session("hooks", "ses_1", "d1", &first, None, "a", SHORT)
        .await
        .unwrap();
    let Followed::Started(follow) = followed else {
        panic!("{name}: nobody followed ses_1, so its first delivery starts a follow");
    };
    assert_eq!(
        (
            follow.delivery_id.as_str(),
            &follow.context,
            follow.generation
        ),
        ("d1", &first, 0)
    );
    let followed = store
        .follow_session("hooks", "ses_1", "d2", &second, Some(7), "b", LONG)
        .await
        .unwrap();
    assert_eq!(
        followed,
        Followed::Running,
        "{name}: a followed session is not followed twice"
    );
    let renewed = store
        .renew_follow("hooks", "ses_1", "a", SHORT)
        .await
        .unwrap()
        .expect("the follower still holds it");
    assert_eq!(
        (
            renewed.delivery_id.as_str(),
            &renewed.context,
            renewed.generation
        ),
        ("d1", &second, 1),
        "{name}: the follower sees the newer delivery's context and generation"
    );
    assert_eq!(
        store
            .take_queued_check("hooks", "ses_1", "b")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .take_queued_check("hooks", "ses_1", "a")
            .await
            .unwrap(),
        Some(7)
    );
    assert_eq!(
        store
            .take_queued_check("hooks", "ses_1", "a")
            .await
            .unwrap(),
        None
    );
    assert!(
        !store.end_follow("hooks", "ses_1", "a", 0).await.unwrap(),
        "{name}: a follow does not end at a generation older than the newest delivery"
    );
    assert!(
        store
            .renew_follow("hooks", "ses_1", "b", LONG)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .claim_follows("hooks", "b", LONG)
            .await
            .unwrap()
            .is_empty(),
        "{name}: a renewed follow is not claimed"
    );
    tokio::time::sleep(SHORT + Duration::from_millis(200)).await;
    let claimed = store.claim_follows("hooks", "b", LONG).await.unwrap();
    assert_eq!(
        claimed
            .iter()
            .map(|f| f.session_id.as_str())
            .collect::<Vec<_>>(),
        ["ses_1"],
        "{name}: an expired follow is claimed by another server"
    );
    assert!(
        store
            .renew_follow("hooks", "ses_1", "a", SHORT)
            .await
            .unwrap()
            .is_none(),
        "{name}: the old follower lost it"
    );
    assert!(!store.end_follow("hooks", "ses_1", "a", 1).await.unwrap());
    assert!(store.end_follow("hooks", "ses_1", "b", 1).await.unwrap());
    let followed = store
        .follow_session("hooks", "ses_1", "d3", &first, None, "a", LONG)
        .await
        .unwrap();
    assert!(
        matches!(followed, Followed::Started(ref f) if f.delivery_id == "d3"),
        "{name}: after its follow ended, a delivery starts a new one from itself: {followed:?}"
    );
}

/// MCP credentials are kept per principal and connection, replaced whole, and cleared.
pub async fn mcp_credentials_are_kept_per_principal_and_connection(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let first =
        serde_json::json!({ "client_id": "c1", "token_response": { "access_token": "a1" } });
    let second =
        serde_json::json!({ "client_id": "c1", "token_response": { "access_token": "a2" } });
    assert_eq!(store.mcp_credentials("alice", "docs").await.unwrap(), None);
    store
        .put_mcp_credentials("alice", "docs", &first)
        .await
        .unwrap();
    store
        .put_mcp_credentials("bob", "docs", &second)
        .await
        .unwrap();
    assert_eq!(
        store.mcp_credentials("alice", "docs").await.unwrap(),
        Some(first.clone()),
        "{name}: a principal's credentials read back as stored"
    );
    assert_eq!(store.mcp_credentials("alice", "wiki").await.unwrap(), None);
    store
        .put_mcp_credentials("alice", "docs", &second)
        .await
        .unwrap();
    assert_eq!(
        store.mcp_credentials("alice", "docs").await.unwrap(),
        Some(second.clone()),
        "{name}: new credentials replace the old"
    );
    store.clear_mcp_credentials("alice", "docs").await.unwrap();
    store.clear_mcp_credentials("alice", "docs").await.unwrap();
    assert_eq!(store.mcp_credentials("alice", "docs").await.unwrap(), None);
    assert_eq!(
        store.mcp_credentials("bob", "docs").await.unwrap(),
        Some(second),
        "{name}: clearing one principal's credentials leaves another's"
    );
}

/// A session whose log stayed empty past the given age, with no lease, is deleted (a create
/// its server never acknowledged); one with events, one under a lease, and one created since
/// are kept.
pub async fn unacknowledged_creates_are_deleted(store: Arc<dyn SessionStore>) {
    let name = store.backend();
    let (orphan, answered, leased) = (meta("alice"), meta("alice"), meta("bob"));
    for meta in [&orphan, &answered, &leased] {
        store.create_session(meta).await.unwrap();
    }
    let started = NewEvent::new(None, EventBody::SessionWaiting(SessionWaiting {}));
    store
        .append(&answered.session_id, 0, None, vec![started])
        .await
        .unwrap();
    store.commit(&answered.session_id, None).await.unwrap();
    let lease = store
        .acquire_lease(&leased.session_id, "server-a", LONG)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let fresh = meta("carol");
    store.create_session(&fresh).await.unwrap();
    let deleted = store
        .delete_unacknowledged_sessions(Duration::from_millis(200))
        .await
        .unwrap();
    assert_eq!(
        deleted
            .iter()
            .map(|m| m.session_id.as_str())
            .collect::<Vec<_>>(),
        [orphan.session_id.as_str()],
        "{name}: only the old session with an empty log and no lease goes"
    );
    assert_eq!(store.load_session(&orphan.session_id).await.unwrap(), None);
    for kept in [&answered, &leased, &fresh] {
        assert!(
            store
                .load_session(&kept.session_id)
                .await
                .unwrap()
                .is_some(),
            "{name}: {} was kept",
            kept.session_id
        );
    }
    store.release_lease(&lease).await.unwrap();
}
