//! Discovery of the whole agent folder: `agent/` or `bot/`, `lib/` ignored, instructions in
//! parts, every capability folder into the definition, slugs, and the diagnostics' shape.

use std::path::Path;

use folio_project::{Effect, Execution, Severity, SkillForm, discover, slug_problem};
use pretty_assertions::assert_eq;

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (path, contents) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
}

fn lines(dir: &Path) -> Vec<String> {
    discover(dir)
        .diagnostics
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_full_folder_is_discovered() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("folio.toml", "name = \"full\"\n"),
            ("agent/instructions/01-role.md", "You are thorough."),
            ("agent/instructions/02-style.md", "Be brief.\n"),
            (
                "agent/tools/post.toml",
                "description = \"Post a message to the team channel.\"\ncommand = [\"./post.sh\"]\nneeds_approval = true\ndry_run_result = { note = \"dry\" }\n",
            ),
            (
                "agent/tools/probe.toml",
                "description = \"Probe the service and report its health.\"\ncommand = [\"python3\", \"probe.py\"]\nexecution = \"agent\"\n",
            ),
            ("agent/tools/probe.py", "print('ok')\n"),
            (
                "agent/skills/flat.md",
                "# Use when the question is about the flat skill form\nBody.\n",
            ),
            (
                "agent/skills/packed/SKILL.md",
                "---\nname: packed\ndescription: Use when a packaged skill with references is needed.\nallowed-tools: [Read]\nlicense: MIT\n---\nBody.\n",
            ),
            ("agent/skills/packed/references/a.md", "ref\n"),
            (
                "agent/skills/gen.toml",
                "command = [\"python3\", \"gen.py\"]\n",
            ),
            (
                "agent/channels/hooks-in.toml",
                "kind = \"webhook\"\n[[routes]]\npath = \"/in\"\nmessage = \"{{ body.text }}\"\n",
            ),
            (
                "agent/schedules/daily.md",
                "---\ncron: \"0 9 * * 1-5\"\n---\nSummarize the day.\n",
            ),
            ("agent/sandbox/workspace/seed.txt", "seed\n"),
            ("agent/lib/helper.py", "x = 1\n"),
        ],
    );
    let discovery = discover(dir.path());
    assert_eq!(lines(dir.path()), Vec::<String>::new());
    let definition = discovery.definition.unwrap();
    assert_eq!(definition.name, "full");
    assert_eq!(definition.instructions, "You are thorough.\nBe brief.\n");
    let tools: Vec<_> = definition
        .tools
        .iter()
        .map(|t| (t.name.clone(), t.effect, t.execution, t.needs_approval))
        .collect();
    assert_eq!(
        tools,
        [
            ("post".to_string(), Effect::Write, Execution::Server, true),
            ("probe".to_string(), Effect::Write, Execution::Agent, false),
        ]
    );
    assert_eq!(definition.tools[1].script_files(), ["probe.py"]);
    let skills: Vec<_> = definition
        .skills
        .iter()
        .map(|s| (s.name.as_str(), s.form, s.description.as_deref()))
        .collect();
    assert_eq!(
        skills,
        [
            (
                "flat",
                SkillForm::Flat,
                Some("Use when the question is about the flat skill form")
            ),
            ("gen", SkillForm::Generated, None),
            (
                "packed",
                SkillForm::Packaged,
                Some("Use when a packaged skill with references is needed.")
            ),
        ]
    );
    assert_eq!(
        definition.skills[2].frontmatter.license.as_deref(),
        Some("MIT")
    );
    assert_eq!(definition.channels[0].kind, "webhook");
    assert_eq!(definition.schedules[0].prompt, "Summarize the day.");
    assert!(
        definition
            .sandbox_dir
            .unwrap()
            .ends_with("agent/sandbox/workspace")
    );
}

#[test]
fn bot_folder_is_accepted_and_agent_wins() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &[("bot/instructions.md", "From bot.\n")]);
    assert_eq!(
        discover(dir.path()).definition.unwrap().instructions,
        "From bot.\n"
    );
    write(dir.path(), &[("agent/instructions.md", "From agent.\n")]);
    assert_eq!(
        discover(dir.path()).definition.unwrap().instructions,
        "From agent.\n"
    );
}

#[test]
fn errors_come_first_and_block_the_definition() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("agent/instructions.md", "Hi.\n"),
            ("agent/skills/tiny.md", "---\ndescription: Short.\n---\n"),
            (
                "agent/tools/Shell.toml",
                "description = \"x\"\ncommand = [\"true\"]\n",
            ),
        ],
    );
    let discovery = discover(dir.path());
    assert!(discovery.definition.is_none());
    let severities: Vec<Severity> = discovery.diagnostics.iter().map(|d| d.severity).collect();
    assert_eq!(severities, [Severity::Error, Severity::Warning]);
    assert_eq!(
        lines(dir.path())[0],
        "error: agent/tools/Shell.toml: name: \"Shell\" is a built-in tool (fail closed: rename the authored tool)"
    );
}

#[test]
fn agent_tools_under_a_root_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("agent/instructions.md", "Hi.\n"),
            (
                "agent/agent.toml",
                "[root]\n\"/notes\" = { temp = { \"/a.md\" = \"a\" } }\n",
            ),
            (
                "agent/tools/probe.toml",
                "description = \"Probe the service and report its health.\"\ncommand = [\"true\"]\nexecution = \"agent\"\n",
            ),
        ],
    );
    assert_eq!(
        lines(dir.path()),
        [
            "warning: agent/tools/probe.toml: execution: \"agent\" tools run through Shell in a host workspace; with [root] the model cannot run them"
        ]
    );
}

#[test]
fn slugs() {
    assert_eq!(slug_problem("pr-reviewer_2"), None);
    assert!(slug_problem("-x").is_some());
    assert!(slug_problem("a.b").is_some());
    assert!(slug_problem("").is_some());
    for reserved in ["v1", "playground", "docs"] {
        assert!(slug_problem(reserved).unwrap().contains("reserved"));
    }
}

#[test]
fn a_context_section_that_cannot_work_is_an_error() {
    for (section, expected) in [
        (
            "window = 0",
            "error: agent/agent.toml: context.window: must be at least 1 token",
        ),
        (
            "compact_at = 1.5",
            "error: agent/agent.toml: context.compact_at: 1.5 is not a fraction of the window (use a number in (0, 1], e.g. 0.8)",
        ),
        (
            "compact_at = 0.0",
            "error: agent/agent.toml: context.compact_at: 0 is not a fraction of the window (use a number in (0, 1], e.g. 0.8)",
        ),
        (
            "tool_output_tokens = 0",
            "error: agent/agent.toml: context.tool_output_tokens: must be at least 1 token (every tool result would be spilled)",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[
                ("agent/instructions.md", "Hi.\n"),
                ("agent/agent.toml", &format!("[context]\n{section}\n")),
            ],
        );
        assert!(discover(dir.path()).definition.is_none(), "{section}");
        assert_eq!(lines(dir.path()), [expected], "{section}");
    }
}

#[test]
fn approval_timeouts_are_read_and_a_bad_one_is_an_error_naming_its_key() {
    let tool = |timeout: &str| {
        format!(
            "description = \"Deploy.\"\ncommand = [\"./deploy.sh\"]\nneeds_approval = true\napproval_timeout = \"{timeout}\"\n"
        )
    };
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("agent/instructions.md", "Hi.\n"),
            ("agent/agent.toml", "[approvals]\ntimeout = \"1h\"\n"),
            ("agent/tools/deploy.toml", &tool("10m")),
        ],
    );
    let definition = discover(dir.path()).definition.unwrap();
    assert_eq!(
        definition.approval_timeout(),
        Some(std::time::Duration::from_secs(3600))
    );
    assert_eq!(
        definition.tools[0].approval_timeout,
        Some(std::time::Duration::from_secs(600))
    );

    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("agent/instructions.md", "Hi.\n"),
            ("agent/agent.toml", "[approvals]\ntimeout = \"soon\"\n"),
            ("agent/tools/deploy.toml", &tool("0s")),
        ],
    );
    assert!(discover(dir.path()).definition.is_none());
    assert_eq!(
        lines(dir.path()),
        [
            "error: agent/agent.toml: approvals.timeout: \"soon\" is not a delay; use a number with a unit (s, m, h, d), e.g. \"90s\", \"15m\", \"1h30m\"",
            "error: agent/tools/deploy.toml: approval_timeout: \"0s\" is not a delay; use a number with a unit (s, m, h, d), e.g. \"90s\", \"15m\", \"1h30m\"",
        ]
    );
}

#[test]
fn tool_backends_are_checked_and_unconfigured_ones_warned_about() {
    let lint = "commands = [{ command = [\"ruff\", \"check\"], format = \"ruff\" }]";
    for (toml, expected) in [
        (
            "tools = [\"read\", \"webSearch\", \"readLints\"]\n".to_string(),
            vec![
                "warning: agent/agent.toml: tools: \"webSearch\" needs a search backend and none is configured, so WebSearch is not offered (add [tools.web_search] with a provider)",
                "warning: agent/agent.toml: tools: \"readLints\" needs a lint command and none is configured, so ReadLints is not offered (add [tools.read_lints] with commands)",
            ],
        ),
        (
            "[tools.web_search]\nprovider = \"searxng\"\n".to_string(),
            vec!["error: agent/agent.toml: tools.web_search.endpoint: provider \"searxng\" needs the instance's search URL, e.g. endpoint = \"http://127.0.0.1:8888/search\""],
        ),
        (
            "[tools.web_search]\nprovider = \"command\"\nendpoint = \"http://x\"\n".to_string(),
            vec![
                "error: agent/agent.toml: tools.web_search.command: provider \"command\" needs the program to run, e.g. command = [\"./search.py\"]",
                "error: agent/agent.toml: tools.web_search.endpoint: provider \"command\" runs a program and calls no endpoint (remove endpoint)",
            ],
        ),
        (
            "[tools.web_search]\nprovider = \"brave\"\napi_key_env = \"FOLIO_TEST_NEVER_SET_KEY\"\nmax_results = 99\n".to_string(),
            vec![
                "error: agent/agent.toml: tools.web_search.max_results: must be between 1 and 50",
                "warning: agent/agent.toml: tools.web_search: the API key variable FOLIO_TEST_NEVER_SET_KEY is not set, so every WebSearch call will fail until it is (set FOLIO_TEST_NEVER_SET_KEY)",
            ],
        ),
        (
            "[tools.read_lints]\ncommands = []\n".to_string(),
            vec!["error: agent/agent.toml: tools.read_lints.commands: list at least one linter, e.g. { command = [\"ruff\", \"check\", \"--output-format=json\"], format = \"ruff\" }"],
        ),
        (
            format!("[root]\n\"/r\" = {{ temp = {{}} }}\n\n[tools.read_lints]\n{lint}\n"),
            vec!["error: agent/agent.toml: tools.read_lints: cannot be combined with [root]; linters run on the host workspace (fail closed: remove one of them)"],
        ),
        (
            format!("[tools]\nallow = [\"read\"]\n\n[tools.read_lints]\n{lint}\n"),
            vec!["warning: agent/agent.toml: tools: [tools.read_lints] is configured but the allowlist does not grant \"readLints\"; add it to the list or remove [tools.read_lints]"],
        ),
        (format!("[tools]\nallow = [\"readLints\"]\n\n[tools.read_lints]\n{lint}\n"), vec![]),
        (
            "[root]\n\"/data\" = { object_store = \"s3://b/p\", options = { access_key_id = \"${FOLIO_TEST_NEVER_SET_KEY}\", region = \"eu-west-1\" } }\n".to_string(),
            vec!["warning: agent/agent.toml: root: mount \"/data\" option \"access_key_id\": ${FOLIO_TEST_NEVER_SET_KEY} is not set in the environment; the mount will fail to open until it is"],
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[("agent/instructions.md", "Hi.\n"), ("agent/agent.toml", &toml)],
        );
        assert_eq!(lines(dir.path()), expected, "{toml}");
    }
}

/// One generated `[oauth]` table: each field present or not, secrets inline or templated.
fn oauth_table(fields: (u8, bool, u8, u8, bool, bool)) -> (String, bool, bool, usize, bool) {
    let (grant, client_id, secret, key, algorithm, metadata_url) = fields;
    let mut table = String::from("[oauth]\n");
    let machine = grant == 2;
    match grant {
        1 => table.push_str("grant = \"authorization_code\"\n"),
        2 => table.push_str("grant = \"client_credentials\"\n"),
        _ => {}
    }
    if client_id {
        table.push_str("client_id = \"svc\"\n");
    }
    let mut inline = false;
    let mut credentials = 0;
    match secret {
        1 => table.push_str("client_secret = \"${SVC_SECRET}\"\n"),
        2 => table.push_str("client_secret_file = \"secret.txt\"\n"),
        3 => {
            table.push_str("client_secret = \"hunter2\"\n");
            inline = true;
        }
        _ => {}
    }
    credentials += usize::from(secret != 0);
    match key {
        1 => table.push_str("private_key = \"${SVC_KEY}\"\n"),
        2 => table.push_str("private_key_file = \"key.pem\"\n"),
        3 => {
            table.push_str("private_key = \"-----BEGIN PRIVATE KEY-----\"\n");
            inline = true;
        }
        _ => {}
    }
    credentials += usize::from(key != 0);
    if algorithm {
        table.push_str("signing_algorithm = \"ES256\"\n");
    }
    if metadata_url {
        table.push_str("client_metadata_url = \"https://folio.example/client.json\"\n");
    }
    (
        table,
        machine,
        client_id,
        credentials,
        inline || (key != 0 && !machine),
    )
}

proptest::proptest! {
    /// Whatever `[oauth]` table a manifest holds, discovery never accepts one with a secret or
    /// key written inline, a key outside a client-credentials grant, or a client-credentials
    /// grant without its client id and exactly one credential; a refused table gets one error
    /// naming the `oauth` field.
    #[test]
    fn an_oauth_table_is_accepted_only_when_it_can_work(
        fields in (0u8..3, proptest::bool::ANY, 0u8..4, 0u8..4, proptest::bool::ANY, proptest::bool::ANY),
    ) {
        let (table, machine, client_id, credentials, never) = oauth_table(fields);
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[
                ("agent/instructions.md", "Hi.\n"),
                (
                    "agent/mcp-connections/x.toml",
                    &format!("url = \"https://mcp.example.com/mcp\"\n{table}"),
                ),
            ],
        );
        let discovery = discover(dir.path());
        let errors: Vec<String> = discovery
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(ToString::to_string)
            .collect();
        let accepted = errors.is_empty();
        if never {
            proptest::prop_assert!(!accepted, "{table}");
        }
        if machine && accepted {
            proptest::prop_assert!(client_id && credentials == 1, "{table}");
        }
        if credentials > 0 && accepted {
            proptest::prop_assert!(client_id, "{table}");
        }
        if !accepted {
            proptest::prop_assert_eq!(errors.len(), 1, "{:?}", errors);
            proptest::prop_assert!(errors[0].contains("agent/mcp-connections/x.toml: oauth"), "{:?}", errors);
        }
        let wants_algorithm_alone = fields.4 && fields.3 == 0;
        if wants_algorithm_alone {
            proptest::prop_assert!(!accepted, "{table}");
        }
    }
}

#[test]
fn well_formed_oauth_tables_are_accepted() {
    for table in [
        "grant = \"client_credentials\"\nclient_id = \"svc\"\nclient_secret = \"${SVC_SECRET}\"\n",
        "grant = \"client_credentials\"\nclient_id = \"svc\"\nprivate_key_file = \"key.pem\"\nsigning_algorithm = \"ES256\"\n",
        "client_id = \"app\"\nclient_secret_file = \"secret.txt\"\nscopes = [\"read\"]\n",
        "client_metadata_url = \"https://folio.example/client.json\"\n",
    ] {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[
                ("agent/instructions.md", "Hi.\n"),
                (
                    "agent/mcp-connections/x.toml",
                    &format!("url = \"https://mcp.example.com/mcp\"\n[oauth]\n{table}"),
                ),
            ],
        );
        let discovery = discover(dir.path());
        assert!(
            discovery
                .diagnostics
                .iter()
                .all(|d| d.severity != Severity::Error),
            "{table}: {:?}",
            lines(dir.path())
        );
        assert!(discovery.definition.is_some(), "{table}");
    }
}
