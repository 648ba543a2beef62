//! Folio's PostgreSQL store: any number of `folio serve` processes share one set of sessions.
//!
//! [`PgStore`] implements [`folio_store::SessionStore`] over these tables:
//! - **sessions**: one row each, the metadata document as `jsonb`;
//! - **events**: one row per event keyed `(session_id, idx)`. An append names its index; the
//!   primary key makes a lost race fail with a conflict (the caller re-reads and retries), so
//!   two writers can never interleave or gap one session's log;
//! - **leases**: one row per running turn with a fencing token from a sequence. An append made
//!   under a lease checks the token in the same statement (holding the lease row `FOR SHARE`),
//!   so once another server takes an expired lease over, the old holder's appends are fenced;
//! - **create keys** and **slot claims**: `INSERT … ON CONFLICT DO NOTHING`, so one create per
//!   idempotency key and one firing per `(schedule, slot)` across every server;
//! - **reminders**: one row each until delivered or cancelled, read by due time;
//! - **artifacts**: the agent's records, upserted by `(kind, key)`, evicted past the cap;
//! - **storage**: the host API's key-value entries, one row per `(scope, agent, owner, key)`
//!   written with compare-and-set in one statement; a session's own go with it;
//! - **copy marker**: one row while `folio store copy` writes into the database (a server
//!   refuses to start until the copy is verified and the row deleted).
//!
//! **Durable points** (a create, a follow-up, a turn's end, each step's batch:
//! [`SessionStore::append_and_commit`](folio_store::SessionStore::append_and_commit)) write
//! their events and the session's metadata in one transaction, and the durable points of
//! concurrent sessions are gathered into one statement (group commit: one WAL flush, one
//! notification; a point refused for its own reason, fenced or conflicting, is left out while
//! the others land). Plain appends and metadata commits take the same path. Each appending
//! statement notifies `folio_events` once (payload: `<session id>:<last index>` per session,
//! one a line); followers on every
//! server are woken by one `LISTEN` connection per process, and re-read the log's end when that
//! connection was lost and every [`PgOptions::poll_interval`] in case a notification never
//! came. [`PgStore::signal`] sends stop or preempt requests to whichever server owns a turn.
//!
//! Connections come from a pool that tests each one before use and closes idle ones before a
//! cloud load balancer would; a call whose connection drops mid-way is retried on another
//! ([`RetryPolicy`]), and an append retried after a lost reply recognizes its own committed rows.
//! Migrations are embedded and run by [`PgStore::open`]; a database migrated by a newer Folio
//! is refused with [`PgError::SchemaNewer`]. [`PgStore::delete_expired_sessions`] is retention.
//!
//! ```no_run
//! use std::time::Duration;
//! use folio_store::SessionStore;
//! use folio_store_postgres::{PgOptions, PgStore};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let store = PgStore::open("postgres://folio@db.internal/folio", PgOptions::default()).await?;
//! let lease = store.acquire_lease("ses_01JF…", "server-a", Duration::from_secs(30)).await?;
//! println!("schema {:?}, fencing token {}", store.schema().await?, lease.fence);
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod artifacts;
mod credentials;
mod deliveries;
mod error;
mod events;
mod group;
mod import;
mod lease;
mod notify;
mod reminders;
mod retention;
mod retry;
mod schema;
mod sessions;
mod stats;
mod storage;
mod store;
#[cfg(feature = "test-support")]
pub mod testing;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};

pub use error::PgError;
pub use folio_store::RetentionReport;
pub use notify::Notice;
pub use retry::RetryPolicy;
pub use schema::SchemaStatus;
pub use stats::{StoreStats, TableStats};

use retry::Endpoint;

/// How the store connects, retries and polls.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// The most connections one process keeps open (one more is held for `LISTEN`).
    pub max_connections: u32,
    /// An idle connection is closed after this long: below the 4–6 minutes after which cloud
    /// load balancers silently drop idle TCP connections.
    pub idle_timeout: Duration,
    /// How long a call waits for a connection (or a first connect) before it counts as failed.
    pub connect_timeout: Duration,
    /// How transient failures are retried.
    pub retry: RetryPolicy,
    /// How often a follower re-reads the log when no notification arrived.
    pub poll_interval: Duration,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            max_connections: 16,
            idle_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
            poll_interval: Duration::from_secs(1),
        }
    }
}

/// A handle on the PostgreSQL store; clones share one pool and one `LISTEN` connection.
#[derive(Debug, Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    pool: PgPool,
    endpoint: Endpoint,
    options: PgOptions,
    notices: tokio::sync::broadcast::Sender<Notice>,
    listener: tokio::task::JoinHandle<()>,
    /// Writes durable points, gathered across sessions.
    committer: group::Committer,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

/// Parses a store URL into connect options, with `application_name = folio` unless it names one.
pub fn parse_url(url: &str) -> Result<PgConnectOptions, PgError> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(PgError::BadUrl {
            message: format!("{url:?} does not start with postgres:// or postgresql://"),
        });
    }
    let options = PgConnectOptions::from_str(url).map_err(|err| PgError::BadUrl {
        message: err.to_string(),
    })?;
    Ok(if options.get_application_name().is_none() {
        options.application_name("folio")
    } else {
        options
    })
}

/// A pool of at most `max` connections made with `connect`, each pinged before it is used and
/// closed when idle for `options.idle_timeout` or 30 minutes old.
fn pool(options: &PgOptions, max: u32, connect: PgConnectOptions) -> PgPool {
    PgPoolOptions::new()
        .max_connections(max)
        .min_connections(0)
        .test_before_acquire(true)
        .idle_timeout(Some(options.idle_timeout))
        .max_lifetime(Some(Duration::from_secs(30 * 60)))
        .acquire_timeout(options.connect_timeout)
        .connect_lazy_with(connect)
}

impl PgStore {
    /// Connects, refuses a database whose schema is newer than this binary, applies pending
    /// migrations and starts listening for notifications: what a server does at start.
    pub async fn open(url: &str, options: PgOptions) -> Result<PgStore, PgError> {
        let store = PgStore::connect(url, options).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Connects without touching the schema (for `folio store check` and `stats`). The first
    /// connection is made at once, so an unreachable database fails here with its host and port.
    pub async fn connect(url: &str, options: PgOptions) -> Result<PgStore, PgError> {
        let connect = parse_url(url)?;
        let endpoint = Endpoint {
            host: connect.get_host().to_string(),
            port: connect.get_port(),
            // PostgreSQL defaults the database to the user name.
            database: connect
                .get_database()
                .unwrap_or(connect.get_username())
                .to_string(),
        };
        let first = tokio::time::timeout(options.connect_timeout, connect.connect()).await;
        match first {
            Ok(Ok(conn)) => {
                let _ = conn.close().await;
            }
            Ok(Err(err)) => return Err(connect_error(&endpoint, err)),
            Err(_) => {
                return Err(PgError::Unreachable {
                    host: endpoint.host,
                    port: endpoint.port,
                    message: format!("no answer within {:?}", options.connect_timeout),
                });
            }
        }
        let committer = group::Committer::start(&options, &connect);
        let pool = pool(&options, options.max_connections + 1, connect);
        let (notices, _) = tokio::sync::broadcast::channel(4096);
        let listener = tokio::spawn(notify::listen(pool.clone(), notices.clone()));
        Ok(PgStore {
            inner: Arc::new(Inner {
                pool,
                endpoint,
                options,
                notices,
                listener,
                committer,
            }),
        })
    }

    /// Where the store is, without credentials: `host:port/database`.
    pub fn location(&self) -> String {
        let Endpoint {
            host,
            port,
            database,
        } = &self.inner.endpoint;
        format!("{host}:{port}/{database}")
    }

    /// The connection pool (for tests and tools that need a raw query).
    pub fn pool(&self) -> &PgPool {
        &self.inner.pool
    }

    /// Where the database's schema stands against this binary.
    pub async fn schema(&self) -> Result<SchemaStatus, PgError> {
        let database = self
            .retry("read the schema version", |_| async {
                Ok(schema::database_version(self.pool()).await?)
            })
            .await?;
        Ok(SchemaStatus {
            location: self.location(),
            database,
            binary: schema::binary_version(),
        })
    }

    /// Applies the migrations this binary carries that the database lacks; refuses a database
    /// migrated by a newer binary. Safe to run from several servers at once (an advisory lock
    /// serializes them).
    pub async fn migrate(&self) -> Result<SchemaStatus, PgError> {
        let before = self.schema().await?;
        if before.newer() {
            return Err(PgError::SchemaNewer {
                found: before.database,
                supported: before.binary,
            });
        }
        if before.pending() {
            schema::MIGRATOR.run(self.pool()).await?;
        }
        self.schema().await
    }

    /// Runs one database call with the store's retry policy.
    async fn retry<T, F, Fut>(&self, what: &str, op: F) -> Result<T, PgError>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, retry::Failure>>,
    {
        self.inner
            .options
            .retry
            .run(&self.inner.endpoint, what, op)
            .await
    }
}

/// The error for a first connection that failed: unreachable, or refused by the server.
fn connect_error(endpoint: &Endpoint, err: sqlx::Error) -> PgError {
    match err {
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::PoolTimedOut => {
            endpoint.unreachable(&err)
        }
        other => PgError::Refused {
            host: endpoint.host.clone(),
            port: endpoint.port,
            message: other.to_string(),
        },
    }
}
