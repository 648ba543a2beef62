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

use crate::error::ManagerError;

/// Refuses an unscoped direct call of a built-in tool (`403 forbidden`).
pub(crate) fn check_unscoped(name: &str) -> Result<(), ManagerError> {
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
