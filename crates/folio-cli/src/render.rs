//! Events as a person likes to read them on stderr while a turn runs.

use std::io::Write;

use folio_protocol::{Event, EventBody};
use serde_json::Value;

/// The longest argument or result excerpt shown on one line.
const EXCERPT_CHARS: usize = 160;

/// Writes one event to stderr in human form (streamed text inline, tools on their own lines).
pub(crate) fn print_event(event: &Event) {
    let mut err = std::io::stderr().lock();
    let _ = match &event.body {
        EventBody::MessageAppended(delta) => write!(err, "{}", delta.delta),
        EventBody::MessageCompleted(_) => writeln!(err),
        EventBody::ReasoningAppended(delta) => write!(err, "\x1b[2m{}\x1b[0m", delta.delta),
        EventBody::ReasoningCompleted(_) => writeln!(err),
        EventBody::ActionsRequested(requested) => {
            for call in &requested.calls {
                let _ = writeln!(err, "→ {} {}", call.tool, excerpt(&call.input.to_string()));
            }
            Ok(())
        }
        EventBody::ActionResult(result) => match (&result.error, &result.output) {
            (Some(error), _) => writeln!(err, "✗ {}: {}", result.tool, excerpt(error)),
            (None, Some(Value::String(text))) => {
                writeln!(err, "← {}: {}", result.tool, excerpt(text))
            }
            (None, Some(value)) => {
                writeln!(err, "← {}: {}", result.tool, excerpt(&value.to_string()))
            }
            (None, None) => writeln!(err, "← {}", result.tool),
        },
        EventBody::TurnCompleted(done) => writeln!(
            err,
            "✓ turn completed in {:.1} s ({} steps, {})",
            done.duration_ms as f64 / 1000.0,
            done.steps,
            match done.usage {
                Some(usage) => match usage.cost_usd {
                    Some(cost) => format!(
                        "{} input / {} output tokens, {}",
                        usage.input_tokens,
                        usage.output_tokens,
                        folio_protocol::format_usd(cost)
                    ),
                    None => format!(
                        "{} input / {} output tokens",
                        usage.input_tokens, usage.output_tokens
                    ),
                },
                None => "usage not reported".to_string(),
            }
        ),
        EventBody::TurnFailed(failed) => writeln!(err, "✗ turn failed: {}", failed.message),
        EventBody::ContextCompacted(compacted) => writeln!(
            err,
            "⋯ context compacted: events before #{} summarized ({} → {} tokens)",
            compacted.up_to_index, compacted.tokens_before, compacted.tokens_after
        ),
        _ => Ok(()),
    };
}

/// Whether stdout and stderr are one and the same terminal (what a person sees is both).
pub(crate) fn stdout_is_stderr_terminal() -> bool {
    use std::io::IsTerminal;
    use std::os::unix::fs::MetadataExt;
    if !(std::io::stdout().is_terminal() && std::io::stderr().is_terminal()) {
        return false;
    }
    match (
        std::fs::metadata("/proc/self/fd/1"),
        std::fs::metadata("/proc/self/fd/2"),
    ) {
        (Ok(out), Ok(err)) => out.rdev() == err.rdev(),
        // Two terminals we cannot tell apart: printing twice is better than not at all.
        _ => false,
    }
}

/// The first line of `text`, cut to a readable length.
fn excerpt(text: &str) -> String {
    let first = text.lines().next().unwrap_or_default();
    let more_lines = text.lines().nth(1).is_some();
    let mut out: String = first.chars().take(EXCERPT_CHARS).collect();
    if first.chars().count() > EXCERPT_CHARS || more_lines {
        out.push('…');
    }
    out
}
