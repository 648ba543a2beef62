//! A fresh database per test on the PostgreSQL that `FOLIO_TEST_DATABASE_URL` names
//! (`scripts/test` starts a throwaway one); without it the tests skip, saying so.

#![allow(dead_code)] // each test binary uses its own part of this module

use std::collections::HashSet;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use folio_protocol::{Event, EventBody, TurnFailed};
use folio_store::{NewEvent, SessionStore};
use folio_store_postgres::{PgOptions, PgStore};
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream};

#[allow(unused_imports)] // each test binary uses some of these
pub use folio_store_postgres::testing::{admin_options, test_database as test_db};

/// Options that poll and retry fast, for tests.
pub fn fast_options() -> PgOptions {
    PgOptions {
        poll_interval: std::time::Duration::from_millis(100),
        ..PgOptions::default()
    }
}

/// A migrated store on a fresh database, and the database's URL.
pub async fn store(test: &str) -> Option<(PgStore, String)> {
    let db = test_db(test).await?;
    let store = PgStore::open(&db, fast_options())
        .await
        .expect("open the test store");
    Some((store, db))
}

/// An event whose text says who wrote it.
pub fn event(text: &str) -> NewEvent {
    NewEvent::new(
        Some("turn_test"),
        EventBody::TurnFailed(TurnFailed {
            message: text.to_string(),
        }),
    )
}

/// The text `event` put in.
pub fn text(event: &Event) -> &str {
    match &event.body {
        EventBody::TurnFailed(failed) => &failed.message,
        other => panic!("unexpected event {other:?}"),
    }
}

/// A new session of `principal`, stored.
pub async fn session(store: &PgStore, principal: &str) -> String {
    let meta = folio_store::suite::meta(principal);
    store.create_session(&meta).await.expect("create a session");
    meta.session_id
}

/// Kills every connection of the store (application name `folio`) every 15 ms until stopped;
/// returns how many it killed.
pub fn kill_connections(url: &str, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<u64> {
    let url = url.to_string();
    tokio::spawn(async move {
        let mut admin = admin_options(&url).connect().await.unwrap();
        let mut killed = 0;
        while !stop.load(Ordering::Relaxed) {
            let n: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE application_name = 'folio' AND datname = current_database()) k",
            )
            .fetch_one(&mut admin)
            .await
            .unwrap();
            killed += n as u64;
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
        admin.close().await.ok();
        killed
    })
}

/// A TCP relay in front of the test server that, once armed, cuts the next connection that
/// runs a statement inserting into `folio_events` as soon as the server answers it: the
/// server flushes that answer once the statement's transaction committed, so the store is
/// left with a write that landed but an error saying the connection broke.
pub struct CutRelay {
    /// The database's URL through the relay (without TLS, which the relay does not speak).
    pub url: String,
    armed: Arc<AtomicBool>,
    cuts: Arc<AtomicU64>,
}

impl CutRelay {
    /// Starts relaying to the server `db` names (a TCP URL).
    pub async fn start(db: &str) -> CutRelay {
        let options = PgConnectOptions::from_str(db).unwrap();
        let server = format!("{}:{}", options.get_host(), options.get_port());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let relay = listener.local_addr().unwrap().to_string();
        let url = match db.split_once(&server) {
            Some((before, after)) => format!("{before}{relay}{after}"),
            None => match db.split_once(&format!("@{}", options.get_host())) {
                Some((before, after)) => format!("{before}@{relay}{after}"),
                None => panic!("{db}: the relay needs a URL with a TCP host"),
            },
        };
        let url = format!(
            "{url}{}sslmode=disable",
            if url.contains('?') { '&' } else { '?' }
        );
        let (armed, cuts) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
        );
        let (armed_, cuts_) = (armed.clone(), cuts.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = server.clone();
                tokio::spawn(relay_one(client, server, armed_.clone(), cuts_.clone()));
            }
        });
        CutRelay { url, armed, cuts }
    }

    /// Cuts the next connection that writes events, after the server ran the write.
    pub fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// How many connections were cut.
    pub fn cuts(&self) -> u64 {
        self.cuts.load(Ordering::SeqCst)
    }
}

/// Relays one connection until either side closes or it is cut.
async fn relay_one(
    client: TcpStream,
    server: String,
    armed: Arc<AtomicBool>,
    cuts: Arc<AtomicU64>,
) {
    let Ok(server) = TcpStream::connect(&server).await else {
        return;
    };
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_server, mut to_server) = server.into_split();
    let cut = AtomicBool::new(false);
    let up = async {
        // The startup message has no type byte; every later one does.
        let startup = read_message(&mut from_client, false).await?;
        to_server.write_all(&startup).await?;
        let mut writes = HashSet::new();
        loop {
            let message = read_message(&mut from_client, true).await?;
            let mut fields = message[5..].split(|byte| *byte == 0);
            match message[0] {
                // Parse: statement name, query.
                b'P' => {
                    let (name, query) = (fields.next(), fields.next());
                    if let (Some(name), Some(query)) = (name, query)
                        && String::from_utf8_lossy(query).contains("INSERT INTO folio_events")
                    {
                        writes.insert(name.to_vec());
                    }
                }
                // Bind: portal name, statement name.
                b'B' => {
                    let statement = fields.nth(1).unwrap_or_default();
                    if writes.contains(statement) && armed.swap(false, Ordering::SeqCst) {
                        cut.store(true, Ordering::SeqCst);
                    }
                }
                _ => {}
            }
            to_server.write_all(&message).await?;
        }
    };
    let down = async {
        loop {
            let message = read_message(&mut from_server, true).await?;
            if cut.load(Ordering::SeqCst) {
                cuts.fetch_add(1, Ordering::SeqCst);
                return Ok(());
            }
            to_client.write_all(&message).await?;
        }
    };
    // Either side ending drops every half: both sockets close.
    let _: std::io::Result<()> = tokio::select! {
        done = up => done,
        done = down => done,
    };
}

/// One protocol message, whole: type byte (when `typed`), length, body.
async fn read_message(from: &mut OwnedReadHalf, typed: bool) -> std::io::Result<Vec<u8>> {
    let mut message = vec![0; if typed { 5 } else { 4 }];
    from.read_exact(&mut message).await?;
    let at = message.len() - 4;
    let length = u32::from_be_bytes([
        message[at],
        message[at + 1],
        message[at + 2],
        message[at + 3],
    ]) as usize;
    message.resize(at + length.max(4), 0);
    from.read_exact(&mut message[at + 4..]).await?;
    Ok(message)
}
