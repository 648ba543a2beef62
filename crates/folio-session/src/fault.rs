//! Fault points for crash tests: `folio serve` aborts the process at a chosen point of the
//! admission and turn-boundary code when its operator sets `FOLIO_FAULT=<point>` explicitly.
//! Unset (normal use), nothing is checked but one `Option`.

use std::fmt;
use std::str::FromStr;

/// A point between two durable steps where a crash test makes the process abort.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPoint {
    /// A message (`message.received` or `message.queued`) is synced to the log, but
    /// `session.json` (status `running`, rotated token) is not written yet.
    MessageSynced,
    /// The message and `session.json` are durable; the reply is not sent yet.
    BeforeReply,
    /// `session.waiting` / `session.completed` / `session.failed` is synced to the log, but the
    /// status in `session.json` is not written yet.
    BoundarySynced,
    /// A channel delivery is durable and acknowledged (`202`), but its work is withheld so the
    /// test can kill the process there: a restart must run it.
    ChannelAcknowledged,
    /// A channel delivery reached its session (message admitted, `channel.delivery` recorded
    /// on the session), but its outcome is not in the channel's delivery record yet.
    ChannelDeliveryRecorded,
    /// A new session's row is in the shared store (`--store`), its log still empty: the create
    /// is not acknowledged, and another server must remove it.
    SessionCreated,
}

/// Every fault point with its name, as `FOLIO_FAULT` spells it.
const POINTS: &[(&str, FaultPoint)] = &[
    ("message-synced", FaultPoint::MessageSynced),
    ("before-reply", FaultPoint::BeforeReply),
    ("boundary-synced", FaultPoint::BoundarySynced),
    ("channel-acknowledged", FaultPoint::ChannelAcknowledged),
    (
        "channel-delivery-recorded",
        FaultPoint::ChannelDeliveryRecorded,
    ),
    ("session-created", FaultPoint::SessionCreated),
];

/// `FOLIO_FAULT` names no fault point.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "FOLIO_FAULT={0} names no fault point: use one of message-synced, before-reply, boundary-synced, channel-acknowledged, channel-delivery-recorded, session-created (or unset it)"
)]
pub struct UnknownFaultPoint(pub String);

impl FromStr for FaultPoint {
    type Err = UnknownFaultPoint;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        POINTS
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, point)| *point)
            .ok_or_else(|| UnknownFaultPoint(name.to_string()))
    }
}

impl fmt::Display for FaultPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = POINTS
            .iter()
            .find(|(_, point)| point == self)
            .map_or("?", |(name, _)| name);
        f.write_str(name)
    }
}

/// Aborts the process (no destructors, no flush: a crash) when `armed` is `point`.
pub(crate) fn check(armed: Option<FaultPoint>, point: FaultPoint) {
    if armed == Some(point) {
        eprintln!("folio: FOLIO_FAULT={point}: aborting the process here (crash test)");
        std::process::abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for (name, point) in POINTS {
            assert_eq!(name.parse::<FaultPoint>(), Ok(*point));
            assert_eq!(point.to_string(), *name);
        }
        assert_eq!(
            "later".parse::<FaultPoint>(),
            Err(UnknownFaultPoint("later".into()))
        );
    }
}
