//! Load benchmark of the embedded server (targets and figures in bench/RESULTS.md): concurrent
//! streams (1,000 by default) fanned out from one session or several, 200 concurrent sessions
//! running turns, memory per idle session with 10,000 stored sessions, and cold start to
//! listening. Run with `cargo bench -p folio-server --bench serve_load` (optionally `-- --sessions
//! N --streams N --stream-sessions N --turns N --keep-alive-turns N`, `--kept-alive-only` for the
//! kept-alive cases alone, `--fan-out-only` for the streams alone, `--engine-streams-only` for
//! the memory of `--streams` streams without HTTP, `--state-in DIR` to put the kept-alive
//! cases' state roots under DIR instead of the temporary directory, e.g. a tmpfs to see the cost
//! without the disk, and `--store URL` to run them on PostgreSQL instead of the disk store, each
//! case on a fresh database created on the server that URL names); results
//! are printed as Markdown rows for bench/RESULTS.md.
//! It opens with kept-alive clients (1, 8, 32 at once) creating sessions and streaming each turn
//! to `session.waiting`, plus one run with Nagle's algorithm left on to show what it costs.
//! The streams' clients run in a child process of this binary (`--stream-clients`), so that
//! the server's RSS is its own and 10,000 streams fit one process's `ulimit -n` on each side.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use folio_agent::{Agent, discover};
use folio_model::{Delta, DeltaStream, ModelError, ModelRequest, Provider};
use folio_protocol::{CreateSession, FinishReason, SessionCreated, Usage};
use folio_server::http::{HttpConfig, Layout, Mount, router};
use folio_session::{LogBuffer, SessionManager, StateRoot};
use futures::{StreamExt, stream};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// Text deltas per answer (each is one `message.appended` event).
const DELTAS: usize = 20;

/// Answers every request at once with `DELTAS` text deltas.
struct ZeroLatency;

#[async_trait::async_trait]
impl Provider for ZeroLatency {
    async fn stream(
        &self,
        _request: &ModelRequest,
        _cancel: CancellationToken,
    ) -> Result<DeltaStream, ModelError> {
        let mut deltas: Vec<Result<Delta, ModelError>> = (0..DELTAS)
            .map(|i| Ok(Delta::Text(format!("w{i} "))))
            .collect();
        deltas.push(Ok(Delta::Usage(Usage {
            input_tokens: 10,
            output_tokens: DELTAS as u64,
            ..Usage::default()
        })));
        deltas.push(Ok(Delta::Finish(FinishReason::Stop)));
        Ok(stream::iter(deltas).boxed())
    }
}

/// The `type` of an event line: all the load clients read of an event, so that the figures
/// measure the server rather than the clients' parsing of whole events.
#[derive(Deserialize)]
struct EventType<'a> {
    #[serde(rename = "type", borrow)]
    kind: &'a str,
}

impl<'a> EventType<'a> {
    /// The type of the NDJSON event `line`.
    fn of(line: &'a [u8]) -> &'a str {
        serde_json::from_slice::<EventType>(line)
            .unwrap_or_else(|err| panic!("not an event ({err}): {}", String::from_utf8_lossy(line)))
            .kind
    }
}

/// Creates a session with `message` over HTTP.
async fn create(client: &reqwest::Client, url: &str, message: String) -> SessionCreated {
    client
        .post(format!("{url}/v1/session"))
        .json(&CreateSession::message(message))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// What a `--cold-start` child prints (one JSON line).
#[derive(Serialize, Deserialize)]
struct ColdStart {
    /// From opening the state root to a bound HTTP port.
    listening_ms: f64,
    /// RSS before opening the state root.
    rss_before_kib: u64,
    /// RSS once listening.
    rss_after_kib: u64,
    /// How long the first page of the session list took.
    first_page_ms: f64,
    /// Sessions on that page.
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
        Agent::load(definition, Arc::new(ZeroLatency), "zero".into())
            .await
            .unwrap(),
    )
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    std::fs::write(dir.path().join("agent/instructions.md"), "Bench agent.\n").unwrap();
    std::fs::write(
        dir.path().join("agent/agent.toml"),
        "name = \"bench\"\nmodel = \"openai:zero\"\ntools = [\"read\"]\n",
    )
    .unwrap();
    dir
}

async fn serve(manager: SessionManager) -> String {
    serve_with(manager, true).await
}

/// Serves `manager` on a loopback port, with or without `TCP_NODELAY` on its connections.
async fn serve_with(manager: SessionManager, nodelay: bool) -> String {
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
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move {
        if nodelay {
            axum::serve(folio_server::no_delay(listener), app)
                .await
                .unwrap();
        } else {
            axum::serve(listener, app).await.unwrap();
        }
    });
    url
}

/// One client's loop over a kept-alive connection pool: create a session, stream its turn to
/// `session.waiting`; returns each turn's latency and when its first event arrived (ms).
async fn client_turns(url: String, turns: usize) -> Vec<(f64, f64)> {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut figures = Vec::with_capacity(turns);
    for n in 0..turns {
        let begun = Instant::now();
        let created = create(&client, &url, format!("turn {n}")).await;
        let id = &created.session_id;
        let response = client
            .get(format!("{url}/v1/session/{id}/stream"))
            .send()
            .await
            .unwrap();
        let mut body = response.bytes_stream();
        let mut buffer = Vec::new();
        let mut first_event = None;
        'read: while let Some(chunk) = body.next().await {
            buffer.extend_from_slice(&chunk.unwrap());
            first_event.get_or_insert_with(|| begun.elapsed().as_secs_f64() * 1000.0);
            while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                if line.len() > 1 && EventType::of(&line) == "session.waiting" {
                    break 'read;
                }
            }
        }
        figures.push((
            begun.elapsed().as_secs_f64() * 1000.0,
            first_event.expect("the stream sent an event"),
        ));
    }
    figures
}

/// `clients` clients each run `turns` turns at once; prints latency and throughput rows.
/// Runs one kept-alive case; returns its state root, which the caller removes only after the
/// last case: on ext4 without a journal (this project's VM) every new inode is checked against
/// those freed in the last 60 s (`recently_deleted`), so removing a case's thousands of files
/// slows the inode creation of the cases after it for minutes, 1.1 ms → 5.5 ms per turn.
async fn kept_alive(
    agent: Arc<Agent>,
    clients: usize,
    turns: usize,
    nodelay: bool,
) -> tempfile::TempDir {
    let args: Vec<String> = std::env::args().collect();
    let state = match args.iter().position(|a| a == "--state-in") {
        Some(i) => tempfile::tempdir_in(args.get(i + 1).expect("--state-in DIR: name a directory"))
            .expect("--state-in DIR: cannot create a temporary directory there"),
        None => tempfile::tempdir().unwrap(),
    };
    let manager = match args.iter().position(|a| a == "--store") {
        Some(i) => {
            let server = args
                .get(i + 1)
                .expect("--store URL: name a PostgreSQL server (any database URL on it)");
            let url = folio_store_postgres::testing::fresh_database(server).await;
            let store = folio_store_postgres::PgStore::open(&url, Default::default())
                .await
                .expect("--store URL: cannot open the PostgreSQL store");
            SessionManager::open_on_store(
                StateRoot::new(state.path()),
                agent,
                LogBuffer::new(),
                Arc::new(store),
                folio_session::DEFAULT_LEASE_TTL,
            )
            .await
        }
        None => SessionManager::open(StateRoot::new(state.path()), agent, LogBuffer::new()).await,
    }
    .unwrap();
    let url = serve_with(manager.clone(), nodelay).await;
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| tokio::spawn(client_turns(url.clone(), turns)))
        .collect();
    let mut figures = Vec::new();
    for task in tasks {
        figures.extend(task.await.unwrap());
    }
    let wall = started.elapsed().as_secs_f64();
    let mut latencies: Vec<f64> = figures.iter().map(|(total, _)| *total).collect();
    let mut firsts: Vec<f64> = figures.iter().map(|(_, first)| *first).collect();
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    firsts.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let nagle = if nodelay {
        "TCP_NODELAY"
    } else {
        "Nagle on (before the fix)"
    };
    println!(
        "| kept-alive clients: {clients} × {turns} turns (create → stream to `session.waiting`), {nagle} | {:.0} turns/s; turn p50 {:.2} ms, p99 {:.2} ms; first event p50 {:.2} ms | one client p50 < 5 ms; 8 clients > 1,000 turns/s |",
        figures.len() as f64 / wall,
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        percentile(&firsts, 0.5),
    );
    manager.shutdown().await;
    state
}

/// Reads NDJSON events from a stream response until `count` events of type `kind` arrived.
async fn read_until(response: reqwest::Response, kind: &str, count: usize) -> usize {
    let mut body = response.bytes_stream();
    let mut buffer = Vec::new();
    let mut seen = 0;
    let mut events = 0;
    while let Some(chunk) = body.next().await {
        buffer.extend_from_slice(&chunk.unwrap());
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            if line.len() <= 1 {
                continue;
            }
            events += 1;
            if EventType::of(&line) == kind {
                seen += 1;
                if seen == count {
                    return events;
                }
            }
        }
    }
    panic!("the stream ended early");
}

/// What a `--stream-clients` child prints once every stream replayed the first turn (one JSON
/// line), then once every stream saw the follow-up's end.
#[derive(Serialize, Deserialize)]
struct StreamClients {
    /// From the first request to every stream having replayed the first turn.
    open_ms: f64,
    /// When each stream saw the follow-up's `session.waiting` (ns since the Unix epoch: the
    /// clock both processes share); empty in the first line.
    ends_ns: Vec<u128>,
    /// Events the streams read in all; 0 in the first line.
    events: usize,
    /// Reads the streams made after the first turn's replay (about one per server write).
    reads: usize,
    /// The latest `at` of the follow-ups' `session.waiting` events (ns since the Unix epoch):
    /// when the last turn appended its end, apart from how long its streams took to show it.
    ended_ns: u128,
}

/// Nanoseconds since the Unix epoch.
fn unix_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// What a load client keeps of its raw HTTP/1.1 stream: the end of a line a read cut, and
/// what it counted.
#[derive(Default)]
struct RawStream {
    /// The start of a line whose end has not been read yet.
    partial: Vec<u8>,
    /// Whether the status line was read (and was a 200).
    answered: bool,
    /// Event lines read.
    events: usize,
    /// `session.waiting` events read.
    waiting: usize,
    /// Reads after the first turn's replay (about one per server write).
    reads: usize,
}

/// What a read brought a [`RawStream`] to.
enum Seen {
    More,
    /// The first turn's `session.waiting`: the replay is over.
    Replayed,
    /// The follow-up's `session.waiting`, appended at this time (ns since the Unix epoch).
    Ended(u128),
}

impl RawStream {
    /// Takes the bytes of one read. An event is a line that starts `{"type":"` (the status
    /// line, headers and chunk sizes do not; compact JSON has no newline inside a line).
    fn take(&mut self, bytes: &[u8]) -> Seen {
        self.reads += usize::from(self.waiting > 0);
        let mut seen = Seen::More;
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|b| *b == b'\n') {
            let now = if self.partial.is_empty() {
                self.line(&rest[..end])
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&rest[..end]);
                let now = self.line(&line);
                line.clear();
                self.partial = line;
                now
            };
            rest = &rest[end + 1..];
            match now {
                Some(Seen::Ended(at)) => return Seen::Ended(at),
                Some(now) => seen = now,
                None => {}
            }
        }
        self.partial.extend_from_slice(rest);
        seen
    }

    /// Takes one whole line (without its newline); answers what it was when it matters.
    fn line(&mut self, line: &[u8]) -> Option<Seen> {
        if !self.answered {
            assert!(
                line.starts_with(b"HTTP/1.1 200"),
                "the stream was refused: {}",
                String::from_utf8_lossy(line)
            );
            self.answered = true;
        }
        if !line.starts_with(b"{\"type\":\"") {
            return None;
        }
        self.events += 1;
        if !line.starts_with(b"{\"type\":\"session.waiting\"") {
            return None;
        }
        self.waiting += 1;
        Some(match self.waiting {
            1 => Seen::Replayed,
            _ => Seen::Ended(appended_ns(line)),
        })
    }
}

/// When the event `line` was appended (its `at`, ns since the Unix epoch).
fn appended_ns(line: &[u8]) -> u128 {
    #[derive(Deserialize)]
    struct At {
        at: chrono::DateTime<chrono::Utc>,
    }
    let at = serde_json::from_slice::<At>(line)
        .expect("an event has its time")
        .at;
    at.timestamp_nanos_opt().unwrap_or(0) as u128
}

/// Child mode: `streams` clients on `url`, spread over the sessions `ids`, each reading its
/// stream to the second `session.waiting` over raw HTTP/1.1 (a request written on a socket, its
/// answer scanned for event lines: a load generator as lean as the server's side of it, so that
/// the figure is the server's). The clients live in their own process so that the
/// server's RSS is the server's alone and neither process runs out of file descriptors at
/// 10,000 streams (20,000 sockets would not fit under one `ulimit -n` of 20,000).
async fn stream_clients(url: &str, streams: usize, ids: &[String]) {
    let address = url
        .strip_prefix("http://")
        .expect("an http URL")
        .to_string();
    // Opening at most this many at once keeps the server's accept backlog from overflowing
    // (a dropped SYN is retried after a second).
    let opening = Arc::new(tokio::sync::Semaphore::new(256));
    let (replayed, mut replays) = tokio::sync::mpsc::unbounded_channel::<()>();
    let opened = Instant::now();
    let readers: Vec<_> = (0..streams)
        .map(|n| {
            let request = format!(
                "GET /v1/session/{}/stream HTTP/1.1\r\nHost: {address}\r\n\r\n",
                ids[n % ids.len()]
            );
            let address = address.clone();
            let opening = opening.clone();
            let replayed = replayed.clone();
            tokio::spawn(async move {
                let permit = opening.acquire_owned().await.unwrap();
                let mut socket = tokio::net::TcpStream::connect(&address).await.unwrap();
                socket.set_nodelay(true).unwrap();
                socket.write_all(request.as_bytes()).await.unwrap();
                let mut stream = RawStream::default();
                let mut read = Vec::with_capacity(16 * 1024);
                let mut permit = Some(permit);
                loop {
                    read.clear();
                    let got = socket.read_buf(&mut read).await.unwrap();
                    assert!(got > 0, "a stream ended before the follow-up's end");
                    drop(permit.take());
                    match stream.take(&read) {
                        Seen::More => {}
                        Seen::Replayed => {
                            let _ = replayed.send(());
                        }
                        // The connection stays open until every stream saw the end, so that
                        // no stream's figure includes another's teardown.
                        Seen::Ended(appended) => return (unix_ns(), stream, appended, socket),
                    }
                }
            })
        })
        .collect();
    drop(replayed);
    for _ in 0..streams {
        replays
            .recv()
            .await
            .expect("every stream replays the first turn");
    }
    let ready = StreamClients {
        open_ms: opened.elapsed().as_secs_f64() * 1000.0,
        ends_ns: Vec::new(),
        events: 0,
        reads: 0,
        ended_ns: 0,
    };
    println!("{}", serde_json::to_string(&ready).unwrap());
    let mut done = StreamClients {
        ends_ns: Vec::with_capacity(streams),
        ..ready
    };
    let mut open = Vec::with_capacity(streams);
    for reader in readers {
        let (end, stream, ended, socket) = reader.await.unwrap();
        done.ends_ns.push(end);
        done.events += stream.events;
        done.reads += stream.reads;
        done.ended_ns = done.ended_ns.max(ended);
        open.push(socket);
    }
    println!("{}", serde_json::to_string(&done).unwrap());
}

/// `streams` concurrent HTTP streams on `sessions` sessions (clients in a child process): the
/// server's RSS per open stream, then one follow-up per session and how long until every
/// stream saw its turn end.
async fn fan_out(agent: Arc<Agent>, streams: usize, sessions: usize) {
    let state = tempfile::tempdir().unwrap();
    let manager = SessionManager::open(StateRoot::new(state.path()), agent, LogBuffer::new())
        .await
        .unwrap();
    let url = serve(manager.clone()).await;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut ids = Vec::new();
    for n in 0..sessions {
        ids.push(
            create(&client, &url, format!("fan out {n}"))
                .await
                .session_id,
        );
    }
    drop(client);
    let rss_before = rss_kib();
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--stream-clients",
            &url,
            &streams.to_string(),
            &ids.join(","),
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(child.stdout.take().unwrap()));
    let ready: StreamClients = serde_json::from_str(
        &lines
            .next_line()
            .await
            .unwrap()
            .expect("the clients opened"),
    )
    .unwrap();
    let rss_open = rss_kib();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let sent = unix_ns();
    futures::future::join_all(
        ids.iter()
            .map(|id| manager.turns().send("local", id, "again", None)),
    )
    .await
    .into_iter()
    .for_each(|sent| sent.unwrap());
    let done: StreamClients = serde_json::from_str(
        &lines
            .next_line()
            .await
            .unwrap()
            .expect("the clients finished"),
    )
    .unwrap();
    assert!(child.wait().await.unwrap().success());
    let mut latencies: Vec<f64> = done
        .ends_ns
        .iter()
        .map(|end| end.saturating_sub(sent) as f64 / 1e6)
        .collect();
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let all = latencies.last().copied().unwrap_or(0.0);
    let spread = if sessions == 1 {
        "one session".to_string()
    } else {
        format!("{sessions} sessions")
    };
    println!(
        "| {streams} concurrent streams on {spread}: open + replay | {:.0} ms; server RSS +{} KiB ({:.1} KiB per open stream) | 10,000 open streams, memory per stream bounded |",
        ready.open_ms,
        rss_open.saturating_sub(rss_before),
        rss_open.saturating_sub(rss_before) as f64 / streams as f64
    );
    println!(
        "| one turn per session fanned out to {streams} streams ({spread}) | all streams saw the turn end {all:.0} ms after the follow-up; per stream p50 {:.0} ms, p99 {:.0} ms; {} events delivered in {:.1} reads per stream | all within 250 ms |",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        done.events,
        done.reads as f64 / streams as f64,
    );
    println!(
        "the last turn appended its end {:.0} ms after the follow-up (event times are in ms); load average before the follow-up: {}",
        done.ended_ns.saturating_sub(sent) as f64 / 1e6,
        load.trim()
    );
    manager.shutdown().await;
}

/// `streams` streams of the engine alone (`Events::stream`, no HTTP) on one session, each
/// having replayed its first turn: what a stream's task and buffer cost, apart from its
/// connection.
async fn engine_streams(agent: Arc<Agent>, streams: usize) {
    let state = tempfile::tempdir().unwrap();
    let manager = SessionManager::open(StateRoot::new(state.path()), agent, LogBuffer::new())
        .await
        .unwrap();
    let id = manager
        .sessions()
        .create("local", "http", CreateSession::message("engine streams"))
        .await
        .unwrap()
        .session_id;
    let rss_before = rss_kib();
    let mut open = Vec::with_capacity(streams);
    for _ in 0..streams {
        let mut stream = manager.events().stream("local", &id, 0).await.unwrap();
        while let Some(event) = stream.rx.recv().await {
            if event.is_some_and(|e| e.event_type() == "session.waiting") {
                break;
            }
        }
        open.push(stream);
    }
    let rss_open = rss_kib();
    println!(
        "| {streams} engine streams (`Events::stream`, no HTTP) on one session | RSS +{} KiB ({:.2} KiB per stream) | — |",
        rss_open.saturating_sub(rss_before),
        rss_open.saturating_sub(rss_before) as f64 / streams as f64
    );
    drop(open);
    manager.shutdown().await;
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Child mode: open a manager on a state root and bind the HTTP port; print figures as JSON.
async fn cold_start(state: &Path, project: &Path) {
    let agent = agent(project).await;
    let before = rss_kib();
    let started = Instant::now();
    let manager = SessionManager::open(StateRoot::new(state), agent, LogBuffer::new())
        .await
        .unwrap();
    let url = serve(manager.clone()).await;
    let listening = started.elapsed();
    let page_started = Instant::now();
    let page = manager
        .sessions()
        .list("local", 50, None, None)
        .await
        .unwrap();
    let page_ms = page_started.elapsed().as_secs_f64() * 1000.0;
    let _ = url;
    let figures = ColdStart {
        listening_ms: listening.as_secs_f64() * 1000.0,
        rss_before_kib: before,
        rss_after_kib: rss_kib(),
        first_page_ms: page_ms,
        first_page: page.data.len(),
    };
    println!("{}", serde_json::to_string(&figures).unwrap());
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

async fn run() {
    let sessions = arg("--sessions", 10_000);
    let streams = arg("--streams", 1_000);
    let turns = arg("--turns", 200);
    let keep_alive_turns = arg("--keep-alive-turns", 200);
    let project = project();
    let agent = agent(project.path()).await;
    println!("| case | figure | target |\n| --- | --- | --- |");

    if std::env::args().any(|a| a == "--engine-streams-only") {
        engine_streams(agent, streams).await;
        return;
    }
    if std::env::args().any(|a| a == "--fan-out-only") {
        fan_out(agent, streams, arg("--stream-sessions", 1)).await;
        return;
    }

    // 0. Latency and throughput of clients that keep their connections alive.
    let mut states = vec![kept_alive(agent.clone(), 1, keep_alive_turns / 4, false).await];
    for clients in [1, 8, 32] {
        states.push(kept_alive(agent.clone(), clients, keep_alive_turns, true).await);
    }
    drop(states);
    if std::env::args().any(|a| a == "--kept-alive-only") {
        return;
    }

    // 1. 10,000 stored sessions (each ran one real turn), then cold start and idle memory.
    let state = tempfile::tempdir().unwrap();
    let manager = SessionManager::open(
        StateRoot::new(state.path()),
        agent.clone(),
        LogBuffer::new(),
    )
    .await
    .unwrap();
    let started = Instant::now();
    stream::iter(0..sessions)
        .for_each_concurrent(64, |n| {
            let manager = manager.clone();
            async move {
                let accepted = manager
                    .sessions()
                    .create(
                        "local",
                        "http",
                        CreateSession {
                            message: format!("m{n}"),
                            title: Some(format!("session {n}")),
                            workspace_files: Default::default(),
                            mode: None,
                            client_message_id: None,
                            continuation_key: None,
                        },
                    )
                    .await
                    .unwrap();
                let mut events = manager
                    .events()
                    .stream("local", &accepted.session_id, 0)
                    .await
                    .unwrap();
                while let Some(event) = events.rx.recv().await {
                    if event.is_some_and(|e| e.event_type() == "session.waiting") {
                        break;
                    }
                }
            }
        })
        .await;
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "| store {sessions} sessions (one turn each, 64 at a time) | {elapsed:.1} s ({:.0} sessions/s) | — |",
        sessions as f64 / elapsed
    );
    manager.shutdown().await;
    drop(manager);
    let empty = tempfile::tempdir().unwrap();
    let cold_empty = run_child(empty.path(), project.path());
    let cold_full = run_child(state.path(), project.path());
    println!(
        "| cold start to listening, empty state root | {:.1} ms | — |",
        cold_empty.listening_ms
    );
    println!(
        "| cold start to listening, {sessions} stored sessions | {:.1} ms | — |",
        cold_full.listening_ms
    );
    let per_idle = (cold_full.rss_after_kib as f64 - cold_empty.rss_after_kib as f64) * 1024.0
        / sessions as f64;
    println!(
        "| RSS after cold start: empty / {sessions} stored | {} KiB / {} KiB ({per_idle:.1} bytes per idle session) | memory bounded by active work |",
        cold_empty.rss_after_kib, cold_full.rss_after_kib
    );
    println!(
        "| first page of `GET /v1/sessions` (50 of {sessions}) | {:.1} ms | — |",
        cold_full.first_page_ms
    );

    // 2. Concurrent streams (1,000 by default) on one session or spread over several.
    let stream_sessions = arg("--stream-sessions", 1);
    fan_out(agent.clone(), streams, stream_sessions).await;
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();

    // 3. 200 concurrent sessions running turns.
    let state = tempfile::tempdir().unwrap();
    let manager = SessionManager::open(
        StateRoot::new(state.path()),
        agent.clone(),
        LogBuffer::new(),
    )
    .await
    .unwrap();
    let url = serve(manager.clone()).await;
    let started = Instant::now();
    let tasks: Vec<_> = (0..turns)
        .map(|n| {
            let client = client.clone();
            let url = url.clone();
            tokio::spawn(async move {
                let begun = Instant::now();
                let id = create(&client, &url, format!("turn {n}")).await.session_id;
                let response = client
                    .get(format!("{url}/v1/session/{id}/stream"))
                    .send()
                    .await
                    .unwrap();
                read_until(response, "turn.completed", 1).await;
                begun.elapsed().as_secs_f64() * 1000.0
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.push(task.await.unwrap());
    }
    let wall = started.elapsed().as_secs_f64();
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "| {turns} concurrent sessions running turns (create → turn.completed over HTTP) | all done in {:.0} ms ({:.0} turns/s); p50 {:.0} ms, p99 {:.0} ms | 200 running turns |",
        wall * 1000.0,
        turns as f64 / wall,
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99)
    );
    manager.shutdown().await;
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if let Some(i) = args.iter().position(|a| a == "--cold-start") {
        let state = std::path::PathBuf::from(&args[i + 1]);
        let project = std::path::PathBuf::from(&args[i + 2]);
        runtime.block_on(cold_start(&state, &project));
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--stream-clients") {
        let streams = args[i + 2]
            .parse()
            .expect("--stream-clients URL STREAMS IDS");
        let ids: Vec<String> = args[i + 3].split(',').map(str::to_string).collect();
        runtime.block_on(stream_clients(&args[i + 1], streams, &ids));
        return;
    }
    if args.iter().any(|a| a == "--list" || a == "--test") {
        // `cargo test --benches` / harness probes: nothing to list.
        return;
    }
    runtime.block_on(run());
}
