//! The local session workspace: prepared once (AGENTS.md with the agent-tool catalog, skills,
//! agent-tool scripts, sandbox seeds) at its first tool call, left as the model changed it on
//! later turns; skill loading errors are one line.

mod part_b;

use std::path::Path;

use folio_agent::skills::load_all;
use folio_agent::{PREPARED_MARKER, TurnOutcome, discover};
use folio_agent::{agents_md, prepare_host_workspace};
use folio_protocol::EventBody;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::json;

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (path, contents) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
}

#[tokio::test]
async fn prepared_once_then_left_as_the_model_changed_it() {
    let project = tempfile::tempdir().unwrap();
    write(
        project.path(),
        &[
            ("agent/instructions.md", "Be useful.\n"),
            (
                "agent/tools/stamp.toml",
                "description = \"Stamp a file with today's date.\"\ncommand = [\"bash\", \"bin/stamp.sh\", \"--utc\"]\nexecution = \"agent\"\n[input_schema]\ntype = \"object\"\nproperties.file = { type = \"string\" }\n",
            ),
            ("agent/tools/bin/stamp.sh", "date -u\n"),
            (
                "agent/skills/notes.md",
                "Use when the user wants meeting notes in the house style.\n",
            ),
            ("agent/sandbox/workspace/README.txt", "seed v1\n"),
        ],
    );
    let definition = discover(project.path()).definition.unwrap();
    let skills = load_all(&definition.skills).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let memory = tempfile::tempdir().unwrap();
    assert!(
        prepare_host_workspace(&definition, &skills, ws, memory.path())
            .await
            .unwrap()
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("AGENTS.md")).unwrap(),
        agents_md(&definition)
    );
    assert_eq!(
        agents_md(&definition),
        "Be useful.\n\n# Agent tools\nThese tools are scripts in the workspace. Run one with Shell from the workspace directory, passing its input as JSON on stdin: `echo '{\"input\": {…}}' | <command>`. It prints its result on stdout.\n- stamp: Stamp a file with today's date.\n  command: `bash .folio/tools/stamp/bin/stamp.sh --utc`\n  input schema: {\"properties\":{\"file\":{\"type\":\"string\"}},\"type\":\"object\"}\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".folio/tools/stamp/bin/stamp.sh")).unwrap(),
        "date -u\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".folio/skills/notes/SKILL.md")).unwrap(),
        "Use when the user wants meeting notes in the house style.\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("README.txt")).unwrap(),
        "seed v1\n"
    );
    // The model edits a seed and deletes AGENTS.md; the next turn keeps both changes.
    std::fs::write(ws.join("README.txt"), "edited by the model\n").unwrap();
    std::fs::remove_file(ws.join("AGENTS.md")).unwrap();
    // memory/ is the agent's durable folder: what a session keeps there outlives it.
    std::fs::write(ws.join("memory/facts.md"), "the user likes tea\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(memory.path().join("facts.md")).unwrap(),
        "the user likes tea\n"
    );
    let second = tempfile::tempdir().unwrap();
    prepare_host_workspace(&definition, &skills, second.path(), memory.path())
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(second.path().join("memory/facts.md")).unwrap(),
        "the user likes tea\n"
    );
    assert!(
        !prepare_host_workspace(&definition, &skills, ws, memory.path())
            .await
            .unwrap()
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("README.txt")).unwrap(),
        "edited by the model\n"
    );
    assert!(!ws.join("AGENTS.md").exists());
}

/// The entries of `dir`, sorted (`[]` when it does not exist).
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn a_turn_without_tool_calls_writes_nothing_and_the_first_tool_call_prepares_the_workspace() {
    let mock = MockModelServer::start().await;
    let dir = part_b::project(&[
        ("agent/instructions.md", "Be useful.\n"),
        ("agent/sandbox/workspace/seed.txt", "seeded\n"),
    ]);
    let agent = part_b::load_agent(dir.path(), &mock.openai_base_url(), part_b::env_of(&[])).await;
    let workspace = dir.path().join("workspace");
    let sink = part_b::MemorySink::default();
    mock.push(MockReply::text("hello"));
    let outcome = part_b::run_turn(&agent, &sink, &workspace, "hi").await;
    assert_eq!(
        outcome,
        TurnOutcome::Completed {
            reply: "hello".into()
        }
    );
    assert_eq!(entries(&workspace), Vec::<String>::new());
    // The next turn's first call reads AGENTS.md: the workspace is prepared before it runs.
    mock.push(MockReply::tool_calls([(
        "Read",
        json!({"path": "AGENTS.md"}),
    )]));
    mock.push(MockReply::text("read it"));
    let outcome = part_b::run_turn(&agent, &sink, &workspace, "read your notes").await;
    assert_eq!(
        outcome,
        TurnOutcome::Completed {
            reply: "read it".into()
        }
    );
    let results: Vec<(bool, String)> = sink
        .events()
        .iter()
        .filter_map(|event| match &event.body {
            EventBody::ActionResult(result) => Some((
                result.is_error,
                result.output.clone().unwrap_or_default().to_string(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1);
    assert!(
        !results[0].0 && results[0].1.contains("Be useful."),
        "{results:?}"
    );
    assert_eq!(
        entries(&workspace),
        [".folio", "AGENTS.md", "memory", "seed.txt"]
    );
    assert!(workspace.join(PREPARED_MARKER).exists());
}

#[tokio::test]
async fn a_failing_generated_skill_is_a_one_line_load_error() {
    let project = tempfile::tempdir().unwrap();
    write(
        project.path(),
        &[
            ("agent/instructions.md", "Be useful.\n"),
            (
                "agent/skills/broken.toml",
                "command = [\"bash\", \"-c\", \"echo boom >&2; exit 2\"]\n",
            ),
            (
                "agent/skills/silent.toml",
                "command = [\"bash\", \"-c\", \"echo '{\\\"markdown\\\": \\\"x\\\"}'\"]\n",
            ),
        ],
    );
    let definition = discover(project.path()).definition.unwrap();
    assert_eq!(
        folio_agent::skills::load(&definition.skills[0])
            .await
            .unwrap_err()
            .to_string(),
        "skill broken: `bash -c echo boom >&2; exit 2` exited with code 2: boom"
    );
    assert_eq!(
        folio_agent::skills::load(&definition.skills[1])
            .await
            .unwrap_err()
            .to_string(),
        "skill silent: the command printed no description (print {description, markdown, files} or set description in silent.toml)"
    );
}
