//! Channel deliveries as the providers send them: bodies signed by the providers' own libraries
//! (`@octokit/webhooks-methods`, Python `slack_sdk` and `standardwebhooks`, installed by
//! `scripts/install-test-deps`), their example payloads, and the HTTP calls that deliver them
//! and read their outcome back through the folio-protocol types.

use std::path::Path;
use std::time::Duration;

use folio_protocol::{DeliveriesResponse, DeliveryAccepted, DeliveryInfo, DeliveryStatus};
use serde_json::{Value, json};

use crate::project::{Project, project, python, test_deps, write_files};
use crate::{MockModelServer, call, check_answer, client, read_wire};

/// The signing secret of the channels under test.
pub const SECRET: &str = "It's a Secret to Everybody";
/// A Standard Webhooks secret (`whsec_` + base64 of the key).
pub const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// Runs a signing peer and returns what it printed.
pub fn peer(program: &Path, args: &[&str], cwd: &Path, stdin: &str) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new(program)
        .args(args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| {
            panic!(
                "{} cannot start ({err}): run scripts/install-test-deps",
                program.display()
            )
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{} failed", program.display());
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// `X-Hub-Signature-256` by GitHub's own `@octokit/webhooks-methods`.
pub fn github_signature(body: &str) -> String {
    let dir = test_deps().join("channels");
    assert!(
        dir.join("node_modules/@octokit/webhooks-methods/package.json")
            .is_file(),
        "run scripts/install-test-deps (npm @octokit/webhooks-methods)"
    );
    peer(
        Path::new("node"),
        &[
            "-e",
            "import('@octokit/webhooks-methods').then(async m => process.stdout.write(await m.sign(process.argv[1], require('fs').readFileSync(0, 'utf8'))))",
            SECRET,
        ],
        &dir,
        body,
    )
}

/// `X-Slack-Signature` by `slack_sdk`'s `SignatureVerifier`.
pub fn slack_signature(timestamp: &str, body: &str) -> String {
    peer(
        &python(),
        &[
            "-c",
            "import sys; from slack_sdk.signature import SignatureVerifier; print(SignatureVerifier(sys.argv[1]).generate_signature(timestamp=sys.argv[2], body=sys.stdin.read()))",
            SECRET,
            timestamp,
        ],
        Path::new("."),
        body,
    )
}

/// `webhook-signature` by the `standardwebhooks` reference library.
pub fn standard_signature(id: &str, timestamp: i64, body: &str) -> String {
    peer(
        &python(),
        &[
            "-c",
            "import sys, datetime; from standardwebhooks.webhooks import Webhook; print(Webhook(sys.argv[1]).sign(sys.argv[2], datetime.datetime.fromtimestamp(int(sys.argv[3]), tz=datetime.timezone.utc), sys.stdin.read()))",
            WHSEC,
            id,
            &timestamp.to_string(),
        ],
        Path::new("."),
        body,
    )
}

/// The Unix time in seconds.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// POSTs `body` with `headers`; the status and JSON answer (checked against its wire type).
pub async fn deliver(url: &str, body: &str, headers: &[(&str, String)]) -> (u16, Value) {
    let mut request = client()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let value: Value = response.json().await.unwrap();
    check_answer("POST", url, status, &value);
    (status, value)
}

/// The channel's deliveries, once none is pending (at most 30 s).
pub async fn settled(url: &str, channel: &str) -> Vec<DeliveryInfo> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = call(
            reqwest::Method::GET,
            &format!("{url}/v1/channels/{channel}/deliveries"),
            None,
            None,
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let listed: DeliveriesResponse = read_wire(&body);
        if listed
            .deliveries
            .iter()
            .all(|d| d.status != DeliveryStatus::Pending)
        {
            return listed.deliveries;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "deliveries still pending after 30 s: {:#?}",
            listed.deliveries
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The session a settled delivery reached.
pub fn session_of(delivery: &DeliveryInfo) -> String {
    delivery
        .session_id
        .clone()
        .unwrap_or_else(|| panic!("delivery {} reached no session: {delivery:#?}", delivery.id))
}

/// Whether a `202` answer says the delivery was a duplicate.
pub fn duplicate(answer: &Value) -> bool {
    read_wire::<DeliveryAccepted>(answer).duplicate
}

/// GitHub's own example payloads of `event` (npm `@octokit/webhooks-examples`).
pub fn github_examples(event: &str) -> Vec<Value> {
    let index = test_deps()
        .join("channels/node_modules/@octokit/webhooks-examples/api.github.com/index.json");
    let text = std::fs::read_to_string(&index)
        .unwrap_or_else(|err| panic!("{} ({err}): run scripts/install-test-deps", index.display()));
    let all: Vec<Value> = serde_json::from_str(&text).unwrap();
    all.into_iter()
        .find(|e| e["name"] == event)
        .and_then(|e| e["examples"].as_array().cloned())
        .unwrap_or_else(|| panic!("no {event} examples"))
}

/// Sends `payload` as GitHub delivery `id` of `event`, signed by `@octokit/webhooks-methods`.
pub async fn github_delivery(url: &str, event: &str, id: &str, payload: &Value) -> (u16, Value) {
    let body = payload.to_string();
    let headers = [
        ("x-github-event", event.to_string()),
        ("x-github-delivery", id.to_string()),
        ("x-hub-signature-256", github_signature(&body)),
    ];
    deliver(url, &body, &headers).await
}

/// Events API `body` as Slack sends it, signed by `slack_sdk` (with `X-Slack-Retry-Num` and
/// `X-Slack-Retry-Reason: http_timeout` when `retry` is set): the body and its headers.
pub fn slack_request(body: &Value, retry: Option<u32>) -> (String, Vec<(&'static str, String)>) {
    let body = body.to_string();
    let ts = now().to_string();
    let mut headers = vec![
        ("x-slack-request-timestamp", ts.clone()),
        ("x-slack-signature", slack_signature(&ts, &body)),
    ];
    if let Some(retry) = retry {
        headers.push(("x-slack-retry-num", retry.to_string()));
        headers.push(("x-slack-retry-reason", "http_timeout".to_string()));
    }
    (body, headers)
}

/// Sends Events API `body` to a Slack channel ([`slack_request`]).
pub async fn slack_event(url: &str, body: &Value, retry: Option<u32>) -> (u16, Value) {
    let (body, headers) = slack_request(body, retry);
    deliver(url, &body, &headers).await
}

/// A fresh 2048-bit RSA key as GitHub hands App keys out (PKCS#1 PEM), made by Python
/// `cryptography`: (private PEM, public PEM).
pub fn app_key() -> (String, String) {
    let out = peer(
        &python(),
        &[
            "-c",
            "from cryptography.hazmat.primitives.asymmetric import rsa; from cryptography.hazmat.primitives import serialization as s; k = rsa.generate_private_key(public_exponent=65537, key_size=2048); print(k.private_bytes(s.Encoding.PEM, s.PrivateFormat.TraditionalOpenSSL, s.NoEncryption()).decode() + '|' + k.public_key().public_bytes(s.Encoding.PEM, s.PublicFormat.SubjectPublicKeyInfo).decode())",
        ],
        Path::new("."),
        "",
    );
    let (private, public) = out.split_once('|').expect("two PEM blocks");
    (private.trim().to_string(), public.trim().to_string())
}

/// The claims of an RS256 `jwt` once PyJWT verified it with `public` (PEM); panics when the
/// signature or the expiry does not check.
pub fn verified_claims(jwt: &str, public: &str) -> Value {
    let claims = peer(
        &python(),
        &[
            "-c",
            "import sys, json, jwt; print(json.dumps(jwt.decode(sys.argv[1], sys.stdin.read(), algorithms=['RS256'])))",
            jwt,
        ],
        Path::new("."),
        public,
    );
    serde_json::from_str(&claims).unwrap()
}

/// An `app_mention` event in `C0BUGS` as the Events API delivers it (in a thread when
/// `thread_ts` is set).
pub fn slack_mention(event_id: &str, ts: &str, thread_ts: Option<&str>, text: &str) -> Value {
    let mut event = json!({
        "type": "app_mention",
        "user": "U0HUMAN",
        "text": text,
        "ts": ts,
        "channel": "C0BUGS",
        "event_ts": ts,
    });
    if let Some(thread_ts) = thread_ts {
        event["thread_ts"] = json!(thread_ts);
    }
    json!({
        "token": "unused",
        "team_id": "T0TEAM",
        "api_app_id": "A0APP",
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": 1_700_000_000,
    })
}

/// Waits until the mock model received `n` requests (at most 30 s).
pub async fn model_requests(mock: &MockModelServer, n: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while mock.requests().len() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the model got {} requests, expected {n}",
            mock.requests().len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A project of `agent` with a Standard Webhooks channel `tickets` whose `[deliver]` posts
/// replies to `target` (its `Authorization` from `TICKETS_TOKEN`).
pub fn ticket_project(agent: &str, target: &str) -> Project {
    let project = project(agent);
    let manifest = format!(
        r#"kind = "webhook"
auth = [{{ hmac = {{ secret_env = "HOOK_WHSEC", provider = "standard-webhooks" }} }}]

[[routes]]
path = "/ticket"
message = "{{{{ body.message }}}}"
continuation = "{{{{ body.ticketId }}}}"
title = "Ticket {{{{ body.ticketId }}}}"
body_schema = {{ type = "object", required = ["ticketId", "message"], properties.ticketId = {{ type = "integer" }} }}

[deliver]
url = "{target}/api/{{{{ state.ticketId }}}}/comments"
headers = {{ Authorization = "Bearer ${{TICKETS_TOKEN}}" }}
max_attempts = 3
"#
    );
    write_files(
        project.path(),
        &[("agent/channels/tickets.toml", &manifest)],
    );
    project
}

/// A signed ticket delivery to the `tickets` channel of [`ticket_project`] served at `url`:
/// its status and answer.
pub async fn ticket(url: &str, id: &str, ticket: u32, message: &str) -> (u16, Value) {
    let body = json!({"ticketId": ticket, "message": message}).to_string();
    let ts = now();
    let headers = [
        ("webhook-id", id.to_string()),
        ("webhook-timestamp", ts.to_string()),
        ("webhook-signature", standard_signature(id, ts, &body)),
    ];
    deliver(
        &format!("{url}/v1/channels/tickets/ticket"),
        &body,
        &headers,
    )
    .await
}
