//! `folio store migrate|check|stats`: look after a PostgreSQL session store (the one
//! `folio serve --store postgres://…` uses) without starting a server; `folio store copy`
//! copies any store into another ([`crate::store_copy`]).

use std::process::ExitCode;

use anyhow::bail;
use folio_store_postgres::{PgOptions, PgStore};
use serde::Serialize;

use crate::serve::runtime;

/// What `folio store` does.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum StoreCommand {
    /// Apply the schema migrations this folio carries that the database lacks.
    Migrate(StoreArgs),
    /// Check that the database answers and that its schema is not newer than this folio's;
    /// exit 1 when it is unreachable or newer.
    Check(StoreArgs),
    /// Count sessions, events, leases, create keys, slot claims, reminders, artifacts,
    /// deliveries and storage entries; the tables' sizes.
    Stats(StoreArgs),
    /// Copy a store (a state root or a PostgreSQL database) into another, then compare them;
    /// rerun the same command to continue an interrupted copy.
    Copy(crate::store_copy::CopyArgs),
}

/// Which store, and how to print.
#[derive(Debug, clap::Args)]
pub(crate) struct StoreArgs {
    /// The store: postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE (query options such as
    /// `sslmode=require` as PostgreSQL's own clients take them).
    #[arg(long, env = "FOLIO_STORE")]
    store: String,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `folio store …`.
pub(crate) fn store(command: StoreCommand) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        match command {
            StoreCommand::Migrate(args) => migrate(args).await,
            StoreCommand::Check(args) => check(args).await,
            StoreCommand::Stats(args) => stats(args).await,
            StoreCommand::Copy(args) => crate::store_copy::copy(args).await,
        }
    })
}

async fn connect(args: &StoreArgs) -> anyhow::Result<PgStore> {
    if !(args.store.starts_with("postgres://") || args.store.starts_with("postgresql://")) {
        bail!(
            "--store {}: `folio store` manages a PostgreSQL store (postgres://…); the embedded disk store needs no migrations",
            args.store
        );
    }
    Ok(PgStore::connect(&args.store, PgOptions::default()).await?)
}

fn print_json(value: &impl Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

async fn migrate(args: StoreArgs) -> anyhow::Result<ExitCode> {
    let store = connect(&args).await?;
    let before = store.schema().await?;
    let after = store.migrate().await?;
    if args.json {
        print_json(&after)?;
    } else if before.pending() {
        println!(
            "{}: migrated from schema version {} to {}",
            store.location(),
            before.database,
            after.database
        );
    } else {
        println!(
            "{}: already at schema version {}; nothing to do",
            store.location(),
            after.database
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn check(args: StoreArgs) -> anyhow::Result<ExitCode> {
    let store = connect(&args).await?;
    let schema = store.schema().await?;
    if schema.newer() {
        return Err(folio_store_postgres::PgError::SchemaNewer {
            found: schema.database,
            supported: schema.binary,
        }
        .into());
    }
    if args.json {
        print_json(&schema)?;
    } else if schema.pending() {
        println!(
            "{}: reachable; schema version {}, this folio's is {}: `folio store migrate` (or starting `folio serve --store …`) applies the missing migrations",
            store.location(),
            schema.database,
            schema.binary
        );
    } else {
        println!(
            "{}: reachable; schema version {}, up to date",
            store.location(),
            schema.database
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn stats(args: StoreArgs) -> anyhow::Result<ExitCode> {
    let store = connect(&args).await?;
    let schema = store.schema().await?;
    if schema.database == 0 {
        bail!(
            "{}: the database has no Folio schema yet; run `folio store migrate --store …` first",
            store.location()
        );
    }
    let stats = store.stats().await?;
    if args.json {
        print_json(&stats)?;
        return Ok(ExitCode::SUCCESS);
    }
    println!("{} (schema version {})", store.location(), schema.database);
    for (what, count) in [
        ("sessions", stats.sessions),
        ("events", stats.events),
        ("live leases", stats.live_leases),
        ("expired leases", stats.expired_leases),
        ("create keys", stats.create_keys),
        ("slot claims", stats.slot_claims),
        ("reminders", stats.reminders),
        ("artifacts", stats.artifacts),
        ("deliveries", stats.deliveries),
        ("storage entries", stats.storage_entries),
    ] {
        println!("  {what:<16}{count:>12}");
    }
    println!(
        "  {:<16}{:>12}",
        "storage bytes",
        human_bytes(stats.storage_bytes)
    );
    for table in &stats.tables {
        println!("  {:<24}{:>12}", table.name, human_bytes(table.bytes));
    }
    println!(
        "  {:<24}{:>12}",
        "database",
        human_bytes(stats.database_bytes)
    );
    Ok(ExitCode::SUCCESS)
}

/// `1.5 MiB`-style sizes.
fn human_bytes(bytes: i64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}
