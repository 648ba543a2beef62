//! The JSON Schemas the model sees for the built-in tools, pinned: they are generated from the
//! tools' input structs, and a change to a struct that changes what the model sees (a name, a
//! type, a description, the required list) must show up here, and in recorded replay fixtures.

use std::path::Path;
use std::sync::Arc;

use folio_agent::tools::{
    FileTool, ReadLintsTool, SetReminderTool, ShellTool, TodosTool, Tool, WebFetchTool,
    WebSearchTool,
};
use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};

#[test]
fn builtin_tool_schemas_are_the_pinned_ones() {
    let web_search = serde_json::from_value(json!({"provider": "searxng"})).unwrap();
    let lints =
        serde_json::from_value(json!({"commands": [{"command": ["x"], "format": "sarif"}]}))
            .unwrap();
    let mut tools: Vec<Arc<dyn Tool>> = FileTool::ALL
        .into_iter()
        .map(|tool| Arc::new(tool) as Arc<dyn Tool>)
        .collect();
    tools.extend([
        Arc::new(ShellTool::default()) as Arc<dyn Tool>,
        Arc::new(WebFetchTool::new().unwrap()),
        Arc::new(
            WebSearchTool::new(web_search, Path::new("/"), folio_agent::mcp::process_env())
                .unwrap(),
        ),
        Arc::new(TodosTool::Update),
        Arc::new(TodosTool::Read),
        Arc::new(ReadLintsTool::new(lints, Path::new("/"))),
        Arc::new(SetReminderTool),
    ]);
    let now: Map<String, Value> = tools
        .iter()
        .map(|tool| (tool.name().to_string(), tool.input_schema()))
        .collect();
    let pinned: Value =
        serde_json::from_str(include_str!("fixtures/builtin_tool_schemas.json")).unwrap();
    assert_eq!(
        serde_json::to_string_pretty(&Value::Object(now)).unwrap(),
        serde_json::to_string_pretty(&pinned).unwrap()
    );
}
