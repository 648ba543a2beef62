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

/// What one notification says: appends list `<session id>:<last index>` per session, one a
/// line (migration 10: one notification per appending statement, not per row).
fn notices(channel: &str, payload: &str) -> Vec<Notice> {
    match channel {
        DELETED_CHANNEL => vec![Notice::Deleted {
            session_id: payload.to_string(),
        }],
        EVENTS_CHANNEL => payload
            .split('\n')
            .filter_map(|entry| {
                let (session_id, index) = entry.rsplit_once(':')?;
                Some(Notice::Appended {
                    session_id: session_id.to_string(),
                    index: index.parse().ok()?,
                })
            })
            .collect(),
        // `<session id>:<message>`.
        CONTROL_CHANNEL => payload
            .split_once(':')
            .map(|(session_id, message)| Notice::Control {
                session_id: session_id.to_string(),
                message: message.to_string(),
            })
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

/// Listens until the store is dropped (the task is aborted), reconnecting after failures.
pub(crate) async fn listen(pool: PgPool, sender: broadcast::Sender<Notice>) {
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
        let _ = sender.send(Notice::Lost);
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) => {
                    for notice in notices(notification.channel(), notification.payload()) {
                        let _ = sender.send(notice);
                    }
                }
                // The connection dropped; the next try_recv reconnects and re-listens.
                Ok(None) => {
                    let _ = sender.send(Notice::Lost);
                }
                Err(err) => {
                    tracing::warn!(error = %err, "PostgreSQL LISTEN connection lost; reconnecting");
                    let _ = sender.send(Notice::Lost);
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
        let appended = |session_id: &str, index| Notice::Appended {
            session_id: session_id.into(),
            index,
        };
        assert_eq!(
            notices(EVENTS_CHANNEL, "ses_1:42"),
            vec![appended("ses_1", 42)]
        );
        assert_eq!(
            notices(EVENTS_CHANNEL, "ses_1:42\nses_2:7\nses_3:x"),
            vec![appended("ses_1", 42), appended("ses_2", 7)]
        );
        assert_eq!(
            notices(CONTROL_CHANNEL, "ses_1:stop:turn_9"),
            vec![Notice::Control {
                session_id: "ses_1".into(),
                message: "stop:turn_9".into()
            }]
        );
        assert_eq!(notices(EVENTS_CHANNEL, "ses_1:x"), vec![]);
        assert_eq!(notices(EVENTS_CHANNEL, "no colon"), vec![]);
        assert_eq!(notices(CONTROL_CHANNEL, "no colon"), vec![]);
        assert_eq!(notices("other", "ses_1:1"), vec![]);
        assert_eq!(
            notices(DELETED_CHANNEL, "ses_1"),
            vec![Notice::Deleted {
                session_id: "ses_1".into()
            }]
        );
    }
}
