//! HTTP request bodies: the bytes as the body of a JSON route, read as the server reads every
//! route's body ([`folio_server::http::decode_body`]) into that route's request type.

use std::fmt::Debug;

use folio_protocol::{
    ApprovalRequest, CallConnectionTool, CancelReminder, CreateSession, Empty, FollowUp,
    ForkSession, GetArtifact, KvDelete, KvGet, KvList, KvPut, ListArtifacts, PutArtifact,
    RecordMetric, SaveEvalCase, SetReminder, SpanAttributes, ToolCallRequest, WriteLog,
};
use folio_server::http::decode_body;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Every request type a route reads from its body.
const ROUTES: &[fn(&[u8])] = &[
    decode::<CreateSession>,
    decode::<FollowUp>,
    decode::<ForkSession>,
    decode::<Empty>,
    decode::<SaveEvalCase>,
    decode::<ApprovalRequest>,
    decode::<ToolCallRequest>,
    decode::<SetReminder>,
    decode::<CancelReminder>,
    decode::<KvGet>,
    decode::<KvPut>,
    decode::<KvDelete>,
    decode::<KvList>,
    decode::<PutArtifact>,
    decode::<GetArtifact>,
    decode::<ListArtifacts>,
    decode::<CallConnectionTool>,
    decode::<SpanAttributes>,
    decode::<RecordMetric>,
    decode::<WriteLog>,
    decode::<Value>,
];

/// A request body: the first byte picks the route's request type, the rest is the body.
pub fn http_body(data: &[u8]) {
    let (pick, body) = crate::selector(data);
    ROUTES[usize::from(pick) % ROUTES.len()](body);
}

/// Reads `body` as `T`; what reads must write back to a body that reads the same.
fn decode<T: DeserializeOwned + Serialize + PartialEq + Debug>(body: &[u8]) {
    let Ok(request) = decode_body::<T>(body) else {
        return;
    };
    let written = serde_json::to_vec(&request).expect("a request that reads serializes");
    let again = decode_body::<T>(&written).unwrap_or_else(|err| {
        panic!(
            "{} written back does not read: {}",
            String::from_utf8_lossy(&written),
            err.message
        )
    });
    assert_eq!(again, request, "a request changed through write and read");
}
