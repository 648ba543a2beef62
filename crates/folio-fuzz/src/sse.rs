//! Provider responses: a body as Anthropic Messages, OpenAI Chat Completions or OpenAI
//! Responses sends it — server-sent events in chunks, or one JSON document — decoded into the
//! response a turn sees (tool-call arguments parsed).

use bytes::Bytes;
use folio_model::decode::{Wire, decode_response};

const WIRES: [Wire; 3] = [Wire::Anthropic, Wire::Chat, Wire::Responses];

/// The first byte picks the wire format (`% 3`) and whether the body is streamed (bit 2); the
/// second the chunk size the body arrives in (`0`: one chunk); the rest is the body.
pub fn sse(data: &[u8]) {
    let (pick, rest) = crate::selector(data);
    let (size, body) = crate::selector(rest);
    let wire = WIRES[usize::from(pick) % WIRES.len()];
    let streamed = pick & 4 == 0;
    let chunks: Vec<Bytes> = match usize::from(size) {
        0 => vec![Bytes::copy_from_slice(body)],
        size => body.chunks(size).map(Bytes::copy_from_slice).collect(),
    };
    let decoded = RUNTIME.with(|runtime| runtime.block_on(decode_response(wire, chunks, streamed)));
    if let Err(err) = decoded {
        let _ = err.to_string();
    }
}

thread_local! {
    /// The runtime the decoding runs on (its idle timeout needs a clock).
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
}
