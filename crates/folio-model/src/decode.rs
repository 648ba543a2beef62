//! Decoding a provider's response body without a connection, for the fuzz targets
//! (`folio-fuzz`): the same decoders and delta stream as a live request, then the
//! [`ResponseAssembler`] a turn uses.

use bytes::Bytes;
use futures::StreamExt;

use crate::http::decode_received;
use crate::{ModelError, Response, ResponseAssembler, anthropic, openai, responses};

/// A provider wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions (and compatible servers).
    Chat,
    /// OpenAI Responses.
    Responses,
}

/// The response a turn sees from a body of `wire` received in `chunks`: server-sent events
/// when `streamed`, else one JSON document.
pub async fn decode_response(
    wire: Wire,
    chunks: Vec<Bytes>,
    streamed: bool,
) -> Result<Response, ModelError> {
    let mut deltas = match wire {
        Wire::Anthropic => decode_received(
            "anthropic",
            anthropic::EventDecoder::default(),
            chunks,
            streamed,
        ),
        Wire::Chat => decode_received(
            "openai",
            openai::ChunkDecoder::new("openai"),
            chunks,
            streamed,
        ),
        Wire::Responses => decode_received(
            "openai",
            responses::EventDecoder::new("openai", streamed),
            chunks,
            streamed,
        ),
    };
    let mut assembler = ResponseAssembler::new();
    while let Some(delta) = deltas.next().await {
        assembler.push(&delta?);
    }
    assembler.finish()
}
