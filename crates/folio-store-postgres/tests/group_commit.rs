//! Durable points on PostgreSQL (issue 35, item 3): a point's events and metadata land in one
//! transaction; concurrent sessions' points are gathered into one transaction, each checked on
//! its own (a fenced, conflicting or missing one fails alone); followers on another server see
//! every event, in order, from the one notification a group sends; a group whose connection
//! is killed loses and doubles nothing.

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use folio_store::{SessionMeta, SessionStore, StoreError};
use folio_store_postgres::{PgOptions, PgStore};
use futures::StreamExt;
use support::{CutRelay, event, fast_options, kill_connections, store, text};

/// A durable point's answer, to await with the others.
type Point =
    std::pin::Pin<Box<dyn Future<Output = Result<Vec<folio_protocol::Event>, StoreError>>>>;

/// A stored session's metadata.
async fn created(store: &PgStore) -> SessionMeta {
    let meta = folio_store::suite::meta("alice");
    store.create_session(&meta).await.unwrap();
    meta
}

/// `n` stored sessions, each leased by `server-a`: their metadata and fencing tokens.
async fn leased(store: &PgStore, n: usize) -> Vec<(SessionMeta, u64)> {
    let mut sessions = Vec::with_capacity(n);
    for _ in 0..n {
        let meta = created(store).await;
        let lease = store
            .acquire_lease(&meta.session_id, "server-a", Duration::from_secs(60))
            .await
            .unwrap();
        sessions.push((meta, lease.fence));
    }
    sessions
}

/// The transactions (`xmin`) that wrote the events of `sessions`.
async fn writers(store: &PgStore, sessions: &[String]) -> BTreeSet<String> {
    sqlx::query_scalar("SELECT DISTINCT xmin::text FROM folio_events WHERE session_id = ANY($1)")
        .bind(sessions)
        .fetch_all(store.pool())
        .await
        .unwrap()
        .into_iter()
        .collect()
}

#[tokio::test]
async fn concurrent_durable_points_of_many_sessions_land_with_their_indexes_and_metadata() {
    let Some((store, _db)) = store("concurrent_durable_points").await else {
        return;
    };
    let sessions = 32;
    let points = 25u64;
    let mut tasks = Vec::new();
    for writer in 0..sessions {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut meta = created(&store).await;
            let lease = store
                .acquire_lease(&meta.session_id, "server-a", Duration::from_secs(60))
                .await
                .unwrap();
            let id = meta.session_id.clone();
            for point in 0..points {
                meta.turns = point as u32 + 2;
                meta.last_index = 2 * point + 1;
                let events = vec![
                    event(&format!("{writer}-{point}-a")),
                    event(&format!("{writer}-{point}-b")),
                ];
                let stored = store
                    .append_and_commit(&id, 2 * point, Some(lease.fence), events, Some(&meta))
                    .await
                    .unwrap();
                let indexes: Vec<u64> = stored.iter().map(|e| e.index).collect();
                assert_eq!(indexes, [2 * point, 2 * point + 1]);
            }
            (writer, meta)
        }));
    }
    for task in tasks {
        let (writer, meta) = task.await.unwrap();
        let log = store.read_events(&meta.session_id, 0, None).await.unwrap();
        assert_eq!(log.len() as u64, 2 * points);
        for (i, e) in log.iter().enumerate() {
            let point = i / 2;
            let half = if i % 2 == 0 { "a" } else { "b" };
            assert_eq!(
                (e.index, text(e)),
                (i as u64, format!("{writer}-{point}-{half}").as_str())
            );
        }
        let stored = store.load_session(&meta.session_id).await.unwrap().unwrap();
        assert_eq!(stored, meta, "the last point's metadata landed");
    }
}

/// Runs on one thread: the test polls every point once (each joins the committer's queue)
/// before any committer runs, so they are gathered into one group.
#[tokio::test(flavor = "current_thread")]
async fn a_fenced_conflicting_or_missing_point_fails_alone_while_the_others_land() {
    let Some((store, _db)) = store("a_refused_point_fails_alone").await else {
        return;
    };
    let ttl = Duration::from_secs(60);
    let good = leased(&store, 8).await;
    // Fenced: its lease was released and taken again since the token it presents.
    let fenced = created(&store).await;
    let old = store
        .acquire_lease(&fenced.session_id, "server-a", ttl)
        .await
        .unwrap();
    store.release_lease(&old).await.unwrap();
    store
        .acquire_lease(&fenced.session_id, "server-b", ttl)
        .await
        .unwrap();
    // Conflicting: its log already holds index 0.
    let conflicting = created(&store).await;
    store
        .append(&conflicting.session_id, 0, None, vec![event("first")])
        .await
        .unwrap();
    let mut missing = folio_store::suite::meta("alice");
    missing.title = Some("never created".into());

    let changed = |meta: &SessionMeta| SessionMeta {
        title: Some("written with the point".into()),
        ..meta.clone()
    };
    let mut points = Vec::new();
    for (meta, fence) in &good {
        let meta = changed(meta);
        let store = store.clone();
        let fence = *fence;
        points.push(Box::pin(async move {
            store
                .append_and_commit(
                    &meta.session_id,
                    0,
                    Some(fence),
                    vec![event("good")],
                    Some(&meta),
                )
                .await
        }) as Point);
    }
    for (meta, expected, fence) in [
        (changed(&fenced), 0, Some(old.fence)),
        (changed(&conflicting), 0, None),
        (changed(&missing), 0, None),
    ] {
        let store = store.clone();
        points.push(Box::pin(async move {
            store
                .append_and_commit(
                    &meta.session_id,
                    expected,
                    fence,
                    vec![event("bad")],
                    Some(&meta),
                )
                .await
        }));
    }
    let answers = futures::future::join_all(points).await;

    for answer in &answers[..good.len()] {
        assert_eq!(answer.as_ref().unwrap()[0].index, 0);
    }
    let bad = &answers[good.len()..];
    assert!(
        matches!(bad[0], Err(StoreError::Fenced { .. })),
        "{:?}",
        bad[0]
    );
    assert!(
        matches!(
            bad[1],
            Err(StoreError::Conflict {
                expected: 0,
                actual: 1,
                ..
            })
        ),
        "{:?}",
        bad[1]
    );
    assert!(
        matches!(bad[2], Err(StoreError::NotFound(_))),
        "{:?}",
        bad[2]
    );
    // The good points landed, events and metadata, in one transaction.
    let ids: Vec<String> = good
        .iter()
        .map(|(meta, _)| meta.session_id.clone())
        .collect();
    assert_eq!(
        writers(&store, &ids).await.len(),
        1,
        "one transaction wrote them all"
    );
    for (meta, _) in &good {
        let stored = store.load_session(&meta.session_id).await.unwrap().unwrap();
        assert_eq!(stored, changed(meta));
        assert_eq!(
            store
                .read_events(&meta.session_id, 0, None)
                .await
                .unwrap()
                .len(),
            1
        );
    }
    // A refused point wrote nothing: neither its events nor its metadata.
    for (meta, events) in [(&fenced, 0), (&conflicting, 1)] {
        let stored = store.load_session(&meta.session_id).await.unwrap().unwrap();
        assert_eq!(&stored, meta);
        let log = store.read_events(&meta.session_id, 0, None).await.unwrap();
        assert_eq!(log.len(), events);
    }
    assert_eq!(store.load_session(&missing.session_id).await.unwrap(), None);
}

/// Runs on one thread, so each round's points are gathered into one group (see above), while
/// every connection is killed every 15 ms: a group whose statement failed may have committed
/// before its answer was lost, and each point's retry must find out on its own.
#[tokio::test(flavor = "current_thread")]
async fn killed_connections_mid_group_are_retried_and_nothing_is_lost_or_doubled() {
    let Some((store, db)) = store("killed_connections_mid_group").await else {
        return;
    };
    let mut sessions = leased(&store, 8).await;
    let stop = Arc::new(AtomicBool::new(false));
    let killer = kill_connections(&db, stop.clone());
    let rounds = 30u64;
    for round in 0..rounds {
        let points = sessions
            .iter_mut()
            .enumerate()
            .map(|(writer, (meta, fence))| {
                meta.turns = round as u32 + 2;
                meta.last_index = 2 * round + 1;
                let (store, meta, fence) = (store.clone(), meta.clone(), *fence);
                Box::pin(async move {
                    let events = vec![
                        event(&format!("{writer}-{round}-a")),
                        event(&format!("{writer}-{round}-b")),
                    ];
                    store
                        .append_and_commit(
                            &meta.session_id,
                            2 * round,
                            Some(fence),
                            events,
                            Some(&meta),
                        )
                        .await
                }) as Point
            });
        for (writer, answer) in futures::future::join_all(points)
            .await
            .into_iter()
            .enumerate()
        {
            let stored = answer.unwrap_or_else(|err| panic!("point {round} of {writer}: {err}"));
            let indexes: Vec<u64> = stored.iter().map(|e| e.index).collect();
            assert_eq!(indexes, [2 * round, 2 * round + 1]);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let killed = killer.await.unwrap();
    assert!(killed > 5, "the test killed only {killed} connections");
    for (writer, (meta, _)) in sessions.iter().enumerate() {
        let log = store.read_events(&meta.session_id, 0, None).await.unwrap();
        let found: Vec<(u64, &str)> = log.iter().map(|e| (e.index, text(e))).collect();
        let wanted: Vec<(u64, String)> = (0..2 * rounds)
            .map(|i| {
                let half = if i % 2 == 0 { "a" } else { "b" };
                (i, format!("{writer}-{}-{half}", i / 2))
            })
            .collect();
        let wanted: Vec<(u64, &str)> = wanted.iter().map(|(i, t)| (*i, t.as_str())).collect();
        assert_eq!(found, wanted, "session {writer}'s log");
        let stored = store.load_session(&meta.session_id).await.unwrap().unwrap();
        assert_eq!(&stored, meta, "the last point's metadata landed");
    }
    let ids: Vec<String> = sessions
        .iter()
        .map(|(meta, _)| meta.session_id.clone())
        .collect();
    assert!(
        writers(&store, &ids).await.len() < ids.len() * rounds as usize,
        "no group of points committed together"
    );
}

/// Runs on one thread, so the points are gathered into one group (see above). The connection
/// is cut once the server ran the write, so each point's events and metadata landed while its
/// caller got an error: the retry must recognize them, neither reporting a conflict nor
/// writing them again. Then the same for a point written alone.
#[tokio::test(flavor = "current_thread")]
async fn a_write_whose_answer_was_lost_after_it_committed_lands_once() {
    let Some((direct, db)) = store("a_write_whose_answer_was_lost").await else {
        return;
    };
    let relay = CutRelay::start(&db).await;
    let store = PgStore::open(&relay.url, fast_options()).await.unwrap();
    let mut sessions = leased(&direct, 4).await;
    for (meta, _) in &mut sessions {
        meta.title = Some("written with the point".into());
    }
    let point = |meta: &SessionMeta, fence: u64| {
        let (store, meta) = (store.clone(), meta.clone());
        Box::pin(async move {
            store
                .append_and_commit(
                    &meta.session_id,
                    0,
                    Some(fence),
                    vec![event("once")],
                    Some(&meta),
                )
                .await
        }) as Point
    };

    relay.arm();
    let grouped = sessions.iter().map(|(meta, fence)| point(meta, *fence));
    let answers = futures::future::join_all(grouped).await;
    assert_eq!(relay.cuts(), 1, "the group's connection was not cut");
    for answer in answers {
        assert_eq!(answer.unwrap()[0].index, 0);
    }
    let ids: Vec<String> = sessions
        .iter()
        .map(|(meta, _)| meta.session_id.clone())
        .collect();
    assert_eq!(
        writers(&direct, &ids).await.len(),
        1,
        "the cut group's transaction wrote every point, and nothing wrote them again"
    );

    let mut alone = created(&direct).await;
    alone.title = Some("written alone".into());
    let fence = direct
        .acquire_lease(&alone.session_id, "server-a", Duration::from_secs(60))
        .await
        .unwrap()
        .fence;
    relay.arm();
    assert_eq!(point(&alone, fence).await.unwrap()[0].index, 0);
    assert_eq!(relay.cuts(), 2, "the lone point's connection was not cut");
    sessions.push((alone, fence));

    for (meta, _) in &sessions {
        let log = direct.read_events(&meta.session_id, 0, None).await.unwrap();
        let found: Vec<(u64, &str)> = log.iter().map(|e| (e.index, text(e))).collect();
        assert_eq!(found, [(0, "once")]);
        let stored = direct
            .load_session(&meta.session_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&stored, meta);
    }
}

#[tokio::test]
async fn a_follower_on_another_server_sees_every_grouped_event_in_order() {
    let Some((a, db)) = store("a_follower_sees_grouped_events").await else {
        return;
    };
    // Only notifications wake this follower: a lost one stalls it.
    let b = PgStore::open(
        &db,
        PgOptions {
            poll_interval: Duration::from_secs(3600),
            ..fast_options()
        },
    )
    .await
    .unwrap();
    let sessions = 8;
    let points = 30u64;
    let mut ids = Vec::new();
    let mut follows = Vec::new();
    for _ in 0..sessions {
        let meta = created(&a).await;
        follows.push(b.follow(&meta.session_id).await.unwrap());
        ids.push(meta.session_id);
    }
    let writers: Vec<_> = ids
        .iter()
        .map(|id| {
            let (a, id) = (a.clone(), id.clone());
            tokio::spawn(async move {
                for point in 0..points {
                    let events = (0..3).map(|n| event(&format!("{point}-{n}"))).collect();
                    a.append_and_commit(&id, 3 * point, None, events, None)
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for (id, mut follow) in ids.iter().zip(follows) {
        // Read up to each index reported, as a stream does: every event once, in order.
        let mut next = 0;
        while next < 3 * points {
            let last = tokio::time::timeout(Duration::from_secs(20), follow.next())
                .await
                .expect("the follower missed a notification")
                .expect("the stream ended");
            assert!(last >= next, "reported {last} after {next} was read");
            for e in b
                .read_events(id, next, Some((last + 1 - next) as usize))
                .await
                .unwrap()
            {
                let (point, n) = (next / 3, next % 3);
                assert_eq!((e.index, text(&e)), (next, format!("{point}-{n}").as_str()));
                next += 1;
            }
            assert_eq!(next, last + 1, "the reported index was not readable");
        }
    }
    for writer in writers {
        writer.await.unwrap();
    }
}
