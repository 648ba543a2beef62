//! The three wire formats the mock server speaks, as lists of SSE chunks.

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
    if let Some((code, message)) = &reply.stream_error {
        out.push(data_line(
            &json!({"error": {"message": message, "type": code, "param": null, "code": code}}),
        ));
        return out;
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
    if let Some((code, message)) = &reply.stream_error {
        out.push(event_line(
            &json!({"type": "error", "error": {"type": code, "message": message}}),
        ));
        return out;
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

/// The output items of a Responses-format reply, complete: reasoning (with its encrypted
/// content), the message, the function calls.
fn responses_items(reply: &StreamReply, number: usize) -> Vec<Value> {
    let mut items = Vec::new();
    if let Some(reasoning) = &reply.reasoning {
        let encrypted = reply
            .signature
            .clone()
            .unwrap_or_else(|| format!("mock-encrypted-{number}"));
        items.push(json!({
            "id": format!("rs_mock{number}"),
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": reasoning}],
            "encrypted_content": encrypted,
        }));
    }
    if !reply.text.is_empty() {
        items.push(json!({
            "id": format!("msg_mock{number}"),
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}],
        }));
    }
    for (call, (name, input)) in reply.tool_calls.iter().enumerate() {
        items.push(json!({
            "id": format!("fc_mock{number}_{call}"),
            "type": "function_call",
            "status": "completed",
            "arguments": input.to_string(),
            "call_id": format!("call_mock{number}_{call}"),
            "name": name,
        }));
    }
    items
}

/// A Responses `response` object: `status` with the output and usage when it has ended.
fn responses_object(
    reply: &StreamReply,
    model: &str,
    number: usize,
    status: &str,
    output: Vec<Value>,
) -> Value {
    let usage = &reply.usage;
    let input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
    let mut response = json!({
        "id": format!("resp_mock{number}"),
        "object": "response",
        "created_at": 1_790_000_000u64,
        "status": status,
        "error": null,
        "incomplete_details": null,
        "instructions": null,
        "model": model,
        "output": output,
        "parallel_tool_calls": true,
        "store": false,
        "usage": null,
    });
    if status == "in_progress" {
        return response;
    }
    response["usage"] = json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + usage.output_tokens,
    });
    if let Some(reason) = &reply.finish {
        response["status"] = json!("incomplete");
        response["incomplete_details"] = json!({"reason": reason});
    }
    if let Some((code, message)) = &reply.stream_error {
        response["status"] = json!("failed");
        response["error"] = json!({"code": code, "message": message});
        response["usage"] = Value::Null;
    }
    response
}

/// OpenAI Responses events, `response.created` through `response.completed` (or
/// `response.incomplete` for a scripted finish, `response.failed` for a scripted stream error).
pub(crate) fn responses_events(reply: &StreamReply, model: &str, number: usize) -> Vec<Bytes> {
    let mut sequence = 0u64;
    let mut out = Vec::new();
    let mut send = |mut event: Value| {
        event["sequence_number"] = json!(sequence);
        sequence += 1;
        out.push(event_line(&event));
    };
    let started = responses_object(reply, model, number, "in_progress", Vec::new());
    send(json!({"type": "response.created", "response": started}));
    send(json!({"type": "response.in_progress", "response": started}));
    let items = responses_items(reply, number);
    for (index, item) in items.iter().enumerate() {
        let id = item["id"].clone();
        match item["type"].as_str() {
            Some("reasoning") => {
                send(
                    json!({"type": "response.output_item.added", "output_index": index,
                            "item": {"id": id, "type": "reasoning", "summary": []}}),
                );
                let text = item["summary"][0]["text"].as_str().unwrap_or_default();
                let part = |text: &str| json!({"type": "summary_text", "text": text});
                send(
                    json!({"type": "response.reasoning_summary_part.added", "item_id": id,
                            "output_index": index, "summary_index": 0, "part": part("")}),
                );
                for piece in pieces(text) {
                    send(
                        json!({"type": "response.reasoning_summary_text.delta", "item_id": id,
                                "output_index": index, "summary_index": 0, "delta": piece}),
                    );
                }
                send(
                    json!({"type": "response.reasoning_summary_text.done", "item_id": id,
                            "output_index": index, "summary_index": 0, "text": text}),
                );
                send(
                    json!({"type": "response.reasoning_summary_part.done", "item_id": id,
                            "output_index": index, "summary_index": 0, "part": part(text)}),
                );
            }
            Some("message") => {
                send(
                    json!({"type": "response.output_item.added", "output_index": index,
                            "item": {"id": id, "type": "message", "status": "in_progress",
                                     "role": "assistant", "content": []}}),
                );
                let part =
                    |text: &str| json!({"type": "output_text", "text": text, "annotations": []});
                send(json!({"type": "response.content_part.added", "item_id": id,
                            "output_index": index, "content_index": 0, "part": part("")}));
                for piece in pieces(&reply.text) {
                    send(json!({"type": "response.output_text.delta", "item_id": id,
                                "output_index": index, "content_index": 0, "delta": piece,
                                "logprobs": []}));
                }
                send(json!({"type": "response.output_text.done", "item_id": id,
                            "output_index": index, "content_index": 0, "text": reply.text,
                            "logprobs": []}));
                send(json!({"type": "response.content_part.done", "item_id": id,
                            "output_index": index, "content_index": 0, "part": part(&reply.text)}));
            }
            _ => {
                let mut added = item.clone();
                added["status"] = json!("in_progress");
                added["arguments"] = json!("");
                send(
                    json!({"type": "response.output_item.added", "output_index": index,
                            "item": added}),
                );
                let arguments = item["arguments"].as_str().unwrap_or_default();
                for fragment in fragments(arguments, ARGUMENT_FRAGMENTS) {
                    send(
                        json!({"type": "response.function_call_arguments.delta", "item_id": id,
                                "output_index": index, "delta": fragment}),
                    );
                }
                send(
                    json!({"type": "response.function_call_arguments.done", "item_id": id,
                            "output_index": index, "arguments": arguments}),
                );
            }
        }
        send(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
    }
    let ended = responses_object(reply, model, number, "completed", items);
    let kind = match ended["status"].as_str() {
        Some("failed") => "response.failed",
        Some("incomplete") => "response.incomplete",
        _ => "response.completed",
    };
    send(json!({"type": kind, "response": ended}));
    out
}

/// A whole (non-streamed) Responses `response` object, the answer to `"stream": false`.
pub(crate) fn responses_whole(reply: &StreamReply, model: &str, number: usize) -> Value {
    responses_object(
        reply,
        model,
        number,
        "completed",
        responses_items(reply, number),
    )
}
