//! Generated schedules of servers (each its own connection pool) whose workers run turns under
//! leases, crash holding them (the lease expires and another server takes over), and race on
//! one session's log. Whatever the schedule: the log has no gap, every acknowledged append is
//! in it once, and fencing tokens never go backwards along it: once a newer holder wrote, no
//! older holder's event follows, so two holders never interleave a log.

mod support;

use std::time::{Duration, Instant};

use folio_protocol::Event;
use folio_store::{SessionStore, StoreError};
use folio_store_postgres::PgStore;
use proptest::prelude::*;
use support::{event, fast_options, session, test_db, text};

/// What a worker does next.
#[derive(Debug, Clone)]
enum Step {
    /// Takes the lease, appends `events` one at a time, releases it.
    Turn { events: usize },
    /// Takes the lease, appends `events`, stalls past its lease (a paused or partitioned
    /// server: someone may take over meanwhile), appends `events` more (fenced when taken
    /// over) and dies without releasing.
    Stall { events: usize },
    /// Waits a little.
    Pause { ms: u64 },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (1usize..4).prop_map(|events| Step::Turn { events }),
        1 => (1usize..3).prop_map(|events| Step::Stall { events }),
        1 => (0u64..40).prop_map(|ms| Step::Pause { ms }),
    ]
}

/// A schedule: for each server, its workers' steps.
fn schedule() -> impl Strategy<Value = Vec<Vec<Vec<Step>>>> {
    prop::collection::vec(
        prop::collection::vec(prop::collection::vec(step(), 1..5), 1..3),
        2..4,
    )
}

/// `f<fence>/<worker>/<n>`: who wrote an event, under which token.
fn label(fence: u64, worker: &str, n: usize) -> String {
    format!("f{fence}/{worker}/{n}")
}

fn fence_of(event: &Event) -> u64 {
    text(event)[1..]
        .split('/')
        .next()
        .and_then(|fence| fence.parse().ok())
        .expect("a labelled event")
}

/// Runs one worker; returns the events its appends were acknowledged with.
async fn worker(
    store: PgStore,
    id: String,
    name: String,
    steps: Vec<Step>,
    ttl: Duration,
) -> Vec<Event> {
    let mut acked = Vec::new();
    for step in steps {
        let (events, stall) = match step {
            Step::Pause { ms } => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                continue;
            }
            Step::Turn { events } => (events, false),
            Step::Stall { events } => (events, true),
        };
        // Wait for the lease: held leases expire within ttl, so this ends.
        let deadline = Instant::now() + ttl * 20;
        let lease = loop {
            match store.acquire_lease(&id, &name, ttl).await {
                Ok(lease) => break lease,
                Err(StoreError::LeaseHeld { .. }) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(err) => panic!("{name}: acquire: {err}"),
            }
        };
        let writes = if stall { 2 * events } else { events };
        'turn: for n in 0..writes {
            if stall && n == events {
                tokio::time::sleep(ttl * 2).await;
            }
            loop {
                let next = store
                    .last_event(&id)
                    .await
                    .unwrap()
                    .map_or(0, |e| e.index + 1);
                match store
                    .append(
                        &id,
                        next,
                        Some(lease.fence),
                        vec![event(&label(lease.fence, &name, n))],
                    )
                    .await
                {
                    Ok(stored) => {
                        acked.extend(stored);
                        break;
                    }
                    Err(StoreError::Conflict { .. }) => tokio::task::yield_now().await,
                    // Taken over (this turn ran past its lease): stop writing.
                    Err(StoreError::Fenced { .. }) => break 'turn,
                    Err(err) => panic!("{name}: append: {err}"),
                }
            }
        }
        if !stall {
            store.release_lease(&lease).await.unwrap();
        }
    }
    acked
}

async fn scenario(url: String, servers: Vec<Vec<Vec<Step>>>, ttl: Duration) {
    let mut stores = Vec::new();
    for _ in &servers {
        stores.push(PgStore::open(&url, fast_options()).await.unwrap());
    }
    let id = session(&stores[0], "alice").await;
    let mut tasks = Vec::new();
    for (s, workers) in servers.into_iter().enumerate() {
        for (w, steps) in workers.into_iter().enumerate() {
            tasks.push(tokio::spawn(worker(
                stores[s].clone(),
                id.clone(),
                format!("s{s}w{w}"),
                steps,
                ttl,
            )));
        }
    }
    let mut acked = Vec::new();
    for task in tasks {
        acked.extend(task.await.unwrap());
    }
    let log = stores[0].read_events(&id, 0, None).await.unwrap();
    assert!(
        log.iter().enumerate().all(|(n, e)| e.index == n as u64),
        "the log has a gap"
    );
    // Every acknowledged append is in the log at its index, once; nothing else is.
    acked.sort_by_key(|e| e.index);
    assert_eq!(acked, log, "the log is exactly the acknowledged appends");
    let fences: Vec<u64> = log.iter().map(fence_of).collect();
    assert!(
        fences.windows(2).all(|w| w[0] <= w[1]),
        "an older lease holder wrote after a newer one: {fences:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn leases_and_appends_never_let_two_holders_interleave_a_log(
        servers in schedule(),
        ttl_ms in 80u64..250,
    ) {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let Some(db) = test_db("leases_and_appends_never_let_two_holders_interleave_a_log").await else {
                return;
            };
            scenario(db, servers, Duration::from_millis(ttl_ms)).await;
        });
    }
}
