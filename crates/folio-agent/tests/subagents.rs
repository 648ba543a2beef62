//! Subagents and the `Task` tool: a turn delegates, the subagent runs its own model steps and
//! tool calls (tagged in the stream), and its reply is the parent's tool result.

mod part_b;

use folio_agent::conversation;
use folio_agent::{Severity, TurnOutcome, discover};
use folio_model::Message;
use folio_protocol::{EventBody, SubagentCalled, SubagentCompleted};
use folio_test_support::{MockModelServer, MockReply};
use part_b::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn researcher_project(extra: &[(&str, &str)]) -> tempfile::TempDir {
    let mut files = vec![
        (
            "agent/subagents/researcher/agent.toml",
            "description = \"Use when a question needs the workspace searched\"\nmodel = \"openai:research-model\"\n",
        ),
        (
            "agent/subagents/researcher/instructions.md",
            "You are the researcher. Look before you answer.\n",
        ),
    ];
    files.extend_from_slice(extra);
    project(&files)
}

#[tokio::test]
async fn a_subagent_turn_streams_its_calls_and_returns_its_reply() {
    let mock = MockModelServer::start().await;
    let dir = researcher_project(&[]);
    let agent = load_agent(dir.path(), &mock.openai_base_url(), env_of(&[])).await;
    assert!(agent.harness.tools.get("Task").is_some());
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("notes.md"), "the answer is 42\n").unwrap();

    mock.push(MockReply::tool_calls([(
        "Task",
        json!({"subagent": "researcher", "prompt": "What does notes.md say?"}),
    )]));
    mock.push(MockReply::tool_calls([(
        "Read",
        json!({"path": "notes.md"}),
    )]));
    mock.push(MockReply::text("notes.md says the answer is 42"));
    mock.push(MockReply::text("The researcher found: the answer is 42."));
    let sink = MemorySink::default();
    let outcome = run_turn(&agent, &sink, &workspace, "ask the researcher").await;
    assert_eq!(
        outcome,
        TurnOutcome::Completed {
            reply: "The researcher found: the answer is 42.".into()
        }
    );
    let events = sink.events();
    let types: Vec<&str> = events.iter().map(|e| e.body.event_type()).collect();
    let from = types
        .iter()
        .position(|t| *t == "actions.requested")
        .unwrap();
    assert_eq!(
        types[from..from + 7],
        [
            "actions.requested",
            "subagent.called",
            "actions.requested",
            "action.result",
            "subagent.completed",
            "action.result",
            "step.started",
        ]
    );
    let task_call_id = match &events[from].body {
        EventBody::ActionsRequested(requested) => {
            assert_eq!(requested.calls[0].tool, "Task");
            assert_eq!(requested.calls[0].subagent, None);
            requested.calls[0].call_id.clone()
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(
        events[from + 1].body,
        EventBody::SubagentCalled(SubagentCalled {
            call_id: task_call_id.clone(),
            subagent: "researcher".into(),
            prompt: "What does notes.md say?".into(),
        })
    );
    let read_call_id = match &events[from + 2].body {
        EventBody::ActionsRequested(requested) => {
            assert_eq!(requested.calls.len(), 1);
            assert_eq!(requested.calls[0].tool, "Read");
            assert_eq!(requested.calls[0].subagent.as_deref(), Some("researcher"));
            requested.calls[0].call_id.clone()
        }
        other => panic!("{other:?}"),
    };
    match &events[from + 3].body {
        EventBody::ActionResult(result) => {
            assert_eq!(result.call_id, read_call_id);
            assert_eq!(result.tool, "Read");
            assert!(!result.is_error);
            assert!(
                result
                    .output
                    .as_ref()
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .contains("the answer is 42")
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        events[from + 4].body,
        EventBody::SubagentCompleted(SubagentCompleted {
            call_id: task_call_id.clone(),
            subagent: "researcher".into(),
            reply: "notes.md says the answer is 42".into(),
            is_error: false,
        })
    );
    let task_result = &results(&events)[1];
    assert_eq!(
        task_result,
        &(
            "Task".to_string(),
            false,
            json!("notes.md says the answer is 42")
        )
    );

    // The subagent ran on its own model and instructions, with the parent's tools minus Task.
    // (Request bodies are the OpenAI wire, not Folio's output: `model` and the tool-call ids,
    // which `RecordedRequest` does not type, are read as JSON.)
    let requests = mock.requests();
    let sub_request = &requests[1];
    assert_eq!(sub_request.body["model"], "research-model");
    assert_eq!(requests[0].body["model"], "gpt-test");
    let sub_prompt = sub_request.messages();
    let system = sub_prompt[0].text();
    assert!(system.starts_with("You are the researcher."), "{system}");
    let sub_tools = sub_request.tool_names();
    assert!(
        sub_tools.iter().any(|tool| tool == "Read") && !sub_tools.iter().any(|tool| tool == "Task"),
        "{sub_tools:?}"
    );
    assert_eq!(sub_prompt[1].text(), "What does notes.md say?");
    // The subagent's next request is its own conversation rebuilt from its events: the prompt,
    // its Read call under the model's own id (the log scopes it by the Task call), the result.
    let sub_messages = requests[2].messages();
    let roles: Vec<&str> = sub_messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    let raw_messages = &requests[2].body["messages"];
    let model_call_id = raw_messages[2]["tool_calls"][0]["id"].as_str().unwrap();
    assert_eq!(read_call_id, format!("{task_call_id}/{model_call_id}"));
    assert_eq!(raw_messages[3]["tool_call_id"], model_call_id);
    let read_output = sub_messages[3].text();
    assert!(read_output.contains("the answer is 42"), "{read_output}");

    // The parent's conversation holds the Task call and its reply, never the subagent's calls.
    let messages = conversation(&events);
    let calls: Vec<String> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { tool_calls, .. } => {
                Some(tool_calls.iter().map(|c| c.name.clone()))
            }
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(calls, ["Task"]);
    let final_request = requests[3].body["messages"].to_string();
    assert!(final_request.contains("notes.md says the answer is 42"));
    assert!(!final_request.contains("\"Read\""), "{final_request}");
}

#[tokio::test]
async fn a_failing_subagent_completes_with_is_error_and_the_task_call_fails() {
    let mock = MockModelServer::start().await;
    let dir = project(&[(
        "agent/subagents/looper/agent.toml",
        "description = \"Use when you want a subagent that never stops\"\ninstructions = \"Keep listing.\"\nmax_steps = 1\n",
    )]);
    let agent = load_agent(dir.path(), &mock.openai_base_url(), env_of(&[])).await;
    let workspace = dir.path().join("workspace");
    mock.push(MockReply::tool_calls([(
        "Task",
        json!({"subagent": "looper", "prompt": "go"}),
    )]));
    mock.push(MockReply::tool_calls([("LS", json!({}))]));
    mock.push(MockReply::text("the subagent failed"));
    let sink = MemorySink::default();
    let outcome = run_turn(&agent, &sink, &workspace, "delegate").await;
    assert_eq!(
        outcome,
        TurnOutcome::Completed {
            reply: "the subagent failed".into()
        }
    );
    let events = sink.events();
    let completed = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::SubagentCompleted(done) => Some(done.clone()),
            _ => None,
        })
        .unwrap();
    assert!(completed.is_error);
    assert_eq!(
        completed.reply,
        "subagent \"looper\" reached its step limit (1 model calls) without answering"
    );
    let task = results(&events)
        .into_iter()
        .find(|(tool, ..)| tool == "Task")
        .unwrap();
    assert_eq!(task, ("Task".into(), true, json!(completed.reply)));
    // An unknown subagent is refused before anything runs.
    mock.push(MockReply::tool_calls([(
        "Task",
        json!({"subagent": "nobody", "prompt": "go"}),
    )]));
    mock.push(MockReply::text("ok"));
    run_turn(&agent, &sink, &workspace, "again").await;
    let last = results(&sink.events()).pop().unwrap();
    assert_eq!(
        last,
        (
            "Task".into(),
            true,
            json!("subagent: unknown subagent \"nobody\"; available: looper")
        )
    );
}

#[test]
fn subagent_folders_are_checked() {
    let dir = project(&[
        (
            "agent/subagents/helper/agent.toml",
            "description = \"Use when helping\"\n",
        ),
        (
            "agent/subagents/helper/tools/x.toml",
            "description = \"x\"\n",
        ),
        ("agent/subagents/helper/skills/s.md", "skill\n"),
    ]);
    let discovery = discover(dir.path());
    let definition = discovery.definition.clone().unwrap();
    assert_eq!(definition.subagents.len(), 1);
    assert_eq!(
        definition.subagents[0].instructions,
        "You are the \"helper\" subagent. Use when helping"
    );
    let warnings: Vec<String> = discovery
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .map(|d| d.to_string())
        .collect();
    assert_eq!(
        warnings,
        [
            "warning: agent/subagents/helper/tools: ignored: a subagent inherits the parent's capabilities; tools/ inside subagents/helper/ is not read",
            "warning: agent/subagents/helper/skills: ignored: a subagent inherits the parent's capabilities; skills/ inside subagents/helper/ is not read",
        ]
    );

    let dir = project(&[
        (
            "agent/subagents/nodesc/agent.toml",
            "model = \"openai:x\"\n",
        ),
        ("agent/subagents/nofile/instructions.md", "hi\n"),
    ]);
    let errors: Vec<String> = discover(dir.path())
        .diagnostics
        .iter()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(
        errors,
        [
            "error: agent/subagents/nodesc/agent.toml: description: required for a subagent (a routing rule: \"Use when …\")",
            "error: agent/subagents/nofile/agent.toml: missing: a subagent needs agent.toml with a description (a routing rule: \"Use when …\")",
        ]
    );
}

#[tokio::test]
async fn a_subagent_refuses_a_tool_that_needs_approval_without_parking_the_turn() {
    let mock = MockModelServer::start().await;
    let dir = researcher_project(&[
        (
            "agent/tools/post.toml",
            "description = \"Post a message to the team channel.\"\ncommand = [\"./post.sh\"]\nneeds_approval = true\n",
        ),
        ("agent/tools/post.sh", "#!/bin/sh\necho posted\n"),
    ]);
    let agent = load_agent(dir.path(), &mock.openai_base_url(), env_of(&[])).await;
    let workspace = dir.path().join("workspace");
    mock.push(MockReply::tool_calls([(
        "Task",
        json!({"subagent": "researcher", "prompt": "Post hello"}),
    )]));
    mock.push(MockReply::tool_calls([("post", json!({}))]));
    mock.push(MockReply::text("I could not post"));
    mock.push(MockReply::text("The researcher could not post."));
    let sink = MemorySink::default();
    let outcome = run_turn(&agent, &sink, &workspace, "post through the researcher").await;
    assert_eq!(
        outcome,
        TurnOutcome::Completed {
            reply: "The researcher could not post.".into()
        }
    );
    assert!(
        !sink
            .types()
            .iter()
            .any(|t| t.starts_with("action.approval")),
        "{:?}",
        sink.types()
    );
    assert_eq!(
        results(&sink.events()),
        [
            (
                "post".to_string(),
                true,
                json!(
                    "post needs a human approval, which a subagent cannot ask for; the parent agent must call it"
                )
            ),
            ("Task".to_string(), false, json!("I could not post")),
        ]
    );
}

#[tokio::test]
async fn stopping_the_turn_interrupts_the_subagent_and_fails_the_turn() {
    let mock = MockModelServer::start().await;
    let dir = researcher_project(&[]);
    let agent = load_agent(dir.path(), &mock.openai_base_url(), env_of(&[])).await;
    let workspace = dir.path().join("workspace");
    mock.push(MockReply::tool_calls([(
        "Task",
        json!({"subagent": "researcher", "prompt": "Take your time"}),
    )]));
    mock.push(MockReply::text("too late").first_byte_delay(std::time::Duration::from_secs(30)));
    // Stop arrives while the subagent waits for its model.
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = cancel.clone();
    let sink = MemorySink {
        observer: Some(Box::new(move |event| {
            if matches!(event.body, EventBody::SubagentCalled(_)) {
                stop.cancel();
            }
        })),
        ..MemorySink::default()
    };
    let outcome = run_turn_until(&agent, &sink, &workspace, "delegate", cancel).await;
    assert_eq!(
        outcome,
        TurnOutcome::Failed {
            message: "turn interrupted".into()
        }
    );
    let events = sink.events();
    let types: Vec<&str> = events.iter().map(|e| e.body.event_type()).collect();
    let called = types.iter().position(|t| *t == "subagent.called").unwrap();
    assert_eq!(
        types[called..],
        ["subagent.called", "subagent.completed", "turn.failed"]
    );
    let task_call_id = match &events[called].body {
        EventBody::SubagentCalled(called) => called.call_id.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        events[called + 1].body,
        EventBody::SubagentCompleted(SubagentCompleted {
            call_id: task_call_id,
            subagent: "researcher".into(),
            reply: "subagent \"researcher\" was interrupted".into(),
            is_error: true,
        })
    );
}
