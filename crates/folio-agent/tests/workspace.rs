//! The local session workspace: prepared once (AGENTS.md with the agent-tool catalog, skills,
//! agent-tool scripts, sandbox seeds), left as the model changed it on later turns; skill
//! loading errors are one line.

use std::path::Path;

use folio_agent::discover;
use folio_agent::skills::load_all;
use folio_agent::{agents_md, prepare_host_workspace};
use pretty_assertions::assert_eq;

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
