//! `folio eval`: runs the project's evals (or lists their cases, re-scores a stored run, writes
//! a case from a session, runs them on several A/B variants side by side, or compares two
//! stored runs) and reports them; exit 1 when any case fails.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use folio_eval::{
    Comparison, EvalError, EvalOptions, LineObserver, Observer, OpenModel, ProgressObserver,
    case_list_table, compare, comparison_table, junit, list_cases, rescore, run_evals,
    summary_table,
};
use folio_model::ReplayProvider;
use folio_project::{
    EVALS_DIR, FROM_SESSION_DIR, discover, discover_evals, eval_from_session, session_case_path,
    write_session_eval,
};
use folio_protocol::EvalRun;
use folio_server::http::Layout;
use folio_session::{StateRoot, valid_session_id};

use crate::model::open_model;

/// Arguments of `folio eval`.
#[derive(Debug, clap::Args)]
pub(crate) struct EvalArgs {
    /// Compare two stored runs instead of running.
    #[command(subcommand)]
    command: Option<EvalCommand>,
    /// The agent project (a folder holding `agent/` and `evals/`).
    #[arg(long, default_value = ".", global = true)]
    dir: PathBuf,
    /// Only cases whose `evalId/caseId` contains this text.
    #[arg(long)]
    filter: Option<String>,
    /// Only evals with this tag (repeat for any of several).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// `provider:model` for every case, overriding the evals' models.
    #[arg(long)]
    model: Option<String>,
    /// List the selected cases (name, tags, steps) and their tags without running anything;
    /// with --json, as JSON.
    #[arg(long, conflicts_with_all = ["record", "rescore", "from_session", "junit"])]
    list: bool,
    /// Record a replay fixture per case under evals/fixtures/<evalId>/<caseId>.jsonl.
    #[arg(long, conflicts_with_all = ["rescore", "from_session"])]
    record: bool,
    /// Cases run at once, overriding evals/evals.toml (`--max-concurrency` is an alias).
    #[arg(long, alias = "max-concurrency", value_name = "N")]
    concurrency: Option<u32>,
    /// Runs of each case, overriding the evals'.
    #[arg(long)]
    iterations: Option<u32>,
    /// Run every case as a dry run (write tools return their dry_run_result).
    #[arg(long)]
    dry_run: bool,
    /// Run every case on each of these A/B variants of agent.toml (e.g. `control,concise`)
    /// and print them side by side, the first as A: pass rate, score, tokens, cost, latency,
    /// the difference and its 95% confidence interval. A model the eval names wins over a
    /// variant's.
    #[arg(long, value_delimiter = ',', value_name = "A,B", conflicts_with_all = ["list", "record", "rescore", "from_session"])]
    variants: Vec<String>,
    /// Print the run (the --list, the comparison) as JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
    /// Also write the run as JUnit XML to this file.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Evaluate the assertions again against a stored run, without calling a model.
    #[arg(long, value_name = "RUN_ID", conflicts_with = "from_session")]
    rescore: Option<String>,
    /// Write an eval case from a recorded session (steps from its messages, expectations from
    /// its tool calls) to evals/from-session/<SESSION_ID>.eval.toml, or --out.
    #[arg(long, value_name = "SESSION_ID")]
    from_session: Option<String>,
    /// Where --from-session writes the eval.
    #[arg(long, requires = "from_session")]
    out: Option<PathBuf>,
    /// With --from-session: the `folio serve --record-dir` folder. When it holds the session's
    /// fixture (`<DIR>/<slug>/<SESSION_ID>.jsonl`), the case replays it offline from a copy at
    /// evals/fixtures/from-session/<SESSION_ID>.jsonl.
    #[arg(long, value_name = "DIR", env = crate::serve::RECORD_DIR_ENV)]
    record_dir: Option<PathBuf>,
    /// Where sessions and runs are stored (default `<dir>/.folio/state`): runs go under
    /// `<state-root>/<slug>/evals/`, where `folio serve` reads them in either mode.
    #[arg(long, global = true)]
    state_root: Option<PathBuf>,
}

/// What `folio eval` does besides running evals.
#[derive(Debug, clap::Subcommand)]
enum EvalCommand {
    /// Set two stored runs side by side (B against A): pass rate, score, tokens, cost,
    /// latency, the difference and its 95% confidence interval.
    Compare {
        /// The baseline run (`evr_…`, as `folio eval` printed it).
        run_a: String,
        /// The run compared with it.
        run_b: String,
    },
}

/// Runs the command on a fresh tokio runtime.
pub(crate) fn eval(args: EvalArgs) -> anyhow::Result<ExitCode> {
    let root = crate::serve::base_root(args.state_root.as_deref(), &args.dir);
    // Runs are stored where `folio serve` reads them in both layouts (`eval_runs_root`), so
    // `GET /v1/evals` and the playground list them; a session for --from-session is looked up
    // there first, then where `folio run` keeps it.
    let slug = crate::serve::slug_for(&args.dir, Layout::Single)?;
    let state = folio_store_disk::eval_runs_root(&root, &slug);
    if let Some(session_id) = &args.from_session {
        return write_from_session(&args, [&state, &root], &slug, session_id);
    }
    if let Some(EvalCommand::Compare { run_a, run_b }) = &args.command {
        let read = |run_id: &str| -> anyhow::Result<EvalRun> {
            folio_store_disk::read_eval_run(&state, run_id)?.with_context(|| {
                format!(
                    "no stored eval run {run_id} under {}: `folio eval` prints the id of each run (pass --state-root when they live elsewhere)",
                    state.evals_dir().display()
                )
            })
        };
        let comparison = compare(&read(run_a)?, &read(run_b)?);
        if args.json {
            println!("{}", serde_json::to_string_pretty(&comparison)?);
        } else {
            print!("{}", comparison_table(&comparison));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let suite = discover_evals(&args.dir);
    for diagnostic in &suite.diagnostics {
        eprintln!("{diagnostic}");
    }
    if suite.has_errors() {
        bail!(
            "{} has errors (listed above): fix them and run again",
            suite.dir.display()
        );
    }
    if args.list {
        let list = list_cases(&suite, args.filter.as_deref(), &args.tags)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&list)?);
        } else {
            print!("{}", case_list_table(&list));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let run = match &args.rescore {
        Some(run_id) => runtime.block_on(rescore(&suite, &state, run_id))?,
        None => {
            let discovery = discover(&args.dir);
            for diagnostic in &discovery.diagnostics {
                eprintln!("{diagnostic}");
            }
            let Some(definition) = discovery.definition else {
                bail!(
                    "{} has errors (listed above): fix them and run again",
                    args.dir.display()
                );
            };
            let dir = args.dir.clone();
            let opener_definition = definition.clone();
            let open: OpenModel = Arc::new(move |spec| {
                open_model(&opener_definition, &dir, spec).map_err(|err| EvalError::Model {
                    spec: spec.unwrap_or("of the agent").to_string(),
                    message: format!("{err:#}"),
                })
            });
            for variant in &args.variants {
                if !definition.variants.iter().any(|v| &v.name == variant) {
                    let defined: Vec<&str> = definition
                        .variants
                        .iter()
                        .map(|v| v.name.as_str())
                        .collect();
                    bail!(
                        "--variants: \"{variant}\" is not a variant of agent.toml (defined: {}); declare it as [variants.{variant}]",
                        if defined.is_empty() {
                            "none".to_string()
                        } else {
                            defined.join(", ")
                        }
                    );
                }
            }
            let options = EvalOptions {
                definition,
                state: state.clone(),
                open_model: open,
                model: args.model.clone(),
                filter: args.filter.clone(),
                tags: args.tags.clone(),
                record: args.record,
                max_concurrency: args.concurrency,
                iterations: args.iterations,
                dry_run: args.dry_run,
                variant: None,
            };
            let observer: Box<dyn Observer> = if std::io::stderr().is_terminal() {
                Box::new(ProgressObserver::default())
            } else {
                Box::new(LineObserver)
            };
            if args.variants.len() > 1 {
                let mut runs = Vec::new();
                for variant in &args.variants {
                    eprintln!("variant {variant}:");
                    let options = EvalOptions {
                        variant: Some(variant.clone()),
                        ..options.clone()
                    };
                    runs.push(runtime.block_on(run_evals(&suite, &options, observer.as_ref()))?);
                }
                return report_variants(&args, &state, &runs);
            }
            let options = EvalOptions {
                variant: args.variants.first().cloned(),
                ..options
            };
            runtime.block_on(run_evals(&suite, &options, observer.as_ref()))?
        }
    };
    report(&args, &state, &run)
}

/// Prints the run (table or JSON), writes JUnit when asked; exit 1 when a case failed.
fn report(args: &EvalArgs, state: &StateRoot, run: &EvalRun) -> anyhow::Result<ExitCode> {
    if args.json {
        println!("{}", serde_json::to_string_pretty(run)?);
    } else {
        print!("{}", summary_table(run));
    }
    if let Some(path) = &args.junit {
        std::fs::write(path, junit(run))
            .with_context(|| format!("cannot write the JUnit report {}", path.display()))?;
    }
    if args.record {
        eprintln!(
            "fixtures written under {}: set model = \"replay:fixtures/<evalId>/<caseId>.jsonl\" to replay them",
            args.dir.join(EVALS_DIR).join("fixtures").display()
        );
    }
    eprintln!(
        "run {} stored at {}",
        run.run_id,
        state.eval_run_path(&run.run_id).display()
    );
    Ok(if run.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `--variants a,b,…`: each run against the first, side by side (or as JSON: the runs and the
/// comparisons); exit 1 when a case failed in any run.
fn report_variants(
    args: &EvalArgs,
    state: &StateRoot,
    runs: &[EvalRun],
) -> anyhow::Result<ExitCode> {
    let Some((first, others)) = runs.split_first() else {
        return Ok(ExitCode::SUCCESS);
    };
    let comparisons: Vec<Comparison> = others.iter().map(|run| compare(first, run)).collect();
    if args.json {
        let both = serde_json::json!({"runs": runs, "comparisons": comparisons});
        println!("{}", serde_json::to_string_pretty(&both)?);
    } else {
        for comparison in &comparisons {
            print!("{}", comparison_table(comparison));
        }
    }
    for run in runs {
        eprintln!(
            "run {} ({}) stored at {}",
            run.run_id,
            run.variant.as_deref().unwrap_or("the agent as written"),
            state.eval_run_path(&run.run_id).display()
        );
    }
    Ok(if runs.iter().all(|run| run.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `--from-session`: writes the eval of a recorded session, refusing to overwrite a file (the
/// playground's "Save as eval case" writes through the same piece). With the session's fixture
/// under `--record-dir`, the case replays a copy of it.
fn write_from_session(
    args: &EvalArgs,
    states: [&StateRoot; 2],
    slug: &str,
    session_id: &str,
) -> anyhow::Result<ExitCode> {
    if !valid_session_id(session_id) {
        bail!(
            "{session_id} is not a session id (ses_…): `folio run` and the playground print them"
        );
    }
    let Some(trace) = states
        .iter()
        .map(|state| state.trace_path(session_id))
        .find(|trace| trace.is_file())
    else {
        bail!(
            "no session {session_id} under {} or {}: pass --state-root when it lives elsewhere",
            states[0].path().display(),
            states[1].path().display()
        );
    };
    let events = folio_store_disk::read_events(&trace)
        .with_context(|| format!("cannot read the session {session_id} ({})", trace.display()))?;
    let path = match &args.out {
        Some(path) => path.clone(),
        None => session_case_path(&args.dir, session_id)?,
    };
    let recorded = match &args.record_dir {
        Some(record_dir) => recorded_fixture(record_dir, slug, session_id)?,
        None => None,
    };
    write_session_eval(
        &args.dir,
        &path,
        session_id,
        &eval_from_session(&events, "replayed"),
        recorded.as_deref(),
    )?;
    println!("{}", path.display());
    if let Some(fixture) = &recorded {
        eprintln!(
            "the case replays a copy of {} (under {EVALS_DIR}/fixtures/{FROM_SESSION_DIR}/), offline",
            fixture.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The fixture `folio serve --record-dir` wrote for `session_id` of agent `slug`, checked to
/// replay (every line a whole exchange); `None` when it recorded none.
fn recorded_fixture(
    record_dir: &std::path::Path,
    slug: &str,
    session_id: &str,
) -> anyhow::Result<Option<PathBuf>> {
    let agent_dir = crate::serve::agent_record_dir(record_dir, slug)?;
    let Some(fixture) = folio_session::session_fixture(&agent_dir, session_id) else {
        return Ok(None);
    };
    if !fixture.is_file() {
        eprintln!(
            "no fixture {} recorded: the case will call the agent's model",
            fixture.display()
        );
        return Ok(None);
    }
    ReplayProvider::open(&fixture).with_context(|| {
        format!(
            "the recording of session {session_id} cannot be replayed: fix or delete {}",
            fixture.display()
        )
    })?;
    Ok(Some(fixture))
}
