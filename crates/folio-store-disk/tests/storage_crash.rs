//! Storage entries survive `kill -9` at any moment: a child process (this test binary, running
//! only [`storage_writer`]) increments a counter with compare-and-set from two tasks and
//! rewrites items from two others, printing each write once `put` returned; it is killed with
//! `SIGKILL` at a random moment, several times over one state root. After each kill the state
//! root is opened again: every entry reads whole (no torn file), the counter's value is its
//! version (no write half applied), and every acknowledged write is there at its version or a
//! later one.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use folio_protocol::StorageScope;
use folio_store::{Condition, MAX_LIST, Namespace, SessionStore, Written};
use folio_store_disk::{DiskStore, StateRoot};
use serde_json::{Value, json};

/// Set in the environment of the child: the state root it writes to.
const CHILD_STATE: &str = "FOLIO_STORAGE_CRASH_STATE";
/// How many times the child is started and killed.
const ROUNDS: usize = 6;

fn counter_space() -> Namespace {
    Namespace::of(StorageScope::Agent, "crashy", "ses_unused", "nobody")
}

/// An owner name that would leave its folder if it were used as a path.
fn items_space() -> Namespace {
    Namespace::of(StorageScope::Principal, "crashy", "ses_unused", "../../p")
}

/// Item `n`'s value: its padding's length follows from `n`, so a value mixed from two writes
/// shows.
fn item(n: u64) -> Value {
    json!({"n": n, "pad": "x".repeat((n * 37 % 3000) as usize)})
}

fn item_is_whole(value: &Value) -> bool {
    let (Some(n), Some(pad)) = (value["n"].as_u64(), value["pad"].as_str()) else {
        return false;
    };
    pad.len() as u64 == n * 37 % 3000 && pad.bytes().all(|b| b == b'x')
}

/// The child: writes until it is killed; passes at once in any other run of the test binary.
#[test]
fn storage_writer() {
    let Ok(state) = std::env::var(CHILD_STATE) else {
        return;
    };
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(async {
            let store = DiskStore::open(StateRoot::new(state)).expect("the state root opens");
            let storage = store.storage();
            println!("ready");
            let mut tasks: Vec<_> = (0..2)
                .map(|_| {
                    let storage = storage.clone();
                    tokio::spawn(async move {
                        let space = counter_space();
                        loop {
                            let now = chrono::Utc::now();
                            let current = storage.get(&space, "counter", now).await.unwrap();
                            let (condition, count) = match current {
                                None => (Condition::Absent, 0),
                                Some(entry) => (
                                    Condition::Version(entry.version),
                                    entry.value.as_u64().unwrap(),
                                ),
                            };
                            let written = storage
                                .put(&space, "counter", &json!(count + 1), condition, None, now)
                                .await
                                .unwrap();
                            if let Written::Done(Some(entry)) = written {
                                println!("ack counter {}", entry.version);
                            }
                        }
                    })
                })
                .collect();
            tasks.extend((0..2u64).map(|task| {
                let storage = storage.clone();
                tokio::spawn(async move {
                    let space = items_space();
                    for n in 0u64.. {
                        let key = format!("item/{task}/{}", n % 20);
                        let written = storage
                            .put(
                                &space,
                                &key,
                                &item(n),
                                Condition::Any,
                                None,
                                chrono::Utc::now(),
                            )
                            .await
                            .unwrap();
                        if let Written::Done(Some(entry)) = written {
                            println!("ack {key} {}", entry.version);
                        }
                    }
                })
            }));
            for task in tasks {
                task.await.unwrap();
            }
        });
}

/// Starts the child on `state`, kills it with `SIGKILL` once it has written for a random
/// while, and returns the writes it acknowledged (key and version).
fn run_and_kill(state: &Path) -> Vec<(String, u64)> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["storage_writer", "--exact", "--nocapture", "--quiet"])
        .env(CHILD_STATE, state)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the test binary starts as a writer");
    let stdout = child.stdout.take().unwrap();
    let (lines, received) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut stdout = std::io::BufReader::new(stdout);
        loop {
            let mut line = String::new();
            // Only whole lines: a line a kill cut short was never acknowledged.
            match stdout.read_line(&mut line) {
                Ok(read) if read > 0 && line.ends_with('\n') => {
                    if lines.send(line).is_err() {
                        return;
                    }
                }
                _ => return,
            }
        }
    });
    let started = Instant::now();
    let mut acked = Vec::new();
    let mut ready = false;
    while !ready {
        let line = received
            .recv_timeout(Duration::from_secs(60).saturating_sub(started.elapsed()))
            .expect("the writer is ready within 60 s");
        ready = line.contains("ready");
    }
    std::thread::sleep(Duration::from_millis(rand::random_range(20..400)));
    child.kill().expect("SIGKILL");
    child.wait().expect("the writer exits");
    reader.join().expect("the reader ends");
    for line in received.try_iter() {
        if let Some((_, ack)) = line.rsplit_once("ack ")
            && let Some((key, version)) = ack.trim().rsplit_once(' ')
        {
            acked.push((key.to_string(), version.parse().expect("a version")));
        }
    }
    acked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_survives_kill_9_at_any_moment() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let mut acked: HashMap<String, u64> = HashMap::new();
    for round in 0..ROUNDS {
        let state_root = state.clone();
        let writes = tokio::task::spawn_blocking(move || run_and_kill(&state_root))
            .await
            .unwrap();
        for (key, version) in writes {
            let highest = acked.entry(key).or_default();
            *highest = (*highest).max(version);
        }

        let store = DiskStore::open(StateRoot::new(&state)).expect("the state root opens again");
        let storage = store.storage();
        let now = chrono::Utc::now();
        let counter = storage.get(&counter_space(), "counter", now).await.unwrap();
        if let Some(counter) = &counter {
            assert_eq!(
                counter.value,
                json!(counter.version),
                "round {round}: the counter's value is its version"
            );
        }
        let acked_counter = acked.get("counter").copied().unwrap_or(0);
        assert!(
            counter.as_ref().map_or(0, |counter| counter.version) >= acked_counter,
            "round {round}: the counter is at {counter:?}, below the acknowledged {acked_counter}"
        );
        // Every item reads whole (a torn file would fail the read).
        let items = storage
            .list(&items_space(), "", None, MAX_LIST, now)
            .await
            .unwrap();
        assert!(items.next.is_none());
        let items: HashMap<String, _> = items
            .entries
            .into_iter()
            .map(|entry| (entry.key.clone(), entry))
            .collect();
        for entry in items.values() {
            assert!(
                item_is_whole(&entry.value),
                "round {round}: {} holds a mixed value",
                entry.key
            );
        }
        for (key, version) in acked.iter().filter(|(key, _)| key.starts_with("item/")) {
            let stored = items.get(key).map_or(0, |entry| entry.version);
            assert!(
                stored >= *version,
                "round {round}: {key} is at version {stored}, below the acknowledged {version}"
            );
        }
        assert_eq!(
            storage.usage(&items_space()).await.unwrap().entries,
            items.len() as u64,
            "round {round}: every entry file is an entry"
        );
        store.close().await;
    }
    assert!(
        acked.get("counter").is_some_and(|&version| version > 0)
            && acked.keys().any(|key| key.starts_with("item/")),
        "the writers acknowledged writes: {acked:?}"
    );
}
