//! Writing eval files: a case from a recorded session, for `folio eval --from-session` and the
//! playground's "Save as eval case" (`POST /v1/session/:id/eval-case`) alike.
//!
//! A case is written once: [`write_new_eval`] never replaces a file (the name is taken), and a
//! project folder the server cannot write is refused with what to do instead.

use std::io::Write;
use std::path::{Path, PathBuf};

use folio_protocol::{Event, EventBody, RunResult};
use serde_json::Value;

use crate::evals::{EVAL_SUFFIX, EVALS_DIR};
use crate::report::is_slug;

/// The folder under `evals/` that cases saved from sessions go to.
pub const FROM_SESSION_DIR: &str = "from-session";

/// Why an eval case could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SaveCaseError {
    /// The name cannot name a file and a case.
    #[error(
        "{0:?} is not a case name: use letters, digits, '-' and '_' (at most 64, starting with a letter or digit)"
    )]
    InvalidName(String),
    /// The file exists: a saved case is never replaced.
    #[error("{} exists: save the case under another name (or delete the file first)", .0.display())]
    Exists(PathBuf),
    /// The project folder cannot be written here.
    #[error(
        "cannot write {}: the project folder is read-only here ({source}); make it writable, or run `folio eval --from-session SESSION_ID --out FILE` where it is",
        .path.display()
    )]
    ReadOnly {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Any other I/O failure.
    #[error("cannot write {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Where the case `name` saved from a session goes: `evals/from-session/<name>.eval.toml` of the
/// project at `project_dir`; its eval id is `from-session/<name>`.
pub fn session_case_path(project_dir: &Path, name: &str) -> Result<PathBuf, SaveCaseError> {
    if !is_slug(name) {
        return Err(SaveCaseError::InvalidName(name.to_string()));
    }
    Ok(project_dir
        .join(EVALS_DIR)
        .join(FROM_SESSION_DIR)
        .join(format!("{name}{EVAL_SUFFIX}")))
}

/// Writes `text` as the new file `path`, creating its folders, synced before it answers; an
/// existing file is left as it is ([`SaveCaseError::Exists`]), and a file that could not be
/// written whole is removed.
pub fn write_new_eval(path: &Path, text: &str) -> Result<(), SaveCaseError> {
    let failed = |source| write_failed(path, source);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(failed)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(failed)?;
    if let Err(err) = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
    {
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(failed(err));
    }
    // The new entry in its folder survives a crash too.
    if let Some(parent) = path.parent() {
        std::fs::File::open(parent)
            .and_then(|dir| dir.sync_all())
            .map_err(failed)?;
    }
    Ok(())
}

/// Why writing `path` failed, from its I/O error.
fn write_failed(path: &Path, source: std::io::Error) -> SaveCaseError {
    match source.kind() {
        std::io::ErrorKind::AlreadyExists => SaveCaseError::Exists(path.to_path_buf()),
        std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied => {
            SaveCaseError::ReadOnly {
                path: path.to_path_buf(),
                source,
            }
        }
        _ => SaveCaseError::Io {
            path: path.to_path_buf(),
            source,
        },
    }
}

/// Writes the case `text` saved from a session as the new file `path` ([`write_new_eval`]).
/// With the session's recorded `fixture` (`folio serve --record-dir`), the eval replays a copy
/// of it, `evals/fixtures/from-session/<name>.jsonl` of the project at `project_dir` (an older
/// copy is replaced), so it runs offline; a case whose copy could not be written is removed.
pub fn write_session_eval(
    project_dir: &Path,
    path: &Path,
    name: &str,
    text: &str,
    fixture: Option<&Path>,
) -> Result<(), SaveCaseError> {
    let Some(fixture) = fixture else {
        return write_new_eval(path, text);
    };
    if !is_slug(name) {
        return Err(SaveCaseError::InvalidName(name.to_string()));
    }
    let relative = format!("fixtures/{FROM_SESSION_DIR}/{name}.jsonl");
    write_new_eval(path, &format!("model = \"replay:{relative}\"\n{text}"))?;
    let copy = project_dir.join(EVALS_DIR).join(relative);
    let copied = copy
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::copy(fixture, &copy));
    if let Err(source) = copied {
        // The case would name a fixture that is not there.
        let _ = std::fs::remove_file(path);
        return Err(write_failed(&copy, source));
    }
    Ok(())
}

/// The text of an eval file with one case `case_id` from the session of `events`: a step per
/// user message, each expecting the turn's outcome and the tools it called (their inputs as a
/// subset, their order `in_order`). Sharpen the expectations by hand.
pub fn eval_from_session(events: &[Event], case_id: &str) -> String {
    let session = events.first().map_or("", |event| event.session_id.as_str());
    let mut out = format!(
        "description = \"From session {session}\"\ntags = [\"from-session\"]\n\n[[cases]]\nid = {}\n",
        toml_string(case_id)
    );
    for event in events {
        let EventBody::MessageReceived(received) = &event.body else {
            continue;
        };
        let Some(turn_id) = &event.turn_id else {
            continue;
        };
        let observed = RunResult::of_turn(events, turn_id);
        let mut expect = vec![format!("{{ succeeded = {} }}", observed.ok)];
        let mut seen: Vec<&str> = Vec::new();
        for call in &observed.tool_calls {
            if !seen.contains(&call.tool.as_str()) {
                seen.push(&call.tool);
                expect.push(format!(
                    "{{ called_tool = {}, input = {}, args = \"subset\" }}",
                    toml_string(&call.tool),
                    toml_inline(&call.input)
                ));
            }
        }
        if !observed.tool_calls.is_empty() {
            let order: Vec<String> = observed
                .tool_calls
                .iter()
                .map(|call| toml_string(&call.tool))
                .collect();
            expect.push(format!(
                "{{ tool_order = [{}], mode = \"in_order\" }}",
                order.join(", ")
            ));
        }
        out.push_str(&format!(
            "\n  [[cases.steps]]\n  send = {}\n  expect = [\n{}  ]\n",
            toml_string(&received.text),
            expect
                .iter()
                .map(|line| format!("    {line},\n"))
                .collect::<String>()
        ));
    }
    out
}

/// `text` as a one-line TOML basic string, so it may be a key too (the `toml` crate writes a
/// text with a newline as a multi-line string, which TOML refuses as a key).
fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON value as an inline TOML value (`null`, which TOML lacks, becomes an empty string; a
/// key holding `null` is left out).
fn toml_inline(value: &Value) -> String {
    match value {
        Value::Null => "\"\"".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => toml_string(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(toml_inline).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => {
            let fields: Vec<String> = map
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| format!("{} = {}", toml_key(k), toml_inline(v)))
                .collect();
            if fields.is_empty() {
                "{}".into()
            } else {
                format!("{{ {} }}", fields.join(", "))
            }
        }
    }
}

fn toml_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        key.to_string()
    } else {
        toml_string(key)
    }
}
