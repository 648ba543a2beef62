//! The host API under attack, through the real binary: a tool whose process holds its call open
//! hands the test its live token, and the test plays the adversary on the socket — no token and
//! forged tokens on every route, a token replayed after its call, one principal's token reaching
//! for another's storage and another session's, paths escaping the FileSystem (generated), bodies
//! malformed for every route (generated), an oversized value and body, a flood of writes — each
//! refused with a clear error and nothing written.

mod serve_support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use folio_protocol::{CreateSession, ErrorBody, Scope, SessionCreated};
use folio_test_support::{MockModelServer, MockReply};
use futures::StreamExt;
use http_body_util::{BodyExt, Full};
use reqwest::Method;
use serde_json::{Value, json};
use serve_support::*;

const AGENT: &str = "name = \"Host Agent\"\nmodel = \"openai:gpt-test\"\n";
const ALICE: &str = "alice-secret";
const BOB: &str = "bob-secret";

/// A tool that writes its host URL and token to `$HOLD_DIR/<session>.token`, then keeps its
/// call open until `$HOLD_DIR/<session>.release` exists.
const HOLD: &str = r#"set -u
printf '%s %s' "$FOLIO_HOST_URL" "$FOLIO_HOST_TOKEN" > "$HOLD_DIR/$FOLIO_SESSION_ID.tmp"
mv "$HOLD_DIR/$FOLIO_SESSION_ID.tmp" "$HOLD_DIR/$FOLIO_SESSION_ID.token"
i=0
while [ ! -e "$HOLD_DIR/$FOLIO_SESSION_ID.release" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
echo '{"held": true}'
"#;

/// One request to the host API at `url` (`unix:<path>`): status, `Retry-After`, JSON body.
async fn host_call(
    url: &str,
    token: Option<&str>,
    method: &str,
    path: &str,
    body: &[u8],
) -> (u16, Option<String>, Value) {
    let socket = url.strip_prefix("unix:").expect("a unix socket URL");
    let stream = tokio::net::UnixStream::connect(socket).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "folio-host")
        .header("content-type", "application/json");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = sender
        .send_request(
            request
                .body(Full::new(Bytes::copy_from_slice(body)))
                .unwrap(),
        )
        .await
        .unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|value| value.to_str().unwrap().to_string());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, retry_after, value)
}

/// `body` as JSON, posted to `route`.
async fn post(url: &str, token: &str, route: &str, body: Value) -> (u16, Option<String>, Value) {
    host_call(
        url,
        Some(token),
        "POST",
        &format!("/v1/host/{route}"),
        body.to_string().as_bytes(),
    )
    .await
}

/// Asserts an error answer: `status`, a Folio error body with `code`, and a message.
fn refused(answer: &(u16, Option<String>, Value), status: u16, code: &str, what: &str) {
    assert_eq!(answer.0, status, "{what}: {}", answer.2);
    let body: ErrorBody = serde_json::from_value(answer.2.clone())
        .unwrap_or_else(|err| panic!("{what}: {} is not an error body: {err}", answer.2));
    assert_eq!(body.error.as_str(), code, "{what}: {}", answer.2);
    assert!(!body.message.is_empty(), "{what}: the error says why");
}

/// The folder under `root` that holds a file named `name`.
fn find(root: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(root).ok()?.flatten() {
        let path = entry.path();
        if entry.file_name() == name {
            return Some(root.to_path_buf());
        }
        if entry.file_type().is_ok_and(|t| t.is_dir())
            && let Some(found) = find(&path, name)
        {
            return Some(found);
        }
    }
    None
}

/// A session of `principal` whose `hold` call is open; its host URL and live token.
struct Held {
    session: String,
    url: String,
    token: String,
    hold_dir: PathBuf,
}

impl Held {
    async fn open(agent: &str, principal: &str, hold_dir: &Path) -> Held {
        let (status, created) = call(
            Method::POST,
            &format!("{agent}/v1/session"),
            Some(serde_json::to_value(CreateSession::message("hold")).unwrap()),
            Some(principal),
        )
        .await;
        assert_eq!(status, 201, "{created}");
        let created: SessionCreated = serde_json::from_value(created).unwrap();
        let file = hold_dir.join(format!("{}.token", created.session_id));
        let text = tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                if let Ok(text) = std::fs::read_to_string(&file) {
                    return text;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .expect("the tool hands over its token");
        let (url, token) = text.split_once(' ').unwrap();
        Held {
            session: created.session_id,
            url: url.to_string(),
            token: token.to_string(),
            hold_dir: hold_dir.to_path_buf(),
        }
    }

    fn release(&self) {
        std::fs::write(self.hold_dir.join(format!("{}.release", self.session)), "").unwrap();
    }
}

#[tokio::test]
async fn every_attack_on_the_host_api_is_refused_and_writes_nothing() {
    let mock = MockModelServer::start().await;
    // Three sessions each call `hold` (and stay in it), then each answers.
    for _ in 0..3 {
        mock.push(MockReply::tool_calls([("hold", json!({}))]));
    }
    for _ in 0..3 {
        mock.push(MockReply::text("held"));
    }
    let dir = project(AGENT);
    write_files(
        dir.path(),
        &[
            (
                "agent/tools/hold.toml",
                "description = \"Hold the call open.\"\ncommand = [\"sh\", \"hold.sh\"]\neffect = \"read\"\ntimeout_secs = 120\n[input_schema]\ntype = \"object\"\n",
            ),
            ("agent/tools/hold.sh", HOLD),
        ],
    );
    let tokens = dir.path().join("tokens.toml");
    std::fs::write(&tokens, format!("alice = \"{ALICE}\"\nbob = \"{BOB}\"\n")).unwrap();
    let state = tempfile::tempdir().unwrap();
    let hold_dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let server = serve_with_env(
        &mock.openai_base_url(),
        dir.path(),
        state.path(),
        &[
            "--mode",
            "single",
            "--tokens-file",
            tokens.to_str().unwrap(),
        ],
        &[("HOLD_DIR", hold_dir.path().to_str().unwrap())],
    )
    .await;

    let alice = Held::open(&server.url, ALICE, hold_dir.path()).await;
    let url = alice.url.clone();
    assert!(url.starts_with("unix:"), "{url}");
    let socket = url.trim_start_matches("unix:");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(socket).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "the socket is its user's only");

    // No token, and forged ones, on every route of the table.
    let forged = [
        String::new(),
        "fht_".to_string(),
        format!("{}x", alice.token),
        alice.token[..alice.token.len() - 1].to_string(),
        alice.token.to_uppercase(),
        "Bearer".to_string(),
        format!("{} ", alice.token.replace("fht_", "fht-")),
    ];
    for route in folio_protocol::routes()
        .iter()
        .filter(|r| r.scope == Scope::Call)
    {
        let path = route.path_with("read");
        let answer = host_call(&url, None, route.method.as_str(), &path, b"{}").await;
        refused(
            &answer,
            401,
            "unauthorized",
            &format!("{path} without a token"),
        );
        for token in &forged {
            let answer = host_call(&url, Some(token), route.method.as_str(), &path, b"{}").await;
            refused(
                &answer,
                401,
                "unauthorized",
                &format!("{path} with {token:?}"),
            );
        }
    }

    // Malformed bodies for every route that takes one: each a 400 naming what is wrong.
    let malformed: [&[u8]; 7] = [
        b"{",
        b"[]",
        b"null",
        b"\"text\"",
        b"{\"unknownField\": 1, \"key\": \"k\", \"path\": \"p\"}",
        b"\xff\xfe",
        b"{\"key\": 7, \"scope\": \"everyone\", \"path\": 3, \"message\": 1}",
    ];
    for route in folio_protocol::routes()
        .iter()
        .filter(|r| r.scope == Scope::Call && r.request.is_some() && !r.request.unwrap().optional)
    {
        let path = route.path_with("read");
        for body in malformed {
            let answer = host_call(&url, Some(&alice.token), "POST", &path, body).await;
            refused(
                &answer,
                400,
                "invalid_request",
                &format!("{path} with {}", String::from_utf8_lossy(body)),
            );
        }
    }

    // Paths escaping the FileSystem, generated: refused, and nothing written outside.
    let target = outside.path().join("pwned");
    let escapes: Vec<String> = (1..=8)
        .flat_map(|depth| {
            let up = "../".repeat(depth);
            [
                format!("{up}pwned"),
                format!("a/../{up}pwned"),
                format!(
                    "./{up}{}",
                    target.display().to_string().trim_start_matches('/')
                ),
            ]
        })
        .chain([
            target.display().to_string(),
            "/etc/passwd".to_string(),
            "a/\0/b".to_string(),
            "link/pwned".to_string(),
        ])
        .collect();
    // A symlink in the session's workspace to the outside directory.
    let marker = post(
        &url,
        &alice.token,
        "files/write",
        json!({"path": "where-am-i.txt", "contents": "here"}),
    )
    .await;
    assert_eq!(marker.0, 200, "{}", marker.2);
    let workspace = find(state.path(), "where-am-i.txt").expect("the workspace holds the marker");
    std::os::unix::fs::symlink(outside.path(), workspace.join("link")).unwrap();
    for path in &escapes {
        let write = post(
            &url,
            &alice.token,
            "files/write",
            json!({"path": path, "contents": "x"}),
        )
        .await;
        assert_eq!(write.0, 400, "write {path:?} escapes: {}", write.2);
        let read = post(&url, &alice.token, "files/read", json!({"path": path})).await;
        assert_ne!(read.0, 200, "read {path:?} escapes: {}", read.2);
        assert!(read.0 < 500, "read {path:?}: {}", read.2);
    }
    assert!(
        !target.exists(),
        "nothing was written outside the FileSystem"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);

    // Storage: alice's entries, in each scope.
    for scope in ["session", "principal", "agent"] {
        let put = post(
            &url,
            &alice.token,
            "kv/put",
            json!({"scope": scope, "key": "secret", "value": format!("alice's {scope}")}),
        )
        .await;
        assert_eq!(put.0, 200, "{}", put.2);
        assert_eq!(put.2["entry"]["version"], json!(1));
    }
    // Compare-and-set: a stale version and a "must be new" on an existing key are refused.
    let stale = post(
        &url,
        &alice.token,
        "kv/put",
        json!({"key": "secret", "value": 2, "ifVersion": 7}),
    )
    .await;
    refused(&stale, 409, "version_conflict", "a stale ifVersion");
    let not_new = post(
        &url,
        &alice.token,
        "kv/put",
        json!({"key": "secret", "value": 2, "ifVersion": 0}),
    )
    .await;
    refused(
        &not_new,
        409,
        "version_conflict",
        "ifVersion 0 on an existing key",
    );
    let kept = post(&url, &alice.token, "kv/get", json!({"key": "secret"})).await;
    assert_eq!(
        kept.2["entry"]["value"],
        json!("alice's session"),
        "nothing written"
    );
    // Oversized and invalid values and keys.
    let big = "x".repeat(256 * 1024);
    refused(
        &post(
            &url,
            &alice.token,
            "kv/put",
            json!({"key": "big", "value": big}),
        )
        .await,
        400,
        "invalid_request",
        "a value over 256 KiB",
    );
    refused(
        &post(&url, &alice.token, "kv/put", json!({"key": "", "value": 1})).await,
        400,
        "invalid_request",
        "an empty key",
    );
    refused(
        &post(
            &url,
            &alice.token,
            "kv/put",
            json!({"key": "k".repeat(513), "value": 1}),
        )
        .await,
        400,
        "invalid_request",
        "a key over 512 bytes",
    );
    refused(
        &post(
            &url,
            &alice.token,
            "kv/put",
            json!({"key": "nul", "value": "a\u{0}b"}),
        )
        .await,
        400,
        "invalid_request",
        "a NUL in a value",
    );
    refused(
        &post(
            &url,
            &alice.token,
            "kv/put",
            json!({"key": "ctl\u{1}", "value": 1}),
        )
        .await,
        400,
        "invalid_request",
        "a control character in a key",
    );
    let huge = json!({"key": "huge", "value": "y".repeat(2 * 1024 * 1024)});
    refused(
        &post(&url, &alice.token, "kv/put", huge).await,
        413,
        "payload_too_large",
        "a body over the limit",
    );
    let absent = post(&url, &alice.token, "kv/list", json!({})).await;
    let keys: Vec<&str> = absent.2["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["secret"], "none of the refused writes landed");

    // Bob's live token: his own session and principal see none of alice's entries; the agent
    // scope is shared by design.
    let bob = Held::open(&server.url, BOB, hold_dir.path()).await;
    for (scope, seen) in [
        ("session", Value::Null),
        ("principal", Value::Null),
        ("agent", json!("alice's agent")),
    ] {
        let got = post(
            &bob.url,
            &bob.token,
            "kv/get",
            json!({"scope": scope, "key": "secret"}),
        )
        .await;
        assert_eq!(got.0, 200, "{}", got.2);
        assert_eq!(
            got.2["entry"]["value"], seen,
            "bob reads alice's {scope} entry"
        );
    }
    let who = host_call(&bob.url, Some(&bob.token), "GET", "/v1/host/whoami", b"").await;
    assert_eq!(who.2["principal"], json!("bob"));
    assert_eq!(who.2["sessionId"], json!(bob.session));
    // Alice's second session shares her principal entries but not her first session's.
    let alice2 = Held::open(&server.url, ALICE, hold_dir.path()).await;
    let mine = post(
        &url,
        &alice2.token,
        "kv/get",
        json!({"scope": "principal", "key": "secret"}),
    )
    .await;
    assert_eq!(mine.2["entry"]["value"], json!("alice's principal"));
    let other = post(
        &url,
        &alice2.token,
        "kv/get",
        json!({"scope": "session", "key": "secret"}),
    )
    .await;
    assert_eq!(
        other.2["entry"],
        Value::Null,
        "another session's session entries"
    );

    // A flood of writes: past the session's budget, 429 with Retry-After; never a 500; and
    // the refused writes are not there.
    // 1,200 writes, 24 at a time: however slow the machine, far more than the burst plus what
    // refills while they run.
    let answers: Vec<(u16, Option<String>, Value)> = futures::stream::iter(0..1200)
        .map(|n| {
            let (url, token) = (url.clone(), bob.token.clone());
            async move {
                post(
                    &url,
                    &token,
                    "kv/put",
                    json!({"key": format!("flood/{n:04}"), "value": n}),
                )
                .await
            }
        })
        .buffer_unordered(24)
        .collect()
        .await;
    let mut limited = 0;
    let mut written = 0;
    for answer in &answers {
        match answer.0 {
            200 => written += 1,
            429 => {
                limited += 1;
                refused(answer, 429, "rate_limited", "a flood");
                let wait: u64 = answer.1.as_deref().expect("Retry-After").parse().unwrap();
                assert!(wait >= 1, "Retry-After {wait}");
            }
            other => panic!("a flood write answered {other}: {}", answer.2),
        }
    }
    assert!(limited > 0, "the budget stopped the flood");
    let listed = post(
        &url,
        &alice2.token,
        "kv/list",
        json!({"scope": "agent", "prefix": "flood/"}),
    )
    .await;
    assert_eq!(
        listed.2["entries"].as_array().unwrap().len(),
        0,
        "flood keys were session scope"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut kept = 0;
    let mut next = Value::Null;
    loop {
        let page = post(
            &url,
            &bob.token,
            "kv/list",
            json!({"prefix": "flood/", "after": next}),
        )
        .await;
        assert_eq!(page.0, 200, "{}", page.2);
        kept += page.2["entries"].as_array().unwrap().len();
        next = page.2["next"].clone();
        if next.is_null() {
            break;
        }
    }
    assert_eq!(kept, written, "exactly the accepted writes");

    // Each call ends; its token is refused from then on.
    for held in [&alice, &bob, &alice2] {
        held.release();
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for held in [&alice, &bob, &alice2] {
        let answer = host_call(&url, Some(&held.token), "GET", "/v1/host/whoami", b"").await;
        refused(
            &answer,
            401,
            "unauthorized",
            "a token replayed after its call",
        );
        let write = post(
            &url,
            &held.token,
            "kv/put",
            json!({"key": "late", "value": 1}),
        )
        .await;
        refused(
            &write,
            401,
            "unauthorized",
            "a write with an ended call's token",
        );
    }
}
