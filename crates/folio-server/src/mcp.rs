//! `/v1/mcp`: the agent as an MCP server over streamable HTTP, with two tools — `ask` (send a
//! message in a chat session, preempt admission, and wait for the reply) and `check` (a
//! session's status and last reply, without waiting).

use std::sync::Arc;

use folio_protocol::{AskArguments, AskStatus, CheckArguments, CheckResult, EventBody};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::guard::Guard;
use crate::principal::Principal;
use folio_session::SessionManager;

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

/// The input schema of a tool whose arguments are `T`.
fn schema<T: schemars::JsonSchema>() -> Arc<serde_json::Map<String, Value>> {
    let schema = schemars::schema_for!(T);
    Arc::new(schema.as_object().cloned().unwrap_or_default())
}

/// Reads a tool's arguments as `T`; a refusal names the tool and what is wrong. Public for
/// the fuzz targets (`folio-fuzz`).
pub fn arguments<T: serde::de::DeserializeOwned>(
    tool: &str,
    args: serde_json::Map<String, Value>,
) -> Result<T, ErrorData> {
    serde_json::from_value(Value::Object(args))
        .map_err(|err| ErrorData::invalid_params(format!("{tool}: {err}"), None))
}

fn text_result(text: String, is_error: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(text)];
    if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// Adds `value` as the result's structured content (docs/agent-folder.md: `ask` returns
/// `{status, sessionId, reply}`, `check` `{session, lastReply}`).
fn structured(mut result: CallToolResult, value: &impl serde::Serialize) -> CallToolResult {
    result.structured_content = serde_json::to_value(value).ok();
    result
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
                schema::<AskArguments>(),
            ),
            Tool::new(
                "check",
                "A session's status, turns and last reply, without waiting.",
                schema::<CheckArguments>(),
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
        match request.name.as_ref() {
            "ask" => {
                let ask: AskArguments = arguments("ask", args)?;
                // The client's `notifications/cancelled` (a peer whose own turn was stopped)
                // fires `context.ct`: the turn this ask started is stopped with it.
                let asked = self
                    .manager
                    .peers()
                    .ask(&principal, "mcp", ask, &context.ct)
                    .await;
                Ok(match asked {
                    Ok(asked) => {
                        let failed = asked.status == AskStatus::Failed;
                        structured(text_result(asked.reply.clone(), failed), &asked).into()
                    }
                    Err(err) => text_result(err.to_string(), true).into(),
                })
            }
            "check" => {
                let CheckArguments { session_id: id } = arguments("check", args)?;
                Ok(match self.manager.sessions().get(&principal, &id).await {
                    Ok(session) => {
                        let events = self
                            .manager
                            .events()
                            .read(&principal, &id)
                            .await
                            .unwrap_or_default();
                        let last_reply = events.iter().rev().find_map(|e| match &e.body {
                            EventBody::TurnCompleted(done) => Some(done.reply.clone()),
                            _ => None,
                        });
                        let checked = CheckResult {
                            session,
                            last_reply,
                        };
                        let text = serde_json::to_string(&checked).unwrap_or_default();
                        structured(text_result(text, false), &checked).into()
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
