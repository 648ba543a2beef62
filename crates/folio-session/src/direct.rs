//! The [`Tools`] handle: direct tool calls (`POST /v1/tools/:name`, bound to a session or
//! unscoped), outside any turn.
//!
//! Which tools a direct call may run (docs/tools.md). Unscoped calls
//! (`POST /v1/tools/:name`) share one workspace among every principal, so they run only tools
//! the agent's authors wrote — never a built-in (the file tools, `Shell`, `WebFetch`, the todo
//! tools, `Task`, `WebSearch`, `ReadLints`), which would read, write or run in that shared workspace or on the host.
//! Session-scoped calls run any tool, in the caller's own session (ownership is checked by the
//! manager).
//!
//! Decision: "tools the agent's authors wrote" are the authored tools (`agent/tools/*.toml`),
//! tools host code registers, and the tools of the MCP servers the authors connected. An MCP
//! tool reaches exactly what its server reaches, in a session or not, so refusing it unscoped
//! would protect nothing. `tag_artifact` is built in and tags the calling session's artifacts,
//! so it is refused unscoped like the others.

use std::sync::Arc;

use folio_agent::tools::{SessionContext, TodoList};
use folio_protocol::ToolCallResult;
use serde_json::Value;

use crate::actor::{DirectRun, direct_call};
use crate::command::Command;
use crate::engine::Engine;
use crate::error::{ManagerError, io_error};
use crate::remote::Remote;

/// Calls tools directly, outside a turn.
#[derive(Clone)]
pub struct Tools {
    pub(crate) engine: Arc<Engine>,
}

impl Tools {
    /// A direct call of `name`, bound to a session (sharing its execution lock) or unscoped.
    /// Skips the approval gate; still validates the input.
    pub async fn call(
        &self,
        principal: &str,
        session_id: Option<&str>,
        name: &str,
        input: Value,
    ) -> Result<ToolCallResult, ManagerError> {
        match session_id {
            Some(session_id) => {
                let live = self.engine.owned(principal, session_id).await?;
                let name = name.to_string();
                // The actor runs the call in its own task: the request's trace context goes along.
                let trace_parent = folio_telemetry::incoming_traceparent();
                self.engine
                    .command(&live, &Remote::Busy, |reply| Command::Tool {
                        name,
                        input,
                        trace_parent,
                        reply,
                    })
                    .await?
            }
            None => {
                check_unscoped(name)?;
                let workspace = self.engine.state.path().join("direct").join("workspace");
                std::fs::create_dir_all(&workspace)
                    .map_err(|e| io_error("cannot create the direct-call workspace", e))?;
                direct_call(
                    &self.engine.agent(),
                    name,
                    input,
                    &workspace,
                    (
                        "direct",
                        SessionContext {
                            principal: principal.to_string(),
                            ..SessionContext::default()
                        },
                    ),
                    DirectRun {
                        todos: TodoList::default(),
                        cancel: self.engine.life.shutdown.child_token(),
                        // Not a session's call: no host API, no variant.
                        host: None,
                        variant: None,
                    },
                )
                .await
            }
        }
    }
}

/// Refuses an unscoped direct call of a built-in tool (`403 forbidden`).
fn check_unscoped(name: &str) -> Result<(), ManagerError> {
    let every_backend = folio_project::Backends {
        web_search: true,
        read_lints: true,
    };
    let builtin = folio_project::resolve(None, false, true, every_backend)
        .tools
        .iter()
        .any(|tool| tool.tool_name() == name)
        || name == folio_agent::TAG_ARTIFACT;
    if builtin {
        return Err(ManagerError::BuiltInUnscoped(name.to_string()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_are_refused_unscoped_and_others_pass() {
        for name in [
            "Read",
            "LS",
            "Grep",
            "Glob",
            "Write",
            "StrReplace",
            "Delete",
            "SemanticSearch",
            "Shell",
            "WebFetch",
            "WebSearch",
            "ReadLints",
            "UpdateTodos",
            "ReadTodos",
            "Task",
            folio_agent::TAG_ARTIFACT,
        ] {
            assert!(
                check_unscoped(name) == Err(ManagerError::BuiltInUnscoped(name.into())),
                "{name}"
            );
        }
        for name in [
            "Deploy",
            "lookup_order",
            "read",
            "shell",
            "mcp__tracker__search",
        ] {
            assert_eq!(check_unscoped(name), Ok(()), "{name}");
        }
    }
}
