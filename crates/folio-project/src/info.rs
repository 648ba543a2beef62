//! What discovery found about an agent, as one typed description shared by `folio info --json`
//! and the server's `GET /v1/agent`.

use folio_protocol::{
    AgentInfo, ArtifactKindInfo, ArtifactsInfo, AuthoredToolInfo, ChannelInfo, ConnectionInfo,
    DiagnosticInfo, HookInfo, ScheduleInfo, SkillFrontmatterInfo, SkillInfo, SubagentInfo,
    ToolEffect, ToolExecution, TransportInfo,
};

use crate::allowlist::NativeTool;
use crate::config::{Effect, Execution};
use crate::diagnostic::{Diagnostic, Severity};
use crate::discovery::AgentDefinition;
use crate::mcp::{McpServerConfig, McpTransport};
use crate::skills::SkillForm;

/// What discovery found: the body of `folio info --json` and the source of `GET /v1/agent`
/// (diagnostics are left empty for the caller to fill).
pub fn describe(definition: &AgentDefinition) -> AgentInfo {
    let relative = |path: &std::path::Path| {
        path.strip_prefix(&definition.project_dir)
            .unwrap_or(path)
            .display()
            .to_string()
    };
    let tools = definition
        .tools
        .iter()
        .map(|tool| AuthoredToolInfo {
            name: tool.name.clone(),
            description: tool.description.clone(),
            command: tool.command.clone(),
            effect: match tool.effect {
                Effect::Read => ToolEffect::Read,
                Effect::Write => ToolEffect::Write,
            },
            execution: match tool.execution {
                Execution::Server => ToolExecution::Server,
                Execution::Agent => ToolExecution::Agent,
            },
            needs_approval: tool.needs_approval,
            timeout_secs: tool.timeout_secs,
            input_schema: tool.schema.clone(),
        })
        .collect();
    let skills = definition
        .skills
        .iter()
        .map(|skill| SkillInfo {
            name: skill.name.clone(),
            form: match skill.form {
                SkillForm::Flat => folio_protocol::SkillForm::Flat,
                SkillForm::Packaged => folio_protocol::SkillForm::Packaged,
                SkillForm::Generated => folio_protocol::SkillForm::Generated,
            },
            description: skill.description.clone(),
            frontmatter: SkillFrontmatterInfo {
                name: skill.frontmatter.name.clone(),
                description: skill.frontmatter.description.clone(),
                allowed_tools: skill.frontmatter.allowed_tools.clone(),
                metadata: skill.frontmatter.metadata.clone(),
                license: skill.frontmatter.license.clone(),
                compatibility: skill.frontmatter.compatibility.clone(),
            },
            path: relative(&skill.path),
        })
        .collect();
    let connections = |list: &[McpServerConfig]| -> Vec<ConnectionInfo> {
        list.iter()
            .map(|c| ConnectionInfo {
                name: c.name.clone(),
                description: c.description.clone(),
                transport: transport_info(&c.transport),
                env_vars: c.template_vars(),
            })
            .collect()
    };
    AgentInfo {
        name: definition.name.clone(),
        description: definition.description.clone(),
        model: definition.config.model.clone(),
        rooted: definition.is_rooted(),
        native_tools: definition
            .native_tools
            .iter()
            .map(|tool| NativeTool::tool_name(tool).to_string())
            .collect(),
        tools,
        skills,
        mcp_connections: connections(&definition.mcp_connections),
        host_connections: connections(&definition.host_connections),
        subagents: definition
            .subagents
            .iter()
            .map(|s| SubagentInfo {
                id: s.id.clone(),
                description: s.description.clone(),
                model: s.model.clone(),
            })
            .collect(),
        hooks: definition
            .hooks
            .iter()
            .map(|h| HookInfo {
                name: h.name.clone(),
                events: h.events.clone(),
                command: h.command.clone(),
            })
            .collect(),
        artifacts: definition.artifacts.as_ref().map(|a| ArtifactsInfo {
            agent_tool: a.agent_tool,
            max: a.max,
            kinds: a
                .kinds
                .iter()
                .map(|(name, kind)| ArtifactKindInfo {
                    name: name.clone(),
                    description: kind.description.clone(),
                    schema: kind.schema.clone(),
                })
                .collect(),
        }),
        channels: definition
            .channels
            .iter()
            .map(|c| ChannelInfo {
                id: c.id.clone(),
                kind: c.kind.clone(),
            })
            .collect(),
        schedules: definition
            .schedules
            .iter()
            .map(|s| ScheduleInfo {
                name: s.name.clone(),
                cron: s.cadence.expression().to_string(),
                prompt: s.prompt.clone(),
            })
            .collect(),
        sandbox: definition
            .sandbox_dir
            .as_ref()
            .and_then(|dir| dir.strip_prefix(&definition.project_dir).ok())
            .map(|dir| dir.display().to_string()),
        diagnostics: Vec::new(),
        connection_checks: Vec::new(),
        connection_auth: Vec::new(),
    }
}

/// A connection's resolved transport (templates kept as written).
fn transport_info(transport: &McpTransport) -> TransportInfo {
    match transport {
        McpTransport::Stdio { command, args, env } => TransportInfo::Stdio {
            command: command.clone(),
            args: args.clone(),
            env: env.clone(),
        },
        McpTransport::Http { url, headers } => TransportInfo::Http {
            url: url.clone(),
            headers: headers.clone(),
        },
        McpTransport::Peer { agent, url, .. } => TransportInfo::Peer {
            agent: agent.clone(),
            url: url.clone(),
        },
    }
}

/// A discovery diagnostic as the wire shows it.
pub fn diagnostic_info(diagnostic: &Diagnostic) -> DiagnosticInfo {
    DiagnosticInfo {
        severity: match diagnostic.severity {
            Severity::Error => folio_protocol::Severity::Error,
            Severity::Warning => folio_protocol::Severity::Warning,
        },
        file: diagnostic.file.clone(),
        line: diagnostic.line,
        message: diagnostic.message.clone(),
    }
}
