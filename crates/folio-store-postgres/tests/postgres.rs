//! The PostgreSQL store against a real PostgreSQL: migrations and the schema check, appends,
//! index races, fencing, takeover, retries across killed connections, follow across servers,
//! control messages, slot claims, sessions, retention and stats.

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use folio_store_postgres::{PgError, PgOptions, PgStore, SessionRow};
use futures::StreamExt;
use sqlx::{ConnectOptions, Connection, Executor};
use support::{admin_options, event, fast_options, session_id, store, test_db, text};

#[tokio::test]
async fn migrations_run_once_and_a_newer_schema_is_refused() {
    let Some(db) = test_db("migrations_run_once_and_a_newer_schema_is_refused").await else {
        return;
    };
    let fresh = PgStore::connect(&db.url, fast_options()).await.unwrap();
    let before = fresh.schema().await.unwrap();
    assert_eq!(before.database, 0);
    assert!(before.pending() && !before.newer());
    let after = fresh.migrate().await.unwrap();
    assert_eq!(after.database, after.binary);
    // Two servers starting at once: the advisory lock serializes them, both succeed.
    let (a, b) = tokio::join!(
        PgStore::open(&db.url, fast_options()),
        PgStore::open(&db.url, fast_options())
    );
    a.unwrap();
    b.unwrap();

    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
         VALUES ($1, 'from a newer folio', true, '\\x00', 1)",
    )
    .bind(after.binary + 1)
    .execute(fresh.pool())
    .await
    .unwrap();
    let err = PgStore::open(&db.url, fast_options()).await.unwrap_err();
    assert!(
        matches!(err, PgError::SchemaNewer { found, supported } if found == after.binary + 1 && supported == after.binary),
        "{err}"
    );
    assert!(err.to_string().contains("newer than the"), "{err}");
}

#[tokio::test]
async fn an_unreachable_database_or_a_bad_url_is_a_clear_error() {
    // Nothing listens on port 1: refused at once, named by host and port.
    let err = PgStore::connect("postgres://folio@127.0.0.1:1/folio", PgOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, PgError::Unreachable { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("127.0.0.1:1"), "{message}");
    assert!(
        message.contains("check that the server is running"),
        "{message}"
    );

    let err = PgStore::connect("mysql://x@y/z", PgOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, PgError::BadUrl { .. }), "{err:?}");
    let err = PgStore::connect("postgres://x@y:notaport/z", PgOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, PgError::BadUrl { .. }), "{err:?}");
}

#[tokio::test]
async fn an_unknown_database_is_refused_with_what_to_check() {
    let Some(db) = test_db("an_unknown_database_is_refused_with_what_to_check").await else {
        return;
    };
    let root = db.url.rsplit_once('/').unwrap().0;
    let err = PgStore::connect(&format!("{root}/no_such_database"), fast_options())
        .await
        .unwrap_err();
    assert!(matches!(err, PgError::Refused { .. }), "{err:?}");
    assert!(err.to_string().contains("database name"), "{err}");
}

#[tokio::test]
async fn appends_keep_order_and_a_lost_index_race_or_a_gap_conflicts() {
    let Some((store, _db)) = store("appends_keep_order").await else {
        return;
    };
    let id = session_id();
    assert_eq!(store.next_index(&id).await.unwrap(), 0);
    let batch: Vec<_> = (0..3).map(|i| event(&id, i, &format!("e{i}"))).collect();
    store.append(&id, None, &batch).await.unwrap();
    assert_eq!(store.next_index(&id).await.unwrap(), 3);

    // Index 2 again: someone else has it.
    let err = store
        .append(&id, None, &[event(&id, 2, "late")])
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            PgError::Conflict {
                expected: 2,
                actual: 3,
                ..
            }
        ),
        "{err:?}"
    );
    // Index 5 would leave a gap.
    let err = store
        .append(&id, None, &[event(&id, 5, "gap")])
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            PgError::Conflict {
                expected: 5,
                actual: 3,
                ..
            }
        ),
        "{err:?}"
    );
    let read = store.read_all(&id, 0).await.unwrap();
    assert_eq!(read, batch);
    assert_eq!(store.read(&id, 1, 1).await.unwrap(), batch[1..2]);
}

#[tokio::test]
async fn concurrent_appenders_from_two_servers_never_interleave_or_gap() {
    let Some((a, db)) = store("concurrent_appenders").await else {
        return;
    };
    let b = PgStore::open(&db.url, fast_options()).await.unwrap();
    let id = session_id();
    let writers = 8;
    let per_writer = 15;
    let mut tasks = Vec::new();
    for writer in 0..writers {
        let store = if writer % 2 == 0 {
            a.clone()
        } else {
            b.clone()
        };
        let id = id.clone();
        tasks.push(tokio::spawn(async move {
            let mut written = 0;
            while written < per_writer {
                let next = store.next_index(&id).await.unwrap();
                // Two events per append: a pair must never be split by another writer.
                let pair = [
                    event(&id, next, &format!("w{writer}-{written}-a")),
                    event(&id, next + 1, &format!("w{writer}-{written}-b")),
                ];
                match store.append(&id, None, &pair).await {
                    Ok(()) => written += 1,
                    Err(PgError::Conflict { .. }) => {}
                    Err(err) => panic!("{err}"),
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let log = a.read_all(&id, 0).await.unwrap();
    assert_eq!(log.len(), writers * per_writer * 2);
    for (i, pair) in log.chunks(2).enumerate() {
        assert_eq!(pair[0].index, 2 * i as u64);
        let first = text(&pair[0]).strip_suffix("-a").unwrap();
        assert_eq!(text(&pair[1]), format!("{first}-b"), "a pair was split");
    }
}

#[tokio::test]
async fn a_taken_over_lease_fences_the_old_holder() {
    let Some((store, _db)) = store("a_taken_over_lease_fences_the_old_holder").await else {
        return;
    };
    let id = session_id();
    let ttl = Duration::from_millis(300);
    let first = store
        .acquire_lease(&id, "server-a", Some("turn_1"), ttl)
        .await
        .unwrap();
    assert_eq!(first.took_over, None);
    store
        .append(&id, Some(first.token), &[event(&id, 0, "a")])
        .await
        .unwrap();
    // Live: not taken; the same owner and turn again (a retried acquire) gets the same lease.
    let err = store
        .acquire_lease(&id, "server-b", Some("turn_2"), ttl)
        .await
        .unwrap_err();
    assert!(
        matches!(err, PgError::LeaseHeld { ref owner, .. } if owner == "server-a"),
        "{err:?}"
    );
    let again = store
        .acquire_lease(&id, "server-a", Some("turn_1"), ttl)
        .await
        .unwrap();
    assert_eq!(again.token, first.token);

    tokio::time::sleep(ttl + Duration::from_millis(100)).await;
    assert_eq!(store.expired_leases(10).await.unwrap().len(), 1);
    let second = store
        .acquire_lease(&id, "server-b", Some("turn_2"), ttl)
        .await
        .unwrap();
    assert!(second.token > first.token);
    let took_over = second.took_over.clone().expect("a takeover");
    assert_eq!(took_over.owner, "server-a");
    assert_eq!(took_over.turn_id.as_deref(), Some("turn_1"));
    assert_eq!(took_over.token, first.token);

    let err = store
        .append(&id, Some(first.token), &[event(&id, 1, "stale")])
        .await
        .unwrap_err();
    assert!(
        matches!(err, PgError::Fenced { token, .. } if token == first.token),
        "{err:?}"
    );
    let err = store.renew_lease(&id, first.token, ttl).await.unwrap_err();
    assert!(matches!(err, PgError::Fenced { .. }), "{err:?}");
    assert!(!store.release_lease(&id, first.token).await.unwrap());

    store
        .append(&id, Some(second.token), &[event(&id, 1, "b")])
        .await
        .unwrap();
    store.renew_lease(&id, second.token, ttl).await.unwrap();
    assert!(store.release_lease(&id, second.token).await.unwrap());
    assert_eq!(store.lease(&id).await.unwrap(), None);
    let texts: Vec<_> = store
        .read_all(&id, 0)
        .await
        .unwrap()
        .iter()
        .map(|e| text(e).to_string())
        .collect();
    assert_eq!(texts, ["a", "b"]);
}

#[tokio::test]
async fn killed_connections_mid_sequence_are_retried_and_nothing_is_lost_or_doubled() {
    let Some((store, db)) = store("killed_connections_mid_sequence").await else {
        return;
    };
    let id = session_id();
    let lease = store
        .acquire_lease(&id, "server-a", Some("turn_1"), Duration::from_secs(60))
        .await
        .unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let killer = {
        let stop = stop.clone();
        let url = db.url.clone();
        tokio::spawn(async move {
            let mut admin = admin_options(&url).connect().await.unwrap();
            let mut killed = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let n: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                     WHERE application_name = 'folio' AND datname = current_database()) k",
                )
                .fetch_one(&mut admin)
                .await
                .unwrap();
                killed += n as u64;
                tokio::time::sleep(Duration::from_millis(15)).await;
            }
            admin.close().await.ok();
            killed
        })
    };
    let total = 150;
    for i in 0..total {
        store
            .append(&id, Some(lease.token), &[event(&id, i, &format!("e{i}"))])
            .await
            .unwrap_or_else(|err| panic!("append {i} failed: {err}"));
        if i % 10 == 0 {
            store
                .renew_lease(&id, lease.token, Duration::from_secs(60))
                .await
                .unwrap();
            assert_eq!(store.next_index(&id).await.unwrap(), i + 1);
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let killed = killer.await.unwrap();
    assert!(killed > 5, "the test killed only {killed} connections");
    let log = store.read_all(&id, 0).await.unwrap();
    let indexes: Vec<u64> = log.iter().map(|e| e.index).collect();
    assert_eq!(indexes, (0..total).collect::<Vec<_>>());
    for e in &log {
        assert_eq!(text(e), format!("e{}", e.index));
    }
}

#[tokio::test]
async fn a_follower_on_another_server_sees_every_append_in_order() {
    let Some((a, db)) = store("a_follower_on_another_server").await else {
        return;
    };
    let b = PgStore::open(&db.url, fast_options()).await.unwrap();
    let id = session_id();
    a.append(&id, None, &[event(&id, 0, "before")])
        .await
        .unwrap();
    let mut follow = Box::pin(b.follow(&id, 0));
    assert_eq!(text(&follow.next().await.unwrap().unwrap()), "before");
    for i in 1..40 {
        a.append(&id, None, &[event(&id, i, &format!("e{i}"))])
            .await
            .unwrap();
    }
    for i in 1..40 {
        let e = tokio::time::timeout(Duration::from_secs(10), follow.next())
            .await
            .expect("the follower stalled")
            .unwrap()
            .unwrap();
        assert_eq!(e.index, i);
    }
    // A reconnect from an index misses nothing.
    let resumed: Vec<_> = Box::pin(b.follow(&id, 35)).take(5).collect().await;
    let resumed: Vec<u64> = resumed.into_iter().map(|e| e.unwrap().index).collect();
    assert_eq!(resumed, [35, 36, 37, 38, 39]);
}

#[tokio::test]
async fn followers_fall_back_to_polling_when_notifications_are_lost() {
    let Some((a, db)) = store("followers_fall_back_to_polling").await else {
        return;
    };
    // No notification is ever sent: only polling can deliver.
    sqlx::query("ALTER TABLE folio_events DISABLE TRIGGER folio_events_notify")
        .execute(a.pool())
        .await
        .unwrap();
    let b = PgStore::open(&db.url, fast_options()).await.unwrap();
    let id = session_id();
    let mut follow = Box::pin(b.follow(&id, 0));
    for i in 0..3 {
        a.append(&id, None, &[event(&id, i, "x")]).await.unwrap();
    }
    for i in 0..3 {
        let e = tokio::time::timeout(Duration::from_secs(5), follow.next())
            .await
            .expect("polling did not deliver")
            .unwrap()
            .unwrap();
        assert_eq!(e.index, i);
    }
}

#[tokio::test]
async fn control_messages_reach_every_server() {
    let Some((a, db)) = store("control_messages_reach_every_server").await else {
        return;
    };
    let b = PgStore::open(&db.url, fast_options()).await.unwrap();
    let mut notices = b.notices();
    // The LISTEN connection comes up in the background: signal until it is heard.
    let heard = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            a.signal("ses_x", "stop:turn_1").await.unwrap();
            let wait = tokio::time::sleep(Duration::from_millis(200));
            tokio::pin!(wait);
            loop {
                tokio::select! {
                    _ = &mut wait => break,
                    notice = notices.recv() => {
                        if let Ok(folio_store_postgres::Notice::Control { session_id, message }) = notice {
                            return (session_id, message);
                        }
                    }
                }
            }
        }
    })
    .await
    .expect("no control message arrived");
    assert_eq!(heard, ("ses_x".to_string(), "stop:turn_1".to_string()));
}

#[tokio::test]
async fn a_slot_is_claimed_once_across_three_servers() {
    let Some((a, db)) = store("a_slot_is_claimed_once").await else {
        return;
    };
    let b = PgStore::open(&db.url, fast_options()).await.unwrap();
    let c = PgStore::open(&db.url, fast_options()).await.unwrap();
    let mut tasks = Vec::new();
    for (n, server) in [a.clone(), b, c].into_iter().enumerate() {
        for worker in 0..6 {
            let server = server.clone();
            tasks.push(tokio::spawn(async move {
                server
                    .claim_slot("nightly", "2026-12-01T00:00:00Z", &format!("s{n}-{worker}"))
                    .await
                    .unwrap()
            }));
        }
    }
    let mut winners = 0;
    for task in tasks {
        winners += usize::from(task.await.unwrap());
    }
    assert_eq!(winners, 1);
    assert!(
        a.claim_slot("nightly", "2026-12-02T00:00:00Z", "s0")
            .await
            .unwrap()
    );
    assert_eq!(a.stats().await.unwrap().slot_claims, 2);
}

fn row(principal: &str, key: Option<&str>, days_ago: i64) -> SessionRow {
    let at = chrono::Utc::now() - chrono::Duration::days(days_ago);
    let id = session_id();
    SessionRow {
        meta: serde_json::json!({"sessionId": id, "title": "t"}),
        id,
        principal: principal.into(),
        created_at: at,
        updated_at: at,
        idempotency_key: key.map(str::to_string),
    }
}

#[tokio::test]
async fn sessions_are_created_once_per_key_listed_newest_first_and_deleted() {
    let Some((store, _db)) = store("sessions_are_created_once_per_key").await else {
        return;
    };
    let first = row("alice", Some("k1"), 2);
    let (stored, created) = store.create_session(&first).await.unwrap();
    assert!(created);
    assert_eq!(stored.id, first.id);
    // The same key again: the first session, not a second one.
    let (again, created) = store
        .create_session(&row("alice", Some("k1"), 0))
        .await
        .unwrap();
    assert!(!created);
    assert_eq!(again.id, first.id);
    // Another principal's key space is its own.
    let (_, created) = store
        .create_session(&row("bob", Some("k1"), 0))
        .await
        .unwrap();
    assert!(created);
    let second = row("alice", None, 1);
    let third = row("alice", None, 0);
    store.create_session(&second).await.unwrap();
    store.create_session(&third).await.unwrap();

    let ids: Vec<_> = store
        .list_sessions("alice", None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, [third.id.clone(), second.id.clone(), first.id.clone()]);
    let page: Vec<_> = store
        .list_sessions("alice", Some(&third.id), 1)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(page, std::slice::from_ref(&second.id));

    let meta = serde_json::json!({"sessionId": second.id, "title": "renamed"});
    store
        .update_session(&second.id, chrono::Utc::now(), &meta)
        .await
        .unwrap();
    assert_eq!(store.session(&second.id).await.unwrap().unwrap().meta, meta);
    let err = store
        .update_session("ses_missing", chrono::Utc::now(), &meta)
        .await
        .unwrap_err();
    assert!(matches!(err, PgError::NotFound { .. }), "{err:?}");

    store
        .append(&second.id, None, &[event(&second.id, 0, "x")])
        .await
        .unwrap();
    assert!(store.delete_session(&second.id).await.unwrap());
    assert!(!store.delete_session(&second.id).await.unwrap());
    assert_eq!(store.session(&second.id).await.unwrap(), None);
    assert_eq!(store.next_index(&second.id).await.unwrap(), 0);
}

#[tokio::test]
async fn retention_deletes_old_idle_sessions_in_batches_and_keeps_running_ones() {
    let Some((store, _db)) = store("retention_deletes_old_idle_sessions").await else {
        return;
    };
    let old = row("alice", None, 40);
    let old_running = row("alice", None, 40);
    let recent = row("alice", None, 1);
    for session in [&old, &old_running, &recent] {
        store.create_session(session).await.unwrap();
    }
    // More events than one delete batch.
    let events: Vec<_> = (0..2500).map(|i| event(&old.id, i, "x")).collect();
    for chunk in events.chunks(500) {
        store.append(&old.id, None, chunk).await.unwrap();
    }
    store
        .append(&recent.id, None, &[event(&recent.id, 0, "x")])
        .await
        .unwrap();
    store
        .acquire_lease(&old_running.id, "server-a", None, Duration::from_secs(60))
        .await
        .unwrap();

    let report = store
        .delete_expired_sessions(Duration::from_secs(30 * 86_400))
        .await
        .unwrap();
    assert_eq!((report.sessions, report.events), (1, 2500));
    let left: BTreeSet<_> = store
        .list_sessions("alice", None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(left, BTreeSet::from([old_running.id, recent.id]));
    let stats = store.stats().await.unwrap();
    assert_eq!((stats.sessions, stats.events, stats.live_leases), (2, 1, 1));
    assert!(stats.tables.iter().all(|t| t.bytes > 0), "{stats:?}");
    assert!(stats.database_bytes > 0);
}

#[tokio::test]
async fn a_stored_event_that_does_not_parse_is_reported_as_corrupt() {
    let Some((store, db)) = store("a_stored_event_that_does_not_parse").await else {
        return;
    };
    let id = session_id();
    store
        .append(&id, None, &[event(&id, 0, "x")])
        .await
        .unwrap();
    let mut admin = admin_options(&db.url).connect().await.unwrap();
    admin
        .execute(
            format!("UPDATE folio_events SET event = '{{not json' WHERE session_id = '{id}'")
                .as_str(),
        )
        .await
        .unwrap();
    let err = store.read_all(&id, 0).await.unwrap_err();
    assert!(matches!(err, PgError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("event 0 of session"), "{err}");
}
