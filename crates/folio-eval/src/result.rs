//! A step's `result`: its final reply read as JSON (the whole reply, or a fenced JSON block in
//! it) for its `result_schema` to check.

use folio_project::Assertion;
use folio_protocol::StepObservation;
use serde_json::Value;

/// The reply read as JSON: the whole reply, else the first ```` ```json ```` (or bare
/// ```` ``` ````) fenced block; the error is the whole reply's parse error.
pub fn parse_result(reply: &str) -> Result<Value, serde_json::Error> {
    let reply = reply.trim();
    serde_json::from_str(reply).or_else(|err| {
        fenced_block(reply)
            .and_then(|block| serde_json::from_str(block).ok())
            .ok_or(err)
    })
}

/// The body of the first fenced block of `text` whose info string is `json` or empty.
fn fenced_block(text: &str) -> Option<&str> {
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let line_end = after.find('\n')?;
        let info = after[..line_end].trim();
        let body = &after[line_end + 1..];
        let end = body.find("```")?;
        if info.is_empty() || info.eq_ignore_ascii_case("json") {
            return Some(&body[..end]);
        }
        rest = &body[end + 3..];
    }
    None
}

/// Sets `observed.result` to the reply read as JSON when `expect` holds a `result_schema`
/// (left unset when the reply is not JSON: the assertion says why).
pub(crate) fn record_result(expect: &[Assertion], observed: &mut StepObservation) {
    if expect
        .iter()
        .any(|assertion| matches!(assertion, Assertion::ResultSchema(_)))
    {
        observed.result = parse_result(&observed.reply).ok();
    }
}
