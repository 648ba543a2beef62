//! A fresh database per test on the PostgreSQL that `FOLIO_TEST_DATABASE_URL` names
//! (`scripts/test` starts a throwaway one); without it the tests skip, saying so.

#![allow(dead_code)] // each test binary uses its own part of this module

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use folio_protocol::{Event, EventBody, TurnFailed};
use folio_store::{NewEvent, SessionStore};
use folio_store_postgres::{PgOptions, PgStore};
use sqlx::{ConnectOptions, Connection};

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
