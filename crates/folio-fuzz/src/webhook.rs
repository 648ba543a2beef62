//! Channel webhooks: a delivery's headers and body through the auth chain (GitHub, Slack,
//! generic and Standard Webhooks HMAC signatures, bearer tokens) and the channel's reading of
//! the body (GitHub events, Slack events, a webhook route's schema and templates).

use std::sync::{Arc, OnceLock};

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use folio_channels::Env;
use folio_channels::inspect::{GithubReader, SlackReader, WebhookReader, admit};
use folio_project::{
    AuthRule, BearerAuth, GithubChannel, HmacAuth, HmacProvider, SlackChannel, WebhookChannel,
};
use serde_json::Value;

/// The server's clock in every run, so signed timestamps near it are fresh.
const NOW: i64 = 1_767_225_600;

/// The secret every rule reads (`FUZZ_SECRET`); Standard Webhooks' is `whsec_` + base64.
const SECRET: &str = "whsec_c2VjcmV0LWtleS1vZi10aGUtZnV6emVy";

/// A delivery: header lines (`name: value`) up to an empty line, then the body. The first
/// byte picks the auth rule and the reading.
pub fn webhook(data: &[u8]) {
    let (pick, rest) = crate::selector(data);
    let (headers, body) = delivery(rest);
    let readers = readers();
    let rule = &readers.rules[usize::from(pick) % readers.rules.len()];
    let admitted = admit(
        std::slice::from_ref(rule),
        &headers,
        body,
        NOW,
        &readers.env,
    );
    if let Err(refused) = admitted {
        let _ = refused.to_string();
    }
    let Ok(json) = serde_json::from_slice::<Value>(body) else {
        return;
    };
    match pick / 8 % 3 {
        0 => {
            let event = headers
                .get("x-github-event")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("pull_request");
            let _ = readers.github.read(event, &json);
        }
        1 => {
            let _ = readers.slack.read(&headers, &json);
        }
        _ => {
            let _ = readers.webhook.read(0, &headers, &json);
        }
    }
}

/// Splits `data` into headers and body; lines that are not a valid header are skipped.
fn delivery(data: &[u8]) -> (HeaderMap, &[u8]) {
    let (head, body) = match data.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&data[..at], &data[at + 2..]),
        None => (&data[..0], data),
    };
    let mut headers = HeaderMap::new();
    for line in head.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let name = HeaderName::from_bytes(&line[..colon]);
        let value = HeaderValue::from_bytes(line[colon + 1..].trim_ascii());
        if let (Ok(name), Ok(value)) = (name, value) {
            headers.append(name, value);
        }
    }
    (headers, body)
}

struct Readers {
    rules: Vec<AuthRule>,
    env: Env,
    github: GithubReader,
    slack: SlackReader,
    webhook: WebhookReader,
}

/// The channels of every run, built once (their HTTP clients are not cheap).
fn readers() -> &'static Readers {
    static READERS: OnceLock<Readers> = OnceLock::new();
    READERS.get_or_init(|| {
        let env: Env = Arc::new(|name: &str| (name == "FUZZ_SECRET").then(|| SECRET.to_string()));
        let hmac = |provider, header: Option<&str>, scheme: Option<&str>| {
            AuthRule::Hmac(HmacAuth {
                provider,
                secret_env: "FUZZ_SECRET".into(),
                header: header.map(String::from),
                scheme: scheme.map(String::from),
            })
        };
        let rules = vec![
            hmac(HmacProvider::Github, None, None),
            hmac(HmacProvider::Slack, None, None),
            hmac(HmacProvider::StandardWebhooks, None, None),
            hmac(HmacProvider::Generic, Some("x-signature"), Some("sha256=")),
            AuthRule::Bearer(BearerAuth {
                token_env: "FUZZ_SECRET".into(),
            }),
            AuthRule::LocalDevStrict,
            AuthRule::AllowAll,
        ];
        let github: GithubChannel = toml::from_str("bot_name = \"folio-bot\"\n").expect("github");
        let slack: SlackChannel = toml::from_str("watch_channels = [\"C1\"]\n").expect("slack");
        let webhook: WebhookChannel = toml::from_str(WEBHOOK).expect("webhook");
        Readers {
            github: GithubReader::new(github, env.clone()),
            slack: SlackReader::new(slack, env.clone()),
            webhook: WebhookReader::new("fuzz", &webhook).expect("the webhook compiles"),
            rules,
            env,
        }
    })
}

/// A webhook route with a body schema and templates reading the body and headers.
const WEBHOOK: &str = r#"
[[routes]]
path = "/tickets"
message = "Ticket {{ body.ticket.id }}: {{ body.ticket.title | default('untitled') }} from {{ headers['x-sender'] }}{% for tag in body.tags %} #{{ tag }}{% endfor %}"
continuation = "{{ body.ticket.id }}"
title = "{{ body.ticket.title | upper }}"

[routes.body_schema]
type = "object"
required = ["ticket"]
properties.ticket.type = "object"
properties.ticket.required = ["id"]
properties.ticket.properties.id.type = ["string", "integer"]
properties.tags.type = "array"
"#;
