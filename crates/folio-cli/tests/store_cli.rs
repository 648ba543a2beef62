//! `folio store migrate|check|stats` against a real PostgreSQL (the one `scripts/test` starts;
//! skipped without it), and its errors: an unreachable database, a bad URL, a disk store, a
//! schema newer than the binary.

mod common;

use std::process::{Command, Output};

use common::folio_bin;
use folio_store_postgres::testing::{admin_options, test_database};
use folio_store_postgres::{SchemaStatus, StoreStats};
use sqlx::ConnectOptions;

/// The schema version this folio migrates to: its newest migration
/// (`crates/folio-store-postgres/migrations/`).
const SCHEMA: i64 = 10;

fn folio_store(args: &[&str], store: &str) -> Output {
    Command::new(folio_bin())
        .arg("store")
        .args(args)
        .env("FOLIO_STORE", store)
        .output()
        .unwrap()
}

fn stderr_line(output: &Output) -> String {
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    stderr
}

#[test]
fn an_unreachable_database_a_bad_url_or_a_disk_store_is_one_clear_line() {
    // Nothing listens on port 1.
    let stderr = stderr_line(&folio_store(
        &["check"],
        "postgres://folio@127.0.0.1:1/folio",
    ));
    assert!(
        stderr.starts_with("error: cannot reach PostgreSQL at 127.0.0.1:1 ("),
        "{stderr}"
    );
    assert!(
        stderr.contains("check that the server is running"),
        "{stderr}"
    );

    let stderr = stderr_line(&folio_store(&["stats"], "postgres://folio@db:port/folio"));
    assert!(stderr.contains("invalid PostgreSQL URL"), "{stderr}");

    let stderr = stderr_line(&folio_store(&["migrate"], "/var/lib/folio"));
    assert!(
        stderr.contains("`folio store` manages a PostgreSQL store"),
        "{stderr}"
    );
}

#[tokio::test]
async fn migrate_check_and_stats_on_a_fresh_database_then_a_newer_schema_is_refused() {
    let Some(url) = test_database("store_cli").await else {
        return;
    };
    let ok = |output: Output| -> String {
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let location = url.rsplit_once('@').unwrap().1;

    let stdout = ok(folio_store(&["check"], &url));
    assert_eq!(
        stdout,
        format!(
            "{location}: reachable; schema version 0, this folio's is {SCHEMA}: `folio store migrate` (or starting `folio serve --store …`) applies the missing migrations\n"
        )
    );
    let stderr = stderr_line(&folio_store(&["stats"], &url));
    assert!(stderr.contains("no Folio schema yet"), "{stderr}");

    let stdout = ok(folio_store(&["migrate"], &url));
    assert_eq!(
        stdout,
        format!("{location}: migrated from schema version 0 to {SCHEMA}\n")
    );
    let stdout = ok(folio_store(&["migrate"], &url));
    assert_eq!(
        stdout,
        format!("{location}: already at schema version {SCHEMA}; nothing to do\n")
    );
    let check: SchemaStatus =
        serde_json::from_str(&ok(folio_store(&["check", "--json"], &url))).unwrap();
    assert_eq!(
        check,
        SchemaStatus {
            location: location.to_string(),
            database: SCHEMA,
            binary: SCHEMA
        }
    );
    let stats: StoreStats =
        serde_json::from_str(&ok(folio_store(&["stats", "--json"], &url))).unwrap();
    assert_eq!(
        (
            stats.sessions,
            stats.events,
            stats.live_leases,
            stats.slot_claims,
            stats.reminders,
            stats.artifacts,
            stats.deliveries,
            stats.storage_entries,
            stats.storage_bytes
        ),
        (0, 0, 0, 0, 0, 0, 0, 0, 0)
    );
    assert_eq!(stats.tables.len(), 13);
    let text = ok(folio_store(&["stats"], &url));
    assert!(
        text.starts_with(&format!("{location} (schema version {SCHEMA})\n")),
        "{text}"
    );
    assert!(text.contains("  sessions                   0\n"), "{text}");

    // A newer folio migrated the database: this one refuses it, saying what to do.
    let mut admin = admin_options(&url).connect().await.unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
         VALUES ($1, 'from a newer folio', true, '\\x00', 1)",
    )
    .bind(SCHEMA + 1)
    .execute(&mut admin)
    .await
    .unwrap();
    for command in ["check", "migrate"] {
        let stderr = stderr_line(&folio_store(&[command], &url));
        assert!(
            stderr.contains(&format!(
                "schema is version {}, newer than the {SCHEMA} this folio supports",
                SCHEMA + 1
            )),
            "{command}: {stderr}"
        );
    }
}
