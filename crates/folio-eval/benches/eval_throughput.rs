//! Eval throughput with the replay model: cases per second at concurrency 1 and 8.
//!
//! Each case is a fresh session (agent load, state root, session, one turn, assertions) replaying
//! its own fixture, recorded first from an in-process canned model. Nothing touches the network.
//! Run: `cargo bench -p folio-eval --bench eval_throughput` (add `--profile dev` to skip the
//! optimized build of the whole workspace; RESULTS.md says which profile the figures used).

use std::sync::Arc;
use std::time::Instant;

use folio_eval::{EvalError, EvalOptions, Observer, OpenModel, run_evals};
use folio_model::{
    Delta, DeltaStream, FinishReason, ModelError, ModelRequest, Provider, ReplayProvider,
};
use folio_protocol::{Attempt, Usage};
use folio_session::StateRoot;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

const CASES: usize = 48;
const ROUNDS: usize = 3;

/// Answers every request with the same short text, instantly.
struct Canned;

#[async_trait::async_trait]
impl Provider for Canned {
    async fn stream(
        &self,
        _request: &ModelRequest,
        _cancel: CancellationToken,
    ) -> Result<DeltaStream, ModelError> {
        let deltas = vec![
            Ok(Delta::Text("done".into())),
            Ok(Delta::Usage(Usage {
                input_tokens: 100,
                output_tokens: 2,
                ..Usage::default()
            })),
            Ok(Delta::Finish(FinishReason::Stop)),
        ];
        Ok(futures::stream::iter(deltas).boxed())
    }
}

struct Quiet;

impl Observer for Quiet {
    fn attempt_started(&self, _label: &str, _steps: usize) {}
    fn step_started(&self, _label: &str, _step: usize) {}
    fn attempt_finished(&self, _label: &str, _attempt: &Attempt) {}
}

fn eval_file(replay: bool) -> String {
    (1..=CASES)
        .map(|n| {
            let model = if replay {
                format!("model = \"replay:fixtures/bench/c{n}.jsonl\"\n")
            } else {
                String::new()
            };
            format!(
                "[[cases]]\nid = \"c{n}\"\n{model}  [[cases.steps]]\n  send = \"Task {n}\"\n  expect = [{{ reply_includes = \"done\" }}, {{ max_tool_calls = 0 }}]\n"
            )
        })
        .collect()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let project = tempfile::tempdir()?;
    let dir = project.path();
    std::fs::create_dir_all(dir.join("agent"))?;
    std::fs::create_dir_all(dir.join("evals"))?;
    std::fs::write(dir.join("agent/instructions.md"), "You answer briefly.")?;
    std::fs::write(dir.join("agent/agent.toml"), "model = \"openai:bench\"\n")?;
    std::fs::write(dir.join("evals/bench.eval.toml"), eval_file(false))?;
    let definition = folio_project::discover(dir)
        .definition
        .ok_or("the bench agent has errors")?;
    let open: OpenModel = Arc::new(|spec| match spec.and_then(|s| s.strip_prefix("replay:")) {
        Some(path) => ReplayProvider::open(path)
            .map(|p| (Arc::new(p) as Arc<dyn Provider>, "bench".to_string()))
            .map_err(|err| EvalError::Model {
                spec: path.to_string(),
                message: err.to_string(),
            }),
        None => Ok((Arc::new(Canned) as Arc<dyn Provider>, "bench".to_string())),
    });
    let options = |concurrency: u32, record: bool| EvalOptions {
        definition: definition.clone(),
        state: StateRoot::new(dir.join("state")),
        open_model: open.clone(),
        model: None,
        filter: None,
        tags: Vec::new(),
        record,
        max_concurrency: Some(concurrency),
        iterations: None,
        dry_run: false,
        variant: None,
    };
    let recorded = run_evals(
        &folio_project::discover_evals(dir),
        &options(8, true),
        &Quiet,
    )
    .await?;
    assert!(recorded.ok, "recording failed");
    std::fs::write(dir.join("evals/bench.eval.toml"), eval_file(true))?;
    let suite = folio_project::discover_evals(dir);
    println!("{CASES} cases, one step each, replay model; best and median of {ROUNDS} rounds");
    for concurrency in [1, 8] {
        let mut rates = Vec::new();
        for _ in 0..ROUNDS {
            let clock = Instant::now();
            let run = run_evals(&suite, &options(concurrency, false), &Quiet).await?;
            let secs = clock.elapsed().as_secs_f64();
            assert!(run.ok, "a replayed case failed");
            rates.push(CASES as f64 / secs);
        }
        rates.sort_by(|a, b| b.total_cmp(a));
        println!(
            "concurrency {concurrency}: best {:.1} cases/s, median {:.1} cases/s",
            rates[0],
            rates[ROUNDS / 2]
        );
    }
    Ok(())
}
