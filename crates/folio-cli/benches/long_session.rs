//! A 500-turn chat session, with and without compaction: the request each turn sends (tokens)
//! and the harness time per turn, sampled along the session. Without compaction both grow with
//! the log; with it they stay flat. The model is an in-process provider that answers at once
//! (about 60 tokens a reply); every event goes through a real NDJSON event log.
//! Run: `cargo bench -p folio-cli --bench long_session` (prints Markdown rows).

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use folio_agent::tools::ToolRegistry;
use folio_agent::{ContextBudget, EventSink, Harness, TurnOutcome};
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

const TURNS: usize = 500;
const SAMPLES: [usize; 5] = [1, 50, 100, 250, 500];

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
        let deltas = vec![
            Ok(Delta::Text(text.to_string())),
            Ok(Delta::Finish(FinishReason::Stop)),
        ];
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
    let (log, _) = EventLog::open(&dir.path().join("ses.ndjson"), "ses").unwrap();
    let sink = LogSink(log);
    let fs = temp_fs([("/a.txt", "a")]);
    let mut events: Vec<Event> = Vec::new();
    let mut rows = Vec::new();
    let mut window: Vec<Duration> = Vec::new();
    for n in 1..=TURNS {
        let turn_id = format!("turn_{n}");
        let started = Instant::now();
        let received = sink
            .emit(
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
        events.push(received);
        let turn = rooted_turn("ses", &turn_id, events.clone(), fs.clone(), dir.path());
        let outcome = harness.run_turn(turn, &sink).await;
        window.push(started.elapsed());
        assert!(
            matches!(outcome, TurnOutcome::Completed { .. }),
            "{outcome:?}"
        );
        events = folio_store_disk::read_events(sink.0.path()).unwrap();
        if SAMPLES.contains(&n) {
            let mean = window.iter().sum::<Duration>() / window.len() as u32;
            rows.push(format!(
                "| {name} | {n} | {} | {:.2} ms |",
                *provider.last_tokens.lock().unwrap(),
                mean.as_secs_f64() * 1000.0
            ));
            window.clear();
        }
    }
    let compactions = events
        .iter()
        .filter(|e| matches!(e.body, EventBody::ContextCompacted(_)))
        .count();
    for row in rows {
        println!("{row}");
    }
    println!(
        "| {name}: {compactions} compactions, {} events in the log | | | |",
        events.len()
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
    println!("| session | turn | request tokens | harness ms/turn (mean since last row) |");
    println!("| --- | ---: | ---: | ---: |");
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
