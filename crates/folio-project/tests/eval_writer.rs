//! Writing an eval case from a recorded session: whatever a user sent and whatever input a tool
//! got, the written file reads back (`discover_evals`) as the session it came from; names are
//! confined to `evals/from-session/`; a written case is never replaced.

use std::path::Path;

use folio_project::{
    Assertion, SaveCaseError, discover_evals, eval_from_session, session_case_path, write_new_eval,
};
use folio_protocol::Event;
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::{Value, json};

/// One turn of a session as its log records it: the message, one call of `tool` with `input`,
/// its result, the reply.
fn session(message: &str, tool: &str, input: &Value) -> Vec<Event> {
    let bodies = [
        ("message.received", json!({"text": message})),
        ("turn.started", json!({"model": "openai:gpt-test"})),
        (
            "actions.requested",
            json!({"calls": [{"callId": "call_1", "tool": tool, "input": input}]}),
        ),
        (
            "action.result",
            json!({"callId": "call_1", "tool": tool, "output": "ok", "isError": false, "durationMs": 1}),
        ),
        (
            "turn.completed",
            json!({"reply": "done", "usage": null, "steps": 2, "durationMs": 5}),
        ),
        ("session.waiting", json!({})),
    ];
    bodies
        .into_iter()
        .enumerate()
        .map(|(index, (kind, data))| {
            let turn = (kind != "session.waiting").then_some("turn_1");
            serde_json::from_value(json!({
                "type": kind, "index": index, "sessionId": "ses_01JDXYZ", "turnId": turn,
                "at": "2026-12-01T05:00:00.000Z", "data": data,
            }))
            .unwrap()
        })
        .collect()
}

/// A JSON value without nulls (TOML has none: the writer leaves null keys out).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// The eval file's (send, succeeded, called tool, its expected input) per step, as read back.
fn read_back(project: &Path) -> Vec<(String, bool, String, Option<Value>)> {
    let suite = discover_evals(project);
    assert!(!suite.has_errors(), "{:#?}", suite.diagnostics);
    let case = &suite.evals[0].cases[0];
    case.steps
        .iter()
        .map(|step| {
            let succeeded = step.expect.iter().find_map(|a| match a {
                Assertion::Succeeded(ok) => Some(*ok),
                _ => None,
            });
            let called = step.expect.iter().find_map(|a| match a {
                Assertion::CalledTool { tool, input, .. } => Some((tool.clone(), input.clone())),
                _ => None,
            });
            let (tool, input) = called.expect("a called_tool expectation");
            (step.send.clone(), succeeded.unwrap_or(false), tool, input)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_message_and_tool_input_reads_back_as_written(
        // The server refuses a blank message, so no session holds one.
        message in any::<String>().prop_filter("a message is not blank", |m| !m.trim().is_empty()),
        tool in "[A-Za-z_][A-Za-z0-9_-]{0,20}",
        fields in prop::collection::btree_map(any::<String>(), json_value(), 0..5),
    ) {
        let input = Value::Object(fields.into_iter().collect());
        let project = tempfile::tempdir().unwrap();
        let path = session_case_path(project.path(), "replayed").unwrap();
        write_new_eval(&path, &eval_from_session(&session(&message, &tool, &input), "replayed")).unwrap();
        prop_assert_eq!(read_back(project.path()), vec![(message, true, tool, Some(input))]);
    }

    #[test]
    fn a_case_name_is_a_file_in_evals_from_session_or_refused(name in any::<String>()) {
        let project = Path::new("/project");
        match session_case_path(project, &name) {
            Ok(path) => {
                prop_assert_eq!(path.parent().map(Path::to_path_buf), Some(project.join("evals/from-session")));
                prop_assert_eq!(path.file_name().and_then(|n| n.to_str()).map(String::from), Some(format!("{name}.eval.toml")));
            }
            Err(SaveCaseError::InvalidName(refused)) => prop_assert_eq!(refused, name),
            Err(other) => prop_assert!(false, "{other}"),
        }
    }
}

#[test]
fn a_written_case_is_never_replaced_and_an_unwritable_folder_says_what_to_do() {
    let project = tempfile::tempdir().unwrap();
    for name in ["../escape", "a/b", "", ".hidden", "with space"] {
        assert!(
            matches!(
                session_case_path(project.path(), name),
                Err(SaveCaseError::InvalidName(_))
            ),
            "{name:?}"
        );
    }
    let path = session_case_path(project.path(), "kept").unwrap();
    write_new_eval(&path, "description = \"first\"\n").unwrap();
    let again = write_new_eval(&path, "description = \"second\"\n").unwrap_err();
    assert_eq!(
        again.to_string(),
        format!(
            "{} exists: save the case under another name (or delete the file first)",
            path.display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "description = \"first\"\n"
    );
    // A folder even root cannot write: a link into /sys.
    let linked = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/sys/kernel", linked.path().join("evals")).unwrap();
    let path = session_case_path(linked.path(), "nowhere").unwrap();
    let refused = write_new_eval(&path, "x = 1\n").unwrap_err();
    assert!(
        matches!(refused, SaveCaseError::ReadOnly { .. }),
        "{refused:?}"
    );
    assert!(refused.to_string().contains("--out FILE"), "{refused}");
}
