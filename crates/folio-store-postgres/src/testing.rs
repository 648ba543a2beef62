//! For tests of Folio crates (feature `test-support`): a fresh database per test on the
//! PostgreSQL that `FOLIO_TEST_DATABASE_URL` names. `scripts/test` starts a throwaway one and
//! sets it; without it, tests skip and say so.

use std::str::FromStr;

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, Executor};

/// The variable naming the test server.
pub const DATABASE_URL_VAR: &str = "FOLIO_TEST_DATABASE_URL";

/// Creates an empty database `folio_test_<ulid>` on the test server and returns its URL, or
/// `None` after printing why `test` is skipped when no test server is set. Panics when the
/// server is set but does not answer (a test run that was meant to use it must not pass).
pub async fn test_database(test: &str) -> Option<String> {
    let Ok(server) = std::env::var(DATABASE_URL_VAR) else {
        eprintln!(
            "skipped {test}: {DATABASE_URL_VAR} is not set (scripts/test starts a throwaway PostgreSQL and sets it; or run `scripts/postgres start DIR` and export the URL it prints)"
        );
        return None;
    };
    Some(fresh_database(&server).await)
}

/// Creates an empty database `folio_test_<ulid>` on the server `server` names (any database
/// URL on it) and returns its URL; benchmarks use it so that each run starts from an empty
/// store. Panics when the server does not answer or refuses.
pub async fn fresh_database(server: &str) -> String {
    let name = format!(
        "folio_test_{}",
        ulid::Ulid::generate().to_string().to_lowercase()
    );
    let mut admin = admin_options(server)
        .connect()
        .await
        .unwrap_or_else(|err| panic!("{server}: {err}"));
    admin
        .execute(format!("CREATE DATABASE {name}").as_str())
        .await
        .unwrap_or_else(|err| panic!("creating a database on {server}: {err}"));
    admin.close().await.ok();
    let (base, query) = match server.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (server, String::new()),
    };
    let root = base.rsplit_once('/').map_or(base, |(root, _)| root);
    format!("{root}/{name}{query}")
}

/// Connect options for out-of-band work on `url` (creating databases, killing connections),
/// under an application name of their own so that killing `folio`'s connections spares them.
pub fn admin_options(url: &str) -> PgConnectOptions {
    PgConnectOptions::from_str(url)
        .unwrap_or_else(|err| panic!("{DATABASE_URL_VAR}={url}: {err}"))
        .application_name("folio-test-admin")
}
