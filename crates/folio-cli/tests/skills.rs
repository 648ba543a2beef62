//! Skills end to end (`folio run` against the mock model server): the catalog in the system
//! prompt, the model loading a skill with `Read` and then following it, on the host default
//! (`.folio/skills/…` in the workspace, next to AGENTS.md, agent tools and sandbox seeds) and
//! under an authored root (a read-only `/skills` mount).

mod common;

use common::*;
use folio_protocol::RunResult;
use folio_test_support::{ChatMessage, MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::json;

const HAIKU_SKILL: &str = "---
description: Use when the user asks for a haiku or any very short poem.
---
# Haiku
Measure the poem with word_stats, then save it with Write to poem.md.
";

const WORD_STATS: &str = r#"description = "Count the words of a text."
command = ["python3", "word_stats.py"]
effect = "read"
[input_schema]
type = "object"
required = ["text"]
properties.text = { type = "string" }
"#;

const WORD_STATS_PY: &str = "import json, sys\nprint(json.dumps({'words': len(json.load(sys.stdin)['input']['text'].split())}))\n";

/// The system prompt of the first model request.
fn system_prompt(mock: &MockModelServer) -> String {
    mock.requests()[0]
        .messages()
        .iter()
        .find(|message| message.role == "system")
        .map(ChatMessage::text)
        .expect("the first request has a system message")
}

fn ok_result(output: &std::process::Output) -> RunResult {
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    result_of(output)
}

#[tokio::test]
async fn host_default_turn_loads_a_skill_with_read_and_follows_it() {
    let dir = project("model = \"openai:gpt-test\"\n");
    write_files(
        dir.path(),
        &[
            ("agent/skills/haiku.md", HAIKU_SKILL),
            (
                "agent/skills/release/SKILL.md",
                "---\ndescription: Use when preparing release notes for a tagged version.\nmetadata:\n  owner: docs\n---\n# Release\nRead references/template.md.\n",
            ),
            (
                "agent/skills/release/references/template.md",
                "## Highlights\n",
            ),
            (
                "agent/skills/glossary.toml",
                "command = [\"python3\", \"glossary.py\"]\n",
            ),
            (
                "agent/skills/glossary.py",
                "import json\nprint(json.dumps({'description': 'Use when a term of the team glossary appears in a question.', 'markdown': '# Glossary\\nSee terms.md.\\n', 'files': {'terms.md': 'folio: an agent folder\\n'}}))\n",
            ),
            ("agent/tools/word_stats.toml", WORD_STATS),
            ("agent/tools/word_stats.py", WORD_STATS_PY),
            (
                "agent/tools/shout.toml",
                "description = \"Upper-case a text (run it with Shell).\"\ncommand = [\"python3\", \"shout.py\"]\nexecution = \"agent\"\n",
            ),
            (
                "agent/tools/shout.py",
                "import json, sys\nprint(json.load(sys.stdin)['input']['text'].upper())\n",
            ),
            ("agent/sandbox/workspace/data/seed.txt", "seeded\n"),
        ],
    );
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "Read",
        json!({"path": ".folio/skills/haiku/SKILL.md"}),
    )]));
    mock.push(MockReply::tool_calls([(
        "word_stats",
        json!({"text": "old pond\nfrog leaps in\nsplash"}),
    )]));
    mock.push(MockReply::tool_calls([(
        "Write",
        json!({"path": "poem.md", "contents": "old pond\nfrog leaps in\nsplash\n"}),
    )]));
    mock.push(MockReply::tool_calls([
        ("Read", json!({"path": ".folio/skills/release/references/template.md"})),
        ("Read", json!({"path": ".folio/skills/glossary/terms.md"})),
        (
            "Shell",
            json!({"command": "echo '{\"input\": {\"text\": \"hi\"}}' | python3 .folio/tools/shout/shout.py"}),
        ),
    ]));
    mock.push(MockReply::text("Saved the haiku (6 words)."));
    let output = run_json(&mock.openai_base_url(), dir.path(), "write a haiku").await;
    let result = ok_result(&output);
    assert_eq!(result.reply, "Saved the haiku (6 words).");
    assert_eq!(
        tool_outputs(&result),
        vec![
            (
                "Read".into(),
                false,
                json!(
                    "     1\t---\n     2\tdescription: Use when the user asks for a haiku or any very short poem.\n     3\t---\n     4\t# Haiku\n     5\tMeasure the poem with word_stats, then save it with Write to poem.md."
                )
            ),
            ("word_stats".into(), false, json!({"words": 6})),
            ("Write".into(), false, json!("Wrote contents to poem.md")),
            ("Read".into(), false, json!("     1\t## Highlights")),
            (
                "Read".into(),
                false,
                json!("     1\tfolio: an agent folder")
            ),
            ("Shell".into(), false, json!("HI\n[exit code: 0]")),
        ]
    );
    let system = system_prompt(&mock);
    assert!(
        system.starts_with("You are a test agent.\n\n# Skills\n"),
        "{system}"
    );
    for line in [
        "- glossary: Use when a term of the team glossary appears in a question. (Read .folio/skills/glossary/SKILL.md)",
        "- haiku: Use when the user asks for a haiku or any very short poem. (Read .folio/skills/haiku/SKILL.md)",
        "- release: Use when preparing release notes for a tagged version. (Read .folio/skills/release/SKILL.md)",
        "# Agent tools",
        "- shout: Upper-case a text (run it with Shell).\n  command: `python3 .folio/tools/shout/shout.py`",
    ] {
        assert!(system.contains(line), "missing {line:?} in:\n{system}");
    }
    // The model sees authored server tools, never agent-execution ones.
    let tools = mock.requests()[0].tool_names();
    assert!(tools.contains(&"word_stats".to_string()) && !tools.contains(&"shout".to_string()));
    let workspace = dir
        .path()
        .join(".folio/state/sessions")
        .join(&result.session_id)
        .join("workspace");
    let agents_md = std::fs::read_to_string(workspace.join("AGENTS.md")).unwrap();
    assert!(
        agents_md.starts_with("You are a test agent.\n\n# Agent tools\n"),
        "{agents_md}"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("data/seed.txt")).unwrap(),
        "seeded\n"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("poem.md")).unwrap(),
        "old pond\nfrog leaps in\nsplash\n"
    );
    let generated =
        std::fs::read_to_string(workspace.join(".folio/skills/glossary/SKILL.md")).unwrap();
    assert_eq!(
        generated,
        "---\nname: glossary\ndescription: \"Use when a term of the team glossary appears in a question.\"\n---\n\n# Glossary\nSee terms.md.\n"
    );
}

#[tokio::test]
async fn authored_root_mounts_skills_read_only_at_slash_skills() {
    let dir = project(
        "model = \"openai:gpt-test\"\n[root]\n\"/notes\" = { temp = { \"/todo.md\" = \"- buy milk\\n\" } }\n",
    );
    write_files(
        dir.path(),
        &[(
            "agent/skills/haiku.md",
            "---\ndescription: Use when the user asks for a haiku or any very short poem.\n---\n# Haiku\nSave the poem with Write to /notes/poem.md.\n",
        )],
    );
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([
        ("LS", json!({"path": "/"})),
        (
            "Read",
            json!({"path": "/skills/haiku/SKILL.md", "offset": 4}),
        ),
    ]));
    mock.push(MockReply::tool_calls([
        (
            "Write",
            json!({"path": "/skills/haiku/SKILL.md", "contents": "hacked"}),
        ),
        (
            "Write",
            json!({"path": "/notes/poem.md", "contents": "old pond\n"}),
        ),
        ("Read", json!({"path": "/notes/poem.md"})),
    ]));
    mock.push(MockReply::text("Saved."));
    let output = run_json(&mock.openai_base_url(), dir.path(), "write a haiku").await;
    let result = ok_result(&output);
    assert_eq!(
        tool_outputs(&result),
        vec![
            ("LS".into(), false, json!("/notes/\n/skills/\n/tmp/")),
            (
                "Read".into(),
                false,
                json!("     4\t# Haiku\n     5\tSave the poem with Write to /notes/poem.md.")
            ),
            (
                "Write".into(),
                true,
                json!("read-only mount: /skills/haiku/SKILL.md")
            ),
            (
                "Write".into(),
                false,
                json!("Wrote contents to /notes/poem.md")
            ),
            ("Read".into(), false, json!("     1\told pond")),
        ]
    );
    let system = system_prompt(&mock);
    assert_eq!(
        system,
        "You are a test agent.\n\n# Skills\nSkills are procedures you load only when the task calls for one. To use a skill, first Read its SKILL.md (the path below), then follow it; its other files sit beside it.\n- haiku: Use when the user asks for a haiku or any very short poem. (Read /skills/haiku/SKILL.md)\n\n# Environment\nWorkspace Path: /"
    );
}
