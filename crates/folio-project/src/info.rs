//! What discovery found about an agent, as one JSON description shared by `folio info --json`
//! and the server's `GET /v1/agent`.

use serde_json::{Map, Value, json};

use crate::allowlist::NativeTool;
use crate::discovery::AgentDefinition;
use crate::mcp::{McpServerConfig, McpTransport};

/// What discovery found, as JSON: the body of `folio info --json` and of `GET /v1/agent`.
pub fn describe(definition: &AgentDefinition) -> Value {
    let mut info = Map::new();
    info.insert("name".into(), json!(definition.name));
    info.insert("description".into(), json!(definition.description));
    info.insert("model".into(), json!(definition.config.model));
    info.insert("rooted".into(), json!(definition.is_rooted()));
    info.insert(
        "nativeTools".into(),
        json!(
            definition
                .native_tools
                .iter()
                .map(NativeTool::tool_name)
                .collect::<Vec<_>>()
        ),
    );
    let tools: Vec<Value> = definition
        .tools
        .iter()
        .map(|tool| {
            json!({
                "name": tool.name,
                "description": tool.description,
                "command": tool.command,
                "effect": tool.effect,
                "execution": tool.execution,
                "needsApproval": tool.needs_approval,
                "timeoutSecs": tool.timeout_secs,
                "inputSchema": tool.schema,
            })
        })
        .collect();
    info.insert("tools".into(), Value::Array(tools));
    let skills: Vec<Value> = definition
        .skills
        .iter()
        .map(|skill| {
            let mut value = crate::skills::info_value(skill);
            if let Ok(path) = skill.path.strip_prefix(&definition.project_dir) {
                value["path"] = json!(path.display().to_string());
            }
            value
        })
        .collect();
    info.insert("skills".into(), Value::Array(skills));
    let connections = |list: &[McpServerConfig]| -> Vec<Value> {
        list.iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "description": c.description,
                    "transport": transport_json(&c.transport),
                    "envVars": c.template_vars(),
                })
            })
            .collect()
    };
    info.insert(
        "mcpConnections".into(),
        Value::Array(connections(&definition.mcp_connections)),
    );
    info.insert(
        "hostConnections".into(),
        Value::Array(connections(&definition.host_connections)),
    );
    let subagents: Vec<Value> = definition
        .subagents
        .iter()
        .map(|s| json!({"id": s.id, "description": s.description, "model": s.model}))
        .collect();
    info.insert("subagents".into(), Value::Array(subagents));
    let hooks: Vec<Value> = definition
        .hooks
        .iter()
        .map(|h| json!({"name": h.name, "events": h.events, "command": h.command}))
        .collect();
    info.insert("hooks".into(), Value::Array(hooks));
    info.insert(
        "artifacts".into(),
        definition.artifacts.as_ref().map_or(Value::Null, |a| {
            json!({
                "agentTool": a.agent_tool,
                "max": a.max,
                "kinds": a.kinds.iter().map(|(name, kind)| {
                    json!({"name": name, "description": kind.description, "schema": kind.schema})
                }).collect::<Vec<_>>(),
            })
        }),
    );
    info.insert("channels".into(), json!(definition.channels));
    info.insert("schedules".into(), json!(definition.schedules));
    info.insert(
        "sandbox".into(),
        json!(
            definition
                .sandbox_dir
                .as_ref()
                .and_then(|dir| dir.strip_prefix(&definition.project_dir).ok())
                .map(|dir| dir.display().to_string())
        ),
    );
    Value::Object(info)
}

/// A connection's resolved transport (templates kept as written).
fn transport_json(transport: &McpTransport) -> Value {
    match transport {
        McpTransport::Stdio { command, args, env } => {
            json!({"type": "stdio", "command": command, "args": args, "env": env})
        }
        McpTransport::Http { url, headers } => {
            json!({"type": "http", "url": url, "headers": headers})
        }
        McpTransport::Peer { agent } => json!({"type": "peer", "agent": agent}),
    }
}
