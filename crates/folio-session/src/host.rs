//! The host API's logic: the credentials a session's processes get, and what each call does.
//!
//! Before an authored tool's process (or a hook's) starts, the runtime asks the engine's
//! [`HostBroker`] for a grant: a token (`fht_` + 256 random bits) that names the session, its
//! principal, the agent and the call, kept in memory only while the process runs and removed
//! the moment it ends, so a replayed token is refused (`401`). Every call acts on the grant's
//! own session, principal and agent and on nothing else; no route takes a session id.
//!
//! Each served call is recorded in the session's log as `action.host_call` (inside the turn of
//! the calling tool) with what was read or written, never the values or contents.
//!
//! Calls are limited per session: a token bucket of [`BURST`] calls refilled at
//! [`CALLS_PER_SECOND`]; past it a call is refused with `429` and a `Retry-After`.

use std::sync::{Arc, Weak};

use folio_agent::tools::{FileTool, TodoList, Tool, ToolContext};
use folio_agent::{HostBroker, HostCaller, HostGrant, StorageError, StorageRequest, TurnSession};
use folio_protocol::{
    ActionHostCall, CallConnectionTool, EventBody, GetArtifact, HostArtifact, HostArtifacts,
    HostConnectionTools, HostConnections, HostIdentity, KvDelete, KvEntryResponse, KvGet, KvList,
    KvListResponse, KvPut, ListArtifacts, LogLevel, OkTrue, PutArtifact, RecordMetric, Reminder,
    SetReminder, SpanAttributes, ToolCallResult, ToolDescription, WriteLog,
};
use serde_json::{Value, json};

use crate::engine::Engine;
use crate::error::ManagerError;
use crate::host_grants::{BURST, CALLS_PER_SECOND, Grant, MAX_LOG_BYTES};
use crate::host_storage::{self, Owner};
use crate::reminders::Reminders;
use crate::sync::lock;

/// Issues grants for `engine`'s sessions (held by turns and hook dispatchers).
pub(crate) fn broker(engine: &Arc<Engine>) -> Arc<dyn HostBroker> {
    Arc::new(Broker(Arc::downgrade(engine)))
}

/// The engine's [`HostBroker`].
struct Broker(Weak<Engine>);

#[async_trait::async_trait]
impl HostBroker for Broker {
    async fn grant(&self, caller: HostCaller, span: tracing::Span) -> Option<HostGrant> {
        let engine = self.0.upgrade()?;
        let url = engine.host.url.read().ok()?.clone()?;
        let (principal, turn_id) = match &caller {
            HostCaller::Tool { context, .. } => {
                (context.principal.clone(), context.turn_id.clone())
            }
            HostCaller::Hook { session_id, .. } => {
                let meta = engine.load_meta(session_id).await.ok()??;
                (meta.principal, None)
            }
        };
        let token = format!(
            "fht_{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let grant = Arc::new(Grant {
            session_id: caller.session_id().to_string(),
            call_id: caller.call_id(),
            principal,
            agent: engine.agent().definition.name.clone(),
            turn_id,
            caller,
            span,
        });
        lock(&engine.host.tokens).insert(token.clone(), grant);
        let tokens = Arc::downgrade(&engine.host.tokens);
        let revoked = token.clone();
        Some(HostGrant::new(url, token, move || {
            if let Some(tokens) = tokens.upgrade() {
                lock(&tokens).remove(&revoked);
            }
        }))
    }

    async fn storage(
        &self,
        ctx: &ToolContext,
        request: StorageRequest,
    ) -> Result<Value, StorageError> {
        let engine = self.0.upgrade().ok_or_else(|| {
            StorageError(Box::new(ManagerError::internal(
                "the server is shutting down; try again",
            )))
        })?;
        let agent = engine.agent().definition.name.clone();
        let owner = Owner {
            session_id: &ctx.session_id,
            principal: &ctx.principal,
            agent: &agent,
        };
        let answer = match &request {
            StorageRequest::Get(get) => host_storage::get(&engine, &owner, get)
                .await
                .map(|(answer, _)| json!(answer.entry)),
            StorageRequest::Put(put) => host_storage::put(&engine, &owner, put)
                .await
                .map(|(answer, _)| json!(answer.entry)),
            StorageRequest::Delete(delete) => host_storage::delete(&engine, &owner, delete)
                .await
                .map(|(answer, _)| json!({"deleted": answer.entry.is_some()})),
            StorageRequest::List(list) => host_storage::list(&engine, &owner, list)
                .await
                .map(|(answer, _)| json!({"entries": answer.entries, "next": answer.next})),
        };
        answer.map_err(|err| StorageError(Box::new(err)))
    }
}

/// The host API: what a session's processes may do through their grant.
#[derive(Clone)]
pub struct Host {
    pub(crate) engine: Arc<Engine>,
}

impl Host {
    /// Grants from now on carry `url` (`unix:<path>` or `http://127.0.0.1:<port>`), where the
    /// server answers the host API.
    pub fn serve_at(&self, url: String) {
        *self
            .engine
            .host
            .url
            .write()
            .unwrap_or_else(|p| p.into_inner()) = Some(url);
    }

    /// Stops issuing grants (the server's host socket is closing).
    pub fn stop_serving(&self) {
        *self
            .engine
            .host
            .url
            .write()
            .unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// The grant of a live token (`None`: unknown, or its call has ended).
    pub fn authorize(&self, token: &str) -> Option<Arc<Grant>> {
        lock(&self.engine.host.tokens).get(token).cloned()
    }

    /// Takes one call from the grant's session budget: `Err` with how long to wait when the
    /// session's processes called too often.
    pub fn admit(&self, grant: &Grant) -> Result<(), ManagerError> {
        self.engine
            .host
            .take(&grant.session_id)
            .map_err(|wait| ManagerError::Limited {
                message: format!(
                    "session {}: more than {BURST} host API calls at once (refilled at {CALLS_PER_SECOND}/s); slow down",
                    grant.session_id
                ),
                retry_after: Some(wait),
            })
    }

    /// Records `operation` of the grant's call in its session's log (`action.host_call`).
    pub async fn record(
        &self,
        grant: &Grant,
        operation: &str,
        detail: Value,
        error: Option<&ManagerError>,
    ) {
        let body = EventBody::ActionHostCall(ActionHostCall {
            call_id: grant.call_id.clone(),
            operation: operation.to_string(),
            detail,
            error: error.map(ToString::to_string),
        });
        let recorded = match self.engine.owned(&grant.principal, &grant.session_id).await {
            Ok(live) => {
                self.engine
                    .record_for(&live, grant.turn_id.clone(), body, grant.inside_actor())
                    .await
            }
            Err(err) => Err(err),
        };
        if let Err(err) = recorded {
            self.engine.logs.about(&grant.session_id).warn(format!(
                "could not record the host API call {operation} of {}: {err}",
                grant.call_id
            ));
        }
    }

    fn owner<'a>(&self, grant: &'a Grant) -> Owner<'a> {
        Owner {
            session_id: &grant.session_id,
            principal: &grant.principal,
            agent: &grant.agent,
        }
    }

    /// One storage entry of the grant's scopes, and what to record.
    pub async fn kv_get(
        &self,
        grant: &Grant,
        request: &KvGet,
    ) -> Result<(KvEntryResponse, Value), ManagerError> {
        host_storage::get(&self.engine, &self.owner(grant), request).await
    }

    /// Writes a storage entry, and what to record.
    pub async fn kv_put(
        &self,
        grant: &Grant,
        request: &KvPut,
    ) -> Result<(KvEntryResponse, Value), ManagerError> {
        host_storage::put(&self.engine, &self.owner(grant), request).await
    }

    /// Removes a storage entry, and what to record.
    pub async fn kv_delete(
        &self,
        grant: &Grant,
        request: &KvDelete,
    ) -> Result<(KvEntryResponse, Value), ManagerError> {
        host_storage::delete(&self.engine, &self.owner(grant), request).await
    }

    /// A page of storage entries, and what to record.
    pub async fn kv_list(
        &self,
        grant: &Grant,
        request: &KvList,
    ) -> Result<(KvListResponse, Value), ManagerError> {
        host_storage::list(&self.engine, &self.owner(grant), request).await
    }

    /// Who the grant acts for.
    pub fn whoami(&self, grant: &Grant) -> HostIdentity {
        HostIdentity {
            ok: OkTrue,
            session_id: grant.session_id.clone(),
            call_id: grant.call_id.clone(),
            principal: grant.principal.clone(),
            agent: grant.agent.clone(),
        }
    }

    /// Runs file tool `tool` (`read`, `write`, `edit`, `delete`, `list`, `glob`, `grep`) with
    /// `input` on the call's FileSystem: the same code, confinement and limits as the model's
    /// call of that tool. Returns the tool's output and what to record.
    pub async fn files(
        &self,
        grant: &Grant,
        operation: &str,
        input: Value,
    ) -> Result<(Value, Value), ManagerError> {
        let tool = file_tool(operation).ok_or_else(|| {
            ManagerError::NotFound(format!(
                "no files operation {operation}; use read, write, edit, delete, list, glob or grep"
            ))
        })?;
        let detail = json!({
            "tool": tool.name(),
            "path": input.get("path").cloned().unwrap_or(Value::Null),
            "pattern": input.get("pattern").cloned().unwrap_or(Value::Null),
        });
        let input = tool
            .prepare(input)
            .map_err(|err| ManagerError::Invalid(err.0))?;
        let ctx = self.tool_context(grant).await?;
        let output = tool
            .call(input, &ctx)
            .await
            .map_err(|err| ManagerError::Invalid(err.0))?;
        Ok((output.to_event_value(), detail))
    }

    /// The context the grant's file calls run in: the tool call's own, or for a hook a fresh
    /// binding of the session's FileSystem.
    async fn tool_context(&self, grant: &Grant) -> Result<ToolContext, ManagerError> {
        if let HostCaller::Tool { context, .. } = &grant.caller {
            return Ok(ToolContext {
                host: None,
                ..(**context).clone()
            });
        }
        let meta = self
            .engine
            .owned_meta(&grant.principal, &grant.session_id)
            .await?;
        let workspace = self.engine.workspace_of(&meta)?;
        let bound = self
            .engine
            .agent()
            .bind_turn_fs(
                &workspace,
                &TurnSession {
                    session_id: &meta.session_id,
                    continuation_key: meta.continuation_key.as_deref(),
                    principal: &meta.principal,
                    variant: meta.variant.as_deref(),
                },
            )
            .await
            .map_err(|err| {
                ManagerError::internal_from("cannot bind the session's FileSystem", err)
            })?;
        if let Some(prepare) = &bound.prepare {
            prepare.ready().await.map_err(|err| {
                ManagerError::internal_from("cannot prepare the session's workspace", err)
            })?;
        }
        let context = crate::state::session_context(&meta);
        Ok(ToolContext {
            fs: bound.fs,
            workspace,
            scratch: bound.scratch,
            cancel: self.engine.life.shutdown.child_token(),
            todos: TodoList::default(),
            session_id: meta.session_id.clone(),
            call_id: grant.call_id.clone(),
            dry_run: context.dry_run,
            purpose: context.purpose,
            continuation_key: context.continuation_key,
            principal: context.principal,
            peer_depth: context.peer_depth,
            turn_id: None,
            host: None,
        })
    }

    /// Sets a reminder on the grant's session (the same reminders as the HTTP API).
    pub async fn set_reminder(
        &self,
        grant: &Grant,
        request: SetReminder,
    ) -> Result<Reminder, ManagerError> {
        self.reminders()
            .set_from(
                &grant.principal,
                &grant.session_id,
                request,
                grant.inside_actor(),
            )
            .await
    }

    /// The grant's session's pending reminders.
    pub async fn reminders_of(&self, grant: &Grant) -> Result<Vec<Reminder>, ManagerError> {
        self.reminders()
            .list(&grant.principal, &grant.session_id)
            .await
    }

    /// Cancels a pending reminder of the grant's session.
    pub async fn cancel_reminder(
        &self,
        grant: &Grant,
        reminder_id: &str,
    ) -> Result<(), ManagerError> {
        self.reminders()
            .cancel_from(
                &grant.principal,
                &grant.session_id,
                reminder_id,
                grant.inside_actor(),
            )
            .await
    }

    fn reminders(&self) -> Reminders {
        Reminders {
            engine: self.engine.clone(),
        }
    }

    /// Tags an artifact of the grant's session (`artifact.tagged` is recorded).
    pub async fn put_artifact(
        &self,
        grant: &Grant,
        request: PutArtifact,
    ) -> Result<HostArtifact, ManagerError> {
        let agent = self.engine.agent();
        let record = agent
            .artifacts
            .tag(folio_agent::TagRequest {
                kind: request.kind,
                key: request.key,
                title: request.title,
                data: request.data,
                contents: request.contents.clone(),
                content_type: request.content_type,
                session_id: Some(grant.session_id.clone()),
            })
            .await
            .map_err(artifact_error)?;
        let tagged = EventBody::ArtifactTagged(folio_protocol::ArtifactTagged {
            id: record.id.clone(),
            kind: record.kind.clone(),
            key: record.key.clone(),
            title: record.title.clone(),
        });
        let live = self
            .engine
            .owned(&grant.principal, &grant.session_id)
            .await?;
        self.engine
            .record_for(&live, grant.turn_id.clone(), tagged, grant.inside_actor())
            .await?;
        Ok(HostArtifact {
            ok: OkTrue,
            artifact: record,
            contents: request.contents,
        })
    }

    /// One artifact of the agent, by id or by kind and key, with its contents as text.
    pub async fn get_artifact(&self, request: &GetArtifact) -> Result<HostArtifact, ManagerError> {
        let agent = self.engine.agent();
        let record = match (&request.artifact_id, &request.key) {
            (Some(id), None) => agent.artifacts.get(id).await.map_err(artifact_error)?,
            (None, Some(key)) => {
                let kind = request
                    .kind
                    .clone()
                    .unwrap_or_else(|| folio_agent::DEFAULT_KIND.to_string());
                agent
                    .artifacts
                    .list()
                    .await
                    .map_err(artifact_error)?
                    .into_iter()
                    .find(|record| record.kind == kind && &record.key == key)
            }
            _ => {
                return Err(ManagerError::Invalid(
                    "artifactId, key: give exactly one of them (key with an optional kind)".into(),
                ));
            }
        };
        let record = record.ok_or_else(|| ManagerError::NotFound("no such artifact".into()))?;
        let contents = agent
            .artifacts
            .content(&record.id)
            .await
            .map_err(artifact_error)?
            .map(|(_, bytes)| String::from_utf8_lossy(&bytes).into_owned());
        Ok(HostArtifact {
            ok: OkTrue,
            artifact: record,
            contents,
        })
    }

    /// The agent's artifacts (or the grant's session's), most recently updated first.
    pub async fn list_artifacts(
        &self,
        grant: &Grant,
        request: &ListArtifacts,
    ) -> Result<HostArtifacts, ManagerError> {
        let artifacts = self
            .engine
            .agent()
            .artifacts
            .list()
            .await
            .map_err(artifact_error)?
            .into_iter()
            .filter(|record| {
                request
                    .kind
                    .as_ref()
                    .is_none_or(|kind| &record.kind == kind)
            })
            .filter(|record| {
                !request.session_only || record.session_id.as_deref() == Some(&grant.session_id)
            })
            .collect();
        Ok(HostArtifacts {
            ok: OkTrue,
            artifacts,
        })
    }

    /// Every host connection of the agent with its tools (a connection that cannot be
    /// reached is listed with why).
    pub async fn connections(&self) -> HostConnections {
        let agent = self.engine.agent();
        let mut connections = Vec::new();
        for config in &agent.definition.host_connections {
            let Some(connection) = agent.host_connection(&config.name) else {
                continue;
            };
            let (tools, error) = match connection.list_tools().await {
                Ok(tools) => (
                    tools
                        .iter()
                        .map(|tool| ToolDescription {
                            name: tool.name.to_string(),
                            description: tool.description.as_deref().unwrap_or("").to_string(),
                            input_schema: Value::Object((*tool.input_schema).clone()),
                            needs_approval: false,
                        })
                        .collect(),
                    None,
                ),
                Err(err) => (Vec::new(), Some(err.to_string())),
            };
            connections.push(HostConnectionTools {
                connection: config.name.clone(),
                tools,
                error,
            });
        }
        HostConnections {
            ok: OkTrue,
            connections,
        }
    }

    /// Calls a tool of a host connection for the grant's session.
    pub async fn call_connection(
        &self,
        request: CallConnectionTool,
    ) -> Result<ToolCallResult, ManagerError> {
        let agent = self.engine.agent();
        let connection = agent.host_connection(&request.connection).ok_or_else(|| {
            let names: Vec<&str> = agent
                .definition
                .host_connections
                .iter()
                .map(|config| config.name.as_str())
                .collect();
            ManagerError::NotFound(format!(
                "no host connection {} (the agent has: {}); host connections are the files of agent/host-connections/",
                request.connection,
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            ))
        })?;
        let result = connection
            .call_tool(&request.tool, request.arguments)
            .await
            .map_err(|err| {
                ManagerError::Refused(format!("host connection {}: {err}", request.connection))
            })?;
        Ok(match folio_agent::mcp::tool_output(result) {
            Ok(output) => ToolCallResult {
                ok: OkTrue,
                result: output.to_event_value(),
                is_error: false,
            },
            Err(err) => ToolCallResult {
                ok: OkTrue,
                result: Value::String(err.0),
                is_error: true,
            },
        })
    }

    /// Sets attributes on the span of the grant's call.
    pub fn span_attributes(
        &self,
        grant: &Grant,
        request: &SpanAttributes,
    ) -> Result<usize, ManagerError> {
        folio_telemetry::custom::set_span_attributes(&grant.span, &request.attributes)
            .map_err(|err| ManagerError::Invalid(err.to_string()))
    }

    /// Records a metric point, with the agent as `agent_sdk.agent` beside its attributes.
    pub fn metric(&self, grant: &Grant, request: &RecordMetric) -> Result<(), ManagerError> {
        let _inside = grant.span.enter();
        folio_telemetry::custom::record_metric(
            &request.name,
            request.kind == folio_protocol::MetricKind::Counter,
            request.value,
            request.unit.as_deref(),
            &request.attributes,
        )
        .map_err(|err| ManagerError::Invalid(err.to_string()))
    }

    /// Writes a log line about the grant's session (`GET /v1/logs`, OTLP logs), inside the
    /// call's span.
    pub fn log(&self, grant: &Grant, request: WriteLog) -> Result<(), ManagerError> {
        if request.message.len() > MAX_LOG_BYTES {
            return Err(ManagerError::Invalid(format!(
                "message: {} bytes; a log line is at most {MAX_LOG_BYTES}",
                request.message.len()
            )));
        }
        let message = format!("{}: {}", grant.call_id, request.message);
        let log = self.engine.logs.about(&grant.session_id);
        grant.span.in_scope(|| match request.level {
            LogLevel::Info => log.info(message),
            LogLevel::Warn => log.warn(message),
            LogLevel::Error => log.error(message),
        });
        Ok(())
    }
}

/// The file tool a `files/<operation>` route runs.
fn file_tool(operation: &str) -> Option<FileTool> {
    Some(match operation {
        "read" => FileTool::Read,
        "write" => FileTool::Write,
        "edit" => FileTool::StrReplace,
        "delete" => FileTool::Delete,
        "list" => FileTool::Ls,
        "glob" => FileTool::Glob,
        "grep" => FileTool::Grep,
        _ => return None,
    })
}

fn artifact_error(err: folio_agent::ArtifactError) -> ManagerError {
    match err {
        folio_agent::ArtifactError::Invalid(message) => ManagerError::Invalid(message),
        other => ManagerError::internal_from("the artifacts", other),
    }
}
