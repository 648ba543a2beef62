//! The two wire formats the mock server speaks, as lists of SSE chunks.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::reply::{StreamReply, fragments, pieces};

/// How many fragments a tool call's arguments are split into.
const ARGUMENT_FRAGMENTS: usize = 3;

fn data_line(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

fn event_line(value: &Value) -> Bytes {
    let kind = value["type"].as_str().unwrap_or("message");
    Bytes::from(format!("event: {kind}\ndata: {value}\n\n"))
}

/// OpenAI Chat Completions chunks, ending with `data: [DONE]`.
pub(crate) fn openai_chunks(
    reply: &StreamReply,
    model: &str,
    number: usize,
    include_usage: bool,
) -> Vec<Bytes> {
    let id = format!("chatcmpl-mock{number}");
    let chunk = |delta: Value, finish: Value| {
        let mut chunk = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": 1_790_000_000u64,
            "model": model,
            "system_fingerprint": "fp_mock",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if include_usage {
            chunk["usage"] = Value::Null;
        }
        data_line(&chunk)
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    if let Some(reasoning) = &reply.reasoning {
        for piece in pieces(reasoning) {
            out.push(chunk(json!({"reasoning_content": piece}), Value::Null));
        }
    }
    for piece in pieces(&reply.text) {
        out.push(chunk(json!({"content": piece}), Value::Null));
    }
    for (index, (name, input)) in reply.tool_calls.iter().enumerate() {
        let call_id = format!("call_mock{number}_{index}");
        out.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                   "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        ));
        for fragment in fragments(&input.to_string(), ARGUMENT_FRAGMENTS) {
            out.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
                Value::Null,
            ));
        }
    }
    out.push(chunk(json!({}), json!(openai_finish(reply))));
    if include_usage && !reply.omit_usage {
        out.push(data_line(&json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": 1_790_000_000u64,
            "model": model,
            "system_fingerprint": "fp_mock",
            "choices": [],
            "usage": openai_usage(reply),
        })));
    }
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    out
}

/// The finish reason of an OpenAI-format reply.
fn openai_finish(reply: &StreamReply) -> String {
    reply.finish.clone().unwrap_or_else(|| {
        if reply.tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        }
        .to_string()
    })
}

/// OpenAI's `usage` object (cache writes are folded into `prompt_tokens`).
fn openai_usage(reply: &StreamReply) -> Value {
    let usage = &reply.usage;
    let prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": usage.output_tokens,
        "total_tokens": prompt + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    })
}

/// A whole (non-streamed) OpenAI `chat.completion`, the answer to `"stream": false`.
pub(crate) fn openai_completion(reply: &StreamReply, model: &str, number: usize) -> Value {
    let mut message = json!({
        "role": "assistant",
        "content": if reply.text.is_empty() { Value::Null } else { json!(reply.text) },
    });
    if let Some(reasoning) = &reply.reasoning {
        message["reasoning_content"] = json!(reasoning);
    }
    if !reply.tool_calls.is_empty() {
        message["tool_calls"] = reply
            .tool_calls
            .iter()
            .enumerate()
            .map(|(index, (name, input))| {
                json!({"id": format!("call_mock{number}_{index}"), "type": "function",
                       "function": {"name": name, "arguments": input.to_string()}})
            })
            .collect();
    }
    let mut completion = json!({
        "id": format!("chatcmpl-mock{number}"),
        "object": "chat.completion",
        "created": 1_790_000_000u64,
        "model": model,
        "system_fingerprint": "fp_mock",
        "choices": [{"index": 0, "message": message, "logprobs": null,
                     "finish_reason": openai_finish(reply)}],
    });
    if !reply.omit_usage {
        completion["usage"] = openai_usage(reply);
    }
    completion
}

/// Anthropic Messages events, `message_start` through `message_stop`.
pub(crate) fn anthropic_events(reply: &StreamReply, model: &str, number: usize) -> Vec<Bytes> {
    let usage = &reply.usage;
    let mut out = vec![
        event_line(&json!({
            "type": "message_start",
            "message": {
                "id": format!("msg_mock{number}"),
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {
                    "input_tokens": usage.input_tokens,
                    "cache_creation_input_tokens": usage.cache_write_tokens,
                    "cache_read_input_tokens": usage.cache_read_tokens,
                    "output_tokens": 1,
                },
            },
        })),
        event_line(&json!({"type": "ping"})),
    ];
    let mut index = 0;
    if let Some(reasoning) = &reply.reasoning {
        out.push(event_line(
            &json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ));
        for piece in pieces(reasoning) {
            out.push(event_line(
                &json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "thinking_delta", "thinking": piece}}),
            ));
        }
        let signature = reply.signature.as_deref().unwrap_or("mock-signature");
        out.push(event_line(
            &json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "signature_delta", "signature": signature}}),
        ));
        out.push(event_line(
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    if !reply.text.is_empty() {
        out.push(event_line(
            &json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}}),
        ));
        for piece in pieces(&reply.text) {
            out.push(event_line(
                &json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        out.push(event_line(
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for (call, (name, input)) in reply.tool_calls.iter().enumerate() {
        out.push(event_line(
            &json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": format!("toolu_mock{number}_{call}"),
                              "name": name, "input": {}}}),
        ));
        for fragment in fragments(&input.to_string(), ARGUMENT_FRAGMENTS) {
            out.push(event_line(
                &json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": fragment}}),
            ));
        }
        out.push(event_line(
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    let stop_reason = reply.finish.clone().unwrap_or_else(|| {
        if reply.tool_calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        }
        .to_string()
    });
    out.push(event_line(&json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": usage.output_tokens},
    })));
    out.push(event_line(&json!({"type": "message_stop"})));
    out
}

/// An error body in OpenAI's format.
pub(crate) fn openai_error(status: u16, message: &str) -> Value {
    let kind = match status {
        429 => "rate_limit_exceeded",
        400..=499 => "invalid_request_error",
        _ => "server_error",
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
}

/// An error body in Anthropic's format.
pub(crate) fn anthropic_error(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}
