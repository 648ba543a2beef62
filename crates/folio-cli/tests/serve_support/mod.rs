//! Helpers for tests that start `folio serve` as a process and speak HTTP to it.
#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use folio_protocol::{Event, EventBody};
#[allow(unused_imports)]
pub use folio_test_support::{
    EventData, NO_BODY, all, answer, assert_contiguous, call, call_as, check_answer, client,
    create_session, data, events, expect, expect_error, first, follow_up, of_type, read_answer,
    read_ndjson, read_wire, refused, session,
};
use futures::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

#[path = "../common.rs"]
mod common;
// Shared by several test binaries; each uses a different part.
#[allow(unused_imports)]
pub use common::{Project, eval, folio, folio_bin, project, run_of, write_files};

/// A running `folio serve`.
pub struct Served {
    pub child: tokio::process::Child,
    /// The agent's base URL as printed (`http://127.0.0.1:P/<slug>` or the root).
    pub url: String,
    /// `http://127.0.0.1:P`.
    pub host: String,
}

/// Starts `folio serve --port 0` on `dir` with the mock model at `model_url`, waiting for the
/// printed URL of its (first) agent.
pub async fn serve(model_url: &str, dir: &Path, state: &Path, extra: &[&str]) -> Served {
    serve_with_env(model_url, dir, state, extra, &[]).await
}

/// [`serve`] with extra environment variables for the server process (e.g. `FOLIO_FAULT`);
/// `--port P` among `extra` replaces the default `--port 0`.
pub async fn serve_with_env(
    model_url: &str,
    dir: &Path,
    state: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Served {
    serve_to(
        model_url,
        dir,
        state,
        extra,
        env,
        std::process::Stdio::inherit(),
    )
    .await
}

/// [`serve_with_env`] with the server's log (its stderr) appended to the file `log`.
pub async fn serve_logging_to(
    model_url: &str,
    dir: &Path,
    state: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
    log: &Path,
) -> Served {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    serve_to(model_url, dir, state, extra, env, file.into()).await
}

async fn serve_to(
    model_url: &str,
    dir: &Path,
    state: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
    stderr: std::process::Stdio,
) -> Served {
    let mut command = tokio::process::Command::new(folio_bin());
    command
        .env_remove("FOLIO_FAULT")
        .env_remove("FOLIO_MODEL")
        .env_remove("FOLIO_TOKEN")
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", model_url)
        .arg("serve")
        .args(if extra.contains(&"--port") {
            &[][..]
        } else {
            &["--port", "0"][..]
        })
        .arg("--dir")
        .arg(dir)
        .arg("--state-root")
        .arg(state)
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .envs(env.iter().copied());
    let mut child = command.spawn().expect("folio serve starts");
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let mut host = String::new();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(rest) = line.strip_prefix("folio: listening on ") {
                host = rest.trim().to_string();
            }
            if let Some(rest) = line.strip_prefix("agent ") {
                let url = rest.split_once(": ").unwrap().1;
                return url.split(' ').next().unwrap().to_string();
            }
        }
        panic!("folio serve exited before printing its URL");
    })
    .await
    .expect("folio serve prints its URL within 60 s");
    // Keep draining stdout so the server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Served { child, url, host }
}

/// GET, answered as JSON checked against the route's type, or as a string (HTML, NDJSON).
pub async fn get(url: &str) -> (u16, Value) {
    call(reqwest::Method::GET, url, None, None).await
}

/// An open NDJSON stream of a session's events, each read as an [`Event`].
pub struct Stream {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: Vec<u8>,
    /// Every event read so far.
    pub events: Vec<Event>,
}

impl Stream {
    /// Opens `GET {url}/v1/session/{id}/stream?startIndex=N`.
    pub async fn open(url: &str, session: &str, start: u64, token: Option<&str>) -> Stream {
        let mut request = client().get(format!(
            "{url}/v1/session/{session}/stream?startIndex={start}"
        ));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "application/x-ndjson"
        );
        Stream {
            body: response.bytes_stream().boxed(),
            buffer: Vec::new(),
            events: Vec::new(),
        }
    }

    /// The next event (skipping keep-alive lines); `None` when the stream ended.
    pub async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let event: Event = read_wire(&serde_json::from_slice(&line).unwrap());
                self.events.push(event.clone());
                return Some(event);
            }
            let chunk = tokio::time::timeout(Duration::from_secs(30), self.body.next())
                .await
                .expect("an event within 30 s")?;
            self.buffer.extend_from_slice(&chunk.ok()?);
        }
    }

    /// Reads until an event of type `kind` (e.g. `turn.completed`), returning it.
    pub async fn until(&mut self, kind: &str) -> Event {
        assert!(EventBody::TYPES.contains(&kind), "no event type {kind}");
        while let Some(event) = self.next().await {
            if event.event_type() == kind {
                return event;
            }
        }
        panic!("the stream ended before {kind}; got {:#?}", self.types());
    }

    /// Reads until `n` events of type `kind` were seen in total.
    pub async fn until_count(&mut self, kind: &str, n: usize) {
        assert!(EventBody::TYPES.contains(&kind), "no event type {kind}");
        while self.count(kind) < n {
            if self.next().await.is_none() {
                panic!(
                    "the stream ended before {n} {kind}; got {:#?}",
                    self.types()
                );
            }
        }
    }

    /// How many events of type `kind` were read.
    pub fn count(&self, kind: &str) -> usize {
        self.events
            .iter()
            .filter(|e| e.event_type() == kind)
            .count()
    }

    /// The types of the events read so far.
    pub fn types(&self) -> Vec<&'static str> {
        self.events.iter().map(Event::event_type).collect()
    }
}

/// The stored events of a session as `token`'s principal.
pub async fn events_as(url: &str, id: &str, token: &str) -> Vec<Event> {
    let (status, dump) = call(
        reqwest::Method::GET,
        &format!("{url}/v1/session/{id}/events"),
        None,
        Some(token),
    )
    .await;
    assert_eq!(status, 200, "{dump}");
    let Value::String(text) = dump else {
        panic!("the events dump is NDJSON, not {dump}")
    };
    read_ndjson(&text)
}

/// Where the servers under test keep their sessions.
pub enum Store {
    /// The state root's files.
    Disk,
    /// A PostgreSQL database (its URL), with a three-second lease (long enough that a server
    /// starved by a loaded CI machine keeps it).
    Postgres(String),
}

impl Store {
    /// The `folio serve` arguments that put the sessions in this store.
    pub fn args(&self) -> Vec<&str> {
        match self {
            Store::Disk => Vec::new(),
            Store::Postgres(url) => vec!["--store", url, "--lease-ttl-ms", "3000"],
        }
    }
}

/// Runs each test (an `async fn(Store)` of the test file) on both stores: `on_disk::<test>`
/// and `on_postgres::<test>` (skipped without `FOLIO_TEST_DATABASE_URL`).
#[macro_export]
macro_rules! on_both_stores {
    ($($test:ident),* $(,)?) => {
        mod on_disk {
            $(
                #[tokio::test(flavor = "multi_thread")]
                async fn $test() {
                    super::$test($crate::serve_support::Store::Disk).await;
                }
            )*
        }
        mod on_postgres {
            $(
                #[tokio::test(flavor = "multi_thread")]
                async fn $test() {
                    let Some(url) =
                        folio_store_postgres::testing::test_database(stringify!($test)).await
                    else {
                        return;
                    };
                    super::$test($crate::serve_support::Store::Postgres(url)).await;
                }
            )*
        }
    };
}
