//! The per-tenant live root end to end: two sessions of one tenant share its folder (a write
//! of the first is read by the second), a session of another tenant sees only its own, and a
//! session whose key names no tenant sees an empty tree; over HTTP, the `continuationKey` of
//! `POST /v1/session` picks the tenant, only one its principal may reach, and a bad key is a
//! 400 naming the field.

use std::path::Path;

use std::net::SocketAddr;

use folio_auth::Auth;
use folio_example_tenant_root::{LOCAL, ModelSpec, Tenants, app, open, reply};
use folio_protocol::{ActionResult, CreateSession, ErrorCode, SessionCreated};
use folio_session::{SessionManager, SessionOptions};
use folio_test_support::{MockModelServer, MockReply, all, call_as, refused};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::{Value, json};

/// Opens a session for `key` with `message` and waits for its turn; returns the outputs (or
/// errors) of its tool calls and its reply.
async fn turn(manager: &SessionManager, key: &str, message: &str) -> (Vec<Value>, String) {
    let options = SessionOptions {
        continuation_key: Some(key.to_string()),
        ..SessionOptions::default()
    };
    let accepted = manager
        .sessions()
        .create_with(LOCAL, "example", CreateSession::message(message), options)
        .await
        .unwrap();
    let answer = reply(manager, LOCAL, &accepted.session_id).await.unwrap();
    (outputs(manager, LOCAL, &accepted.session_id).await, answer)
}

/// The outputs (or errors) of the tool calls of `principal`'s session `id`.
async fn outputs(manager: &SessionManager, principal: &str, id: &str) -> Vec<Value> {
    let events = manager.events().read(principal, id).await.unwrap();
    all::<ActionResult>(&events)
        .into_iter()
        .map(|result| match &result.error {
            Some(error) => Value::String(error.clone()),
            None => result.output.clone().unwrap_or_default(),
        })
        .collect()
}

/// The example's session manager over `tenants`, its state under `state`, its model `mock`.
async fn open_example(mock: &MockModelServer, tenants: &Path, state: &Path) -> SessionManager {
    let (manager, _agent) = open(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        Tenants::new(tenants),
        state,
        ModelSpec {
            spec: "openai:gpt-test",
            base_url: Some(&mock.openai_base_url()),
            env: &|name: &str| (name == "OPENAI_API_KEY").then(|| "test-key".to_string()),
        },
    )
    .await
    .unwrap();
    manager
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
    let manager = open_example(&mock, tenants.path(), state.path()).await;

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

#[tokio::test]
async fn over_http_the_continuation_key_picks_a_tenant_its_principal_may_reach() {
    let mock = MockModelServer::start().await;
    let tenants = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let manager = open_example(&mock, tenants.path(), state.path()).await;
    // One bearer token per tenant: the principal is the tenant.
    let auth = Auth::Tokens(vec![
        ("acme".into(), "acme-token".into()),
        ("globex".into(), "globex-token".into()),
    ]);
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", tcp.local_addr().unwrap());
    let listener = folio_server::no_delay(tcp);
    let service = app(manager.clone(), auth).into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, service).await });
    let create = |key: &str, message: &str| CreateSession {
        continuation_key: Some(key.to_string()),
        ..CreateSession::message(message)
    };

    // acme's session writes into acme's folder.
    mock.push(MockReply::tool_calls([(
        "Write",
        json!({"path": "/notes.md", "contents": "acme: prefers email\n"}),
    )]))
    .push(MockReply::text("Noted."));
    let (status, created): (u16, SessionCreated) = call_as(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(&create("acme:ticket-1", "Remember: email.")),
        Some("acme-token"),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(
        reply(&manager, "acme", &created.session_id).await.unwrap(),
        "Noted."
    );
    assert_eq!(
        std::fs::read_to_string(tenants.path().join("acme/notes.md")).unwrap(),
        "acme: prefers email\n"
    );
    let session = manager
        .sessions()
        .get("acme", &created.session_id)
        .await
        .unwrap();
    assert_eq!(session.continuation_key.as_deref(), Some("acme:ticket-1"));

    // globex sends acme's key: its session gets an empty tree, not acme's folder.
    mock.push(MockReply::tool_calls([(
        "Read",
        json!({"path": "/notes.md"}),
    )]))
    .push(MockReply::text("Nothing."));
    let (status, created): (u16, SessionCreated) = call_as(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(&create("acme:ticket-2", "What do acme's notes say?")),
        Some("globex-token"),
    )
    .await;
    assert_eq!(status, 201);
    reply(&manager, "globex", &created.session_id)
        .await
        .unwrap();
    assert_eq!(
        outputs(&manager, "globex", &created.session_id).await,
        [json!("not found: /notes.md")]
    );

    // A key that is empty, too long or holds a control character is refused, naming the field.
    for bad in [String::new(), "k".repeat(257), "acme:ticket\n7".into()] {
        let (status, error) = refused(
            Method::POST,
            &format!("{url}/v1/session"),
            Some(&create(&bad, "hi")),
            Some("acme-token"),
        )
        .await;
        assert_eq!(
            (status, error.error),
            (400, ErrorCode::InvalidRequest),
            "{bad:?}"
        );
        assert!(error.message.starts_with("continuationKey: "), "{error:?}");
    }
    assert_eq!(mock.remaining(), 0);
    manager.shutdown().await;
}
