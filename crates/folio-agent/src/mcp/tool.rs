//! The adapter that offers each tool of a model-facing MCP server to the model as
//! `mcp__<server>__<tool>`, and maps `tools/call` results to tool outputs.

use std::sync::Arc;

use folio_protocol::{
    ActionApprovalRequested, ActionApprovalResolved, ActionAuthorizationRequested,
    ActionAuthorizationResolved, ApprovalDecision, Elicitation, EventBody,
};
use rmcp::model::{CallToolResult, ContentBlock, ElicitResult};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::connection::{McpConnection, McpError};
use super::elicitation::{PendingElicitation, elicit_result, elicitation_content};
use crate::sink::{AuthorizationFailure, EventSink};
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput, TurnTool};

/// The longest tool name model providers accept (OpenAI: `^[a-zA-Z0-9_-]{1,64}$`).
const MAX_TOOL_NAME: usize = 64;

/// The `mcp__<server>__<tool>` name of an MCP tool: characters providers reject become `_`, and a
/// name over 64 characters keeps its first 55 and ends in `_` + 8 hex digits of a hash of the
/// whole name, so long names stay distinct and stable.
pub fn mcp_tool_name(server: &str, tool: &str) -> String {
    let tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = format!("mcp__{server}__{tool}");
    if name.len() <= MAX_TOOL_NAME {
        return name;
    }
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(name.as_bytes());
    let suffix: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}_{suffix}", &name[..MAX_TOOL_NAME - 9])
}

/// One tool of an MCP server, offered to the model as `mcp__<server>__<tool>`.
pub struct McpTool {
    connection: Arc<McpConnection>,
    name: String,
    tool: String,
    description: String,
    schema: Value,
}

impl McpTool {
    /// The model-facing tool for `tool` of `connection`.
    pub fn new(connection: Arc<McpConnection>, tool: &rmcp::model::Tool) -> Self {
        let description = tool
            .description
            .as_deref()
            .map(str::to_string)
            .unwrap_or_else(|| format!("{} (MCP server {})", tool.name, connection.name()));
        McpTool {
            name: mcp_tool_name(connection.name(), &tool.name),
            tool: tool.name.to_string(),
            description,
            schema: Value::Object((*tool.input_schema).clone()),
            connection,
        }
    }

    /// Every tool of `connection`, starting its server.
    pub async fn all(connection: &Arc<McpConnection>) -> Result<Vec<McpTool>, McpError> {
        Ok(connection
            .list_tools()
            .await?
            .iter()
            .map(|tool| McpTool::new(connection.clone(), tool))
            .collect())
    }
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn prepare(&self, input: Value) -> Result<Value, ToolError> {
        match input {
            Value::Null => Ok(json!({})),
            Value::Object(map) => Ok(Value::Object(map)),
            other => Err(ToolError(format!(
                "input must be a JSON object, got {}",
                crate::tools::input::json_type(&other)
            ))),
        }
    }

    /// A call outside a turn (a direct call): a server's elicitation is declined, and a
    /// principal who has not authorized the server gets an error saying how to.
    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let connection = self.client_of(&ctx.principal);
        let result = tokio::select! {
            result = connection.call_tool(&self.tool, arguments(input)) => result,
            () = ctx.cancel.cancelled() => {
                return Err(ToolError("tool call cancelled".into()));
            }
        };
        let result = result.map_err(|err| ToolError(err.to_string()))?;
        tool_output(result)
    }

    fn turn_tool(&self) -> Option<&dyn TurnTool> {
        Some(self)
    }
}

#[async_trait::async_trait]
impl TurnTool for McpTool {
    /// Calls the tool with the client of the session's principal; each elicitation the server
    /// sends meanwhile parks the turn until the user answers through the approval route, and a
    /// server that needs (new) authorization parks it on `action.authorization_requested`
    /// until the principal's OAuth redirect comes back, then the call runs with the new tokens.
    async fn call_in_turn(
        &self,
        input: Value,
        ctx: &ToolContext,
        sink: &dyn EventSink,
        turn_id: &str,
    ) -> Result<ToolOutput, ToolError> {
        let connection = self.client_of(&ctx.principal);
        let arguments = arguments(input);
        let mut authorized = false;
        loop {
            let result = self
                .answering(&connection, arguments.clone(), ctx, sink, turn_id)
                .await?;
            match result {
                // Authorized once in this call and refused again: not a question for a person.
                Err(McpError::NeedsAuthorization { challenge, .. }) if !authorized => {
                    self.authorize(&connection, &challenge, ctx, sink, turn_id)
                        .await?;
                    authorized = true;
                }
                result => return tool_output(result.map_err(|err| ToolError(err.to_string()))?),
            }
        }
    }
}

impl McpTool {
    /// The client that acts for `principal` (its own tokens under `folio serve`).
    fn client_of(&self, principal: &str) -> Arc<McpConnection> {
        self.connection
            .for_principal(principal)
            .unwrap_or_else(|| self.connection.clone())
    }

    /// Runs the call on `connection`, parking the turn on each elicitation the server sends
    /// meanwhile; the outer error is a cancelled call or an unrecordable question.
    async fn answering(
        &self,
        connection: &McpConnection,
        arguments: Map<String, Value>,
        ctx: &ToolContext,
        sink: &dyn EventSink,
        turn_id: &str,
    ) -> Result<Result<CallToolResult, McpError>, ToolError> {
        let (sender, mut asked) = mpsc::unbounded_channel();
        let _caller = connection.callers().register(sender);
        let call = connection.call_tool(&self.tool, arguments);
        tokio::pin!(call);
        loop {
            tokio::select! {
                result = &mut call => return Ok(result),
                Some(pending) = asked.recv() => {
                    let PendingElicitation { message, requested_schema, reply } = pending;
                    let answer = self.ask(message, requested_schema, ctx, sink, turn_id).await?;
                    let _ = reply.send(answer);
                }
                () = ctx.cancel.cancelled() => {
                    return Err(ToolError("tool call cancelled".into()));
                }
            }
        }
    }

    /// Parks the turn until the session's principal authorizes `connection`'s server: records
    /// `action.authorization_requested` with the authorization URL, waits for the OAuth
    /// redirect the serving process receives for its `state`, exchanges the code (the tokens
    /// go to this principal's store only, never into an event), and records
    /// `action.authorization_resolved`.
    async fn authorize(
        &self,
        connection: &McpConnection,
        challenge: &str,
        ctx: &ToolContext,
        sink: &dyn EventSink,
        turn_id: &str,
    ) -> Result<(), ToolError> {
        let server = connection.name().to_string();
        let not_authorized = |why: &dyn std::fmt::Display| {
            ToolError(format!("MCP server \"{server}\" was not authorized: {why}"))
        };
        let session = connection
            .begin_authorization(challenge)
            .await
            .map_err(|err| not_authorized(&err))?;
        let url = session.get_authorization_url().to_string();
        let state = super::oauth::query_param(&url, "state").ok_or_else(|| {
            not_authorized(&"the authorization URL carries no state to match its redirect")
        })?;
        let id = format!("auth_{}", ulid::Ulid::generate());
        let record = |body| async move {
            sink.emit(Some(turn_id), body)
                .await
                .map(|_| ())
                .map_err(|err| ToolError(format!("cannot record the authorization: {err}")))
        };
        // In this order: the wait for the redirect is registered before the URL is recorded,
        // so a redirect that follows the event at once finds it.
        let redirect = tokio::select! {
            biased;
            redirect = sink.await_authorization(&id, &state) => redirect,
            () = ctx.cancel.cancelled() => return Err(ToolError("tool call cancelled".into())),
            never = async {
                if let Err(err) = record(EventBody::ActionAuthorizationRequested(ActionAuthorizationRequested {
                    call_id: id.clone(),
                    tool: self.name.clone(),
                    server: server.clone(),
                    url,
                })).await {
                    return err;
                }
                std::future::pending().await
            } => return Err(never),
        };
        let Some(redirect) = redirect else {
            return Err(not_authorized(&format!(
                "no server receives the OAuth redirect here; run `folio mcp login {server}`"
            )));
        };
        let callback = format!("{}?{}", session.redirect_uri, redirect.query);
        let outcome = match super::oauth::query_param(&callback, "error") {
            Some(error) => Err(AuthorizationFailure::Refused { error }),
            None => session
                .handle_callback_url(&callback)
                .await
                .map(|_| ())
                .map_err(|err| AuthorizationFailure::Exchange {
                    source: Arc::new(err),
                }),
        };
        let _ = redirect.done.send(outcome.clone());
        record(EventBody::ActionAuthorizationResolved(
            ActionAuthorizationResolved {
                call_id: id,
                authorized: outcome.is_ok(),
                reason: outcome.as_ref().err().map(ToString::to_string),
            },
        ))
        .await?;
        outcome.map_err(|err| not_authorized(&err))
    }

    /// Parks the turn on one elicitation: records `action.approval_requested` with it, waits
    /// for the decision, records `action.approval_resolved`, and answers the server.
    async fn ask(
        &self,
        message: String,
        requested_schema: Value,
        ctx: &ToolContext,
        sink: &dyn EventSink,
        turn_id: &str,
    ) -> Result<ElicitResult, ToolError> {
        let id = format!("eli_{}", ulid::Ulid::generate());
        let requested = ActionApprovalRequested {
            call_id: id.clone(),
            tool: self.name.clone(),
            input: json!({"callId": ctx.call_id}),
            expires_at: None,
            elicitation: Some(Elicitation {
                server: self.connection.name().to_string(),
                message,
                requested_schema: requested_schema.clone(),
            }),
        };
        let record = |body| async move {
            sink.emit(Some(turn_id), body)
                .await
                .map(|_| ())
                .map_err(|err| ToolError(format!("cannot record the elicitation: {err}")))
        };
        record(EventBody::ActionApprovalRequested(requested)).await?;
        let mut resolved = tokio::select! {
            resolved = sink.await_approval(&id) => resolved,
            () = ctx.cancel.cancelled() => return Err(ToolError("tool call cancelled".into())),
        };
        let accepted = matches!(
            resolved.decision,
            ApprovalDecision::Accept | ApprovalDecision::Approve
        );
        let content = if accepted {
            match elicitation_content(&requested_schema, resolved.content.take()) {
                Ok(content) => Some(content),
                Err(why) => {
                    resolved = declined(resolved, why.to_string());
                    None
                }
            }
        } else {
            None
        };
        resolved.content = content.clone();
        let answer = elicit_result(resolved.decision, content);
        record(EventBody::ActionApprovalResolved(resolved)).await?;
        Ok(answer)
    }
}

/// An acceptance whose content does not fit the schema, turned into a decline saying why.
fn declined(resolved: ActionApprovalResolved, why: String) -> ActionApprovalResolved {
    ActionApprovalResolved {
        decision: ApprovalDecision::Decline,
        reason: Some(why),
        content: None,
        ..resolved
    }
}

/// The `arguments` of a `tools/call` for a prepared input (always an object).
fn arguments(input: Value) -> Map<String, Value> {
    match input {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Maps an MCP `tools/call` result to a tool output: one text or image part as itself, several
/// as content parts; `isError` becomes a tool error carrying the text.
pub fn tool_output(result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut parts: Vec<Value> = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(text) => parts.push(json!({"type": "text", "text": text.text})),
            ContentBlock::Image(image) => parts
                .push(json!({"type": "image", "mimeType": image.mime_type, "data": image.data})),
            ContentBlock::Resource(resource) => {
                let text = match &resource.resource {
                    rmcp::model::ResourceContents::TextResourceContents { uri, text, .. } => {
                        format!("[resource {uri}]\n{text}")
                    }
                    rmcp::model::ResourceContents::BlobResourceContents {
                        uri, mime_type, ..
                    } => format!(
                        "[resource {uri} ({}), binary]",
                        mime_type.as_deref().unwrap_or("application/octet-stream")
                    ),
                    other => serde_json::to_string(other).unwrap_or_default(),
                };
                parts.push(json!({"type": "text", "text": text}));
            }
            other => parts.push(json!({
                "type": "text",
                "text": serde_json::to_string(other).unwrap_or_default(),
            })),
        }
    }
    if result.is_error == Some(true) {
        let text: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        let message = if text.is_empty() {
            "the MCP tool reported an error".to_string()
        } else {
            text.join("\n")
        };
        return Err(ToolError(message));
    }
    if parts.is_empty() {
        return Ok(match result.structured_content {
            Some(value) => ToolOutput::Json(value),
            None => ToolOutput::Text(String::new()),
        });
    }
    if parts.len() == 1 {
        let part = &parts[0];
        if part["type"] == "text" {
            return Ok(ToolOutput::Text(
                part["text"].as_str().unwrap_or_default().to_string(),
            ));
        }
        if let (Some(mime_type), Some(data)) = (part["mimeType"].as_str(), part["data"].as_str()) {
            return Ok(ToolOutput::Image {
                mime_type: mime_type.to_string(),
                data: data.to_string(),
            });
        }
    }
    Ok(ToolOutput::Json(Value::Array(parts)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::TextContent;

    #[test]
    fn names() {
        assert_eq!(mcp_tool_name("srv", "get-sum"), "mcp__srv__get-sum");
        assert_eq!(mcp_tool_name("srv", "a.b c"), "mcp__srv__a_b_c");
        let long = mcp_tool_name("srv", &"x".repeat(80));
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("mcp__srv__xxx"));
        assert_ne!(long, mcp_tool_name("srv", &"x".repeat(81)));
        assert_eq!(long, mcp_tool_name("srv", &"x".repeat(80)));
    }

    #[test]
    fn results_map_to_outputs() {
        let text = CallToolResult::success(vec![ContentBlock::Text(TextContent::new("hi"))]);
        assert_eq!(tool_output(text).unwrap(), ToolOutput::Text("hi".into()));
        let image = CallToolResult::success(vec![ContentBlock::image("AAAA", "image/png")]);
        assert_eq!(
            tool_output(image).unwrap(),
            ToolOutput::Image {
                mime_type: "image/png".into(),
                data: "AAAA".into()
            }
        );
        let mixed = CallToolResult::success(vec![
            ContentBlock::text("a"),
            ContentBlock::image("AAAA", "image/png"),
        ]);
        assert_eq!(
            tool_output(mixed).unwrap(),
            ToolOutput::Json(json!([
                {"type": "text", "text": "a"},
                {"type": "image", "mimeType": "image/png", "data": "AAAA"}
            ]))
        );
        let failed = CallToolResult::error(vec![ContentBlock::text("boom")]);
        assert_eq!(tool_output(failed).unwrap_err(), ToolError("boom".into()));
    }
}
