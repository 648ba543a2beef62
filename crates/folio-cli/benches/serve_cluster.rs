//! Turns per second and stream fan-out of real `folio serve` processes: one server on the
//! embedded disk store against 1, 2 and 3 servers sharing one PostgreSQL store, all answered
//! by the same mock model server (zero latency, 20 deltas per answer).
//!
//! - **turns/s:** `--workers` clients at once, each creating a chat session on one server,
//!   streaming it from the next server, and sending `--turns` follow-ups that alternate
//!   between servers; a turn counts once its `session.waiting` arrived on the stream. p50/p99
//!   are per turn, from the request to that event.
//! - **fan-out:** `--streams` streams of one session spread over the servers; one follow-up;
//!   the time until each stream saw the turn's `session.waiting`.
//!
//! Run: `mkdir -p /tmp/pg && export FOLIO_TEST_DATABASE_URL=$(scripts/postgres start /tmp/pg)`
//! then `cargo bench -p folio-cli --bench serve_cluster -- [--workers N] [--turns N]
//! [--streams N]` (defaults 16, 10, 300). Without `FOLIO_TEST_DATABASE_URL` only the disk row
//! runs.

#[path = "../tests/serve_support/mod.rs"]
mod serve_support;

use std::time::{Duration, Instant};

use folio_protocol::{CreateSession, FollowUp};
use folio_test_support::{MockModelServer, MockReply};
use serve_support::{Served, Stream, create_session, follow_up, project, serve};

const AGENT: &str = "name = \"bench\"\nmodel = \"openai:gpt-test\"\n";

struct Options {
    workers: usize,
    turns: usize,
    streams: usize,
}

fn options() -> Options {
    let mut options = Options {
        workers: 16,
        turns: 10,
        streams: 300,
    };
    let args: Vec<String> = std::env::args().collect();
    for pair in args.windows(2) {
        let value = || {
            pair[1]
                .parse()
                .unwrap_or_else(|_| panic!("{} takes a number", pair[0]))
        };
        match pair[0].as_str() {
            "--workers" => options.workers = value(),
            "--turns" => options.turns = value(),
            "--streams" => options.streams = value(),
            _ => {}
        }
    }
    options
}

/// One setup: `servers` processes, on PostgreSQL (`database`) or on the disk store.
async fn start(
    mock: &MockModelServer,
    servers: usize,
    database: Option<&str>,
) -> (Vec<Served>, Vec<tempfile::TempDir>, serve_support::Project) {
    let dir = project(AGENT);
    let workspaces = tempfile::tempdir().unwrap();
    let workspace_root = workspaces.path().display().to_string();
    let mut states = vec![workspaces];
    let mut served = Vec::new();
    for _ in 0..servers {
        let state = tempfile::tempdir().unwrap();
        let mut args = vec!["--mode", "single"];
        if let Some(database) = database {
            args.extend(["--store", database, "--workspace-root", &workspace_root]);
        }
        served.push(serve(&mock.openai_base_url(), dir.path(), state.path(), &args).await);
        states.push(state);
    }
    (served, states, dir)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

/// Each worker: a session created on one server, streamed from the next, follow-ups
/// alternating; returns the wall time and every turn's latency.
async fn turns(urls: &[String], options: &Options) -> (Duration, Vec<Duration>) {
    let started = Instant::now();
    let workers = (0..options.workers).map(|worker| {
        let urls = urls.to_vec();
        let turns = options.turns;
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            let at = |n: usize| urls[n % urls.len()].clone();
            let sent = Instant::now();
            let created = create_session(&at(worker), &CreateSession::message("hello")).await;
            let id = created.session_id;
            let mut token = created.continuation_token;
            let mut stream = Stream::open(&at(worker + 1), &id, 0, None).await;
            stream.until("session.waiting").await;
            latencies.push(sent.elapsed());
            for turn in 1..=turns {
                let sent = Instant::now();
                let accepted = follow_up(
                    &at(worker + turn),
                    &id,
                    &FollowUp::new(&token, format!("turn {turn}")),
                )
                .await;
                token = accepted.continuation_token;
                stream.until_count("session.waiting", turn + 1).await;
                latencies.push(sent.elapsed());
            }
            latencies
        })
    });
    let mut latencies = Vec::new();
    for worker in futures::future::join_all(workers).await {
        latencies.extend(worker.unwrap());
    }
    let wall = started.elapsed();
    latencies.sort();
    (wall, latencies)
}

/// `streams` streams of one session over the servers, then one follow-up; each stream's time
/// to the turn's end.
async fn fan_out(urls: &[String], streams: usize) -> (Duration, Vec<Duration>, usize) {
    let created = create_session(&urls[0], &CreateSession::message("hello")).await;
    let id = created.session_id;
    let mut first = Stream::open(&urls[0], &id, 0, None).await;
    first.until("session.waiting").await;
    let start = first.events.len() as u64;
    let mut open = Vec::new();
    for n in 0..streams {
        open.push(Stream::open(&urls[n % urls.len()], &id, start, None).await);
    }
    let sent = Instant::now();
    follow_up(
        &urls[urls.len() - 1],
        &id,
        &FollowUp::new(&created.continuation_token, "to everyone"),
    )
    .await;
    let waits = open.into_iter().map(|mut stream| {
        tokio::spawn(async move {
            stream.until("session.waiting").await;
            (sent.elapsed(), stream.events.len())
        })
    });
    let mut times = Vec::new();
    let mut events = 0;
    for wait in futures::future::join_all(waits).await {
        let (elapsed, count) = wait.unwrap();
        times.push(elapsed);
        events += count;
    }
    times.sort();
    (sent.elapsed(), times, events)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let options = options();
    let mock = MockModelServer::start().await;
    let replies = options.workers * (options.turns + 1) + 2;
    let database = std::env::var("FOLIO_TEST_DATABASE_URL").ok();
    if database.is_none() {
        eprintln!(
            "FOLIO_TEST_DATABASE_URL is unset: only the disk store runs (start one with scripts/postgres)"
        );
    }
    let mut setups: Vec<(&str, usize)> = vec![("disk", 1)];
    if database.is_some() {
        setups.extend([("postgres", 1), ("postgres", 2), ("postgres", 3)]);
    }
    println!(
        "| store | servers | turns | wall s | turns/s | turn p50 ms | turn p99 ms | fan-out streams | all streams saw the end, ms | stream p50 / p99 ms | events/s |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (store, servers) in setups {
        for _ in 0..replies {
            mock.push(MockReply::text(
                "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty",
            ));
        }
        let url = match store {
            "postgres" => Some(
                folio_store_postgres::testing::test_database("serve_cluster")
                    .await
                    .expect("a test database"),
            ),
            _ => None,
        };
        let (served, _states, _dir) = start(&mock, servers, url.as_deref()).await;
        let urls: Vec<String> = served.iter().map(|s| s.url.clone()).collect();
        let (wall, latencies) = turns(&urls, &options).await;
        let (all, times, events) = fan_out(&urls, options.streams).await;
        println!(
            "| {store} | {servers} | {} | {:.2} | {:.0} | {} | {} | {} | {} | {} / {} | {:.0} |",
            latencies.len(),
            wall.as_secs_f64(),
            latencies.len() as f64 / wall.as_secs_f64(),
            ms(percentile(&latencies, 0.5)),
            ms(percentile(&latencies, 0.99)),
            options.streams,
            ms(all),
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.99)),
            events as f64 / all.as_secs_f64(),
        );
        drop(served);
        // Let the killed servers' connections go before the next setup starts.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
