//! Append latency of the session stores through the `SessionStore` trait (figures in
//! bench/RESULTS.md): the embedded disk store (`DiskStore`) against PostgreSQL (`PgStore`), on
//! one machine. Run with
//! `cargo bench -p folio-store-disk --bench store_append -- [--ops N] [--writers 1,8,32]`; the
//! PostgreSQL cases run when `FOLIO_TEST_DATABASE_URL` names a server (`scripts/postgres start
//! DIR` prints one), each on a fresh database. Results are printed as Markdown rows.
//!
//! Two operations, each timed from call to durable:
//! - **durable append**: one event appended under the session's lease (fencing token checked),
//!   then committed: what a message's acknowledgement waits for;
//! - **turn**: 24 events appended one by one (a turn's deltas, steps and boundary), then one
//!   commit: what a turn costs the store when each event is written as it happens;
//! - **turn, one batch**: the same 24 events in one append, then one commit: what it costs when
//!   the writer buffers a turn's events until the boundary;
//! - **durable point**: one event and the session's metadata in one
//!   `append_and_commit`: what the engine writes at a create, a follow-up or a turn's end.
//!
//! `W` writers each own a session and run their share of the operations back to back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use folio_protocol::{EventBody, MessageAppended};
use folio_store::{NewEvent, SessionStore};
use folio_store_disk::{DiskStore, StateRoot};
use folio_store_postgres::{PgOptions, PgStore};

/// Events in one turn-shaped operation.
const TURN_EVENTS: usize = 24;

struct Args {
    ops: usize,
    writers: Vec<usize>,
}

fn args() -> Args {
    let mut args = Args {
        ops: 2_000,
        writers: vec![1, 8, 32],
    };
    let mut given = std::env::args().skip(1);
    while let Some(arg) = given.next() {
        match arg.as_str() {
            "--ops" => {
                args.ops = given
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(args.ops)
            }
            "--writers" => {
                args.writers = given
                    .next()
                    .map(|list| list.split(',').filter_map(|n| n.parse().ok()).collect())
                    .unwrap_or_default()
            }
            // `cargo bench` passes `--bench`.
            _ => {}
        }
    }
    args
}

fn delta(n: usize) -> NewEvent {
    NewEvent::new(
        Some("turn_bench"),
        EventBody::MessageAppended(MessageAppended {
            delta: format!("word{n} "),
        }),
    )
}

#[derive(Clone, Copy)]
enum Operation {
    DurableAppend,
    Turn,
    BatchedTurn,
    DurablePoint,
}

/// Runs `ops` operations over `writers` sessions; returns each operation's latency and the
/// wall time of the whole run: from when every writer has its session and lease to when the
/// last one finished (a session's creation and lease are not what is measured).
async fn run(
    store: Arc<dyn SessionStore>,
    operation: Operation,
    ops: usize,
    writers: usize,
) -> (Vec<Duration>, Duration) {
    let ready = Arc::new(tokio::sync::Barrier::new(writers + 1));
    let tasks: Vec<_> = (0..writers)
        .map(|writer| {
            let store = store.clone();
            let ready = ready.clone();
            let share = ops / writers + usize::from(writer < ops % writers);
            tokio::spawn(async move {
                let mut meta = folio_store::suite::meta("bench");
                let id = meta.session_id.clone();
                store.create_session(&meta).await.unwrap();
                store.commit(&id, None).await.unwrap();
                let lease = store
                    .acquire_lease(&id, "bench", Duration::from_secs(600))
                    .await
                    .unwrap();
                ready.wait().await;
                let mut next = 0u64;
                let mut latencies = Vec::with_capacity(share);
                for _ in 0..share {
                    let op = Instant::now();
                    match operation {
                        Operation::DurableAppend => {
                            store
                                .append(&id, next, Some(lease.fence), vec![delta(0)])
                                .await
                                .unwrap();
                            next += 1;
                        }
                        Operation::Turn => {
                            for n in 0..TURN_EVENTS {
                                store
                                    .append(&id, next, Some(lease.fence), vec![delta(n)])
                                    .await
                                    .unwrap();
                                next += 1;
                            }
                        }
                        Operation::BatchedTurn => {
                            let events = (0..TURN_EVENTS).map(delta).collect();
                            store
                                .append(&id, next, Some(lease.fence), events)
                                .await
                                .unwrap();
                            next += TURN_EVENTS as u64;
                        }
                        Operation::DurablePoint => {
                            meta.last_index = next;
                            store
                                .append_and_commit(
                                    &id,
                                    next,
                                    Some(lease.fence),
                                    vec![delta(0)],
                                    Some(&meta),
                                )
                                .await
                                .unwrap();
                            next += 1;
                        }
                    }
                    store.commit(&id, None).await.unwrap();
                    latencies.push(op.elapsed());
                }
                let finished = Instant::now();
                store.release_lease(&lease).await.unwrap();
                (latencies, finished)
            })
        })
        .collect();
    ready.wait().await;
    let started = Instant::now();
    let mut wall = Duration::ZERO;
    let mut latencies = Vec::with_capacity(ops);
    for task in futures::future::join_all(tasks).await {
        let (mine, finished) = task.unwrap();
        latencies.extend(mine);
        wall = wall.max(finished - started);
    }
    latencies.sort_unstable();
    (latencies, wall)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let at = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[at].as_secs_f64() * 1000.0
}

async fn report(backend: &str, store: Arc<dyn SessionStore>, args: &Args) {
    for (operation, name, ops) in [
        (Operation::DurableAppend, "durable append", args.ops),
        (Operation::Turn, "turn (24 appends + commit)", args.ops / 4),
        (
            Operation::BatchedTurn,
            "turn (one 24-event append + commit)",
            args.ops / 4,
        ),
        (
            Operation::DurablePoint,
            "durable point (one event + metadata)",
            args.ops,
        ),
    ] {
        for &writers in &args.writers {
            let (latencies, wall) = run(store.clone(), operation, ops.max(writers), writers).await;
            println!(
                "| {backend} | {name} | {writers} | {} | {:.2} | {:.2} | {:.0} |",
                latencies.len(),
                percentile(&latencies, 0.50),
                percentile(&latencies, 0.99),
                latencies.len() as f64 / wall.as_secs_f64(),
            );
        }
    }
}

#[tokio::main]
async fn main() {
    let args = args();
    println!("| store | operation | writers | ops | p50 ms | p99 ms | ops/s |");
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
    let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    let disk: Arc<dyn SessionStore> =
        Arc::new(DiskStore::open(StateRoot::new(dir.path())).unwrap());
    report("disk", disk, &args).await;
    match folio_store_postgres::testing::test_database("store_append").await {
        Some(url) => {
            let store: Arc<dyn SessionStore> =
                Arc::new(PgStore::open(&url, PgOptions::default()).await.unwrap());
            report("postgres", store, &args).await;
        }
        None => eprintln!("the PostgreSQL cases were skipped (see above)"),
    }
}
