//! `LISTEN` on one connection, fanned out in-process: appends (`folio_events`) wake followers,
//! control messages (`folio_control`) reach the server that owns a turn.

use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio::sync::broadcast;

/// The channel every append notifies.
pub(crate) const EVENTS_CHANNEL: &str = "folio_events";
/// The channel for stop/preempt requests to a turn's owner.
pub(crate) const CONTROL_CHANNEL: &str = "folio_control";
/// The channel a session's deletion is announced on (payload: the session id), so its
/// followers end.
pub(crate) const DELETED_CHANNEL: &str = "folio_deleted";

/// A notification, as this process's subscribers receive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// An event was appended to a session's log.
    Appended {
        /// The session.
        session_id: String,
        /// The new event's index.
        index: u64,
    },
    /// A control message for a session (stop, preempt…), from [`PgStore::signal`](crate::PgStore::signal).
    Control {
        /// The session.
        session_id: String,
        /// What the sender asked for.
        message: String,
    },
    /// A session was deleted: its followers end.
    Deleted {
        /// The session.
        session_id: String,
    },
    /// The `LISTEN` connection dropped: notifications may have been lost, so every follower
    /// re-reads what it follows.
    Lost,
}

fn notice(channel: &str, payload: &str) -> Option<Notice> {
    if channel == DELETED_CHANNEL {
        return Some(Notice::Deleted {
            session_id: payload.to_string(),
        });
    }
    // `<session id>:<index>` or `<session id>:<message>`.
    let (session_id, rest) = payload.split_once(':')?;
    match channel {
        EVENTS_CHANNEL => Some(Notice::Appended {
            session_id: session_id.to_string(),
            index: rest.parse().ok()?,
        }),
        CONTROL_CHANNEL => Some(Notice::Control {
            session_id: session_id.to_string(),
            message: rest.to_string(),
        }),
        _ => None,
    }
}

/// Listens until the store is dropped (the task is aborted), reconnecting after failures.
pub(crate) async fn listen(pool: PgPool, notices: broadcast::Sender<Notice>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let mut listener = match PgListener::connect_with(&pool).await {
            Ok(listener) => listener,
            Err(err) => {
                tracing::warn!(error = %err, "PostgreSQL LISTEN connection failed; followers poll until it is back");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        if let Err(err) = listener
            .listen_all([EVENTS_CHANNEL, CONTROL_CHANNEL, DELETED_CHANNEL])
            .await
        {
            tracing::warn!(error = %err, "PostgreSQL LISTEN failed; retrying");
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(5));
            continue;
        }
        backoff = Duration::from_millis(100);
        // Anything sent while no LISTEN was active is unknown: have followers re-read.
        let _ = notices.send(Notice::Lost);
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) => {
                    if let Some(notice) = notice(notification.channel(), notification.payload()) {
                        let _ = notices.send(notice);
                    }
                }
                // The connection dropped; the next try_recv reconnects and re-listens.
                Ok(None) => {
                    let _ = notices.send(Notice::Lost);
                }
                Err(err) => {
                    tracing::warn!(error = %err, "PostgreSQL LISTEN connection lost; reconnecting");
                    let _ = notices.send(Notice::Lost);
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_parse_and_junk_is_ignored() {
        assert_eq!(
            notice(EVENTS_CHANNEL, "ses_1:42"),
            Some(Notice::Appended {
                session_id: "ses_1".into(),
                index: 42
            })
        );
        assert_eq!(
            notice(CONTROL_CHANNEL, "ses_1:stop:turn_9"),
            Some(Notice::Control {
                session_id: "ses_1".into(),
                message: "stop:turn_9".into()
            })
        );
        assert_eq!(notice(EVENTS_CHANNEL, "ses_1:x"), None);
        assert_eq!(notice(EVENTS_CHANNEL, "no colon"), None);
        assert_eq!(notice("other", "ses_1:1"), None);
        assert_eq!(
            notice(DELETED_CHANNEL, "ses_1"),
            Some(Notice::Deleted {
                session_id: "ses_1".into()
            })
        );
    }
}
