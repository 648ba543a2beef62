//! `folio init`: scaffolds a project from a template embedded in the binary (`demo`,
//! `pr-reviewer`, `triage`, `webhook`); every template validates clean.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};

/// Arguments of `folio init`.
#[derive(Debug, clap::Args)]
pub(crate) struct InitArgs {
    /// Where to create the project (default: the current directory; must be empty).
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// The template to start from.
    #[arg(long, value_enum, default_value_t = Template::Demo)]
    template: Template,
}

/// The templates `folio init` offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Template {
    /// Instructions, an authored tool, a skill and a subagent (the examples/demo agent).
    Demo,
    /// A GitHub pull-request reviewer with a packaged skill and a diff-sizing tool.
    PrReviewer,
    /// An issue triager with an approval-gated write tool, a daily schedule and a Slack channel.
    Triage,
    /// A support agent behind a signed webhook channel.
    Webhook,
}

macro_rules! files {
    ($base:literal: $($path:literal $(=> $target:literal)?),* $(,)?) => {
        &[$(files!(@one $base, $path $(, $target)?)),*]
    };
    (@one $base:literal, $path:literal) => {
        ($path, include_str!(concat!($base, $path)))
    };
    (@one $base:literal, $path:literal, $target:literal) => {
        ($target, include_str!(concat!($base, $path)))
    };
}

impl Template {
    /// The template's files: path relative to the project → contents.
    pub(crate) fn files(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Template::Demo => files!("../../../examples/demo/":
                "agent/agent.toml",
                "agent/instructions.md",
                "agent/tools/word_stats.toml",
                "agent/tools/word_stats.py",
                "agent/skills/haiku.md",
                "agent/subagents/critic/agent.toml",
                "agent/subagents/critic/instructions.md",
                // examples/demo runs its MCP server from target/test-deps; a new project uses npx.
                "../../crates/folio-cli/src/templates/demo/agent/mcp-connections/everything.toml"
                    => "agent/mcp-connections/everything.toml",
            ),
            Template::PrReviewer => files!("templates/pr-reviewer/":
                "agent/agent.toml",
                "agent/instructions.md",
                "agent/tools/pr_stats.toml",
                "agent/tools/pr_stats.py",
                "agent/skills/review-checklist/SKILL.md",
                "agent/skills/review-checklist/references/checklist.md",
                "agent/channels/github.toml",
                "evals/review.eval.toml",
                "evals/fixtures/review/small-diff.jsonl",
            ),
            Template::Triage => files!("templates/triage/":
                "agent/agent.toml",
                "agent/instructions.md",
                "agent/tools/label_issue.toml",
                "agent/tools/label_issue.py",
                "agent/skills/triage-rules.md",
                "agent/schedules/daily-summary.md",
                "evals/triage.eval.toml",
                "evals/fixtures/triage/crash.jsonl",
                "agent/channels/slack.toml",
            ),
            Template::Webhook => files!("templates/webhook/":
                "agent/agent.toml",
                "agent/instructions.md",
                "agent/skills/support-tone.md",
                "agent/channels/tickets.toml",
                "evals/support.eval.toml",
                "evals/fixtures/support/blank-invoices.jsonl",
            ),
        }
    }

    /// What to try first after scaffolding.
    fn first_message(self) -> &'static str {
        match self {
            Template::Demo => "Write a haiku about the sea",
            Template::PrReviewer => "Review the change in pr/diff.patch",
            Template::Triage => "Issue #12: the app crashes when I upload an empty file",
            Template::Webhook => "My invoices page is blank since this morning",
        }
    }
}

/// Writes the template into `dir` (created; refused when it holds anything).
pub(crate) fn scaffold(dir: &Path, template: Template) -> anyhow::Result<String> {
    if dir.exists() {
        let mut entries =
            std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
        if entries.next().is_some() {
            bail!(
                "{} is not empty: pass a new directory, e.g. `folio init my-agent`",
                dir.display()
            );
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = std::path::absolute(dir)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "agent".to_string());
    let mut files = vec![(
        "folio.toml".to_string(),
        format!("name = {}\n", toml_string(&name)),
    )];
    files.extend(
        template
            .files()
            .iter()
            .map(|(path, contents)| (path.to_string(), contents.to_string())),
    );
    for (path, contents) in &files {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&target, contents)
            .with_context(|| format!("cannot write {}", target.display()))?;
    }
    Ok(name)
}

fn toml_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Scaffolds the project and prints next steps.
pub(crate) fn init(args: InitArgs) -> anyhow::Result<ExitCode> {
    let name = scaffold(&args.dir, args.template)?;
    let shown = args.dir.display();
    println!(
        "Created agent \"{name}\" in {shown} from the {} template.\n\nNext steps:\n  folio validate --dir {shown}\n  folio info --dir {shown}\n  export OPENAI_API_KEY=…   # or set model in {shown}/agent/agent.toml\n  folio run --dir {shown} --message \"{}\"",
        clap::ValueEnum::to_possible_value(&args.template)
            .map(|v| v.get_name().to_string())
            .unwrap_or_default(),
        args.template.first_message()
    );
    Ok(ExitCode::SUCCESS)
}
