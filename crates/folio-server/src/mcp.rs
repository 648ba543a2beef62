//! `/v1/mcp`: the agent as an MCP server over streamable HTTP, with two tools — `ask` (send a
//! message in a chat session, preempt admission, and wait for the reply) and `check` (a
//! session's status and last reply, without waiting).

use std::sync::Arc;

use folio_protocol::{Admission, EventBody, SessionMode};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::guard::Guard;
use crate::http::Principal;
use crate::manager::{CreateSession, SessionManager};

/// The MCP handler of one agent.
#[derive(Clone)]
struct AgentMcp {
    manager: SessionManager,
}

/// The streamable-HTTP service of `/v1/mcp` for `manager`; ends with `cancel`. rmcp's own
/// Host check and body limit repeat the router's guard.
pub(crate) fn service(
    manager: SessionManager,
    cancel: CancellationToken,
    guard: &Guard,
) -> StreamableHttpService<impl ServerHandler, LocalSessionManager> {
    StreamableHttpService::new(
        move || {
            Ok(AgentMcp {
                manager: manager.clone(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_sse_keep_alive(None)
            .with_allowed_hosts(guard.browsers.mcp_hosts())
            .with_max_request_body_bytes(guard.body_limit)
            .with_cancellation_token(cancel),
    )
}

fn schema(value: Value) -> Arc<serde_json::Map<String, Value>> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

fn text_result(text: String, is_error: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(text)];
    if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

impl AgentMcp {
    /// Sends `message` (a new chat session, or a follow-up with preempt) and waits for the turn.
    async fn ask(
        &self,
        principal: &str,
        message: String,
        session_id: Option<String>,
    ) -> Result<(String, String, bool), String> {
        let (id, start) = match session_id {
            None => {
                let accepted = self
                    .manager
                    .create(
                        principal,
                        CreateSession {
                            message,
                            title: None,
                            workspace_files: Default::default(),
                            mode: SessionMode::Chat,
                            channel: "mcp".into(),
                        },
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                (accepted.session_id, 0)
            }
            Some(id) => {
                let start = self
                    .manager
                    .events(principal, &id)
                    .map_err(|e| e.to_string())?
                    .len() as u64;
                self.manager
                    .send(principal, &id, &message, Some(Admission::Preempt))
                    .await
                    .map_err(|e| e.to_string())?;
                (id, start)
            }
        };
        let mut stream = self
            .manager
            .stream(principal, &id, start)
            .map_err(|e| e.to_string())?;
        while let Some(event) = stream.rx.recv().await {
            match event.map(|e| e.body) {
                Some(EventBody::TurnCompleted(done)) => return Ok((id, done.reply, false)),
                Some(EventBody::TurnFailed(failed)) => return Ok((id, failed.message, true)),
                _ => {}
            }
        }
        Err(format!("session {id} ended before the turn finished"))
    }
}

impl ServerHandler for AgentMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let name = self.manager.agent().definition.name.clone();
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new(
                "ask",
                format!(
                    "Ask the {name} agent: runs a turn and returns its reply (pass sessionId to continue a conversation)."
                ),
                schema(json!({
                    "type": "object",
                    "properties": {
                        "message": {"type": "string", "description": "What to ask."},
                        "sessionId": {"type": "string", "description": "Continue this session."}
                    },
                    "required": ["message"]
                })),
            ),
            Tool::new(
                "check",
                "A session's status, turns and last reply, without waiting.",
                schema(json!({
                    "type": "object",
                    "properties": {"sessionId": {"type": "string"}},
                    "required": ["sessionId"]
                })),
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let principal = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>())
            .map(|p| p.0.clone())
            .unwrap_or_else(|| "local".to_string());
        let args = request.arguments.unwrap_or_default();
        let string = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
        match request.name.as_ref() {
            "ask" => {
                let Some(message) = string("message") else {
                    return Err(ErrorData::invalid_params("ask: message is required", None));
                };
                Ok(
                    match self.ask(&principal, message, string("sessionId")).await {
                        Ok((id, reply, failed)) => {
                            // project-format.md: `ask` returns `{status, sessionId, reply}`.
                            let status = if failed { "failed" } else { "completed" };
                            let mut result = text_result(reply.clone(), failed);
                            result.structured_content =
                                Some(json!({"status": status, "sessionId": id, "reply": reply}));
                            result.into()
                        }
                        Err(message) => text_result(message, true).into(),
                    },
                )
            }
            "check" => {
                let Some(id) = string("sessionId") else {
                    return Err(ErrorData::invalid_params(
                        "check: sessionId is required",
                        None,
                    ));
                };
                Ok(match self.manager.get(&principal, &id) {
                    Ok(summary) => {
                        let events = self.manager.events(&principal, &id).unwrap_or_default();
                        let reply = events.iter().rev().find_map(|e| match &e.body {
                            EventBody::TurnCompleted(done) => Some(done.reply.clone()),
                            _ => None,
                        });
                        text_result(
                            json!({"session": summary, "lastReply": reply}).to_string(),
                            false,
                        )
                        .into()
                    }
                    Err(err) => text_result(err.to_string(), true).into(),
                })
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown tool {other}: use ask or check"),
                None,
            )),
        }
    }
}
