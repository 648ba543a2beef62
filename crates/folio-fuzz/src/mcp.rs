//! MCP messages: a JSON-RPC message as `/v1/mcp` reads it from a client (and the `ask` and
//! `check` tools their arguments), and as an agent's MCP connection reads it from a server (a
//! `tools/call` result becoming the tool's output).

use folio_protocol::{AskArguments, CheckArguments};
use rmcp::model::ServerResult;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, ServerJsonRpcMessage};

/// One JSON-RPC message, read in both directions.
pub fn mcp_message(data: &[u8]) {
    if let Ok(JsonRpcMessage::Request(request)) =
        serde_json::from_slice::<ClientJsonRpcMessage>(data)
        && let ClientRequest::CallToolRequest(call) = request.request
    {
        let args = call.params.arguments.unwrap_or_default();
        let _ = folio_server::mcp_arguments::<AskArguments>("ask", args.clone());
        let _ = folio_server::mcp_arguments::<CheckArguments>("check", args);
    }
    if let Ok(JsonRpcMessage::Response(response)) =
        serde_json::from_slice::<ServerJsonRpcMessage>(data)
        && let ServerResult::CallToolResult(result) = response.result
    {
        let _ = folio_agent::mcp::tool_output(result);
    }
}
