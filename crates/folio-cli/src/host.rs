//! `folio host …`: the host API from a shell tool or hook. It reads `FOLIO_HOST_URL` and
//! `FOLIO_HOST_TOKEN` (set by Folio for the processes of a session's tool calls and hooks),
//! sends one request, and prints the answer's JSON on stdout; a refused call prints the error
//! body and exits 1.

use std::io::Read as _;
use std::process::ExitCode;

use anyhow::{Context, bail};
use bytes::Bytes;
use folio_protocol::{HOST_TOKEN_ENV, HOST_URL_ENV, StorageScope};
use http_body_util::{BodyExt, Full};
use serde_json::{Map, Value, json};

use crate::serve::runtime;

/// What `folio host` does.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum HostCommand {
    /// Who the token acts for: session, call, principal, agent.
    Whoami,
    /// Storage: small JSON values by key, per session, agent or principal.
    #[command(subcommand)]
    Kv(KvCommand),
    /// The session's files (the turn's FileSystem, confined like the model's file tools).
    #[command(subcommand)]
    Files(FilesCommand),
    /// Reminders that wake the session later.
    #[command(subcommand)]
    Reminder(ReminderCommand),
    /// The agent's artifacts.
    #[command(subcommand)]
    Artifact(ArtifactCommand),
    /// Tools of the agent's host connections (agent/host-connections/).
    #[command(subcommand)]
    Connection(ConnectionCommand),
    /// Span attributes, metric points and log lines.
    #[command(subcommand)]
    Telemetry(TelemetryCommand),
}

/// `folio host kv …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum KvCommand {
    /// Print one entry (`{"entry": null}` when there is none).
    Get {
        /// The key.
        key: String,
        /// session (default), agent or principal.
        #[arg(long, default_value = "session")]
        scope: Scope,
    },
    /// Write one entry; VALUE is JSON (`3`, `"text"`, `{"a":1}`) or else taken as a string.
    Put {
        /// The key.
        key: String,
        /// The value.
        value: String,
        /// session (default), agent or principal.
        #[arg(long, default_value = "session")]
        scope: Scope,
        /// Write only when the entry is at this version (0: only when there is none).
        #[arg(long)]
        if_version: Option<u64>,
        /// Expire after this long (90s, 15m, 2h, 1d).
        #[arg(long)]
        ttl: Option<String>,
    },
    /// Remove one entry.
    Delete {
        /// The key.
        key: String,
        /// session (default), agent or principal.
        #[arg(long, default_value = "session")]
        scope: Scope,
        /// Remove only when the entry is at this version.
        #[arg(long)]
        if_version: Option<u64>,
    },
    /// List entries in key order.
    List {
        /// Only keys that start with this.
        #[arg(long)]
        prefix: Option<String>,
        /// session (default), agent or principal.
        #[arg(long, default_value = "session")]
        scope: Scope,
        /// Only keys after this one (the previous page's `next`).
        #[arg(long)]
        after: Option<String>,
        /// At most this many.
        #[arg(long)]
        limit: Option<u32>,
    },
}

/// A storage scope on the command line.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Scope {
    /// The session's own entries.
    Session,
    /// Every session of the agent.
    Agent,
    /// The principal's sessions of the agent.
    Principal,
}

impl From<Scope> for StorageScope {
    fn from(scope: Scope) -> Self {
        match scope {
            Scope::Session => StorageScope::Session,
            Scope::Agent => StorageScope::Agent,
            Scope::Principal => StorageScope::Principal,
        }
    }
}

/// `folio host files …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum FilesCommand {
    /// Print a file's lines (as the Read tool does).
    Read {
        /// The path.
        path: String,
        /// First line (0-based).
        #[arg(long)]
        offset: Option<u64>,
        /// How many lines.
        #[arg(long)]
        limit: Option<u64>,
    },
    /// Write a file: the contents from --contents, or else stdin.
    Write {
        /// The path.
        path: String,
        /// The contents (default: read stdin).
        #[arg(long)]
        contents: Option<String>,
    },
    /// List a directory.
    List {
        /// The directory (default: the root).
        path: Option<String>,
    },
    /// Paths matching a glob pattern.
    Glob {
        /// The pattern (`**/*.md`).
        pattern: String,
        /// Where to look.
        #[arg(long)]
        path: Option<String>,
    },
    /// Lines matching a regular expression.
    Grep {
        /// The pattern.
        pattern: String,
        /// Where to look.
        #[arg(long)]
        path: Option<String>,
    },
    /// Remove a file.
    Delete {
        /// The path.
        path: String,
    },
}

/// `folio host reminder …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ReminderCommand {
    /// Set a reminder: give --in or --at.
    Set {
        /// What the reminder delivers to the session.
        message: String,
        /// How long from now (90s, 15m, 2h, 1d).
        #[arg(long = "in")]
        after: Option<String>,
        /// When (RFC 3339).
        #[arg(long)]
        at: Option<String>,
    },
    /// The session's pending reminders.
    List,
    /// Cancel a pending reminder.
    Cancel {
        /// `rem_…`.
        reminder_id: String,
    },
}

/// `folio host artifact …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ArtifactCommand {
    /// Tag (upsert by kind and key) an artifact of the session.
    Put {
        /// The upsert key.
        key: String,
        /// A title.
        #[arg(long)]
        title: String,
        /// The kind (artifacts.toml).
        #[arg(long)]
        kind: Option<String>,
        /// Structured data, JSON.
        #[arg(long)]
        data: Option<String>,
        /// Text contents.
        #[arg(long)]
        contents: Option<String>,
    },
    /// One artifact, by id or by --key (and --kind).
    Get {
        /// `art_…`.
        artifact_id: Option<String>,
        /// The upsert key instead of an id.
        #[arg(long)]
        key: Option<String>,
        /// The kind, with --key.
        #[arg(long)]
        kind: Option<String>,
    },
    /// The agent's artifacts.
    List {
        /// Only this kind.
        #[arg(long)]
        kind: Option<String>,
        /// Only the session's.
        #[arg(long)]
        session_only: bool,
    },
}

/// `folio host connection …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ConnectionCommand {
    /// The host connections and their tools.
    List,
    /// Call a tool of a host connection; ARGUMENTS is a JSON object.
    Call {
        /// The connection.
        connection: String,
        /// The tool.
        tool: String,
        /// Its arguments (JSON object).
        #[arg(default_value = "{}")]
        arguments: String,
    },
}

/// `folio host telemetry …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum TelemetryCommand {
    /// Set attributes on the calling tool call's span: NAME=VALUE …
    Attr {
        /// `name=value` pairs (a value that parses as JSON is a number or boolean).
        #[arg(required = true)]
        pairs: Vec<String>,
    },
    /// Record a metric point (a counter unless --histogram).
    Metric {
        /// Dotted lowercase name (`app.documents.indexed`).
        name: String,
        /// The value.
        value: f64,
        /// A histogram point instead of a counter increment.
        #[arg(long)]
        histogram: bool,
        /// The unit (UCUM: s, ms, By, {document}).
        #[arg(long)]
        unit: Option<String>,
    },
    /// Write a log line about the session.
    Log {
        /// The line.
        message: String,
        /// info (default), warn or error.
        #[arg(long, default_value = "info")]
        level: String,
    },
}

/// Runs `folio host …`.
pub(crate) fn host(command: HostCommand) -> anyhow::Result<ExitCode> {
    let (method, path, body) = request_of(command)?;
    runtime()?.block_on(async {
        let (status, answer) = send(method, &path, body).await?;
        println!("{}", serde_json::to_string_pretty(&answer)?);
        if (200..300).contains(&status) {
            Ok(ExitCode::SUCCESS)
        } else {
            let message = answer
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the host API refused the call");
            eprintln!("error: {message} ({status})");
            Ok(ExitCode::FAILURE)
        }
    })
}

/// A value given on the command line: JSON when it parses, else the text as a string.
fn loose_json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

fn strict_json(what: &str, text: &str) -> anyhow::Result<Value> {
    serde_json::from_str(text).with_context(|| format!("{what}: not JSON: {text}"))
}

/// The method, route and body of a command.
fn request_of(command: HostCommand) -> anyhow::Result<(&'static str, String, Option<Value>)> {
    let post = |route: &str, body: Value| Ok(("POST", format!("/v1/host/{route}"), Some(body)));
    match command {
        HostCommand::Whoami => Ok(("GET", "/v1/host/whoami".to_string(), None)),
        HostCommand::Kv(KvCommand::Get { key, scope }) => post(
            "kv/get",
            json!({"scope": StorageScope::from(scope), "key": key}),
        ),
        HostCommand::Kv(KvCommand::Put {
            key,
            value,
            scope,
            if_version,
            ttl,
        }) => {
            let ttl_seconds = match ttl {
                Some(ttl) => Some(
                    folio_project::parse_delay(&ttl)
                        .map_err(|err| anyhow::anyhow!("--ttl: {err}"))?
                        .num_seconds(),
                ),
                None => None,
            };
            post(
                "kv/put",
                json!({"scope": StorageScope::from(scope), "key": key, "value": loose_json(&value), "ifVersion": if_version, "ttlSeconds": ttl_seconds}),
            )
        }
        HostCommand::Kv(KvCommand::Delete {
            key,
            scope,
            if_version,
        }) => post(
            "kv/delete",
            json!({"scope": StorageScope::from(scope), "key": key, "ifVersion": if_version}),
        ),
        HostCommand::Kv(KvCommand::List {
            prefix,
            scope,
            after,
            limit,
        }) => post(
            "kv/list",
            json!({"scope": StorageScope::from(scope), "prefix": prefix, "after": after, "limit": limit}),
        ),
        HostCommand::Files(files) => {
            let (operation, body) = match files {
                FilesCommand::Read {
                    path,
                    offset,
                    limit,
                } => (
                    "read",
                    json!({"path": path, "offset": offset, "limit": limit}),
                ),
                FilesCommand::Write { path, contents } => {
                    let contents = match contents {
                        Some(contents) => contents,
                        None => {
                            let mut text = String::new();
                            std::io::stdin()
                                .read_to_string(&mut text)
                                .context("reading the contents from stdin")?;
                            text
                        }
                    };
                    ("write", json!({"path": path, "contents": contents}))
                }
                FilesCommand::List { path } => ("list", json!({"path": path})),
                FilesCommand::Glob { pattern, path } => {
                    ("glob", json!({"pattern": pattern, "path": path}))
                }
                FilesCommand::Grep { pattern, path } => {
                    ("grep", json!({"pattern": pattern, "path": path}))
                }
                FilesCommand::Delete { path } => ("delete", json!({"path": path})),
            };
            post(&format!("files/{operation}"), drop_nulls(body))
        }
        HostCommand::Reminder(ReminderCommand::Set { message, after, at }) => post(
            "reminders/set",
            drop_nulls(json!({"message": message, "in": after, "at": at})),
        ),
        HostCommand::Reminder(ReminderCommand::List) => post("reminders/list", json!({})),
        HostCommand::Reminder(ReminderCommand::Cancel { reminder_id }) => {
            post("reminders/cancel", json!({"reminderId": reminder_id}))
        }
        HostCommand::Artifact(ArtifactCommand::Put {
            key,
            title,
            kind,
            data,
            contents,
        }) => {
            let data = match data {
                Some(data) => strict_json("--data", &data)?,
                None => Value::Null,
            };
            post(
                "artifacts/put",
                drop_nulls(
                    json!({"key": key, "title": title, "kind": kind, "data": data, "contents": contents}),
                ),
            )
        }
        HostCommand::Artifact(ArtifactCommand::Get {
            artifact_id,
            key,
            kind,
        }) => post(
            "artifacts/get",
            drop_nulls(json!({"artifactId": artifact_id, "key": key, "kind": kind})),
        ),
        HostCommand::Artifact(ArtifactCommand::List { kind, session_only }) => post(
            "artifacts/list",
            drop_nulls(json!({"kind": kind, "sessionOnly": session_only})),
        ),
        HostCommand::Connection(ConnectionCommand::List) => post("connections/list", json!({})),
        HostCommand::Connection(ConnectionCommand::Call {
            connection,
            tool,
            arguments,
        }) => {
            let arguments = strict_json("ARGUMENTS", &arguments)?;
            if !arguments.is_object() {
                bail!("ARGUMENTS: give a JSON object, e.g. '{{\"q\": \"x\"}}'");
            }
            post(
                "connections/call",
                json!({"connection": connection, "tool": tool, "arguments": arguments}),
            )
        }
        HostCommand::Telemetry(TelemetryCommand::Attr { pairs }) => {
            let mut attributes = Map::new();
            for pair in pairs {
                let Some((name, value)) = pair.split_once('=') else {
                    bail!("{pair}: write NAME=VALUE, e.g. app.cache.hit=true");
                };
                attributes.insert(name.to_string(), loose_json(value));
            }
            post("telemetry/attributes", json!({"attributes": attributes}))
        }
        HostCommand::Telemetry(TelemetryCommand::Metric {
            name,
            value,
            histogram,
            unit,
        }) => post(
            "telemetry/metric",
            drop_nulls(json!({
                "name": name,
                "kind": if histogram { "histogram" } else { "counter" },
                "value": value,
                "unit": unit,
            })),
        ),
        HostCommand::Telemetry(TelemetryCommand::Log { message, level }) => {
            post("telemetry/log", json!({"message": message, "level": level}))
        }
    }
}

/// `body` without its `null` members (optional fields left out).
fn drop_nulls(body: Value) -> Value {
    match body {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).collect())
        }
        other => other,
    }
}

/// Sends one request to the host API named by the environment; the status and JSON answer.
async fn send(method: &str, path: &str, body: Option<Value>) -> anyhow::Result<(u16, Value)> {
    let (Ok(url), Ok(token)) = (std::env::var(HOST_URL_ENV), std::env::var(HOST_TOKEN_ENV)) else {
        bail!(
            "{HOST_URL_ENV} and {HOST_TOKEN_ENV} are not set: `folio host` works inside a process Folio starts for a session (an authored tool's call or a hook) under `folio serve`"
        );
    };
    let body = body
        .map(|body| drop_nulls(body).to_string())
        .unwrap_or_default();
    let request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, "folio-host")
        .header(hyper::header::AUTHORIZATION, format!("Bearer {token}"))
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body)))?;
    let response = if let Some(socket) = url.strip_prefix("unix:") {
        let stream = tokio::net::UnixStream::connect(socket)
            .await
            .with_context(|| {
                format!("cannot reach the host API at {url}; is the server still running?")
            })?;
        exchange(stream, request).await?
    } else if let Some(address) = url.strip_prefix("http://") {
        let stream = tokio::net::TcpStream::connect(address.trim_end_matches('/'))
            .await
            .with_context(|| {
                format!("cannot reach the host API at {url}; is the server still running?")
            })?;
        exchange(stream, request).await?
    } else {
        bail!("{HOST_URL_ENV}={url}: expected unix:<path> or http://127.0.0.1:<port>");
    };
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .context("reading the host API's answer")?
        .to_bytes();
    let answer = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| json!({"ok": false, "message": String::from_utf8_lossy(&bytes)}));
    Ok((status, answer))
}

/// One HTTP/1.1 exchange over `stream`.
async fn exchange<S>(
    stream: S,
    request: hyper::Request<Full<Bytes>>,
) -> anyhow::Result<hyper::Response<hyper::body::Incoming>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .context("the host API did not speak HTTP")?;
    tokio::spawn(connection);
    sender
        .send_request(request)
        .await
        .context("the host API did not answer")
}
