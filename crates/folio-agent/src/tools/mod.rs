//! The tool registry: every model-facing tool behind one [`Tool`] trait, whether synthesized
//! from the FileSystem, a host process (`Shell`), the web, or the session's todo list.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine as _;
use folio_fs::{FileSystem, PathError};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::sink::EventSink;

pub(crate) mod authored;
mod files;
pub mod host;
pub(crate) mod input;
mod lints;
pub mod process;
mod reminder;
mod sandbox;
mod search;
mod shell;
mod spill;
mod storage;
mod todos;
mod web;

pub use authored::AuthoredTool;
pub use files::FileTool;
pub use lints::ReadLintsTool;
pub use reminder::{SET_REMINDER, SetReminderTool};
pub use sandbox::{SandboxError, SandboxPolicy};
pub use search::WebSearchTool;
pub use shell::ShellTool;
pub use storage::StorageTool;
pub use todos::{Todo, TodoList, TodosTool};
pub use web::{WebClientError, WebFetchTool};

pub(crate) use spill::spill;

/// A model-facing tool: a name, a schema, and an async call.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls (`Read`, `Shell`, `mcp__srv__echo`, …).
    fn name(&self) -> &str;
    /// What the tool does, shown to the model.
    fn description(&self) -> &str;
    /// The JSON Schema of the input, shown to the model.
    fn input_schema(&self) -> Value;
    /// Validates `input` and maps aliases to canonical names; the error is one line naming the
    /// argument, returned to the model as a tool error.
    fn prepare(&self, input: Value) -> Result<Value, ToolError>;
    /// Runs the tool on prepared input.
    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
    /// Whether a model-initiated call must wait for a human decision first.
    fn needs_approval(&self) -> bool {
        false
    }
    /// How long a parked call waits for a decision before it is denied (`None`: the agent's
    /// default, `[approvals] timeout`).
    fn approval_timeout(&self) -> Option<std::time::Duration> {
        None
    }
    /// The in-turn form of a tool that records events of its own (`Task`, `tag_artifact`).
    fn turn_tool(&self) -> Option<&dyn TurnTool> {
        None
    }
}

/// A tool that records events of its own in the turn (`Task`, `tag_artifact`): the turn
/// loop calls [`TurnTool::call_in_turn`] instead of [`Tool::call`].
#[async_trait::async_trait]
pub trait TurnTool: Send + Sync {
    /// Runs on prepared input inside turn `turn_id`, recording its events through `sink`.
    async fn call_in_turn(
        &self,
        input: Value,
        ctx: &ToolContext,
        sink: &dyn EventSink,
        turn_id: &str,
    ) -> Result<ToolOutput, ToolError>;
}

/// A successful tool result.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// Plain text.
    Text(String),
    /// A JSON value (shown to the model as compact JSON).
    Json(Value),
    /// An image, base64-encoded.
    Image {
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
        mime_type: String,
        /// Base64 of the image bytes.
        data: String,
    },
}

impl ToolOutput {
    /// An image output from raw bytes.
    pub fn image(mime_type: &str, bytes: &[u8]) -> Self {
        ToolOutput::Image {
            mime_type: mime_type.to_string(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    /// The `output` value recorded in `action.result`: a string, a JSON value, or content parts.
    pub fn to_event_value(&self) -> Value {
        match self {
            ToolOutput::Text(text) => Value::String(text.clone()),
            ToolOutput::Json(value) => value.clone(),
            ToolOutput::Image { mime_type, data } => {
                json!([{"type": "image", "mimeType": mime_type, "data": data}])
            }
        }
    }
}

/// A failed tool call: one line for the model (`isError: true`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl From<PathError> for ToolError {
    fn from(err: PathError) -> Self {
        ToolError(err.to_string())
    }
}

/// Where large tool output spills, which depends on whether the turn runs on an authored root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScratchMode {
    /// Host default: `{workspace}/agent-tools/{uuid}.txt` stays on the host disk.
    Host,
    /// Authored root: the spill file moves to `/tmp/{uuid}.txt` in the turn's root.
    Rooted,
}

/// Everything a tool call may use, bound per call.
#[derive(Clone)]
pub struct ToolContext {
    /// The turn's FileSystem (the authored root with `/tmp`, or the host disk).
    pub fs: Arc<dyn FileSystem>,
    /// The session workspace on the host (Shell's cwd, the spill directory's parent).
    pub workspace: PathBuf,
    /// How large output is spilled.
    pub scratch: ScratchMode,
    /// Fires on stop/preempt; tools abandon work and kill children.
    pub cancel: CancellationToken,
    /// The session's todo list.
    pub todos: TodoList,
    /// The session id.
    pub session_id: String,
    /// The id of this tool call.
    pub call_id: String,
    /// A dry-run session: write tools return their `dry_run_result` instead of running.
    pub dry_run: bool,
    /// Why the session exists (`"eval"` for eval runs), when known.
    pub purpose: Option<String>,
    /// The channel's continuation key of the session, when it has one.
    pub continuation_key: Option<String>,
    /// The principal that owns the session (a local peer agent's session belongs to it too).
    pub principal: String,
    /// How many peer asks deep the session is (0: asked by a person or a channel).
    pub peer_depth: u32,
    /// The turn the call belongs to (`None`: a direct call outside a turn).
    pub turn_id: Option<String>,
    /// Issues the host API credentials of the processes the call starts (`None`: no host
    /// API here).
    pub host: Option<Arc<dyn host::HostBroker>>,
}

/// What a session tells its tools about itself, beyond its id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionContext {
    /// A dry-run session: write tools return their `dry_run_result` instead of running.
    pub dry_run: bool,
    /// Why the session exists (`"eval"` for eval runs), when known.
    pub purpose: Option<String>,
    /// The channel's continuation key of the session, when it has one.
    pub continuation_key: Option<String>,
    /// The principal that owns the session.
    pub principal: String,
    /// How many peer asks deep the session is (0: asked by a person or a channel).
    pub peer_depth: u32,
    /// The most tool calls one turn may make (`[limits] tool_calls_per_turn` of the session's
    /// principal); `None`: no limit.
    pub tool_calls_per_turn: Option<u64>,
}

/// The tools a turn offers, by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    /// MCP servers whose tools cannot be called now, with why (their start error).
    unavailable: BTreeMap<String, String>,
}

/// A tool registered under a name another tool already has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("two tools are named {name}: rename one of them")]
pub struct DuplicateTool {
    /// The name both tools share.
    pub name: String,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        ToolRegistry::default()
    }

    /// Adds `tool`; a second tool with the same name replaces nothing and is an error.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), DuplicateTool> {
        let name = tool.name().to_string();
        if self.tools.contains_key(&name) {
            return Err(DuplicateTool { name });
        }
        self.tools.insert(name, tool);
        Ok(())
    }

    /// Removes the tool called `name`, if there is one.
    pub fn remove(&mut self, name: &str) {
        self.tools.remove(name);
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Records that the MCP server `server` could not start: a call of one of its tools
    /// (`mcp__<server>__…`) fails with `message` instead of "unknown tool".
    pub fn mark_unavailable(&mut self, server: &str, message: String) {
        self.unavailable.insert(server.to_string(), message);
    }

    /// Forgets that `server` could not start (it runs now and its tools are registered).
    pub fn mark_available(&mut self, server: &str) {
        self.unavailable.remove(server);
    }

    /// Why no tool called `name` can run: the start error of its MCP server when that server
    /// could not start, else that no such tool exists (with the tools that do).
    pub fn missing(&self, name: &str) -> String {
        let unavailable = self
            .unavailable
            .iter()
            .find(|(server, _)| name.starts_with(&format!("mcp__{server}__")));
        match unavailable {
            Some((_, message)) => message.clone(),
            None => format!(
                "unknown tool \"{name}\"; available tools: {}",
                self.names().collect::<Vec<_>>().join(", ")
            ),
        }
    }

    /// Tool names in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Every tool, in name order.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.values()
    }

    /// Prepares and runs `name` with `input`; an unknown tool is a tool error, not a panic.
    pub async fn call(
        &self,
        name: &str,
        input: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let Some(tool) = self.get(name) else {
            return Err(ToolError(self.missing(name)));
        };
        let input = tool.prepare(input)?;
        tool.call(input, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use schemars::JsonSchema;
    use serde::Serialize;
    use serde::de::DeserializeOwned;
    use serde_json::{Map, Value, json};

    use super::input::{self, InputError};
    use super::{FileTool, ReadLintsTool, SetReminderTool, ShellTool, TodosTool, Tool};
    use super::{WebFetchTool, WebSearchTool, files, lints, reminder, search, shell, todos, web};

    /// A value the property schema `schema` accepts.
    fn sample(schema: &Value) -> Value {
        if let Some(first) = schema.get("enum").and_then(|e| e.get(0)) {
            return first.clone();
        }
        match schema["type"].as_str() {
            Some("string") => json!("x"),
            Some("integer") => json!(3),
            Some("boolean") => json!(true),
            Some("array") => json!([sample(&schema["items"])]),
            Some("object") => Value::Object(
                schema["properties"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, property)| (name.clone(), sample(property)))
                    .collect(),
            ),
            other => panic!("no sample for a property of type {other:?}: {schema}"),
        }
    }

    /// A value of another JSON type than the property schema `schema` asks for.
    fn wrong(schema: &Value) -> Value {
        match schema["type"].as_str() {
            Some("string") => json!(7),
            _ => json!("x"),
        }
    }

    /// Holds the schema `tool` advertises against the struct `T` its calls are parsed into:
    /// a sample of every advertised argument parses and round-trips under the advertised
    /// names; dropping an advertised required argument is refused as missing (and nothing
    /// else is required); a wrongly typed argument is refused naming it; an argument the
    /// schema does not list is refused.
    fn holds<T: JsonSchema + DeserializeOwned + Serialize>(tool: &dyn Tool) {
        let name = tool.name();
        let schema = tool.input_schema();
        assert_eq!(schema, input::schema::<T>(), "{name}: advertised schema");
        assert_eq!(schema["type"], "object", "{name}");
        assert_eq!(schema["additionalProperties"], false, "{name}");
        let properties = schema["properties"].as_object().expect("properties");
        let required: Vec<&str> = schema["required"]
            .as_array()
            .expect("required")
            .iter()
            .map(|r| r.as_str().expect("a name"))
            .collect();
        for r in &required {
            assert!(
                properties.contains_key(*r),
                "{name}: {r} required, not a property"
            );
        }
        let all = sample(&schema);
        let parsed = input::parse::<T>(all.clone())
            .unwrap_or_else(|err| panic!("{name}: {all} does not parse: {err}"));
        assert_eq!(
            input::canonical(&parsed).expect("encodes"),
            all,
            "{name}: the parsed input does not read back under the advertised names"
        );
        let minimal: Map<String, Value> = required
            .iter()
            .map(|r| (r.to_string(), sample(&properties[*r])))
            .collect();
        if let Err(err) = input::parse::<T>(Value::Object(minimal.clone())) {
            panic!("{name}: the required arguments alone do not parse: {err}");
        }
        for r in &required {
            let mut without = minimal.clone();
            without.remove(*r);
            match input::parse::<T>(Value::Object(without)) {
                Err(InputError::Missing { name: missing }) => assert_eq!(missing, *r, "{name}"),
                Err(err) => panic!("{name}: without {r}: {err}"),
                Ok(_) => panic!("{name}: {r} is advertised as required but is not"),
            }
        }
        for (property, property_schema) in properties {
            let mut given = minimal.clone();
            given.insert(property.clone(), wrong(property_schema));
            match input::parse::<T>(Value::Object(given)) {
                Err(InputError::WrongType { name: wrong, .. }) => {
                    assert_eq!(&wrong, property, "{name}")
                }
                Err(err) => panic!("{name}: wrongly typed {property}: {err}"),
                Ok(_) => panic!("{name}: {property} accepts a value its schema refuses"),
            }
        }
        let mut extra = minimal;
        extra.insert("notAnArgument".into(), json!(1));
        assert!(
            matches!(
                input::parse::<T>(Value::Object(extra)),
                Err(InputError::Unknown { .. })
            ),
            "{name}: an argument the schema does not list is accepted"
        );
    }

    #[test]
    fn every_builtin_schema_matches_its_input_struct() {
        for tool in FileTool::ALL {
            match tool {
                FileTool::Read => holds::<files::ReadInput>(&tool),
                FileTool::Ls => holds::<files::LsInput>(&tool),
                FileTool::Grep => holds::<files::GrepInput>(&tool),
                FileTool::Glob => holds::<files::GlobInput>(&tool),
                FileTool::Write => holds::<files::WriteInput>(&tool),
                FileTool::StrReplace => holds::<files::StrReplaceInput>(&tool),
                FileTool::Delete => holds::<files::DeleteInput>(&tool),
                FileTool::SemanticSearch => holds::<files::SemanticSearchInput>(&tool),
            }
        }
        holds::<shell::ShellInput>(&ShellTool::default());
        holds::<web::WebFetchInput>(&WebFetchTool::new().expect("client"));
        let config = serde_json::from_value(json!({"provider": "searxng"})).expect("config");
        let search = WebSearchTool::new(config, Path::new("/"), crate::env::process_env());
        holds::<search::WebSearchInput>(&search.expect("client"));
        holds::<todos::UpdateTodosInput>(&TodosTool::Update);
        holds::<todos::ReadTodosInput>(&TodosTool::Read);
        let config =
            serde_json::from_value(json!({"commands": [{"command": ["x"], "format": "sarif"}]}));
        holds::<lints::ReadLintsInput>(&ReadLintsTool::new(
            config.expect("config"),
            Path::new("/"),
        ));
        holds::<reminder::ReminderInput>(&SetReminderTool);
    }
}
