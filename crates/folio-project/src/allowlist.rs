//! The `tools` allowlist of `agent.toml` → the built-in tools a turn offers (docs/tools.md
//! "Which tools a turn gets"), and the fail-closed rules for an authored root.

/// Which of the eight synthesized file tools this is (folio-agent implements them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FileTool {
    /// `Read`: a file's lines, numbered; images as image parts.
    Read,
    /// `LS`: a directory's entries.
    Ls,
    /// `Grep`: regex search over file lines.
    Grep,
    /// `Glob`: paths matching a pattern.
    Glob,
    /// `Write`: create or overwrite a file.
    Write,
    /// `StrReplace`: exact, literal replacement inside a file.
    StrReplace,
    /// `Delete`: remove a file.
    Delete,
    /// `SemanticSearch`: ranked full-text search through the tree's index.
    SemanticSearch,
}

impl FileTool {
    /// All eight, in a stable order.
    pub const ALL: [FileTool; 8] = [
        FileTool::Read,
        FileTool::Ls,
        FileTool::Grep,
        FileTool::Glob,
        FileTool::Write,
        FileTool::StrReplace,
        FileTool::Delete,
        FileTool::SemanticSearch,
    ];

    /// The model-facing name.
    pub const fn tool_name(self) -> &'static str {
        match self {
            FileTool::Read => "Read",
            FileTool::Ls => "LS",
            FileTool::Grep => "Grep",
            FileTool::Glob => "Glob",
            FileTool::Write => "Write",
            FileTool::StrReplace => "StrReplace",
            FileTool::Delete => "Delete",
            FileTool::SemanticSearch => "SemanticSearch",
        }
    }
}

/// A built-in tool the allowlist can grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NativeTool {
    /// One of the eight synthesized file tools.
    File(FileTool),
    /// `Shell` (host default only).
    Shell,
    /// `WebFetch`.
    WebFetch,
    /// `UpdateTodos`.
    UpdateTodos,
    /// `ReadTodos`.
    ReadTodos,
    /// `Task`, when the agent has subagents.
    Task,
    /// `set_reminder`: a one-off wake of the chat session (opt-in: only when listed).
    SetReminder,
    /// `WebSearch`, when `[tools.web_search]` configures a backend.
    WebSearch,
    /// `ReadLints` (host default only), when `[tools.read_lints]` configures linters.
    ReadLints,
    /// `storage_get`, `storage_put`, `storage_delete`, `storage_list` (opt-in: `storage`):
    /// the session engine's key-value storage.
    Storage(StorageOp),
}

/// One of the four storage tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StorageOp {
    /// `storage_get`.
    Get,
    /// `storage_put`.
    Put,
    /// `storage_delete`.
    Delete,
    /// `storage_list`.
    List,
}

impl NativeTool {
    /// The model-facing name of the tool.
    pub fn tool_name(&self) -> &'static str {
        match self {
            NativeTool::File(file) => file.tool_name(),
            NativeTool::Shell => "Shell",
            NativeTool::WebFetch => "WebFetch",
            NativeTool::UpdateTodos => "UpdateTodos",
            NativeTool::ReadTodos => "ReadTodos",
            NativeTool::Task => "Task",
            NativeTool::SetReminder => "set_reminder",
            NativeTool::WebSearch => "WebSearch",
            NativeTool::ReadLints => "ReadLints",
            NativeTool::Storage(StorageOp::Get) => "storage_get",
            NativeTool::Storage(StorageOp::Put) => "storage_put",
            NativeTool::Storage(StorageOp::Delete) => "storage_delete",
            NativeTool::Storage(StorageOp::List) => "storage_list",
        }
    }
}

/// Every name the allowlist accepts.
pub const ALLOWLIST_NAMES: &[&str] = &[
    "read",
    "ls",
    "grep",
    "glob",
    "edit",
    "delete",
    "semSearch",
    "shell",
    "webFetch",
    "webSearch",
    "updateTodos",
    "readTodos",
    "task",
    "readLints",
    "mcp",
    "setReminder",
    "storage",
];

/// Names that cannot be granted under an authored root (they need the host disk).
pub const ROOT_FORBIDDEN: &[&str] = &["shell", "task", "readLints"];

/// Which built-in tools that need a backend have one configured (`[tools.web_search]`,
/// `[tools.read_lints]`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Backends {
    /// `[tools.web_search]` is set.
    pub web_search: bool,
    /// `[tools.read_lints]` is set.
    pub read_lints: bool,
}

impl Backends {
    /// The backends `tools` (agent.toml's `tools`) configures.
    pub fn of(tools: Option<&crate::tools_config::ToolsSection>) -> Backends {
        Backends {
            web_search: tools.and_then(|t| t.web_search()).is_some(),
            read_lints: tools.and_then(|t| t.read_lints()).is_some(),
        }
    }
}

/// What the allowlist resolved to, plus warnings about names that grant nothing here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    /// The granted built-in tools, sorted.
    pub tools: Vec<NativeTool>,
    /// Names that were accepted but grant nothing in this configuration, with why.
    pub warnings: Vec<String>,
}

fn file_tools_for(name: &str) -> &'static [FileTool] {
    match name {
        "read" => &[FileTool::Read],
        "ls" => &[FileTool::Ls],
        "grep" => &[FileTool::Grep],
        "glob" => &[FileTool::Glob],
        "edit" => &[FileTool::Write, FileTool::StrReplace],
        "delete" => &[FileTool::Delete],
        "semSearch" => &[FileTool::SemanticSearch],
        _ => &[],
    }
}

/// Resolves `tools` (None = omitted) for an agent with or without an authored root.
///
/// Folio's reading of the seed's table: listed file-family names grant exactly those file
/// tools; a non-empty list with no file-family name grants every file tool; `[]` grants none.
/// Names must already be valid ([`ALLOWLIST_NAMES`]) and root-legal (checked by discovery).
/// `WebSearch` and `ReadLints` are offered (by default, or when listed) only with a configured
/// backend; a backend configured but not granted by a list is warned about.
pub fn resolve(
    tools: Option<&[String]>,
    rooted: bool,
    has_subagents: bool,
    backends: Backends,
) -> Resolved {
    let mut out = Resolved::default();
    let all_files = FileTool::ALL.iter().map(|t| NativeTool::File(*t));
    let Some(names) = tools else {
        out.tools.extend(all_files);
        if !rooted {
            out.tools.push(NativeTool::Shell);
            if has_subagents {
                out.tools.push(NativeTool::Task);
            }
        }
        out.tools.extend([
            NativeTool::WebFetch,
            NativeTool::UpdateTodos,
            NativeTool::ReadTodos,
        ]);
        if backends.web_search {
            out.tools.push(NativeTool::WebSearch);
        }
        if backends.read_lints && !rooted {
            out.tools.push(NativeTool::ReadLints);
        }
        out.tools.sort();
        return out;
    };
    for (configured, name, section) in [
        (backends.web_search, "webSearch", "web_search"),
        (backends.read_lints, "readLints", "read_lints"),
    ] {
        if configured && !names.iter().any(|n| n == name) {
            out.warnings.push(format!(
                "[tools.{section}] is configured but the allowlist does not grant \"{name}\"; add it to the list or remove [tools.{section}]"
            ));
        }
    }
    if names.is_empty() {
        return out;
    }
    let listed_files: Vec<NativeTool> = names
        .iter()
        .flat_map(|name| file_tools_for(name))
        .map(|t| NativeTool::File(*t))
        .collect();
    if listed_files.is_empty() {
        out.tools.extend(all_files);
    } else {
        out.tools.extend(listed_files);
    }
    for name in names {
        match name.as_str() {
            "shell" => out.tools.push(NativeTool::Shell),
            "webFetch" => out.tools.push(NativeTool::WebFetch),
            "updateTodos" => out.tools.push(NativeTool::UpdateTodos),
            "readTodos" => out.tools.push(NativeTool::ReadTodos),
            "setReminder" => out.tools.push(NativeTool::SetReminder),
            "storage" => out.tools.extend(
                [
                    StorageOp::Get,
                    StorageOp::Put,
                    StorageOp::Delete,
                    StorageOp::List,
                ]
                .map(NativeTool::Storage),
            ),
            "task" if has_subagents => out.tools.push(NativeTool::Task),
            "task" => out
                .warnings
                .push("\"task\" grants Task only when the agent has subagents; it has none".into()),
            "webSearch" if backends.web_search => out.tools.push(NativeTool::WebSearch),
            "webSearch" => out.warnings.push(
                "\"webSearch\" needs a search backend and none is configured, so WebSearch is not offered (add [tools.web_search] with a provider)"
                    .into(),
            ),
            "readLints" if backends.read_lints => out.tools.push(NativeTool::ReadLints),
            "readLints" => out.warnings.push(
                "\"readLints\" needs a lint command and none is configured, so ReadLints is not offered (add [tools.read_lints] with commands)"
                    .into(),
            ),
            _ => {}
        }
    }
    out.tools.sort();
    out.tools.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn tool_names(resolved: &Resolved) -> Vec<String> {
        resolved
            .tools
            .iter()
            .map(|t| match t {
                NativeTool::File(f) => f.tool_name().to_string(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn seed_table_rows() {
        let eight = [
            "Read",
            "LS",
            "Grep",
            "Glob",
            "Write",
            "StrReplace",
            "Delete",
            "SemanticSearch",
        ];
        let host_default = tool_names(&resolve(None, false, false, Backends::default()));
        assert_eq!(host_default[..8], eight);
        assert!(host_default.contains(&"Shell".to_string()));
        assert_eq!(
            tool_names(&resolve(
                Some(&names(&["read", "shell"])),
                false,
                false,
                Backends::default()
            )),
            ["Read", "Shell"]
        );
        assert!(
            resolve(Some(&[]), false, false, Backends::default())
                .tools
                .is_empty()
        );
        let rooted = tool_names(&resolve(None, true, true, Backends::default()));
        assert_eq!(rooted[..8], eight);
        assert!(!rooted.contains(&"Shell".to_string()) && !rooted.contains(&"Task".to_string()));
        let todos = tool_names(&resolve(
            Some(&names(&["updateTodos"])),
            true,
            false,
            Backends::default(),
        ));
        assert_eq!(todos[..8], eight);
        assert_eq!(todos[8..], ["UpdateTodos"]);
        assert_eq!(
            tool_names(&resolve(
                Some(&names(&["semSearch"])),
                true,
                false,
                Backends::default()
            )),
            ["SemanticSearch"]
        );
        assert!(
            resolve(Some(&[]), true, false, Backends::default())
                .tools
                .is_empty()
        );
        let fetch = tool_names(&resolve(
            Some(&names(&["webFetch"])),
            true,
            false,
            Backends::default(),
        ));
        assert_eq!(fetch[8..], ["WebFetch"]);
        assert_eq!(
            tool_names(&resolve(
                Some(&names(&["edit"])),
                true,
                false,
                Backends::default()
            )),
            ["Write", "StrReplace"]
        );
    }

    #[test]
    fn backends_grant_web_search_and_read_lints_only_when_configured() {
        let both = Backends {
            web_search: true,
            read_lints: true,
        };
        let host = tool_names(&resolve(None, false, false, both));
        assert!(host.contains(&"WebSearch".to_string()) && host.contains(&"ReadLints".to_string()));
        let rooted = tool_names(&resolve(None, true, false, both));
        assert!(
            rooted.contains(&"WebSearch".to_string()) && !rooted.contains(&"ReadLints".to_string())
        );
        let listed = resolve(
            Some(&names(&["read", "webSearch", "readLints"])),
            false,
            false,
            both,
        );
        assert_eq!(tool_names(&listed), ["Read", "WebSearch", "ReadLints"]);
        assert!(listed.warnings.is_empty());
        let unconfigured = resolve(
            Some(&names(&["read", "webSearch", "readLints"])),
            false,
            false,
            Backends::default(),
        );
        assert_eq!(tool_names(&unconfigured), ["Read"]);
        assert_eq!(unconfigured.warnings.len(), 2);
        assert!(unconfigured.warnings[0].contains("add [tools.web_search]"));
        let not_granted = resolve(Some(&names(&["read"])), false, false, both);
        assert_eq!(tool_names(&not_granted), ["Read"]);
        assert_eq!(
            not_granted.warnings,
            [
                "[tools.web_search] is configured but the allowlist does not grant \"webSearch\"; add it to the list or remove [tools.web_search]",
                "[tools.read_lints] is configured but the allowlist does not grant \"readLints\"; add it to the list or remove [tools.read_lints]",
            ]
        );
    }
}
