//! Folio's server side by side with LangGraph's (issue 35, item 4): the same client load on
//! `folio serve` (the mock model server, 20 deltas per answer) and on `langgraph dev` (the
//! in-memory runtime and the fake chat model of `bench/peers/graph.py`, 20 deltas per answer),
//! one after the other in one run.
//!
//! Each client has its own kept-alive HTTP connection pool and repeats `--sessions` times:
//! create a session (a LangGraph thread) → stream its first turn to the end → a follow-up →
//! stream that turn to the end. A turn's latency runs from its first request to the end of its
//! answer on the stream; turns/s is every turn of a row over the row's wall time. Peak RSS is
//! `VmHWM` of the server process and its descendants, read after the row.
//!
//! Run: `bench/peers/run` (installs LangGraph into a venv, then runs this with `--langgraph`),
//! or `cargo bench -p folio-cli --bench peers -- [--clients 1,8,32] [--sessions N]
//! [--langgraph PATH/TO/bin/langgraph --graph bench/peers]`; without `--langgraph` only the
//! Folio rows run.

#[path = "../../tests/serve_support/mod.rs"]
mod serve_support;

mod langgraph;
mod load;
mod proc;

use std::path::PathBuf;
use std::time::Duration;

use folio_test_support::{MockModelServer, MockReply};
use load::{Row, System};

/// The agent `folio serve` runs: a chat agent on the mock model.
const AGENT: &str = "name = \"bench\"\nmodel = \"openai:gpt-test\"\n";

/// The answer of both fake models, one delta per word (see `bench/peers/graph.py`).
const ANSWER: &str = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty";

/// What a run measures.
struct Options {
    clients: Vec<usize>,
    sessions: usize,
    langgraph: Option<PathBuf>,
    graph: PathBuf,
}

fn options() -> Options {
    let mut options = Options {
        clients: vec![1, 8, 32],
        sessions: 10,
        langgraph: None,
        graph: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/peers")),
    };
    let args: Vec<String> = std::env::args().collect();
    for pair in args.windows(2) {
        let number = |text: &str| {
            text.parse::<usize>()
                .unwrap_or_else(|_| panic!("{} takes a number, not {text}", pair[0]))
        };
        match pair[0].as_str() {
            "--clients" => options.clients = pair[1].split(',').map(number).collect(),
            "--sessions" => options.sessions = number(&pair[1]),
            "--langgraph" => options.langgraph = Some(PathBuf::from(&pair[1])),
            "--graph" => options.graph = PathBuf::from(&pair[1]),
            _ => {}
        }
    }
    options
}

/// The Folio rows: one `folio serve` on the disk store for every client count.
async fn folio_rows(options: &Options) -> Vec<Row> {
    let mock = MockModelServer::start().await;
    let turns: usize = options.clients.iter().sum::<usize>() * options.sessions * 2 + 2;
    for _ in 0..turns {
        mock.push(MockReply::text(ANSWER));
    }
    let dir = serve_support::project(AGENT);
    let state = tempfile::tempdir().expect("a temporary state root");
    let served = serve_support::serve(
        &mock.openai_base_url(),
        dir.path(),
        state.path(),
        &["--mode", "single"],
    )
    .await;
    let pid = served.child.id().expect("folio serve is running");
    let system = System::Folio(served.url.clone());
    measure(&system, pid, options).await
}

/// The LangGraph rows: one `langgraph dev` for every client count.
async fn langgraph_rows(langgraph: &std::path::Path, options: &Options) -> Vec<Row> {
    let jobs = options.clients.iter().copied().max().unwrap_or(1);
    let server = langgraph::Server::start(langgraph, &options.graph, jobs).await;
    let system = System::LangGraph(server.url.clone());
    let rows = measure(&system, server.pid(), options).await;
    server.stop().await;
    rows
}

/// One warm-up session, then a row for each client count.
async fn measure(system: &System, pid: u32, options: &Options) -> Vec<Row> {
    load::run(system, 1, 1).await;
    let mut rows = Vec::new();
    for &clients in &options.clients {
        let mut row = load::run(system, clients, options.sessions).await;
        row.rss_mb = proc::peak_rss_kib(pid) as f64 / 1024.0;
        eprintln!("{}", row.markdown());
        rows.push(row);
        // Let the finished clients' connections close before the next row.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    rows
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let options = options();
    let before = proc::load_average();
    let folio = folio_rows(&options).await;
    let langgraph = match &options.langgraph {
        Some(path) => langgraph_rows(path, &options).await,
        None => {
            eprintln!("no --langgraph PATH: only the Folio rows run (bench/peers/run passes it)");
            Vec::new()
        }
    };
    let after = proc::load_average();
    println!("{}", Row::HEADER);
    for row in folio.iter().chain(&langgraph) {
        println!("{}", row.markdown());
    }
    for (folio, langgraph) in folio.iter().zip(&langgraph) {
        println!("{}", Row::ratio(folio, langgraph));
    }
    println!();
    println!("load average (1, 5, 15 min) before: {before}; after: {after}");
}
