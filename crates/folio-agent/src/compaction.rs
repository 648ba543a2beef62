//! The context budget: how many tokens a model request may carry, and compaction — the older
//! part of a session's conversation summarized by a model so a long session never dies of its
//! own history.
//!
//! Decisions (the seeds leave this to a vendor backend):
//! - The budget is in tokens, counted with the model's own tokenizer where it is public
//!   ([`TokenCounter`]); `[context] window` defaults to the model's known window, else 128,000.
//! - A root turn compacts when its next request would exceed `compact_at` (default 0.8) of the
//!   window, and once (then retries the step) when the provider answers that the request does
//!   not fit. Subagents run short conversations inside one `Task` call and do not compact.
//! - What is kept verbatim: the current turn and the `keep_recent` (default 2) turns before it.
//!   Everything earlier, including an earlier summary, is summarized; bulky tool outputs are
//!   elided before summarizing (the call is kept, the output cut, and the cut noted).
//! - Every tool result is bounded: text over `tool_output_tokens` (default 10,000) is spilled
//!   to a scratch file like `Shell` output (`agent-tools/{uuid}.txt` on the host default,
//!   `/tmp/{uuid}.txt` under a root) and replaced by its head and where to read the rest.
//! - The summary is an event (`context.compacted`); the log keeps every event, so streams,
//!   replays and evals still see the whole session, and the conversation rebuild starts at the
//!   summary.

use std::sync::Arc;

use folio_model::{
    ContentPart, Message, ModelRequest, Provider, TokenCounter, known_context_window,
};
use folio_protocol::{Event, EventBody};

use crate::conversation::conversation;
use folio_project::ContextSection;

/// The window assumed for a model Folio does not know.
const DEFAULT_WINDOW: u64 = 128_000;
/// Compact when a request would exceed this fraction of the window.
const DEFAULT_COMPACT_AT: f64 = 0.8;
/// Turns kept verbatim besides the current one.
const DEFAULT_KEEP_RECENT: u32 = 2;
/// Tokens one tool result may carry inline: the 30 KB that `Shell` and `WebFetch` keep inline,
/// at the approximation's three bytes per token.
const DEFAULT_TOOL_OUTPUT_TOKENS: u64 = 10_000;
/// Tool outputs longer than this (characters) are cut before summarizing.
const ELIDE_OVER: usize = 2_000;
/// What is kept of a cut tool output.
const ELIDED_HEAD: usize = 500;

/// The system prompt of a compaction request.
const SUMMARIZER_SYSTEM: &str = "You compact conversations between a user and an AI agent that uses tools. Write a summary the agent can continue from without the original messages: the user's goals and instructions, decisions made, facts and results learned (file paths, names, numbers, errors), what was done with which tools, and what remains open. Be specific and complete; do not add anything that did not happen.";
/// The final user message of a compaction request.
const SUMMARIZE: &str = "Summarize the conversation above for the agent's own use, as instructed. Reply with the summary only.";

/// The model that writes summaries when it is not the turn's own.
#[derive(Clone)]
pub struct Summarizer {
    /// Its provider.
    pub provider: Arc<dyn Provider>,
    /// Its model id.
    pub model: String,
}

/// How many tokens a request may carry and when to compact.
#[derive(Clone)]
pub struct ContextBudget {
    /// The model's context window in tokens.
    pub window: u64,
    /// Compact above this fraction of the window.
    pub compact_at: f64,
    /// Turns kept verbatim besides the current one.
    pub keep_recent: u32,
    /// Tokens one tool result may carry before it is spilled to a scratch file.
    pub tool_output_tokens: u64,
    /// Counts the tokens of a request.
    pub counter: TokenCounter,
    /// Writes summaries; `None`: the turn's own model.
    pub summarizer: Option<Summarizer>,
}

impl ContextBudget {
    /// The budget of `model` under an agent's `[context]` section.
    pub fn new(model: &str, section: &ContextSection, summarizer: Option<Summarizer>) -> Self {
        ContextBudget {
            window: section
                .window
                .or_else(|| known_context_window(model))
                .unwrap_or(DEFAULT_WINDOW),
            compact_at: section.compact_at.unwrap_or(DEFAULT_COMPACT_AT),
            keep_recent: section.keep_recent.unwrap_or(DEFAULT_KEEP_RECENT),
            tool_output_tokens: section
                .tool_output_tokens
                .unwrap_or(DEFAULT_TOOL_OUTPUT_TOKENS),
            counter: TokenCounter::for_model(model),
            summarizer,
        }
    }

    /// The token count above which a request is compacted first.
    pub fn threshold(&self) -> u64 {
        (self.window as f64 * self.compact_at) as u64
    }
}

/// The first event index kept verbatim: the `message.received` that opens the oldest kept turn.
/// `None` when nothing new lies before it (every turn since the last summary is kept).
pub(crate) fn cut(events: &[Event], keep_recent: u32) -> Option<u64> {
    let since = last_summary(events).map_or(0, |(up_to, _)| up_to);
    let turn_starts: Vec<u64> = events
        .iter()
        .filter(|event| event.index >= since)
        .filter(|event| matches!(event.body, EventBody::MessageReceived(_)))
        .map(|event| event.index)
        .collect();
    let kept = keep_recent as usize + 1;
    if turn_starts.len() <= kept {
        return None;
    }
    let cut = turn_starts[turn_starts.len() - kept];
    (cut > since).then_some(cut)
}

/// The first event index a turn's context can need ([`Turn::events`](crate::Turn::events)
/// holds the log from it on): the conversation rebuilds from the latest summary's
/// `upToIndex`, and a summary made during the turn summarizes from a cut past that index, so
/// it reads the last summary made before the cut — at latest the last one written before the
/// kept turns began, whose `upToIndex` this is (0 when there is none). Bounded by about two
/// compaction intervals whatever the session's length, so a long session's turns stay flat.
pub fn context_start(events: &[Event]) -> u64 {
    let mut summaries = events.iter().rev().filter_map(|event| match &event.body {
        EventBody::ContextCompacted(c) => Some((event.index, c.up_to_index)),
        _ => None,
    });
    let Some((_, kept_from)) = summaries.next() else {
        return 0;
    };
    summaries
        .find(|(index, _)| *index < kept_from)
        .map_or(0, |(_, up_to)| up_to)
}

/// The latest `context.compacted`: its `upToIndex` and summary.
fn last_summary(events: &[Event]) -> Option<(u64, &str)> {
    events.iter().rev().find_map(|event| match &event.body {
        EventBody::ContextCompacted(c) => Some((c.up_to_index, c.summary.as_str())),
        _ => None,
    })
}

/// The request that asks `model` to summarize every event before `cut` (an earlier summary
/// included), with bulky tool outputs cut.
pub(crate) fn summary_request(model: &str, events: &[Event], cut: u64) -> ModelRequest {
    let end = events.partition_point(|event| event.index < cut);
    let mut messages: Vec<Message> = conversation(&events[..end])
        .into_iter()
        .map(elide_bulky_output)
        .collect();
    messages.push(Message::User {
        text: SUMMARIZE.to_string(),
    });
    ModelRequest {
        model: model.to_string(),
        system: SUMMARIZER_SYSTEM.to_string(),
        messages,
        tools: Vec::new(),
        params: Default::default(),
    }
}

/// A tool result cut to its head when it is long (the call stays; the cut is noted).
fn elide_bulky_output(message: Message) -> Message {
    let Message::ToolResult {
        call_id,
        tool,
        content,
        is_error,
    } = message
    else {
        return message;
    };
    let content = content
        .into_iter()
        .map(|part| match part {
            ContentPart::Text { text } if text.chars().count() > ELIDE_OVER => {
                let head: String = text.chars().take(ELIDED_HEAD).collect();
                let total = text.chars().count();
                ContentPart::Text {
                    text: format!(
                        "{head}\n[… {} more characters of tool output elided before summarizing]",
                        total - ELIDED_HEAD
                    ),
                }
            }
            ContentPart::Image { .. } => ContentPart::Text {
                text: "[image elided before summarizing]".to_string(),
            },
            other => other,
        })
        .collect();
    Message::ToolResult {
        call_id,
        tool,
        content,
        is_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use folio_protocol::{ContextCompacted, MessageReceived, TurnCompleted};

    fn event(index: u64, body: EventBody) -> Event {
        Event {
            index,
            session_id: "ses".into(),
            turn_id: None,
            at: chrono::Utc::now(),
            body,
        }
    }

    fn turn(index: u64, text: &str) -> [Event; 2] {
        [
            event(
                index,
                EventBody::MessageReceived(MessageReceived {
                    text: text.into(),
                    admission: None,
                    coalesced: None,
                    client_message_id: None,
                    request_digest: None,
                }),
            ),
            event(
                index + 1,
                EventBody::TurnCompleted(TurnCompleted {
                    reply: format!("re: {text}"),
                    usage: None,
                    compaction_usage: None,
                    steps: 1,
                    duration_ms: 1,
                }),
            ),
        ]
    }

    #[test]
    fn the_cut_keeps_the_current_turn_and_keep_recent_before_it() {
        let events: Vec<Event> = (0..5).flat_map(|n| turn(n * 2, &format!("m{n}"))).collect();
        // Turns start at 0, 2, 4, 6, 8; keep 2 besides the current (8): keep 4, 6, 8.
        assert_eq!(cut(&events, 2), Some(4));
        assert_eq!(cut(&events, 0), Some(8));
        assert_eq!(cut(&events, 4), None);
    }

    #[test]
    fn a_cut_never_goes_behind_the_last_summary() {
        let mut events: Vec<Event> = (0..3).flat_map(|n| turn(n * 2, &format!("m{n}"))).collect();
        events.push(event(
            6,
            EventBody::ContextCompacted(ContextCompacted {
                up_to_index: 4,
                summary: "s".into(),
                tokens_before: 10,
                tokens_after: 5,
            }),
        ));
        assert_eq!(
            cut(&events, 0),
            None,
            "only the turn at 4 is after the summary"
        );
        events.extend(turn(7, "m3"));
        assert_eq!(cut(&events, 0), Some(7));
    }

    /// A session of `turns` two-event turns (user message, reply) compacted as the harness
    /// does: before turn `n`'s reply when `n` is in `compact_before`, keeping `keep` turns.
    fn compacted_session(turns: usize, keep: u32, compact_before: &[usize]) -> Vec<Event> {
        let mut events: Vec<Event> = Vec::new();
        for n in 0..turns {
            let next = events.len() as u64;
            let [received, completed] = turn(next, &format!("m{n}"));
            events.push(received);
            if compact_before.contains(&n)
                && let Some(up_to_index) = cut(&events, keep)
            {
                let index = events.len() as u64;
                events.push(event(
                    index,
                    EventBody::ContextCompacted(ContextCompacted {
                        up_to_index,
                        summary: format!("summary {n}"),
                        tokens_before: 10,
                        tokens_after: 5,
                    }),
                ));
            }
            let mut completed = completed;
            completed.index = events.len() as u64;
            events.push(completed);
        }
        events
    }

    proptest::proptest! {
        /// The log from `context_start` on rebuilds the same conversation, finds the same cut
        /// and asks for the same summary as the whole log, however often it was compacted.
        #[test]
        fn the_context_start_leaves_out_nothing_a_turn_reads(
            turns in 1usize..40,
            keep in 0u32..4,
            compact_before in proptest::collection::vec(0usize..40, 0..12),
            next_keep in 0u32..4,
        ) {
            let events = compacted_session(turns, keep, &compact_before);
            let start = context_start(&events);
            let tail = &events[events.partition_point(|event| event.index < start)..];
            proptest::prop_assert_eq!(conversation(tail), conversation(&events));
            let whole_cut = cut(&events, next_keep);
            proptest::prop_assert_eq!(cut(tail, next_keep), whole_cut);
            if let Some(at) = whole_cut {
                proptest::prop_assert_eq!(
                    summary_request("m", tail, at),
                    summary_request("m", &events, at)
                );
            }
        }
    }

    #[test]
    fn a_long_compacted_session_hands_its_turns_a_bounded_tail() {
        let compact_every_fifth: Vec<usize> = (0..1_000).step_by(5).collect();
        let events = compacted_session(1_000, 2, &compact_every_fifth);
        let start = context_start(&events);
        let tail = events.len() - events.partition_point(|event| event.index < start);
        assert!(tail < 40, "{tail} of {} events", events.len());
    }

    #[test]
    fn bulky_tool_outputs_are_cut_before_summarizing() {
        let long = "x".repeat(ELIDE_OVER + 1);
        let Message::ToolResult { content, .. } = elide_bulky_output(Message::ToolResult {
            call_id: "c".into(),
            tool: "Grep".into(),
            content: vec![ContentPart::Text { text: long }],
            is_error: false,
        }) else {
            panic!("a tool result stays a tool result");
        };
        let ContentPart::Text { text } = &content[0] else {
            panic!("text stays text");
        };
        assert!(text.starts_with(&"x".repeat(ELIDED_HEAD)));
        assert!(text.ends_with("1501 more characters of tool output elided before summarizing]"));
    }
}
