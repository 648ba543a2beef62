//! MCP connection manifests (`mcp-connections/<name>.toml`, `host-connections/<name>.toml`):
//! parsed and checked into [`McpServerConfig`]s; folio-agent opens the clients.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::report::{Report, is_slug, template_vars, toml_files};

/// How long a tool call may take before it is abandoned (default; `timeout_secs` overrides).
const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(300);
const MANIFEST_KEYS: &[&str] = &[
    "description",
    "url",
    "headers",
    "command",
    "args",
    "env",
    "agent",
    "timeout_secs",
    "oauth",
];

/// `mcp-connections/<name>.toml` or `host-connections/<name>.toml` as written: exactly one of
/// `url` (streamable HTTP), `command` (stdio) or `agent` (a peer agent; with `url` too, a peer on
/// another server, whose `url` is its `/v1/mcp`). String values may hold
/// `${NAME}` templates, resolved from the environment when the connection opens.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpConnectionManifest {
    /// What the server offers.
    pub description: Option<String>,
    /// A streamable HTTP endpoint (templated).
    pub url: Option<String>,
    /// Headers sent with every HTTP request (templated; only with `url`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A program speaking MCP on stdin/stdout: a name on `PATH` or a path relative to the
    /// manifest's folder.
    pub command: Option<String>,
    /// The program's arguments (templated; only with `command`).
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment variables of the program (templated; only with `command`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A peer agent, by slug: mounted in the same `folio serve`, or (with `url`) on another.
    pub agent: Option<String>,
    /// Seconds a tool call may take (default 300).
    #[schemars(range(min = 1))]
    pub timeout_secs: Option<u64>,
    /// How Folio identifies itself to the server's OAuth authorization server (only with
    /// `url`); without it Folio registers itself dynamically when the server asks for OAuth.
    pub oauth: Option<McpOAuth>,
}

/// The OAuth client identity of a streamable-HTTP connection (`[oauth]`). `client_id`,
/// `client_secret` and `private_key` are `${NAME}` templates; a secret or key is never written
/// in the manifest itself: it comes from the environment or from a file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpOAuth {
    /// How Folio obtains tokens (default `authorization_code`: a person authorizes once).
    #[serde(default)]
    pub grant: McpOAuthGrant,
    /// A client id registered with the authorization server out of band (used first).
    pub client_id: Option<String>,
    /// The secret of that client (`client_secret_basic` / `client_secret_post`, as the server
    /// says), as a `${NAME}` template.
    pub client_secret: Option<String>,
    /// A file holding that secret (relative to the manifest's folder), instead of
    /// `client_secret`.
    pub client_secret_file: Option<String>,
    /// The PEM private key (RSA or EC) that signs `private_key_jwt` client assertions (RFC 7523),
    /// as a `${NAME}` template; only with `grant = "client_credentials"`.
    pub private_key: Option<String>,
    /// A file holding that PEM key (relative to the manifest's folder), instead of
    /// `private_key`.
    pub private_key_file: Option<String>,
    /// The algorithm signing the client assertion (default `RS256`).
    pub signing_algorithm: Option<McpJwtAlgorithm>,
    /// The HTTPS URL of Folio's Client ID Metadata Document, used as the client id when the
    /// authorization server supports those documents.
    pub client_metadata_url: Option<String>,
    /// Scopes to request (default: the server's challenge, else its `scopes_supported`).
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// How an MCP connection obtains OAuth tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpOAuthGrant {
    /// A person authorizes in a browser (`folio mcp login`); tokens are refreshed after that.
    #[default]
    AuthorizationCode,
    /// Machine to machine: Folio authenticates as the client itself (its secret or a signed
    /// JWT) whenever the server asks for a token; no person is involved.
    ClientCredentials,
}

/// A JWS algorithm for `private_key_jwt` client assertions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum McpJwtAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (an RSA key).
    RS256,
    /// RSASSA-PKCS1-v1_5 with SHA-384 (an RSA key).
    RS384,
    /// RSASSA-PKCS1-v1_5 with SHA-512 (an RSA key).
    RS512,
    /// ECDSA on P-256 with SHA-256 (an EC key).
    ES256,
    /// ECDSA on P-384 with SHA-384 (an EC key).
    ES384,
}

impl McpOAuth {
    /// Why this `[oauth]` table cannot work, if it cannot (a field name and what to do).
    fn problem(&self) -> Option<String> {
        let client_credentials = self.grant == McpOAuthGrant::ClientCredentials;
        let secret = self.client_secret.is_some() || self.client_secret_file.is_some();
        let key = self.private_key.is_some() || self.private_key_file.is_some();
        for (field, value) in [
            ("client_secret", &self.client_secret),
            ("private_key", &self.private_key),
        ] {
            if value
                .as_deref()
                .is_some_and(|v| template_vars(v).is_empty())
            {
                return Some(format!(
                    "oauth.{field}: a secret must not be written in the manifest; write \"${{NAME}}\" and set NAME in the environment, or use oauth.{field}_file"
                ));
            }
        }
        if self.client_secret.is_some() && self.client_secret_file.is_some() {
            return Some(
                "oauth.client_secret_file: set client_secret or client_secret_file, not both"
                    .into(),
            );
        }
        if self.private_key.is_some() && self.private_key_file.is_some() {
            return Some(
                "oauth.private_key_file: set private_key or private_key_file, not both".into(),
            );
        }
        if secret && self.client_id.is_none() {
            return Some("oauth.client_secret: set oauth.client_id too (a secret belongs to a pre-registered client)".into());
        }
        if key && !client_credentials {
            return Some(
                "oauth.private_key: a signing key is used by grant = \"client_credentials\" only"
                    .into(),
            );
        }
        if self.signing_algorithm.is_some() && !key {
            return Some("oauth.signing_algorithm: set private_key or private_key_file too".into());
        }
        if client_credentials {
            if self.client_id.is_none() {
                return Some("oauth.client_id: grant = \"client_credentials\" needs the client id registered with the authorization server".into());
            }
            if secret == key {
                return Some("oauth: grant = \"client_credentials\" needs exactly one credential: client_secret / client_secret_file, or private_key / private_key_file".into());
            }
            if self.client_metadata_url.is_some() {
                return Some("oauth.client_metadata_url: only grant = \"authorization_code\" uses a Client ID Metadata Document".into());
            }
        }
        None
    }
}

/// How Folio reaches an MCP server. Values keep their `${NAME}` templates as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program (a name on `PATH`, or a path relative to the manifest's folder).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables (templated).
        env: BTreeMap<String, String>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint URL (templated).
        url: String,
        /// Headers sent with every request (templated).
        headers: BTreeMap<String, String>,
    },
    /// A peer agent whose `ask` the model calls: mounted in the same `folio serve` (called
    /// in-process), or on another server at `url` (its `/v1/mcp`, with `headers` as auth).
    Peer {
        /// The peer agent's slug.
        agent: String,
        /// The peer's `/v1/mcp` on another server (templated); `None`: the same server.
        url: Option<String>,
        /// Headers sent with every request to `url` (templated), e.g. its bearer token.
        headers: BTreeMap<String, String>,
    },
}

/// One connection manifest as discovered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The server name (the file name without `.toml`).
    pub name: String,
    /// What the server offers.
    pub description: Option<String>,
    /// How to reach it.
    pub transport: McpTransport,
    /// The manifest file.
    pub file: PathBuf,
    /// Per-call timeout.
    pub call_timeout: Duration,
    /// The OAuth client identity (`[oauth]`), when set.
    pub oauth: Option<McpOAuth>,
}

impl McpServerConfig {
    /// Every `${NAME}` the manifest references, sorted and deduplicated.
    pub fn template_vars(&self) -> Vec<String> {
        let mut names: Vec<String> = match &self.transport {
            McpTransport::Stdio { args, env, .. } => args
                .iter()
                .chain(env.values())
                .flat_map(|v| template_vars(v))
                .collect(),
            McpTransport::Http { url, headers } => std::iter::once(url)
                .chain(headers.values())
                .chain(self.oauth.iter().flat_map(|oauth| {
                    oauth
                        .client_id
                        .iter()
                        .chain(&oauth.client_secret)
                        .chain(&oauth.private_key)
                }))
                .flat_map(|v| template_vars(v))
                .collect(),
            McpTransport::Peer { url, headers, .. } => url
                .iter()
                .chain(headers.values())
                .flat_map(|v| template_vars(v))
                .collect(),
        };
        names.sort();
        names.dedup();
        names
    }
}

/// Reads every manifest of `folder` (`mcp-connections` or `host-connections`) in `agent_dir`.
pub(crate) fn discover_connections(
    agent_dir: &Path,
    folder: &str,
    report: &mut Report,
) -> Vec<McpServerConfig> {
    let mut servers = Vec::new();
    for file in toml_files(&agent_dir.join(folder)) {
        let name = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !is_slug(&name) || name.contains("__") {
            report.error(
                &file,
                format!("name: \"{name}\" must match [A-Za-z0-9][A-Za-z0-9_-]* without \"__\" (it becomes mcp__{name}__<tool>)"),
            );
            continue;
        }
        let Some(manifest) = report.parse::<McpConnectionManifest>(&file, MANIFEST_KEYS) else {
            continue;
        };
        // `agent` with `url` is one transport: a peer on another server.
        let chosen = [
            manifest.url.is_some() && manifest.agent.is_none(),
            manifest.command.is_some(),
            manifest.agent.is_some(),
        ];
        if chosen.iter().filter(|c| **c).count() != 1 {
            report.error(
                &file,
                "transport: set exactly one of url (streamable HTTP), command (stdio) or agent (a peer agent; add url for a peer on another server)".into(),
            );
            continue;
        }
        if manifest.command.is_none() && (!manifest.args.is_empty() || !manifest.env.is_empty()) {
            report.error(
                &file,
                "args/env: only a stdio connection (command) takes args and env".into(),
            );
            continue;
        }
        if manifest.url.is_none() && !manifest.headers.is_empty() {
            report.error(
                &file,
                "headers: only a streamable HTTP connection (url) takes headers".into(),
            );
            continue;
        }
        if manifest.url.is_none() && manifest.oauth.is_some() {
            report.error(
                &file,
                "oauth: only a streamable HTTP connection (url) takes oauth".into(),
            );
            continue;
        }
        if let Some(problem) = manifest.oauth.as_ref().and_then(McpOAuth::problem) {
            report.error(&file, problem);
            continue;
        }
        if manifest.timeout_secs == Some(0) {
            report.error(&file, "timeout_secs: must be at least 1".into());
            continue;
        }
        let transport = match (manifest.url, manifest.command, manifest.agent) {
            (url, _, Some(agent)) => McpTransport::Peer {
                agent,
                url,
                headers: manifest.headers,
            },
            (Some(url), _, None) => McpTransport::Http {
                url,
                headers: manifest.headers,
            },
            (None, Some(command), None) => McpTransport::Stdio {
                command,
                args: manifest.args,
                env: manifest.env,
            },
            (None, None, None) => continue,
        };
        let config = McpServerConfig {
            name,
            description: manifest.description,
            transport,
            file: file.clone(),
            call_timeout: manifest
                .timeout_secs
                .map_or(DEFAULT_CALL_TIMEOUT, Duration::from_secs),
            oauth: manifest.oauth,
        };
        for var in config.template_vars() {
            if std::env::var_os(&var).is_none() {
                report.warning(
                    &file,
                    format!("${{{var}}} is not set; the connection will fail to open until it is"),
                );
            }
        }
        servers.push(config);
    }
    servers
}
