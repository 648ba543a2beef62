//! Retrying transient database errors: a dropped connection (a cloud load balancer killing an
//! idle socket, a failover, `pg_terminate_backend`) is retried on a fresh connection instead of
//! failing the caller's turn.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::PgError;

/// How long and how often a transient failure is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The first wait after a failure; it doubles up to `max_delay`.
    pub initial_delay: Duration,
    /// The longest single wait.
    pub max_delay: Duration,
    /// Past this much time since the first try, the error is returned.
    pub budget: Duration,
}

impl Default for RetryPolicy {
    /// 50 ms doubling to 2 s, for up to 30 s: long enough for a managed database's failover.
    fn default() -> Self {
        RetryPolicy {
            initial_delay: Duration::from_millis(50),
            max_delay: Duration::from_secs(2),
            budget: Duration::from_secs(30),
        }
    }
}

/// Where the database is, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) database: String,
}

impl Endpoint {
    /// The error for a database that stayed unreachable.
    pub(crate) fn unreachable(&self, err: &sqlx::Error) -> PgError {
        PgError::Unreachable {
            host: self.host.clone(),
            port: self.port,
            message: err.to_string(),
        }
    }
}

/// Whether `err` is worth retrying on another connection: the connection broke, the pool had none
/// to give, the server is shutting down or restarting, or a serialization/deadlock abort.
pub(crate) fn is_transient(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_) => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            // 08: connection exception; 57P01-03: admin shutdown, crash shutdown, cannot connect
            // now; 53300: too many connections; 40001/40P01: serialization failure, deadlock.
            code.starts_with("08")
                || matches!(
                    code.as_ref(),
                    "57P01" | "57P02" | "57P03" | "53300" | "40001" | "40P01"
                )
        }),
        _ => false,
    }
}

impl RetryPolicy {
    /// Runs `op` until it succeeds, fails for good, or transient failures outlast the budget.
    /// `op` gets the attempt number (0 first), so an append can tell a retry from a first try.
    pub(crate) async fn run<T, F, Fut>(
        &self,
        endpoint: &Endpoint,
        what: &str,
        mut op: F,
    ) -> Result<T, PgError>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let started = Instant::now();
        let mut delay = self.initial_delay;
        let mut attempt = 0;
        loop {
            match op(attempt).await {
                Ok(value) => return Ok(value),
                Err(Failure::Store(err)) => return Err(err),
                Err(Failure::Db(err)) if is_transient(&err) => {
                    if started.elapsed() + delay > self.budget {
                        return Err(endpoint.unreachable(&err));
                    }
                    tracing::warn!(what, attempt, error = %err, "transient PostgreSQL error; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(self.max_delay);
                    attempt += 1;
                }
                Err(Failure::Db(err)) => return Err(PgError::Database(err)),
            }
        }
    }
}

/// How one attempt failed: a database error (maybe transient) or a final store error.
#[derive(Debug)]
pub(crate) enum Failure {
    /// From the driver: retried when transient.
    Db(sqlx::Error),
    /// Decided by the store (a conflict, a fenced append): returned as is.
    Store(PgError),
}

impl From<sqlx::Error> for Failure {
    fn from(err: sqlx::Error) -> Self {
        Failure::Db(err)
    }
}

impl From<PgError> for Failure {
    fn from(err: PgError) -> Self {
        Failure::Store(err)
    }
}
