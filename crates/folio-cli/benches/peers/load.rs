//! The client load both servers get: `clients` concurrent clients, each with its own kept-alive
//! connection pool, each running `sessions` sessions of two streamed turns.

use std::time::{Duration, Instant};

use folio_protocol::{CreateSession, FollowUp, FollowUpAccepted, SessionCreated};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::json;

/// A server under load, by its base URL.
#[derive(Clone)]
pub enum System {
    /// `folio serve`'s agent URL.
    Folio(String),
    /// `langgraph dev`'s URL.
    LangGraph(String),
}

impl System {
    fn name(&self) -> &'static str {
        match self {
            System::Folio(_) => "Folio",
            System::LangGraph(_) => "LangGraph",
        }
    }
}

/// One row of the table: a system at one client count.
pub struct Row {
    system: &'static str,
    clients: usize,
    latencies: Vec<Duration>,
    deltas: usize,
    wall: Duration,
    /// `VmHWM` of the server (and its descendants) after the row, in MB.
    pub rss_mb: f64,
}

impl Row {
    /// The table's header and alignment lines.
    pub const HEADER: &str = "| system | clients | turns | deltas/turn | wall s | turns/s | p50 ms | p99 ms | peak RSS MB |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |";

    fn turns_per_second(&self) -> f64 {
        self.latencies.len() as f64 / self.wall.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> f64 {
        let Some(last) = self.latencies.len().checked_sub(1) else {
            return 0.0;
        };
        self.latencies[(last as f64 * p).round() as usize].as_secs_f64() * 1000.0
    }

    /// The row as a Markdown table line.
    pub fn markdown(&self) -> String {
        format!(
            "| {} | {} | {} | {:.1} | {:.2} | {:.1} | {:.1} | {:.1} | {:.0} |",
            self.system,
            self.clients,
            self.latencies.len(),
            self.deltas as f64 / self.latencies.len().max(1) as f64,
            self.wall.as_secs_f64(),
            self.turns_per_second(),
            self.percentile(0.5),
            self.percentile(0.99),
            self.rss_mb,
        )
    }

    /// Folio's figures over LangGraph's at the same client count, as a table line.
    pub fn ratio(folio: &Row, langgraph: &Row) -> String {
        format!(
            "| **Folio ÷ LangGraph** | {} | | | | **{:.1}×** | {:.3}× | **{:.3}×** | {:.2}× |",
            folio.clients,
            folio.turns_per_second() / langgraph.turns_per_second(),
            folio.percentile(0.5) / langgraph.percentile(0.5),
            folio.percentile(0.99) / langgraph.percentile(0.99),
            folio.rss_mb / langgraph.rss_mb,
        )
    }
}

/// `clients` clients at once against `system`, each running `sessions` two-turn sessions.
pub async fn run(system: &System, clients: usize, sessions: usize) -> Row {
    let started = Instant::now();
    let tasks = (0..clients).map(|_| {
        let system = system.clone();
        tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("an HTTP client");
            let mut latencies = Vec::new();
            let mut deltas = 0;
            for _ in 0..sessions {
                let (times, count) = match &system {
                    System::Folio(url) => folio_session(&client, url).await,
                    System::LangGraph(url) => langgraph_session(&client, url).await,
                };
                latencies.extend(times);
                deltas += count;
            }
            (latencies, deltas)
        })
    });
    let mut latencies = Vec::new();
    let mut deltas = 0;
    for task in futures::future::join_all(tasks).await {
        let (times, count) = task.expect("a client finished");
        latencies.extend(times);
        deltas += count;
    }
    let wall = started.elapsed();
    latencies.sort();
    Row {
        system: system.name(),
        clients,
        latencies,
        deltas,
        wall,
        rss_mb: 0.0,
    }
}

/// A Folio session: create with the first message, stream its turn to `session.waiting`, a
/// follow-up, the same stream to the second `session.waiting`. The turns' latencies and the
/// `message.appended` deltas streamed.
async fn folio_session(client: &reqwest::Client, url: &str) -> ([Duration; 2], usize) {
    let sent = Instant::now();
    let created: SessionCreated = json_answer(
        client
            .post(format!("{url}/v1/session"))
            .json(&CreateSession::message("hello")),
    )
    .await;
    let id = &created.session_id;
    let mut stream = Lines::open(client.get(format!("{url}/v1/session/{id}/stream"))).await;
    let mut deltas = folio_turn(&mut stream).await;
    let first = sent.elapsed();
    let sent = Instant::now();
    let _: FollowUpAccepted = json_answer(
        client
            .post(format!("{url}/v1/session/{id}"))
            .json(&FollowUp::new(&created.continuation_token, "again")),
    )
    .await;
    deltas += folio_turn(&mut stream).await;
    ([first, sent.elapsed()], deltas)
}

/// Reads a Folio stream to the next `session.waiting`; the `message.appended` deltas seen.
async fn folio_turn(stream: &mut Lines) -> usize {
    #[derive(Deserialize)]
    struct Kind<'a> {
        #[serde(borrow, rename = "type")]
        kind: &'a str,
    }
    let mut deltas = 0;
    loop {
        let line = stream
            .next()
            .await
            .expect("the Folio stream ended before session.waiting");
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let event: Kind = serde_json::from_slice(&line).expect("a Folio event line");
        match event.kind {
            "message.appended" => deltas += 1,
            "session.waiting" => return deltas,
            "turn.failed" | "session.failed" => {
                panic!("a Folio turn failed: {}", String::from_utf8_lossy(&line))
            }
            _ => {}
        }
    }
}

/// A LangGraph session: create a thread, then two runs streamed to their end. The turns'
/// latencies and the `messages` deltas streamed.
async fn langgraph_session(client: &reqwest::Client, url: &str) -> ([Duration; 2], usize) {
    #[derive(Deserialize)]
    struct Thread {
        thread_id: String,
    }
    let sent = Instant::now();
    let thread: Thread = json_answer(client.post(format!("{url}/threads")).json(&json!({}))).await;
    let run = format!("{url}/threads/{}/runs/stream", thread.thread_id);
    let mut deltas = langgraph_turn(client, &run, "hello").await;
    let first = sent.elapsed();
    let sent = Instant::now();
    deltas += langgraph_turn(client, &run, "again").await;
    ([first, sent.elapsed()], deltas)
}

/// One LangGraph run streamed (`stream_mode` `messages-tuple`, SSE) until the server ends it;
/// the `messages` events seen.
async fn langgraph_turn(client: &reqwest::Client, run: &str, message: &str) -> usize {
    let body = json!({
        "assistant_id": "agent",
        "input": {"messages": [{"role": "user", "content": message}]},
        "stream_mode": "messages-tuple",
    });
    let mut stream = Lines::open(client.post(run).json(&body)).await;
    let mut deltas = 0;
    while let Some(line) = stream.next().await {
        match line.as_slice() {
            b"event: messages" => deltas += 1,
            b"event: error" => panic!(
                "a LangGraph run failed: {}",
                String::from_utf8_lossy(&stream.next().await.unwrap_or_default())
            ),
            _ => {}
        }
    }
    deltas
}

/// Sends `request` and reads its `2xx` JSON answer as `T`.
async fn json_answer<T: for<'de> Deserialize<'de>>(request: reqwest::RequestBuilder) -> T {
    let response = request.send().await.expect("the server answers");
    let status = response.status();
    let body = response.bytes().await.expect("the answer's body");
    assert!(
        status.is_success(),
        "{status}: {}",
        String::from_utf8_lossy(&body)
    );
    serde_json::from_slice(&body).expect("the answer is the route's JSON")
}

/// The lines of a streamed answer (NDJSON or SSE), without their line ends.
struct Lines {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: Vec<u8>,
}

impl Lines {
    /// Sends `request`, expecting `200` and a streamed body.
    async fn open(request: reqwest::RequestBuilder) -> Lines {
        let response = request.send().await.expect("the server answers");
        assert_eq!(response.status().as_u16(), 200, "a stream opens");
        Lines {
            body: response.bytes_stream().boxed(),
            buffer: Vec::new(),
        }
    }

    /// The next line; `None` once the body ended.
    async fn next(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
                let mut line: Vec<u8> = self.buffer.drain(..=end).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Some(line);
            }
            let chunk = tokio::time::timeout(Duration::from_secs(120), self.body.next())
                .await
                .expect("a streamed line within 120 s")?;
            self.buffer
                .extend_from_slice(&chunk.expect("the stream breaks off"));
        }
    }
}
