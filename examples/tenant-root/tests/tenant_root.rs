//! The per-tenant live root end to end: two sessions of one tenant share its folder (a write
//! of the first is read by the second), a session of another tenant sees only its own, and a
//! session whose key names no tenant sees an empty tree.

use std::path::Path;

use folio_example_tenant_root::{ModelSpec, Tenants, open, reply};
use folio_protocol::{ActionResult, CreateSession};
use folio_server::{SessionManager, SessionOptions};
use folio_test_support::{MockModelServer, MockReply, all};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Opens a session for `key` with `message` and waits for its turn; returns the outputs (or
/// errors) of its tool calls and its reply.
async fn turn(manager: &SessionManager, key: &str, message: &str) -> (Vec<Value>, String) {
    let options = SessionOptions {
        continuation_key: Some(key.to_string()),
        ..SessionOptions::default()
    };
    let accepted = manager
        .create_with("local", "example", CreateSession::message(message), options)
        .await
        .unwrap();
    let answer = reply(manager, &accepted.session_id).await.unwrap();
    let events = manager.events("local", &accepted.session_id).unwrap();
    let outputs = all::<ActionResult>(&events)
        .into_iter()
        .map(|result| match &result.error {
            Some(error) => Value::String(error.clone()),
            None => result.output.clone().unwrap_or_default(),
        })
        .collect();
    (outputs, answer)
}

#[tokio::test]
async fn each_tenant_works_in_its_own_folder_built_from_the_continuation_key() {
    let mock = MockModelServer::start().await;
    let tenants = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tenants.path().join("globex")).unwrap();
    std::fs::write(
        tenants.path().join("globex/notes.md"),
        "globex: renew in May\n",
    )
    .unwrap();
    let state = tempfile::tempdir().unwrap();
    let project = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (manager, _agent) = open(
        project,
        Tenants::new(tenants.path()),
        state.path(),
        ModelSpec {
            spec: "openai:gpt-test",
            base_url: Some(&mock.openai_base_url()),
            env: &|name: &str| (name == "OPENAI_API_KEY").then(|| "test-key".to_string()),
        },
    )
    .await
    .unwrap();

    // acme's first session writes a note into acme's folder.
    mock.push(MockReply::tool_calls([(
        "Write",
        json!({"path": "/notes.md", "contents": "acme: prefers email\n"}),
    )]))
    .push(MockReply::text("Noted."));
    let (_, answer) = turn(&manager, "acme:ticket-1", "Remember: email.").await;
    assert_eq!(answer, "Noted.");
    assert_eq!(
        std::fs::read_to_string(tenants.path().join("acme/notes.md")).unwrap(),
        "acme: prefers email\n"
    );

    // A second acme session (another thread) reads it; globex reads only its own.
    for (key, expected) in [
        ("acme:ticket-2", "acme: prefers email"),
        ("globex:ticket-1", "globex: renew in May"),
    ] {
        mock.push(MockReply::tool_calls([(
            "Read",
            json!({"path": "/notes.md"}),
        )]))
        .push(MockReply::text("Done."));
        let (outputs, _) = turn(&manager, key, "What do my notes say?").await;
        let output = outputs[0].as_str().unwrap_or_default().to_string();
        assert!(output.contains(expected), "{key}: {output}");
        assert!(
            !output.contains(if key.starts_with("acme") {
                "globex"
            } else {
                "acme"
            }),
            "{key}: {output}"
        );
    }

    // A key that names no tenant (a path in disguise) gets an empty tree, not a folder.
    mock.push(MockReply::tool_calls([("LS", json!({"path": "/"}))]))
        .push(MockReply::text("Nothing here."));
    let (outputs, _) = turn(&manager, "../acme:ticket-3", "List my files.").await;
    let listing = outputs[0].to_string();
    assert!(!listing.contains("notes.md"), "{listing}");
    assert_eq!(mock.remaining(), 0);
    manager.shutdown().await;
}

#[test]
fn a_tenant_is_a_plain_name_before_the_first_colon() {
    assert_eq!(Tenants::tenant_of("acme:ticket-7"), Some("acme"));
    assert_eq!(Tenants::tenant_of("acme"), Some("acme"));
    for bad in ["", ":x", "../acme:1", "a/b:1", "acme corp:1", ".:1"] {
        assert_eq!(Tenants::tenant_of(bad), None, "{bad:?}");
    }
}
