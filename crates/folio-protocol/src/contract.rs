//! Contract strings: exact texts that end up in event logs and tool results, which clients and
//! tests match on.

/// `turn.failed` message of a turn cancelled by stop or preempt.
pub const TURN_INTERRUPTED: &str = "turn interrupted";

/// `turn.failed` message of a turn that was running when the server died.
pub const SERVER_RESTARTED: &str = "server restarted";

/// The tool-result text of a call that never finished (stop, preempt, crash).
pub const INTERRUPTED_RESULT: &str = "tool call interrupted: the turn ended before it finished";

/// The `reason` of the denial folio records when a parked call's approval deadline
/// (`expiresAt` of `action.approval_requested`) passes with no decision.
pub const APPROVAL_TIMED_OUT: &str = "approval timed out";

/// The `by` of a decision folio itself takes (a timed-out approval).
pub const DECIDED_BY_FOLIO: &str = "folio";

/// The reason a denial shows when the person gave none.
pub const NO_REASON_GIVEN: &str = "no reason given";

/// The tool error a denied call returns to the model: `denied by <who>: <reason>`.
pub fn denial_message(by: &str, reason: Option<&str>) -> String {
    format!("denied by {by}: {}", reason.unwrap_or(NO_REASON_GIVEN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denial_names_who_and_why() {
        assert_eq!(denial_message("alice", Some("no")), "denied by alice: no");
        assert_eq!(
            denial_message("local", None),
            "denied by local: no reason given"
        );
    }
}
