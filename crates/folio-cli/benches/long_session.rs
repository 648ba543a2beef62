//! A 1,000-turn chat session, with and without compaction: the request each turn sends
//! (tokens), the harness time per turn and the log bytes per turn, sampled along the session.
//! Without compaction the request and the time grow with the log; with it they stay flat. The
//! model is an in-process provider that answers at once, streaming its ~60-token reply in 20
//! deltas as a real model does; every event goes through a real NDJSON event log. Each turn
//! gets the log from `context_start` on, as `folio serve` hands it (the copy is timed).
//! Run: `cargo bench -p folio-cli --bench long_session` (prints Markdown rows).

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use folio_agent::tools::ToolRegistry;
use folio_agent::{ContextBudget, EventSink, Harness, SinkError, TurnOutcome, context_start};
use folio_fs::temp_fs;
use folio_model::{
    Delta, DeltaStream, FinishReason, ModelError, ModelRequest, Provider, TokenCounter,
};
use folio_project::ContextSection;
use folio_protocol::{Event, EventBody, MessageReceived};
use folio_store_disk::EventLog;
use futures::stream;
use support::{LogSink, rooted_turn};
use tokio_util::sync::CancellationToken;

const TURNS: usize = 1_000;
const SAMPLES: [usize; 6] = [1, 10, 100, 250, 500, 1_000];
/// Text deltas per reply (each is one `message.appended` event).
const DELTAS: usize = 20;

/// Writes every event to the real log and keeps the session's events in memory, as a live
/// session does.
struct KeptSink {
    log: LogSink,
    kept: Mutex<Vec<Event>>,
}

#[async_trait::async_trait]
impl EventSink for KeptSink {
    async fn emit(&self, turn_id: Option<&str>, body: EventBody) -> Result<Event, SinkError> {
        let event = self.log.emit(turn_id, body).await?;
        self.kept.lock().unwrap().push(event.clone());
        Ok(event)
    }

    async fn checkpoint(&self) -> Result<(), SinkError> {
        self.log.checkpoint().await
    }
}

/// Answers every request at once and remembers the size of the last chat request.
struct Recording {
    counter: TokenCounter,
    last_tokens: Mutex<u64>,
}

#[async_trait::async_trait]
impl Provider for Recording {
    async fn stream(
        &self,
        request: &ModelRequest,
        _cancel: CancellationToken,
    ) -> Result<DeltaStream, ModelError> {
        let summarizing = request.tools.is_empty() && request.system.starts_with("You compact");
        if !summarizing {
            *self.last_tokens.lock().unwrap() = self.counter.request(request);
        }
        let text = if summarizing {
            "The user and the agent discussed the sea, tides and haiku; nothing is open."
        } else {
            "Grey waves fold and break, salt wind combs the sleeping dunes, the tide keeps its time; \
             here is one more line of reply text so that each answer carries some weight in tokens."
        };
        // Cut in DELTAS pieces on character boundaries, as a model streams it.
        let chars: Vec<char> = text.chars().collect();
        let piece = chars.len().div_ceil(DELTAS);
        let mut deltas: Vec<Result<Delta, ModelError>> = chars
            .chunks(piece)
            .map(|chunk| Ok(Delta::Text(chunk.iter().collect())))
            .collect();
        deltas.push(Ok(Delta::Finish(FinishReason::Stop)));
        Ok(Box::pin(stream::iter(deltas)))
    }
}

async fn session(name: &str, context: ContextSection) {
    let counter = TokenCounter::for_model("gpt-4.1-mini");
    let provider = Arc::new(Recording {
        counter,
        last_tokens: Mutex::new(0),
    });
    let harness = Harness {
        agent: "poet".into(),
        provider: provider.clone(),
        model: "gpt-4.1-mini".into(),
        system: "You are a patient poet.".into(),
        params: Default::default(),
        tools: ToolRegistry::new(),
        max_steps: 4,
        approval_timeout: None,
        context: ContextBudget::new("gpt-4.1-mini", &context, None),
        prices: Default::default(),
        variant: None,
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ses.ndjson");
    let (log, _) = EventLog::open(&path, "ses").unwrap();
    let sink = KeptSink {
        log: LogSink(log),
        kept: Mutex::new(Vec::new()),
    };
    let fs = temp_fs([("/a.txt", "a")]);
    let mut rows = Vec::new();
    let mut window: Vec<Duration> = Vec::new();
    let mut bytes_at_last_row = 0;
    let mut turn_at_last_row = 0;
    for n in 1..=TURNS {
        let turn_id = format!("turn_{n}");
        let started = Instant::now();
        sink.emit(
            Some(&turn_id),
            EventBody::MessageReceived(MessageReceived {
                text: format!("Turn {n}: write me another line about the sea, please."),
                admission: None,
                coalesced: None,
                client_message_id: None,
                request_digest: None,
            }),
        )
        .await
        .unwrap();
        let events = {
            let all = sink.kept.lock().unwrap();
            let first = all.partition_point(|event| event.index < context_start(&all));
            all[first..].to_vec()
        };
        let handed = events.len();
        let turn = rooted_turn("ses", &turn_id, events, fs.clone(), dir.path());
        let outcome = harness.run_turn(turn, &sink).await;
        window.push(started.elapsed());
        assert!(
            matches!(outcome, TurnOutcome::Completed { .. }),
            "{outcome:?}"
        );
        if SAMPLES.contains(&n) {
            let mean = window.iter().sum::<Duration>() / window.len() as u32;
            let bytes = std::fs::metadata(&path).unwrap().len();
            rows.push(format!(
                "| {name} | {n} | {} | {handed} | {:.3} ms | {} |",
                *provider.last_tokens.lock().unwrap(),
                mean.as_secs_f64() * 1000.0,
                (bytes - bytes_at_last_row) / (n - turn_at_last_row) as u64
            ));
            window.clear();
            bytes_at_last_row = bytes;
            turn_at_last_row = n;
        }
    }
    let events = sink.kept.into_inner().unwrap();
    let compactions = events
        .iter()
        .filter(|e| matches!(e.body, EventBody::ContextCompacted(_)))
        .count();
    // What the streamed deltas weigh in the log: `message.completed` carries the same text.
    let delta_bytes: usize = events
        .iter()
        .filter(|e| matches!(e.body, EventBody::MessageAppended(_)))
        .map(|e| serde_json::to_vec(e).unwrap().len() + 1)
        .sum();
    let total = std::fs::metadata(&path).unwrap().len();
    for row in rows {
        println!("{row}");
    }
    println!(
        "| {name}: {compactions} compactions, {} events, {total} log bytes ({:.0}% of them `message.appended` deltas) | | | | | |",
        events.len(),
        delta_bytes as f64 * 100.0 / total as f64
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "| session | turn | request tokens | events handed to the turn | harness ms/turn (mean since last row) | log bytes/turn (since last row) |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    runtime.block_on(async {
        session(
            "no compaction (window 1M)",
            ContextSection {
                window: Some(1_000_000),
                ..ContextSection::default()
            },
        )
        .await;
        session(
            "compaction (window 4,000, compact at 0.8, keep 2 turns)",
            ContextSection {
                window: Some(4_000),
                ..ContextSection::default()
            },
        )
        .await;
    });
}
