//! A fresh database per test on the PostgreSQL that `FOLIO_TEST_DATABASE_URL` names
//! (`scripts/test` starts a throwaway one); without it the tests skip, saying so.

#![allow(dead_code)] // each test binary uses its own part of this module

use std::str::FromStr;

use chrono::{SubsecRound, Utc};
use folio_protocol::{Event, EventBody, TurnFailed};
use folio_store_postgres::{PgOptions, PgStore};
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, Executor};

/// The variable naming the test server.
pub const DATABASE_URL_VAR: &str = "FOLIO_TEST_DATABASE_URL";

/// A database made for one test: its URL.
pub struct TestDb {
    /// `postgres://…/folio_test_…`.
    pub url: String,
}

/// Creates an empty database on the test server, or `None` (after saying why) without one.
pub async fn test_db(test: &str) -> Option<TestDb> {
    let Ok(server) = std::env::var(DATABASE_URL_VAR) else {
        eprintln!(
            "skipped {test}: {DATABASE_URL_VAR} is not set (scripts/test starts a throwaway PostgreSQL and sets it; or run scripts/postgres start DIR and export the URL it prints)"
        );
        return None;
    };
    let name = format!(
        "folio_test_{}",
        ulid::Ulid::generate().to_string().to_lowercase()
    );
    let mut admin = admin_options(&server)
        .connect()
        .await
        .unwrap_or_else(|err| panic!("{DATABASE_URL_VAR}={server}: {err}"));
    admin
        .execute(format!("CREATE DATABASE {name}").as_str())
        .await
        .expect("create a test database");
    admin.close().await.ok();
    let (base, query) = match server.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (server.as_str(), String::new()),
    };
    let root = base.rsplit_once('/').map_or(base, |(root, _)| root);
    Some(TestDb {
        url: format!("{root}/{name}{query}"),
    })
}

/// Connect options for out-of-band work (creating databases, killing connections): an
/// application name of its own, so killing `folio`'s connections spares it.
pub fn admin_options(url: &str) -> PgConnectOptions {
    PgConnectOptions::from_str(url)
        .expect("a valid test URL")
        .application_name("folio-test-admin")
}

/// Options that poll and retry fast, for tests.
pub fn fast_options() -> PgOptions {
    PgOptions {
        poll_interval: std::time::Duration::from_millis(100),
        ..PgOptions::default()
    }
}

/// A migrated store on a fresh database.
pub async fn store(test: &str) -> Option<(PgStore, TestDb)> {
    let db = test_db(test).await?;
    let store = PgStore::open(&db.url, fast_options())
        .await
        .expect("open the test store");
    Some((store, db))
}

/// An event of `session_id` at `index` whose text says who wrote it.
pub fn event(session_id: &str, index: u64, text: &str) -> Event {
    Event {
        index,
        session_id: session_id.to_string(),
        turn_id: Some("turn_test".into()),
        at: Utc::now().trunc_subsecs(3),
        body: EventBody::TurnFailed(TurnFailed {
            message: text.to_string(),
        }),
    }
}

/// The text `event` put in.
pub fn text(event: &Event) -> &str {
    match &event.body {
        EventBody::TurnFailed(failed) => &failed.message,
        other => panic!("unexpected event {other:?}"),
    }
}

/// A new session id.
pub fn session_id() -> String {
    format!("ses_{}", ulid::Ulid::generate())
}
