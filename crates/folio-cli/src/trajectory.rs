//! `folio trajectory`: the `run --json` result rebuilt from a saved event log.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use folio_protocol::RunResult;

/// Prints the result of the session whose log is at `events`.
pub(crate) fn trajectory(events: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let log = folio_store_disk::read_events(events).with_context(|| {
        format!(
            "cannot summarize {} (pass a session's <state-root>/traces/<id>.ndjson)",
            events.display()
        )
    })?;
    let result = RunResult::from_events(&log);
    print_result(&result, json)?;
    Ok(exit_code(&result))
}

/// Prints a result to stdout: the JSON document, or the reply for a person.
pub(crate) fn print_result(result: &RunResult, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(result)?);
    } else if result.ok {
        println!("{}", result.reply);
    }
    Ok(())
}

/// 0 when the session's turns succeeded, 1 otherwise.
pub(crate) fn exit_code(result: &RunResult) -> ExitCode {
    if result.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
