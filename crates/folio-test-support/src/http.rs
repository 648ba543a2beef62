//! Speaking HTTP to a running Folio agent and reading every answer through its folio-protocol
//! type ([`check_answer`]), so an end-to-end test asserts on typed values.

use folio_protocol::{
    CreateSession, Empty, ErrorBody, ErrorCode, Event, FollowUp, FollowUpAccepted, SessionCreated,
    SessionResponse, SessionSummary,
};
use reqwest::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::answers::{check_answer, read_answer, read_wire};
use crate::events::read_ndjson;

/// The `body` argument of a request that sends none.
pub const NO_BODY: Option<&Empty> = None;

/// An HTTP client for tests (no proxy, so loopback servers are reached directly).
///
/// # Panics
/// When the TLS backend cannot start (a broken test machine).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a reqwest client (TLS backend) for tests")
}

/// Sends `body` as JSON with `method` and an optional bearer token; the status and the answer
/// as JSON, already checked against its route's folio-protocol type ([`check_answer`]). An
/// answer that is not JSON (HTML, NDJSON) comes back as a JSON string.
///
/// # Panics
/// When the server cannot be reached or the answer is not its route's type.
pub async fn call(
    method: Method,
    url: &str,
    body: Option<Value>,
    token: Option<&str>,
) -> (u16, Value) {
    let mut request = client().request(method.clone(), url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request
        .send()
        .await
        .unwrap_or_else(|err| panic!("{method} {url}: no answer: {err}"));
    let status = response.status().as_u16();
    let text = response
        .text()
        .await
        .unwrap_or_else(|err| panic!("{method} {url}: the answer broke off: {err}"));
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    check_answer(method.as_str(), url, status, &value);
    (status, value)
}

/// `body` as JSON.
fn json_body(method: &Method, url: &str, body: Option<&impl Serialize>) -> Option<Value> {
    body.map(|body| {
        serde_json::to_value(body)
            .unwrap_or_else(|err| panic!("{method} {url}: the body is not JSON: {err}"))
    })
}

/// [`call`] with a typed request body, reading the answer as `T` (a success) or an
/// [`ErrorBody`] (`status >= 400`).
///
/// # Panics
/// As [`call`]; when `body` cannot be written as JSON.
pub async fn answer<T: Serialize + DeserializeOwned>(
    method: Method,
    url: &str,
    body: Option<&impl Serialize>,
    token: Option<&str>,
) -> (u16, Result<T, ErrorBody>) {
    let body = json_body(&method, url, body);
    let (status, answer) = call(method, url, body, token).await;
    (status, read_answer(status, &answer))
}

/// Calls `method url` with `body`, expects `status`, and reads the answer as `T`.
///
/// # Panics
/// When the status differs (showing the answer) or the answer is not a `T`.
pub async fn expect<T: Serialize + DeserializeOwned>(
    method: Method,
    url: &str,
    body: Option<&impl Serialize>,
    status: u16,
) -> T {
    let body = json_body(&method, url, body);
    let (got, answer) = call(method.clone(), url, body, None).await;
    assert_eq!(got, status, "{method} {url}: {answer}");
    read_wire(&answer)
}

/// [`call`] with a typed request body, reading the answer as `T` whatever the status (`T` is
/// [`ErrorBody`] where the test expects an error).
///
/// # Panics
/// As [`call`]; when the answer is not a `T`.
pub async fn call_as<T: Serialize + DeserializeOwned>(
    method: Method,
    url: &str,
    body: Option<&impl Serialize>,
    token: Option<&str>,
) -> (u16, T) {
    let body = json_body(&method, url, body);
    let (status, answer) = call(method, url, body, token).await;
    (status, read_wire(&answer))
}

/// [`call`] with a typed request body, expecting an error: its status and [`ErrorBody`].
///
/// # Panics
/// When the request succeeded, or the answer is not an `ErrorBody`.
pub async fn refused(
    method: Method,
    url: &str,
    body: Option<&impl Serialize>,
    token: Option<&str>,
) -> (u16, ErrorBody) {
    let body = json_body(&method, url, body);
    let (status, answer) = call(method.clone(), url, body, token).await;
    assert!(
        status >= 400,
        "{method} {url}: expected an error, got {status} {answer}"
    );
    (status, read_wire(&answer))
}

/// Calls `method url` with `body` and expects the error `code`: its status and an
/// [`ErrorBody`] with a message; returns the body.
///
/// # Panics
/// When the answer is anything else.
pub async fn expect_error(
    method: Method,
    url: &str,
    body: Option<&impl Serialize>,
    code: ErrorCode,
) -> ErrorBody {
    let (status, error) = refused(method.clone(), url, body, None).await;
    assert_eq!(
        (status, error.error),
        (code.status(), code),
        "{method} {url}: {error}"
    );
    assert!(!error.message.is_empty(), "{method} {url}: {error:?}");
    error
}

/// `POST {agent}/v1/session` answered `201`: the new session.
///
/// # Panics
/// When the session is not created.
pub async fn create_session(agent: &str, body: &CreateSession) -> SessionCreated {
    expect(
        Method::POST,
        &format!("{agent}/v1/session"),
        Some(body),
        201,
    )
    .await
}

/// `POST {agent}/v1/session/{id}` answered `200`: the rotated token.
///
/// # Panics
/// When the follow-up is refused.
pub async fn follow_up(agent: &str, id: &str, body: &FollowUp) -> FollowUpAccepted {
    let url = format!("{agent}/v1/session/{id}");
    expect(Method::POST, &url, Some(body), 200).await
}

/// `GET {agent}/v1/session/{id}` answered `200`: the session.
///
/// # Panics
/// When there is no such session.
pub async fn session(agent: &str, id: &str) -> SessionSummary {
    let url = format!("{agent}/v1/session/{id}");
    expect::<SessionResponse>(Method::GET, &url, NO_BODY, 200)
        .await
        .session
}

/// Every stored event of a session (`GET {agent}/v1/session/{id}/events`), each read as an
/// [`Event`]; their indexes run from 0 without gaps.
///
/// # Panics
/// When the dump cannot be read, a line is not an `Event` or an index is missing.
pub async fn events(agent: &str, id: &str) -> Vec<Event> {
    let url = format!("{agent}/v1/session/{id}/events");
    let response = client()
        .get(&url)
        .send()
        .await
        .unwrap_or_else(|err| panic!("GET {url}: no answer: {err}"));
    assert_eq!(response.status().as_u16(), 200, "GET {url}");
    let text = response
        .text()
        .await
        .unwrap_or_else(|err| panic!("GET {url}: the answer broke off: {err}"));
    let events = read_ndjson(&text);
    crate::events::assert_contiguous(&events, 0);
    events
}
