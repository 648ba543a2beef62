//! The session index at scale (issue 35; figures in bench/RESULTS.md): cold start, RSS after
//! start and the first page of `GET /v1/sessions` (plain and filtered) with N stored sessions.
//! Run with `nice -n 10 cargo bench -p folio-server --bench session_index -- --sessions N`
//! (default 10,000; `--state DIR` keeps the generated state root in DIR, and reuses it when it
//! already holds the sessions). Results are printed as Markdown rows.
//!
//! The sessions are written as an older Folio leaves them: a `session.json` in each
//! `sessions/<id>/` and no index (every 10,000th is `running`, as a crash leaves a turn, the rest `waiting`; four
//! principals), so the first open rebuilds the index (timed: the one-off upgrade). Each figure
//! after it is taken in a fresh child process: `SessionManager::open` (the disk store loads
//! the index and settles the active sessions) + binding the HTTP port, then the first page of
//! the principal's sessions, and a page filtered by status.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use folio_agent::{Agent, discover};
use folio_model::{DeltaStream, ModelError, ModelRequest, Provider};
use folio_protocol::{SessionMode, SessionStatus};
use folio_server::http::{HttpConfig, Layout, Mount, router};
use folio_session::{LogBuffer, SessionManager, StateRoot};
use folio_store::{SessionFilter, SessionMeta};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// A provider no case calls (no turn runs).
struct Silent;

#[async_trait::async_trait]
impl Provider for Silent {
    async fn stream(
        &self,
        _request: &ModelRequest,
        _cancel: CancellationToken,
    ) -> Result<DeltaStream, ModelError> {
        Ok(Box::pin(futures::stream::empty()))
    }
}

#[derive(Serialize, Deserialize)]
struct ColdStart {
    listening_ms: f64,
    rss_kib: u64,
    first_page_ms: f64,
    running_page_ms: f64,
    first_page: usize,
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

async fn agent(project: &Path) -> Arc<Agent> {
    let definition = discover(project).definition.expect("valid project");
    Arc::new(
        Agent::load(definition, Arc::new(Silent), "silent".into())
            .await
            .unwrap(),
    )
}

fn project(dir: &Path) {
    std::fs::create_dir_all(dir.join("agent")).unwrap();
    std::fs::write(dir.join("agent/instructions.md"), "Bench agent.\n").unwrap();
    std::fs::write(
        dir.join("agent/agent.toml"),
        "name = \"bench\"\nmodel = \"openai:zero\"\ntools = [\"read\"]\n",
    )
    .unwrap();
}

async fn serve(manager: SessionManager) {
    let app = router(
        vec![Mount {
            slug: "bench".into(),
            evals: manager.state().clone(),
            manager,
            diagnostics: Vec::new(),
        }],
        HttpConfig {
            layout: Layout::Single,
            ..HttpConfig::default()
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
}

/// Writes `count` sessions' `session.json` files (no index), on two threads.
fn generate(state: &Path, count: usize) {
    let sessions = StateRoot::new(state).sessions_dir();
    std::fs::create_dir_all(&sessions).unwrap();
    let base = chrono::Utc::now() - chrono::Duration::days(30);
    let write = |from: usize, to: usize| {
        for n in from..to {
            let at = base + chrono::Duration::milliseconds(n as i64);
            let id = folio_store::new_session_id();
            let meta = SessionMeta {
                session_id: id.clone(),
                mode: SessionMode::Chat,
                status: if n % 10_000 == 0 {
                    SessionStatus::Running
                } else {
                    SessionStatus::Waiting
                },
                channel: "http".into(),
                principal: ["local", "alice", "bob", "carol"][n % 4].into(),
                title: Some(format!("session {n}")),
                created_at: at,
                updated_at: at,
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
            };
            let dir = sessions.join(&id);
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("session.json"), serde_json::to_vec(&meta).unwrap()).unwrap();
        }
    };
    std::thread::scope(|scope| {
        scope.spawn(|| write(0, count / 2));
        scope.spawn(|| write(count / 2, count));
    });
}

/// Child mode: open a manager, bind the port, read the first pages; print figures as JSON.
async fn cold_start(state: &Path, project: &Path) {
    let agent = agent(project).await;
    let started = Instant::now();
    let manager = SessionManager::open(StateRoot::new(state), agent, LogBuffer::new())
        .await
        .unwrap();
    serve(manager.clone()).await;
    let listening_ms = started.elapsed().as_secs_f64() * 1000.0;
    let rss_kib = rss_kib();
    let sessions = manager.sessions();
    let page_started = Instant::now();
    let page = sessions
        .list_matching(Some("local"), 50, None, None, &SessionFilter::default())
        .await
        .unwrap();
    let first_page_ms = page_started.elapsed().as_secs_f64() * 1000.0;
    let running = SessionFilter {
        status: Some(SessionStatus::Running),
        ..Default::default()
    };
    let page_started = Instant::now();
    sessions
        .list_matching(None, 50, None, None, &running)
        .await
        .unwrap();
    let running_page_ms = page_started.elapsed().as_secs_f64() * 1000.0;
    let figures = ColdStart {
        listening_ms,
        rss_kib,
        first_page_ms,
        running_page_ms,
        first_page: page.data.len(),
    };
    println!("{}", serde_json::to_string(&figures).unwrap());
    // What a stop leaves: the lock released, the index as written.
    manager.shutdown().await;
}

fn run_child(state: &Path, project: &Path) -> ColdStart {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--cold-start"])
        .arg(state)
        .arg(project)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(output.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap()
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|at| args.get(at + 1).cloned())
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--cold-start") {
        let state = PathBuf::from(&args[at + 1]);
        let project = PathBuf::from(&args[at + 2]);
        runtime.block_on(cold_start(&state, &project));
        return;
    }
    let count: usize = arg("--sessions")
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let temp = tempfile::tempdir().unwrap();
    let state = arg("--state").map_or_else(|| temp.path().join("state"), PathBuf::from);
    let project_dir = temp.path().join("project");
    project(&project_dir);
    println!("| case ({count} stored sessions) | figure | target |\n| --- | --- | --- |");
    if !state.join("sessions.index").exists() {
        let started = Instant::now();
        generate(&state, count);
        println!(
            "| write {count} `session.json` files (no index) | {:.1} s | — |",
            started.elapsed().as_secs_f64()
        );
        let upgrade = run_child(&state, &project_dir);
        println!(
            "| first start: rebuild the index from every `session.json`, settle every session | {:.0} ms | once, on upgrade |",
            upgrade.listening_ms
        );
    }
    let empty = temp.path().join("empty");
    let cold = run_child(&empty, &project_dir);
    println!(
        "| cold start to listening, empty state root (the start's fixed cost) | {:.1} ms | — |",
        cold.listening_ms
    );
    for run in 1..=3 {
        let cold = run_child(&state, &project_dir);
        println!(
            "| cold start to listening (run {run}) | {:.1} ms | < 50 ms at 10,000, < 500 ms at 1,000,000 |",
            cold.listening_ms
        );
        println!(
            "| RSS after start (run {run}) | {} KiB | < 200 MB at 1,000,000 |",
            cold.rss_kib
        );
        println!(
            "| first page of `GET /v1/sessions` (50 of one principal's, run {run}) | {:.2} ms ({} rows) | < 10 ms at 1,000,000 |",
            cold.first_page_ms, cold.first_page
        );
        println!(
            "| first page filtered by `status=running`, every principal (run {run}) | {:.2} ms | — |",
            cold.running_page_ms
        );
    }
    let index = std::fs::metadata(state.join("sessions.index")).map_or(0, |m| m.len());
    println!(
        "| `sessions.index` size | {:.1} MB | — |",
        index as f64 / 1e6
    );
}
