//! Reading Folio's own HTTP answers through their folio-protocol types, exactly: a field the type
//! does not know, a missing one or a changed shape fails the test.

use folio_protocol::{
    Acknowledged, AgentDescription, AgentSummary, ArtifactRecord, ArtifactResponse,
    DeliveriesResponse, DeliveryAccepted, ErrorBody, EvalCaseSaved, EvalRunResponse,
    EvalRunSummary, FollowUpAccepted, LogsResponse, Page, Reminder, ReminderResponse,
    SchedulesResponse, SessionCreated, SessionResponse, SessionSummary, ToolCallResult,
    UrlVerification,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Reads `value` as the wire type `T` and checks that nothing was lost or added: `T` written back
/// must be `value` again.
///
/// # Panics
/// When `value` is not a `T`, or differs from it written back.
pub fn read_wire<T: Serialize + DeserializeOwned>(value: &Value) -> T {
    let name = std::any::type_name::<T>();
    let typed: T = serde_json::from_value(value.clone())
        .unwrap_or_else(|err| panic!("not a {name}: {err}\n{value:#}"));
    let written = serde_json::to_value(&typed)
        .unwrap_or_else(|err| panic!("{name} cannot be written back: {err}"));
    assert_eq!(&written, value, "the answer and {name} differ");
    typed
}

/// Reads an answer of a Folio route with [`read_wire`]: an [`ErrorBody`] when `status >= 400`,
/// else the success type `T`.
///
/// # Panics
/// When the body is not that type.
pub fn read_answer<T: Serialize + DeserializeOwned>(
    status: u16,
    body: &Value,
) -> Result<T, ErrorBody> {
    if status >= 400 {
        Err(read_wire(body))
    } else {
        Ok(read_wire(body))
    }
}

/// Checks a JSON answer of a Folio agent route against its folio-protocol type with
/// [`read_wire`]: every error (`status >= 400`) is an [`ErrorBody`], each JSON route's success
/// body its own type. Answers that are not JSON (`body` a string: HTML, NDJSON) are skipped.
///
/// # Panics
/// When the body is not its route's type, or a route answered JSON that has no type here.
pub fn check_answer(method: &str, url: &str, status: u16, body: &Value) {
    if body.is_string() {
        return;
    }
    if status >= 400 {
        read_wire::<ErrorBody>(body);
        return;
    }
    let path = url.split('?').next().unwrap_or(url);
    let route = path.rsplit_once("/v1/").map_or("", |(_, route)| route);
    let segments: Vec<&str> = route.split('/').collect();
    match (method, segments.as_slice()) {
        ("POST", ["session"] | ["session", _, "fork"]) => {
            read_wire::<SessionCreated>(body);
        }
        ("POST", ["session", _] | ["session", _, "token"]) => {
            read_wire::<FollowUpAccepted>(body);
        }
        ("GET", ["session", _]) => {
            read_wire::<SessionResponse>(body);
        }
        ("POST", ["session", _, "eval-case"]) => {
            read_wire::<EvalCaseSaved>(body);
        }
        ("POST", ["session", _, "reminders"]) => {
            read_wire::<ReminderResponse>(body);
        }
        ("GET", ["session", _, "reminders"]) => {
            read_wire::<Page<Reminder>>(body);
        }
        ("DELETE", ["session", _] | ["session", _, "reminders", _])
        | ("POST", ["session", _, "stop"] | ["session", _, "approvals", _]) => {
            read_wire::<Acknowledged>(body);
        }
        ("POST", ["session", _, "tools", _] | ["tools", _]) => {
            read_wire::<ToolCallResult>(body);
        }
        ("GET", ["sessions"]) => {
            read_wire::<Page<SessionSummary>>(body);
        }
        ("GET", ["agent"]) => {
            read_wire::<AgentDescription>(body);
        }
        ("GET", ["agents"]) => {
            read_wire::<Vec<AgentSummary>>(body);
        }
        ("GET", ["schedules"]) => {
            read_wire::<SchedulesResponse>(body);
        }
        ("GET", ["logs"]) => {
            read_wire::<LogsResponse>(body);
        }
        ("GET", ["variants"]) => {
            read_wire::<folio_protocol::VariantsResponse>(body);
        }
        ("GET", ["artifacts"]) => {
            read_wire::<Page<ArtifactRecord>>(body);
        }
        ("GET", ["artifacts", _]) => {
            read_wire::<ArtifactResponse>(body);
        }
        ("GET", ["channels", _, "deliveries"]) => {
            read_wire::<DeliveriesResponse>(body);
        }
        ("POST", ["channels", _, "events"]) if body.get("challenge").is_some() => {
            read_wire::<UrlVerification>(body);
        }
        ("POST", ["channels", _, ..]) => {
            read_wire::<DeliveryAccepted>(body);
        }
        ("GET", ["evals"]) => {
            read_wire::<Page<EvalRunSummary>>(body);
        }
        ("GET", ["evals", _]) => {
            read_wire::<EvalRunResponse>(body);
        }
        _ => panic!("{method} {url}: a JSON answer of a route with no folio-protocol type: {body}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_unknown_field_or_a_wrong_type_fails() {
        let ok = json!({"ok": true});
        assert_eq!(read_wire::<Acknowledged>(&ok), Acknowledged::default());
        check_answer("POST", "http://h/a/v1/session/ses_1/stop", 200, &ok);
        let error = json!({"ok": false, "error": "not_found", "message": "no session"});
        check_answer("GET", "http://h/a/v1/session/ses_1", 404, &error);
        let extra = json!({"ok": true, "extra": 1});
        assert!(std::panic::catch_unwind(|| read_wire::<Acknowledged>(&extra)).is_err());
        assert!(
            std::panic::catch_unwind(|| check_answer("GET", "http://h/v1/session/x", 200, &ok))
                .is_err()
        );
    }
}
