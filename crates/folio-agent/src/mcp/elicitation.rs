//! Elicitation: an MCP server asking the user for input in the middle of a tool call
//! (`elicitation/create`, form mode).
//!
//! The MCP client ([`FolioClient`]) hands each request to the tool call in flight on that
//! connection; the call parks its turn on it like an approval (`action.approval_requested`
//! with an [`Elicitation`](folio_protocol::Elicitation)), and the answer comes through the same
//! approval route: `accept` (with `content`), `decline` or `cancel`. Accepted content gets the
//! schema's defaults for the fields it leaves out (SEP-1034) and is checked against the schema.
//!
//! Decisions where the MCP specification is silent: a request that arrives while no call of
//! ours is in flight on the connection, or while several are (the protocol does not say which
//! call asked, and guessing could show one session's question to another principal), is
//! declined and logged; URL-mode elicitations are declined (Folio announces form mode only).

use std::sync::{Arc, Mutex as StdMutex};

use folio_protocol::ApprovalDecision;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, ErrorData, FormElicitationCapability, Implementation, ProtocolVersion,
};
use rmcp::service::{RequestContext, RoleClient};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

/// The MCP protocol version Folio announces: the latest stable one with an `initialize`
/// handshake (the server answers the version it speaks, which Folio accepts).
pub const ANNOUNCED_PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// One elicitation waiting for the user, handed from the MCP client to the call that caused it.
pub(crate) struct PendingElicitation {
    /// The server's message.
    pub(crate) message: String,
    /// The requested schema as JSON.
    pub(crate) requested_schema: Value,
    /// Where the answer goes.
    pub(crate) reply: oneshot::Sender<ElicitResult>,
}

/// A registered call: its number and where its elicitations go.
type Caller = (u64, mpsc::UnboundedSender<PendingElicitation>);

/// The tool calls in flight on one connection that can take an elicitation.
#[derive(Clone, Default)]
pub(crate) struct Callers(Arc<StdMutex<Vec<Caller>>>);

/// Removes its caller from [`Callers`] when the call ends.
pub(crate) struct CallerGuard {
    callers: Callers,
    id: u64,
}

impl Drop for CallerGuard {
    fn drop(&mut self) {
        if let Ok(mut callers) = self.callers.0.lock() {
            callers.retain(|(id, _)| *id != self.id);
        }
    }
}

/// Numbers the callers of every connection.
static CALLER_IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Callers {
    /// Registers a call that takes elicitations through `sender` until the guard drops.
    pub(crate) fn register(
        &self,
        sender: mpsc::UnboundedSender<PendingElicitation>,
    ) -> CallerGuard {
        let id = CALLER_IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut callers) = self.0.lock() {
            callers.push((id, sender));
        }
        CallerGuard {
            callers: self.clone(),
            id,
        }
    }

    /// The one call in flight, or why there is none to ask.
    fn only(&self) -> Result<mpsc::UnboundedSender<PendingElicitation>, &'static str> {
        let callers = self.0.lock().map_err(|_| "the caller list is poisoned")?;
        match callers.as_slice() {
            [(_, sender)] => Ok(sender.clone()),
            [] => Err("no tool call is in flight on this connection"),
            _ => Err(
                "several tool calls are in flight on this connection and MCP does not say which one asks",
            ),
        }
    }
}

/// Folio's MCP client handler: announces [`ANNOUNCED_PROTOCOL_VERSION`] and form elicitation,
/// and routes each `elicitation/create` to the call in flight.
#[derive(Clone)]
pub(crate) struct FolioClient {
    /// The connection name (for logs).
    pub(crate) server: String,
    /// The calls that can answer.
    pub(crate) callers: Callers,
}

impl rmcp::ClientHandler for FolioClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::new().with_schema_validation(true)),
        );
        ClientConfig::new(
            capabilities,
            Implementation::new("folio", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ANNOUNCED_PROTOCOL_VERSION)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            tracing::warn!(server = %self.server, "declined a URL-mode elicitation (Folio supports form mode only)");
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let sender = match self.callers.only() {
            Ok(sender) => sender,
            Err(why) => {
                tracing::warn!(server = %self.server, "declined an elicitation: {why}");
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
        };
        let requested_schema = serde_json::to_value(&requested_schema).map_err(|err| {
            ErrorData::internal_error(format!("cannot read the requested schema: {err}"), None)
        })?;
        let (reply, answer) = oneshot::channel();
        let pending = PendingElicitation {
            message,
            requested_schema,
            reply,
        };
        if sender.send(pending).is_err() {
            return Ok(ElicitResult::new(ElicitationAction::Cancel));
        }
        // The call ended (or was cancelled) without an answer: the user did not choose.
        Ok(answer
            .await
            .unwrap_or_else(|_| ElicitResult::new(ElicitationAction::Cancel)))
    }
}

/// Why an accepted elicitation's content was refused (the answer is declined, saying why).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ElicitationContentError {
    /// The content is not a JSON object.
    #[error(
        "the content of an accepted elicitation must be a JSON object matching its requestedSchema, got {got}; send an object such as {{\"field\": value}}"
    )]
    NotAnObject {
        /// The JSON type that was sent (`an array`, `a string`, …).
        got: &'static str,
    },
    /// The server's `requestedSchema` does not compile, so no content can be checked.
    #[error("the server's requestedSchema cannot be checked: {source}")]
    Schema {
        /// Why the schema is invalid.
        #[source]
        source: folio_project::InvalidSchema,
    },
    /// The content (with the defaults applied) does not match the schema.
    #[error(
        "the elicitation's content does not match its requestedSchema: {}; fix those fields and answer again",
        .fields.join("; ")
    )]
    Mismatch {
        /// One line per failing field, sorted, each once.
        fields: Vec<String>,
    },
}

/// An accepted elicitation's content: the object the user sent (none: `{}`) with the
/// schema's `default` for each property it leaves out (SEP-1034), checked against the schema.
pub fn elicitation_content(
    schema: &Value,
    content: Option<Value>,
) -> Result<Value, ElicitationContentError> {
    let mut content = match content {
        None => Map::new(),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(ElicitationContentError::NotAnObject {
                got: crate::tools::input::json_type(&other),
            });
        }
    };
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            if let Some(default) = property.get("default")
                && !content.contains_key(name)
            {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    let content = Value::Object(content);
    let validator = folio_project::compile_schema(schema)
        .map_err(|source| ElicitationContentError::Schema { source })?;
    let mut errors: Vec<String> = validator
        .iter_errors(&content)
        .map(|error| crate::tools::authored::schema_error(&error))
        .collect();
    if errors.is_empty() {
        return Ok(content);
    }
    errors.sort();
    errors.dedup();
    Err(ElicitationContentError::Mismatch { fields: errors })
}

/// The MCP answer of a decision on an elicitation (`approve` counts as `accept`, `deny` as
/// `decline`); accepted content must already be checked by [`elicitation_content`].
pub(crate) fn elicit_result(decision: ApprovalDecision, content: Option<Value>) -> ElicitResult {
    match decision {
        ApprovalDecision::Accept | ApprovalDecision::Approve => {
            let result = ElicitResult::new(ElicitationAction::Accept);
            match content {
                Some(content) => result.with_content(content),
                None => result,
            }
        }
        ApprovalDecision::Decline | ApprovalDecision::Deny => {
            ElicitResult::new(ElicitationAction::Decline)
        }
        ApprovalDecision::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                "email": {"type": "string"}
            },
            "required": ["email"]
        })
    }

    #[test]
    fn defaults_fill_the_fields_left_out() {
        let content = elicitation_content(&schema(), Some(json!({"email": "a@b.c", "age": 7})));
        assert_eq!(
            content,
            Ok(json!({"name": "John Doe", "age": 7, "status": "active", "email": "a@b.c"}))
        );
    }

    #[test]
    fn content_outside_the_schema_is_refused_with_the_field() {
        let missing = elicitation_content(&schema(), None)
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("email: required field is missing"),
            "{missing}"
        );
        let wrong = elicitation_content(&schema(), Some(json!({"email": "x", "status": "gone"})))
            .unwrap_err();
        assert!(
            matches!(&wrong, ElicitationContentError::Mismatch { fields } if fields.iter().any(|f| f.contains("status"))),
            "{wrong}"
        );
        let not_object = elicitation_content(&schema(), Some(json!([1]))).unwrap_err();
        assert_eq!(
            not_object,
            ElicitationContentError::NotAnObject { got: "an array" }
        );
        assert!(
            not_object.to_string().contains("must be a JSON object"),
            "{not_object}"
        );
    }

    proptest! {
        /// Whatever a client sends, the answer is either refused or an object the schema
        /// accepts, holding every default the client left out.
        #[test]
        fn accepted_content_always_matches_the_schema(
            name in proptest::option::of(".{0,8}"),
            age in proptest::option::of(any::<i64>()),
            email in proptest::option::of(".{0,8}"),
            status in proptest::option::of("[a-z]{0,8}"),
        ) {
            let mut sent = Map::new();
            if let Some(name) = &name { sent.insert("name".into(), json!(name)); }
            if let Some(age) = age { sent.insert("age".into(), json!(age)); }
            if let Some(email) = &email { sent.insert("email".into(), json!(email)); }
            if let Some(status) = &status { sent.insert("status".into(), json!(status)); }
            let validator = folio_project::compile_schema(&schema()).unwrap();
            match elicitation_content(&schema(), Some(Value::Object(sent))) {
                Ok(content) => {
                    prop_assert!(validator.is_valid(&content));
                    prop_assert_eq!(content.get("age").cloned(), Some(json!(age.unwrap_or(30))));
                }
                Err(message) => prop_assert!(email.is_none() || status.is_some(), "{message}"),
            }
        }
    }
}
