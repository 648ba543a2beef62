//! Compaction inside the step loop: summarize the older part of the conversation and record
//! the summary as `context.compacted` (see [`crate::compaction`] for the rules).

use folio_model::{ModelRequest, Provider};
use folio_protocol::{ContextCompacted, Event, EventBody, Usage};

use super::{Harness, Stop, Turn, TurnFailure};
use crate::compaction::{cut, summary_request};
use crate::conversation::conversation;
use crate::turn::record::Recorder;
use crate::turn::trace::{self, Covering};

impl Harness {
    /// Compacts the conversation of `turn` whose next request is `next` (`tokens_before`
    /// tokens): the summarizer writes a summary of everything before the kept turns, recorded as
    /// `context.compacted`. Adds the call's usage to `spent`. `false` when there is nothing
    /// older than the kept turns to summarize.
    pub(super) async fn compact(
        &self,
        turn: &mut Turn,
        recorder: Recorder<'_>,
        next: &ModelRequest,
        tokens_before: u64,
        spent: &mut Option<Usage>,
    ) -> Result<bool, Stop> {
        let Some(up_to_index) = cut(&turn.events, self.context.keep_recent) else {
            return Ok(false);
        };
        let (provider, model): (&dyn Provider, &str) = match &self.context.summarizer {
            Some(summarizer) => (summarizer.provider.as_ref(), &summarizer.model),
            None => (self.provider.as_ref(), &self.model),
        };
        let request = summary_request(model, &turn.events, up_to_index);
        // The summarizer's span covers the `context.compacted` it leads to.
        let chat = Covering::new(
            trace::chat_span(provider.name(), self.variant.as_deref(), &request),
            recorder.range,
        );
        let response = self
            .call_model(turn, None, provider, &request, &chat)
            .await
            .map_err(|stop| match stop {
                Stop::Failed(failure) => Stop::Failed(TurnFailure::Compaction(Box::new(failure))),
                Stop::ContextOverflow(err) => {
                    Stop::Failed(TurnFailure::Compaction(Box::new(err.into())))
                }
                other => other,
            })?;
        *spent = Usage::sum_reported([*spent, response.usage]);
        let summary = response.text.trim().to_string();
        if summary.is_empty() {
            return Err(Stop::Failed(TurnFailure::Compaction(Box::new(
                TurnFailure::EmptySummary,
            ))));
        }
        let compacted = ContextCompacted {
            up_to_index,
            tokens_after: self.tokens_after(turn, next, up_to_index, &summary),
            summary,
            tokens_before,
        };
        self.emit(turn, recorder, EventBody::ContextCompacted(compacted))
            .await?;
        Ok(true)
    }

    /// The tokens of `next` rebuilt with `summary` in place of the events before `up_to_index`.
    fn tokens_after(
        &self,
        turn: &Turn,
        next: &ModelRequest,
        up_to_index: u64,
        summary: &str,
    ) -> u64 {
        let first = turn
            .events
            .partition_point(|event| event.index < up_to_index);
        let mut kept: Vec<Event> = turn.events[first..].to_vec();
        kept.push(Event {
            index: turn.events.last().map_or(0, |e| e.index + 1),
            session_id: turn.session_id.clone(),
            turn_id: Some(turn.turn_id.clone()),
            at: chrono::Utc::now(),
            body: EventBody::ContextCompacted(ContextCompacted {
                up_to_index,
                summary: summary.to_string(),
                tokens_before: 0,
                tokens_after: 0,
            }),
        });
        let rebuilt = ModelRequest {
            messages: conversation(&kept),
            ..next.clone()
        };
        self.context.counter.request(&rebuilt)
    }
}
