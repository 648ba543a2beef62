//! What only PostgreSQL does, against a real PostgreSQL: migrations and the schema check,
//! connection errors, several servers on one database (appends, follow, control messages, slot
//! claims), retries across killed connections, polling when notifications are lost, retention,
//! stats and corrupt rows. What every store does is in `suite.rs`.

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use folio_store::{ListQuery, SessionStore, StoreError};
use folio_store_postgres::{Notice, PgError, PgOptions, PgStore};
use futures::StreamExt;
use sqlx::{ConnectOptions, Executor};
use support::{
    admin_options, event, fast_options, kill_connections, session, store, test_db, text,
};

#[tokio::test]
async fn migrations_run_once_and_a_newer_schema_is_refused() {
    let Some(db) = test_db("migrations_run_once_and_a_newer_schema_is_refused").await else {
        return;
    };
    let fresh = PgStore::connect(&db, fast_options()).await.unwrap();
    let before = fresh.schema().await.unwrap();
    assert_eq!(before.database, 0);
    assert!(before.pending() && !before.newer());
    let after = fresh.migrate().await.unwrap();
    assert_eq!(after.database, after.binary);
    // Two servers starting at once: the advisory lock serializes them, both succeed.
    let (a, b) = tokio::join!(
        PgStore::open(&db, fast_options()),
        PgStore::open(&db, fast_options())
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
    let err = PgStore::open(&db, fast_options()).await.unwrap_err();
    assert!(
        matches!(err, PgError::SchemaNewer { found, supported } if found == after.binary + 1 && supported == after.binary),
        "{err}"
    );
    assert!(err.to_string().contains("newer than the"), "{err}");
    assert!(matches!(StoreError::from(err), StoreError::Schema { .. }));
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
    assert!(matches!(StoreError::from(err), StoreError::Unavailable(_)));

    for bad in ["mysql://x@y/z", "postgres://x@y:notaport/z"] {
        let err = PgStore::connect(bad, PgOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, PgError::BadUrl { .. }), "{bad}: {err:?}");
        assert!(err.to_string().contains("expected postgres://"), "{err}");
    }
}

#[tokio::test]
async fn an_unknown_database_is_refused_with_what_to_check() {
    let Some(db) = test_db("an_unknown_database_is_refused_with_what_to_check").await else {
        return;
    };
    let root = db.rsplit_once('/').unwrap().0;
    let err = PgStore::connect(&format!("{root}/no_such_database"), fast_options())
        .await
        .unwrap_err();
    assert!(matches!(err, PgError::Refused { .. }), "{err:?}");
    assert!(err.to_string().contains("database name"), "{err}");
}

#[tokio::test]
async fn appenders_on_three_servers_never_interleave_or_gap() {
    let Some((a, db)) = store("appenders_on_three_servers").await else {
        return;
    };
    let servers = [
        a.clone(),
        PgStore::open(&db, fast_options()).await.unwrap(),
        PgStore::open(&db, fast_options()).await.unwrap(),
    ];
    let id = session(&a, "alice").await;
    let per_writer = 15;
    let mut tasks = Vec::new();
    for writer in 0..9 {
        let store = servers[writer % 3].clone();
        let id = id.clone();
        tasks.push(tokio::spawn(async move {
            let mut written = 0;
            while written < per_writer {
                let next = store
                    .last_event(&id)
                    .await
                    .unwrap()
                    .map_or(0, |e| e.index + 1);
                // Two events per append: a pair must never be split by another writer.
                let pair = vec![
                    event(&format!("w{writer}-{written}-a")),
                    event(&format!("w{writer}-{written}-b")),
                ];
                match store.append(&id, next, None, pair).await {
                    Ok(_) => written += 1,
                    Err(StoreError::Conflict { .. }) => {}
                    Err(err) => panic!("{err}"),
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let log = a.read_events(&id, 0, None).await.unwrap();
    assert_eq!(log.len(), 9 * per_writer * 2);
    for (i, pair) in log.chunks(2).enumerate() {
        assert_eq!(pair[0].index, 2 * i as u64);
        let first = text(&pair[0]).strip_suffix("-a").unwrap();
        assert_eq!(text(&pair[1]), format!("{first}-b"), "a pair was split");
    }
}

#[tokio::test]
async fn killed_connections_mid_turn_are_retried_and_nothing_is_lost_or_doubled() {
    let Some((store, db)) = store("killed_connections_mid_turn").await else {
        return;
    };
    let id = session(&store, "alice").await;
    let ttl = Duration::from_secs(60);
    let mut lease = store.acquire_lease(&id, "server-a", ttl).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let killer = kill_connections(&db, stop.clone());
    let total = 150;
    for i in 0..total {
        let stored = store
            .append(&id, i, Some(lease.fence), vec![event(&format!("e{i}"))])
            .await
            .unwrap_or_else(|err| panic!("append {i} failed: {err}"));
        assert_eq!(stored[0].index, i);
        if i % 10 == 0 {
            lease = store.renew_lease(&lease, ttl).await.unwrap();
            assert_eq!(store.last_event(&id).await.unwrap().unwrap().index, i);
            store
                .claim_slot("s", chrono::Utc::now(), "server-a")
                .await
                .unwrap();
        }
    }
    stop.store(true, Ordering::Relaxed);
    let killed = killer.await.unwrap();
    assert!(killed > 5, "the test killed only {killed} connections");
    store.release_lease(&lease).await.unwrap();
    let log = store.read_events(&id, 0, None).await.unwrap();
    let indexes: Vec<u64> = log.iter().map(|e| e.index).collect();
    assert_eq!(indexes, (0..total).collect::<Vec<_>>());
    for e in &log {
        assert_eq!(text(e), format!("e{}", e.index));
    }
}

#[tokio::test]
async fn a_stream_on_one_server_follows_a_turn_on_another() {
    let Some((a, db)) = store("a_stream_on_one_server_follows").await else {
        return;
    };
    let b = PgStore::open(&db, fast_options()).await.unwrap();
    let id = session(&a, "alice").await;
    a.append(&id, 0, None, vec![event("before")]).await.unwrap();
    let mut follow = b.follow(&id).await.unwrap();
    let writer = {
        let a = a.clone();
        let id = id.clone();
        tokio::spawn(async move {
            for i in 1..40 {
                a.append(&id, i, None, vec![event(&format!("e{i}"))])
                    .await
                    .unwrap();
            }
        })
    };
    // Read up to each index reported, as a stream does: every event once, in order.
    let mut next = 1;
    while next < 40 {
        let last = tokio::time::timeout(Duration::from_secs(10), follow.next())
            .await
            .expect("the follower stalled")
            .expect("the stream ended");
        assert!(last >= next, "reported {last} after {next} was read");
        let limit = (last + 1 - next) as usize;
        for e in b.read_events(&id, next, Some(limit)).await.unwrap() {
            assert_eq!((e.index, text(&e)), (next, format!("e{next}").as_str()));
            next += 1;
        }
        assert_eq!(next, last + 1, "the reported index was not readable");
    }
    writer.await.unwrap();
    // Deleting the session on A ends the stream on B.
    a.delete_session(&id).await.unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while follow.next().await.is_some() {}
    })
    .await;
    assert!(
        ended.is_ok(),
        "the follower of a deleted session did not end"
    );
}

#[tokio::test]
async fn followers_fall_back_to_polling_when_notifications_are_lost() {
    let Some((a, db)) = store("followers_fall_back_to_polling").await else {
        return;
    };
    let b = PgStore::open(&db, fast_options()).await.unwrap();
    let id = session(&a, "alice").await;
    let mut follow = b.follow(&id).await.unwrap();
    // Written without the store's notification: only polling can deliver.
    sqlx::query(
        "INSERT INTO folio_events (session_id, idx, kind, turn_id, at, event)
         SELECT $1, i, 'turn.failed', NULL, now(), '{}' FROM generate_series(0, 1) i",
    )
    .bind(&id)
    .execute(a.pool())
    .await
    .unwrap();
    let last = tokio::time::timeout(Duration::from_secs(5), follow.next())
        .await
        .expect("polling did not deliver")
        .unwrap();
    assert_eq!(last, 1);
}

#[tokio::test]
async fn control_messages_reach_every_server() {
    let Some((a, db)) = store("control_messages_reach_every_server").await else {
        return;
    };
    let b = PgStore::open(&db, fast_options()).await.unwrap();
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
                        if let Ok(Notice::Control { session_id, message }) = notice {
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
    let b = PgStore::open(&db, fast_options()).await.unwrap();
    let c = PgStore::open(&db, fast_options()).await.unwrap();
    let slot: chrono::DateTime<chrono::Utc> = "2026-12-01T00:00:00Z".parse().unwrap();
    let mut tasks = Vec::new();
    for (n, server) in [a.clone(), b, c].into_iter().enumerate() {
        for worker in 0..6 {
            let server = server.clone();
            tasks.push(tokio::spawn(async move {
                server
                    .claim_slot("nightly", slot, &format!("s{n}-{worker}"))
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
    assert_eq!(a.stats().await.unwrap().slot_claims, 1);
}

#[tokio::test]
async fn retention_deletes_old_idle_sessions_in_batches_and_keeps_running_ones() {
    let Some((store, _db)) = store("retention_deletes_old_idle_sessions").await else {
        return;
    };
    let aged = |days| {
        let mut meta = folio_store::suite::meta("alice");
        meta.updated_at = chrono::Utc::now() - chrono::Duration::days(days);
        meta
    };
    let old = aged(40);
    let old_running = aged(40);
    let recent = aged(1);
    for meta in [&old, &old_running, &recent] {
        store.create_session(meta).await.unwrap();
    }
    // More events than one delete batch.
    for chunk in 0..5 {
        let events = (0..500).map(|i| event(&format!("{chunk}-{i}"))).collect();
        store
            .append(&old.session_id, chunk * 500, None, events)
            .await
            .unwrap();
    }
    store
        .append(&recent.session_id, 0, None, vec![event("x")])
        .await
        .unwrap();
    store
        .acquire_lease(&old_running.session_id, "server-a", Duration::from_secs(60))
        .await
        .unwrap();

    let report = store
        .delete_expired_sessions(chrono::Utc::now() - chrono::Duration::days(30))
        .await
        .unwrap();
    assert_eq!((report.sessions, report.events), (1, 2500));
    let left: BTreeSet<_> = store
        .list_sessions(&ListQuery {
            principal: None,
            before: None,
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.session_id)
        .collect();
    assert_eq!(
        left,
        BTreeSet::from([old_running.session_id, recent.session_id])
    );
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
    let id = session(&store, "alice").await;
    store.append(&id, 0, None, vec![event("x")]).await.unwrap();
    let mut admin = admin_options(&db).connect().await.unwrap();
    admin
        .execute(
            format!("UPDATE folio_events SET event = '{{not json' WHERE session_id = '{id}'")
                .as_str(),
        )
        .await
        .unwrap();
    let err = store.read_events(&id, 0, None).await.unwrap_err();
    assert!(matches!(err, StoreError::Backend { .. }), "{err:?}");
    assert!(err.to_string().contains("event 0 of session"), "{err}");
}
