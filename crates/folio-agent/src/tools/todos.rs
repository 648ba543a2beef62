//! The session's todo list and its two tools, `UpdateTodos` and `ReadTodos`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use folio_protocol::{Event, EventBody};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::input;
use super::{Tool, ToolContext, ToolError, ToolOutput};

/// One todo item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    /// A stable id chosen by the model.
    pub id: String,
    /// What to do.
    pub content: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
}

/// A session's todo list, shared by the tool calls of its turns.
#[derive(Debug, Clone, Default)]
pub struct TodoList(Arc<Mutex<Vec<Todo>>>);

impl TodoList {
    /// The list as a session's log left it: the input of its last `UpdateTodos` call that
    /// succeeded. The log is the only state, so todos outlive turns and restarts.
    pub fn from_events(events: &[Event]) -> TodoList {
        let update = TodosTool::Update.name();
        let mut inputs: HashMap<&str, &Value> = HashMap::new();
        let mut current = Vec::new();
        for event in events {
            match &event.body {
                EventBody::ActionsRequested(requested) => {
                    for call in requested.calls.iter().filter(|c| c.tool == update) {
                        inputs.insert(&call.call_id, &call.input);
                    }
                }
                EventBody::ActionResult(result) if !result.is_error => {
                    if let Some(todos) = inputs
                        .remove(result.call_id.as_str())
                        .and_then(|input| serde_json::from_value(input["todos"].clone()).ok())
                    {
                        current = todos;
                    }
                }
                _ => {}
            }
        }
        TodoList(Arc::new(Mutex::new(current)))
    }

    /// The current items.
    pub fn items(&self) -> Vec<Todo> {
        self.0.lock().map(|items| items.clone()).unwrap_or_default()
    }

    /// Replaces the whole list.
    pub fn replace(&self, todos: Vec<Todo>) {
        if let Ok(mut items) = self.0.lock() {
            *items = todos;
        }
    }

    fn render(&self) -> String {
        let items = self.items();
        if items.is_empty() {
            return "No todos".to_string();
        }
        items
            .iter()
            .map(|todo| {
                let mark = match todo.status.as_str() {
                    "completed" => "[x]",
                    "in_progress" => "[~]",
                    _ => "[ ]",
                };
                format!("{mark} {}: {}", todo.id, todo.content)
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `UpdateTodos` (replace the list) or `ReadTodos` (show it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TodosTool {
    /// `UpdateTodos`.
    Update,
    /// `ReadTodos`.
    Read,
}

/// `UpdateTodos`' arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdateTodosInput {
    /// The whole todo list: [{id, content, status}], status pending | in_progress | completed.
    todos: Vec<TodoInput>,
}

// One item of `UpdateTodos`' list. It and its fields carry no doc comments on purpose: doc
// comments would become descriptions in the item schema, which the model has always seen bare
// (`{id, content, status}`). Extra keys in an item are ignored rather than refused, as before.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct TodoInput {
    id: String,
    content: String,
    status: TodoStatus,
}

// Where a todo item stands (a plain comment for the same reason).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

impl From<TodoInput> for Todo {
    fn from(item: TodoInput) -> Self {
        let status = match item.status {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
        };
        Todo {
            id: item.id,
            content: item.content,
            status: status.to_string(),
        }
    }
}

/// `ReadTodos` takes no arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadTodosInput {}

#[async_trait::async_trait]
impl Tool for TodosTool {
    fn name(&self) -> &str {
        match self {
            TodosTool::Update => "UpdateTodos",
            TodosTool::Read => "ReadTodos",
        }
    }

    fn description(&self) -> &str {
        match self {
            TodosTool::Update => {
                "Replace the session's todo list to plan and track multi-step work."
            }
            TodosTool::Read => "Show the session's todo list.",
        }
    }

    fn input_schema(&self) -> Value {
        match self {
            TodosTool::Update => input::schema::<UpdateTodosInput>(),
            TodosTool::Read => input::schema::<ReadTodosInput>(),
        }
    }

    fn prepare(&self, input: Value) -> Result<Value, ToolError> {
        match self {
            TodosTool::Update => input::prepare::<UpdateTodosInput>(input),
            TodosTool::Read => input::prepare::<ReadTodosInput>(input),
        }
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        match self {
            TodosTool::Update => {
                let UpdateTodosInput { todos } = input::parse(input)?;
                ctx.todos
                    .replace(todos.into_iter().map(Todo::from).collect());
            }
            TodosTool::Read => {
                let ReadTodosInput {} = input::parse(input)?;
            }
        }
        Ok(ToolOutput::Text(ctx.todos.render()))
    }
}
