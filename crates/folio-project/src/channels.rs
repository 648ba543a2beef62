//! Channel manifests (`channels/<id>.toml`): typed per kind (`webhook`, `github`, `slack`),
//! parsed strictly (unknown keys are errors naming file, line and the nearest valid key) and
//! checked; the server (folio-channels) runs them.

use std::collections::BTreeMap;
use std::path::Path;

use folio_protocol::Admission;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::naming::{nearest_key, slug_problem};
use crate::report::{Report, toml_files};
use crate::schema_check::compile_schema;

/// The channel kinds Folio knows.
const CHANNEL_KINDS: &[&str] = &["webhook", "github", "slack"];

/// A channel as discovery found it: its id (the file name), kind and typed manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelSummary {
    /// The file name: the channel id.
    pub id: String,
    /// `webhook`, `github` or `slack`.
    pub kind: String,
    /// The manifest.
    pub manifest: ChannelManifest,
}

/// `channels/<id>.toml`: one of the channel kinds, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ChannelManifest {
    /// Signed JSON POSTs mapped to sessions by templates.
    Webhook(WebhookChannel),
    /// GitHub webhooks: pull requests and comments wake the agent; replies go back to the PR.
    Github(GithubChannel),
    /// The Slack Events API: mentions, DMs and watched channels; replies in the thread.
    Slack(SlackChannel),
}

impl ChannelManifest {
    /// The manifest's auth chain (the kind's default when none is written).
    pub fn auth(&self) -> Vec<AuthRule> {
        let (written, default) = match self {
            ChannelManifest::Webhook(c) => (&c.auth, vec![AuthRule::LocalDevStrict]),
            ChannelManifest::Github(c) => (
                &c.auth,
                vec![AuthRule::Hmac(HmacAuth {
                    secret_env: c
                        .secret_env
                        .clone()
                        .unwrap_or_else(|| "GITHUB_WEBHOOK_SECRET".into()),
                    provider: HmacProvider::Github,
                    header: None,
                    scheme: None,
                })],
            ),
            ChannelManifest::Slack(c) => (
                &c.auth,
                vec![AuthRule::Hmac(HmacAuth {
                    secret_env: c.env_name("SLACK_SIGNING_SECRET"),
                    provider: HmacProvider::Slack,
                    header: None,
                    scheme: None,
                })],
            ),
        };
        if written.is_empty() {
            default
        } else {
            written.clone()
        }
    }
}

/// One link of a channel's auth chain; the first that admits the request wins.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AuthRule {
    /// Direct loopback callers without proxy headers.
    LocalDevStrict,
    /// Anyone (development only).
    AllowAll,
    /// `Authorization: Bearer <token>`, the token read from an environment variable.
    Bearer(BearerAuth),
    /// A provider signature over the raw body (HMAC-SHA256).
    Hmac(HmacAuth),
}

/// `{ bearer = { token_env = "NAME" } }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BearerAuth {
    /// The environment variable holding the token.
    pub token_env: String,
}

/// `{ hmac = { secret_env, provider?, header?, scheme? } }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HmacAuth {
    /// The environment variable holding the shared secret (`whsec_…` for Standard Webhooks).
    pub secret_env: String,
    /// Whose signature format: `generic` (default), `github`, `slack`, `standard-webhooks`.
    #[serde(default)]
    pub provider: HmacProvider,
    /// `generic` only: the header carrying the hex signature (e.g. `X-Signature-256`).
    pub header: Option<String>,
    /// `generic` only: the prefix before the hex digest (e.g. `sha256=`).
    pub scheme: Option<String>,
}

/// The signature formats [`HmacAuth`] checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HmacProvider {
    /// `header: <scheme><hex HMAC-SHA256 of the body>`.
    #[default]
    Generic,
    /// `X-Hub-Signature-256: sha256=<hex>`.
    Github,
    /// `X-Slack-Signature: v0=<hex of v0:timestamp:body>`, 5-minute window.
    Slack,
    /// `webhook-id` / `webhook-timestamp` / `webhook-signature` (`v1,<base64>`, several allowed).
    StandardWebhooks,
}

/// `kind = "webhook"`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookChannel {
    /// Always `webhook`.
    #[schemars(skip)]
    #[serde(default)]
    pub kind: String,
    /// The auth chain (default `["local-dev-strict"]`).
    #[serde(default)]
    pub auth: Vec<AuthRule>,
    /// The header naming a delivery for deduplication (default: `webhook-id`, then
    /// `Idempotency-Key`, then `X-Delivery-Id`; none → never deduplicated).
    pub id_header: Option<String>,
    /// `POST /v1/channels/<id><path>` routes.
    #[serde(default)]
    pub routes: Vec<WebhookRoute>,
    /// POST each reply somewhere.
    pub deliver: Option<DeliverConfig>,
}

/// `[[routes]]` of a webhook channel.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookRoute {
    /// The path under the channel, starting with `/`.
    pub path: String,
    /// Template of the message (over `body`, `headers`).
    pub message: String,
    /// Template of the continuation key: same key → same session (default: a new session per
    /// delivery).
    pub continuation: Option<String>,
    /// Template of a new session's title.
    pub title: Option<String>,
    /// What a busy session does with the message (default `coalesce`).
    pub admission: Option<Admission>,
    /// JSON Schema the body must match (`400` naming the field otherwise).
    pub body_schema: Option<Value>,
}

/// `[deliver]`: POST the reply of every turn.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeliverConfig {
    /// Template of the URL (over `state` — the body that opened the session —, `reply`,
    /// `session_id`).
    pub url: String,
    /// Headers; values may hold `${NAME}` environment templates.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Template of the JSON body (default `{"text": {{ reply | tojson }}}`).
    pub body: Option<String>,
    /// Attempts before giving up (default 5).
    #[schemars(range(min = 1))]
    pub max_attempts: Option<u32>,
}

/// `kind = "github"`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GithubChannel {
    /// Always `github`.
    #[schemars(skip)]
    #[serde(default)]
    pub kind: String,
    /// The auth chain (default: the GitHub signature with `secret_env`).
    #[serde(default)]
    pub auth: Vec<AuthRule>,
    /// The environment variable holding the webhook secret (default `GITHUB_WEBHOOK_SECRET`).
    pub secret_env: Option<String>,
    /// The bot's login: its own comments never wake it, and comments wake it by `@bot_name`.
    pub bot_name: Option<String>,
    /// Post each reply as a PR comment (default true).
    pub deliver_replies: Option<bool>,
    /// Add a 👀 reaction while working (default true).
    pub reactions: Option<bool>,
    /// Report each turn as a check run on the head SHA (default false).
    pub check_runs: Option<bool>,
    /// The check run's name, title, summary and details link (templates).
    pub check: Option<GithubCheck>,
    /// The comment posted when a session's first wake has no head SHA to hang a check run on.
    pub banner: Option<GithubBanner>,
    /// Check out the PR's head into the session workspace's `repo/` before each turn (default
    /// true; the clone URL is the payload's `repository.clone_url`).
    pub checkout: Option<bool>,
    /// The GitHub API (default `https://api.github.com`).
    pub api_base_url: Option<String>,
    /// The environment variable holding the API token (default `GITHUB_TOKEN`); unused when
    /// `[app]` is set.
    pub token_env: Option<String>,
    /// Authenticate as a GitHub App installation instead of with a token.
    pub app: Option<GithubApp>,
}

/// `[check]` of a GitHub channel: minijinja templates over `session_id`, `session_url`,
/// `base_url` (the agent's served URL), `channel`, `repo`, `number`, `head_sha`, `bot_name` (the bot, else `folio`), and, from
/// `title` on, `name` (the rendered name); `summary` also sees `reply` (the turn's reply, or why
/// it failed) and `conclusion` (`success` or `failure`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GithubCheck {
    /// The check run's name (default `{{ bot_name }}`).
    pub name: Option<String>,
    /// The output title of the completed run (default `{{ name }}`).
    pub title: Option<String>,
    /// The output summary of the completed run, Markdown (default
    /// `[View agent]({{ session_url }})` and the reply).
    pub summary: Option<String>,
    /// The Details link (default `{{ session_url }}`: the session's playground).
    pub details_url: Option<String>,
}

/// `[banner]` of a GitHub channel: a PR comment that stands in for the check run when a
/// session's first wake is a comment (no head SHA yet, so no check run can be made).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GithubBanner {
    /// Post it (default true when `check_runs` is on).
    pub enabled: Option<bool>,
    /// The comment, a minijinja template over the `[check]` variables (default
    /// `**{{ bot_name }}** is working on this: [View agent]({{ session_url }})`).
    pub body: Option<String>,
}

impl GithubChannel {
    /// The templates written in the manifest, by field (`check.summary`, `banner.body`).
    pub fn templates(&self) -> Vec<(&'static str, &str)> {
        let check = self.check.as_ref();
        let banner = self.banner.as_ref();
        [
            ("check.name", check.and_then(|c| c.name.as_deref())),
            ("check.title", check.and_then(|c| c.title.as_deref())),
            ("check.summary", check.and_then(|c| c.summary.as_deref())),
            (
                "check.details_url",
                check.and_then(|c| c.details_url.as_deref()),
            ),
            ("banner.body", banner.and_then(|b| b.body.as_deref())),
        ]
        .into_iter()
        .filter_map(|(field, source)| Some((field, source?)))
        .collect()
    }
}

/// Whether `source` compiles as a minijinja template (the channels' template language).
fn check_template(source: &str) -> Result<(), minijinja::Error> {
    minijinja::Environment::new()
        .template_from_str(source)
        .map(|_| ())
}

/// `[app]` of a GitHub channel: API calls use an installation token, bought with a JWT signed
/// by the App's private key (RS256) and cached until shortly before it expires.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GithubApp {
    /// The App's id (the JWT's issuer).
    pub id: u64,
    /// The environment variable holding the App's private key, PEM (default
    /// `GITHUB_APP_PRIVATE_KEY`).
    pub private_key_env: Option<String>,
    /// The installation to act as (default: the `installation.id` of each delivery).
    pub installation_id: Option<u64>,
}

/// `kind = "slack"`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlackChannel {
    /// Always `slack`.
    #[schemars(skip)]
    #[serde(default)]
    pub kind: String,
    /// The auth chain (default: the Slack signature with the signing secret).
    #[serde(default)]
    pub auth: Vec<AuthRule>,
    /// Prefix of the environment variables: `TRIAGE` reads `TRIAGE_SLACK_BOT_TOKEN` and
    /// `TRIAGE_SLACK_SIGNING_SECRET`.
    #[serde(rename = "envPrefix")]
    pub env_prefix: Option<String>,
    /// `post` (default: a status line, then the answer) or `stream` (update as text arrives).
    pub reply: Option<SlackReplyMode>,
    /// Channel ids where every top-level post wakes the agent.
    #[serde(default)]
    pub watch_channels: Vec<String>,
    /// The Slack Web API (default `https://slack.com/api`).
    pub api_base_url: Option<String>,
}

impl SlackChannel {
    /// The environment variable `name` under the channel's `envPrefix`.
    pub fn env_name(&self, name: &str) -> String {
        match &self.env_prefix {
            Some(prefix) => format!("{prefix}_{name}"),
            None => name.to_string(),
        }
    }
}

/// How a Slack channel answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SlackReplyMode {
    /// One message at the end, with a status line while working.
    #[default]
    Post,
    /// One message updated as text arrives.
    Stream,
}

/// Every channel manifest in `agent_dir/channels`, parsed and checked.
pub(crate) fn discover_channels(agent_dir: &Path, findings: &mut Report) -> Vec<ChannelSummary> {
    let mut channels = Vec::new();
    for path in toml_files(&agent_dir.join("channels")) {
        let id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if slug_problem(&id).is_some() {
            findings.error(
                &path,
                format!("name: \"{id}\" is not a valid channel id (use [A-Za-z0-9][A-Za-z0-9_-]*)"),
            );
            continue;
        }
        let Some(manifest) = parse_channel(&path, findings) else {
            continue;
        };
        check_channel(&manifest, &path, findings);
        let kind = match &manifest {
            ChannelManifest::Webhook(_) => "webhook",
            ChannelManifest::Github(_) => "github",
            ChannelManifest::Slack(_) => "slack",
        };
        channels.push(ChannelSummary {
            id,
            kind: kind.to_string(),
            manifest,
        });
    }
    channels
}

/// Reads the `kind`, then parses the file strictly as that kind (so errors keep their line).
fn parse_channel(path: &Path, findings: &mut Report) -> Option<ChannelManifest> {
    #[derive(Deserialize)]
    struct Kind {
        kind: Option<Value>,
    }
    let kind = findings.parse_optional::<Kind>(path)?.kind;
    match kind.as_ref().map(|k| k.as_str()) {
        Some(Some("webhook")) => findings.parse_optional(path).map(ChannelManifest::Webhook),
        Some(Some("github")) => findings.parse_optional(path).map(ChannelManifest::Github),
        Some(Some("slack")) => findings.parse_optional(path).map(ChannelManifest::Slack),
        Some(Some(kind)) => {
            let hint = nearest_key(kind, CHANNEL_KINDS)
                .map(|near| format!(" (did you mean \"{near}\"?)"))
                .unwrap_or_default();
            findings.error(
                path,
                format!(
                    "kind: unknown channel kind \"{kind}\"{hint}; valid kinds: {}",
                    CHANNEL_KINDS.join(", ")
                ),
            );
            None
        }
        Some(None) | None => {
            findings.error(
                path,
                format!("kind: missing (one of {})", CHANNEL_KINDS.join(", ")),
            );
            None
        }
    }
}

/// The rules serde cannot express: route paths, schemas, HMAC headers, URLs.
fn check_channel(manifest: &ChannelManifest, path: &Path, findings: &mut Report) {
    for rule in manifest.auth() {
        if let AuthRule::Hmac(hmac) = rule
            && hmac.provider == HmacProvider::Generic
            && hmac.header.is_none()
        {
            findings.error(
                path,
                "auth.hmac.header: a generic hmac rule needs the header carrying the signature (e.g. header = \"X-Signature-256\"), or set provider".into(),
            );
        }
    }
    let api_base_url = match manifest {
        ChannelManifest::Webhook(webhook) => {
            check_routes(webhook, path, findings);
            None
        }
        ChannelManifest::Github(github) => {
            for (field, source) in github.templates() {
                if let Err(err) = check_template(source) {
                    findings.error(path, format!("{field}: {err} (fix the template)"));
                }
            }
            github.api_base_url.as_deref()
        }
        ChannelManifest::Slack(slack) => slack.api_base_url.as_deref(),
    };
    if let Some(url) = api_base_url
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        findings.error(
            path,
            format!("api_base_url: \"{url}\" must be an http:// or https:// URL"),
        );
    }
}

fn check_routes(webhook: &WebhookChannel, path: &Path, findings: &mut Report) {
    if webhook.routes.is_empty() {
        findings.error(
            path,
            "routes: a webhook channel needs at least one [[routes]] entry (path and message)"
                .into(),
        );
    }
    let mut seen = Vec::new();
    for (n, route) in webhook.routes.iter().enumerate() {
        let shaped = route.path.starts_with('/')
            && route.path[1..].split('/').all(|segment| {
                !segment.is_empty()
                    && segment
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            });
        if !shaped {
            findings.error(
                path,
                format!(
                    "routes[{n}].path: \"{}\" must be /segment[/segment…] of letters, digits, - _ .",
                    route.path
                ),
            );
        }
        if route.path == "/deliveries" {
            findings.error(
                path,
                format!("routes[{n}].path: \"/deliveries\" is reserved (GET lists deliveries)"),
            );
        }
        if seen.contains(&route.path) {
            findings.error(
                path,
                format!(
                    "routes[{n}].path: \"{}\" is declared twice (one route per path)",
                    route.path
                ),
            );
        }
        seen.push(route.path.clone());
        if let Some(schema) = &route.body_schema
            && let Err(err) = compile_schema(schema)
        {
            findings.error(path, format!("routes[{n}].body_schema: {err}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn diagnostics(text: &str) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("agent");
        std::fs::create_dir_all(agent.join("channels")).unwrap();
        std::fs::write(agent.join("channels").join("c.toml"), text).unwrap();
        let mut report = Report::new(dir.path());
        discover_channels(&agent, &mut report);
        report.diagnostics.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn unknown_keys_name_file_line_and_field() {
        assert_eq!(
            diagnostics("kind = \"github\"\nbot_nme = \"x\"\n"),
            [
                "error: agent/channels/c.toml:2: column 1: unknown key `bot_nme` (did you mean `bot_name`?)"
            ]
        );
        assert_eq!(
            diagnostics(
                "kind = \"webhook\"\nauth = [{ hmac = { secret_env = \"S\", header = \"X\", shceme = \"a\" } }]\n[[routes]]\npath = \"/a\"\nmessage = \"m\"\n"
            ),
            [
                "error: agent/channels/c.toml:2: column 52: unknown key `shceme` (did you mean `scheme`?)"
            ]
        );
        assert_eq!(
            diagnostics("kind = \"slak\"\n"),
            [
                "error: agent/channels/c.toml: kind: unknown channel kind \"slak\" (did you mean \"slack\"?); valid kinds: webhook, github, slack"
            ]
        );
    }

    #[test]
    fn routes_and_schemas_are_checked() {
        assert_eq!(
            diagnostics(
                "kind = \"webhook\"\n[[routes]]\npath = \"ticket\"\nmessage = \"m\"\nbody_schema = { type = \"objekt\" }\n[[routes]]\npath = \"/deliveries\"\nmessage = \"m\"\n"
            )
            .len(),
            3
        );
        assert_eq!(diagnostics("kind = \"webhook\"\n").len(), 1);
        assert_eq!(
            diagnostics(
                "kind = \"webhook\"\nauth = [{ hmac = { secret_env = \"S\" } }]\n[[routes]]\npath = \"/a\"\nmessage = \"m\"\n"
            ),
            [
                "error: agent/channels/c.toml: auth.hmac.header: a generic hmac rule needs the header carrying the signature (e.g. header = \"X-Signature-256\"), or set provider"
            ]
        );
    }

    #[test]
    fn github_templates_are_checked() {
        assert_eq!(
            diagnostics(
                "kind = \"github\"\n[check]\nname = \"review {{ repo }}\"\nsummary = \"{{ reply \"\n[banner]\nbody = \"{% if x %}\"\n"
            ),
            [
                "error: agent/channels/c.toml: check.summary: syntax error: unexpected end of input, expected end of variable block (in <string>:1) (fix the template)",
                "error: agent/channels/c.toml: banner.body: syntax error: unexpected end of input, expected end of block (in <string>:1) (fix the template)",
            ]
        );
        assert_eq!(
            diagnostics("kind = \"github\"\n[check]\ntitel = \"x\"\n"),
            [
                "error: agent/channels/c.toml:3: column 1: unknown key `titel` (did you mean `title`?)"
            ]
        );
    }

    #[test]
    fn typed_manifests_parse() {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("agent");
        std::fs::create_dir_all(agent.join("channels")).unwrap();
        std::fs::write(
            agent.join("channels").join("triage.toml"),
            "kind = \"slack\"\nenvPrefix = \"TRIAGE\"\nreply = \"stream\"\n",
        )
        .unwrap();
        let mut report = Report::new(dir.path());
        let found = discover_channels(&agent, &mut report);
        assert!(report.diagnostics.is_empty());
        let ChannelManifest::Slack(slack) = &found[0].manifest else {
            panic!("not slack: {found:?}");
        };
        assert_eq!(slack.reply, Some(SlackReplyMode::Stream));
        assert_eq!(
            found[0].manifest.auth(),
            [AuthRule::Hmac(HmacAuth {
                secret_env: "TRIAGE_SLACK_SIGNING_SECRET".into(),
                provider: HmacProvider::Slack,
                header: None,
                scheme: None,
            })]
        );
    }
}
