//! `folio init`: scaffolds a project from a template embedded in the binary, lists the
//! templates (`--list`), or installs the `build-folio-agent` skill for coding agents (`--skill`).
//!
//! The templates are Folio's versions of the seed's seven (`demo`, `code-wiki`,
//! `security-reviewer`, `security-help`, `agentic-owners`, `pr-autofixer`, `triage`) plus
//! `pr-reviewer` and `webhook`. The seed's pages name them but their text is not part of the
//! seed dump, so each is designed from its name with Folio's own parts (channels, schedules,
//! approval-gated Python tools); none needs a service Folio lacks, so none is left out. Every
//! template validates clean and every one but `demo` ships an eval with a replay fixture that
//! passes offline (`demo`'s eval lives in `examples/demo`: it needs the MCP reference server).
//!
//! `--skill` writes `skills/build-folio-agent/SKILL.md` of this repository (embedded) to
//! `<DIR>/.claude/skills/build-folio-agent/SKILL.md`, where Claude Code and other agents that
//! read `.claude/skills` find it; `--skills-dir PATH` writes `PATH/build-folio-agent/SKILL.md`
//! instead (e.g. `~/.claude/skills` or `.cursor/skills`). An existing, different copy is kept
//! unless `--force`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde::Serialize;

/// Arguments of `folio init`.
#[derive(Debug, clap::Args)]
pub(crate) struct InitArgs {
    /// Where to create the project (default: the current directory; must be empty). With
    /// --skill: the project whose `.claude/skills/` receives the skill.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// The template to start from (`folio init --list` describes them).
    #[arg(long, value_enum, default_value_t = Template::Demo, conflicts_with_all = ["list", "skill"])]
    template: Template,
    /// List the templates, one line each, instead of creating a project.
    #[arg(long, conflicts_with_all = ["skill", "dir"])]
    list: bool,
    /// With --list: print the templates as JSON (`[{name, description}]`).
    #[arg(long, requires = "list")]
    json: bool,
    /// Install the `build-folio-agent` skill (how to build, check and run a Folio agent) for
    /// coding agents, at `<DIR>/.claude/skills/build-folio-agent/SKILL.md`.
    #[arg(long)]
    skill: bool,
    /// With --skill: the skills folder to write `build-folio-agent/SKILL.md` into instead.
    #[arg(long, value_name = "PATH", requires = "skill", conflicts_with = "dir")]
    skills_dir: Option<PathBuf>,
    /// With --skill: replace an existing, different copy of the skill.
    #[arg(long, requires = "skill")]
    force: bool,
}

/// The templates `folio init` offers; each variant's doc line is its `--list` description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Template {
    /// Instructions, an authored tool, a skill and a subagent (the examples/demo agent).
    Demo,
    /// Keeps a wiki of a repository: one page per module in durable memory, refreshed weekly, asked in Slack.
    CodeWiki,
    /// Reviews pull requests for secrets and risky calls, reporting as a GitHub check run.
    SecurityReviewer,
    /// A Slack security help desk answering from the team's policy, with OSV dependency lookups.
    SecurityHelp,
    /// Maps a pull request to its CODEOWNERS and requests only the owners whose rules it breaks.
    AgenticOwners,
    /// Fixes pull requests whose CI failed: reproduces, edits, and pushes after approval.
    PrAutofixer,
    /// A GitHub pull-request reviewer with a packaged skill and a diff-sizing tool.
    PrReviewer,
    /// An issue triager with an approval-gated write tool, a daily schedule and a Slack channel.
    Triage,
    /// A support agent behind a signed webhook channel.
    Webhook,
}

/// One line of `folio init --list --json`.
#[derive(Debug, Serialize)]
struct TemplateListing {
    /// The `--template` value.
    name: String,
    /// What the template builds, in one line.
    description: String,
}

/// The `build-folio-agent` skill, as committed at the repository root.
pub(crate) const SKILL: &str = include_str!("../../../skills/build-folio-agent/SKILL.md");

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
            Template::CodeWiki => files!("templates/code-wiki/":
                "agent/agent.toml",
                "agent/instructions.md",
                "agent/tools/code_outline.toml",
                "agent/tools/code_outline.py",
                "agent/tools/sync_repo.toml",
                "agent/tools/sync_repo.py",
                "agent/skills/wiki-page/SKILL.md",
                "agent/skills/wiki-page/references/page-template.md",
                "agent/schedules/weekly-refresh.md",
                "agent/channels/slack.toml",
                "evals/wiki.eval.toml",
                "evals/fixtures/wiki/billing-page.jsonl",
            ),
            Template::SecurityReviewer => files!("templates/security-reviewer/":
                "agent/agent.toml",
                "agent/instructions.md",
                "agent/tools/security_scan.toml",
                "agent/tools/security_scan.py",
                "agent/skills/security-checklist/SKILL.md",
                "agent/skills/security-checklist/references/checklist.md",
                "agent/channels/github.toml",
                "evals/review.eval.toml",
                "evals/fixtures/review/leaked-key.jsonl",
            ),
            Template::SecurityHelp => files!("templates/security-help/":
                "agent/agent.toml",
                "agent/instructions.md",
                "agent/tools/osv_lookup.toml",
                "agent/tools/osv_lookup.py",
                "agent/skills/security-policy/SKILL.md",
                "agent/skills/security-policy/references/policy.md",
                "agent/channels/slack.toml",
                "evals/help.eval.toml",
                "evals/fixtures/help/token-storage.jsonl",
            ),
            Template::AgenticOwners => files!("templates/agentic-owners/":
                "agent/agent.toml",
                "agent/instructions.md",
                "agent/tools/owners_for.toml",
                "agent/tools/owners_for.py",
                "agent/tools/request_reviewers.toml",
                "agent/tools/request_reviewers.py",
                "agent/skills/ownership/SKILL.md",
                "agent/skills/ownership/references/areas.md",
                "agent/channels/github.toml",
                "evals/owners.eval.toml",
                "evals/fixtures/owners/edited-migration.jsonl",
            ),
            Template::PrAutofixer => files!("templates/pr-autofixer/":
                "agent/agent.toml",
                "agent/instructions.md",
                "agent/tools/checkout_pr.toml",
                "agent/tools/checkout_pr.py",
                "agent/tools/push_fix.toml",
                "agent/tools/push_fix.py",
                "agent/skills/autofix-rules.md",
                "agent/channels/github.toml",
                "evals/autofix.eval.toml",
                "evals/fixtures/autofix/failing-test.jsonl",
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
            Template::CodeWiki => "Sync the repository and write the wiki index",
            Template::SecurityReviewer => {
                "Review the change in pr/diff.patch for security problems"
            }
            Template::SecurityHelp => "Can I keep the session token in localStorage?",
            Template::AgenticOwners => "Which owners must review the change in pr/diff.patch?",
            Template::PrAutofixer => "The tests fail in repo/: reproduce and fix them",
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

/// Runs `folio init`: lists the templates, installs the skill, or scaffolds a project and
/// prints next steps.
pub(crate) fn init(args: InitArgs) -> anyhow::Result<ExitCode> {
    if args.list {
        list(args.json)?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.skill {
        let target = match &args.skills_dir {
            Some(dir) => dir.join("build-folio-agent/SKILL.md"),
            None => args.dir.join(".claude/skills/build-folio-agent/SKILL.md"),
        };
        let written = install_skill(&target, args.force)?;
        println!(
            "{} the build-folio-agent skill at {}",
            if written {
                "Wrote"
            } else {
                "Already up to date:"
            },
            target.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let name = scaffold(&args.dir, args.template)?;
    let shown = args.dir.display();
    let has_evals = args
        .template
        .files()
        .iter()
        .any(|(path, _)| path.starts_with("evals/"));
    let eval = if has_evals {
        format!("  folio eval --dir {shown}   # replays the template's evals: offline, no key\n")
    } else {
        String::new()
    };
    println!(
        "Created agent \"{name}\" in {shown} from the {} template.\n\nNext steps:\n  folio validate --dir {shown}\n  folio info --dir {shown}\n{eval}  export OPENAI_API_KEY=…   # or set model in {shown}/agent/agent.toml\n  folio run --dir {shown} --message \"{}\"",
        template_name(args.template),
        args.template.first_message()
    );
    Ok(ExitCode::SUCCESS)
}

/// The template's `--template` value.
fn template_name(template: Template) -> String {
    clap::ValueEnum::to_possible_value(&template)
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

/// Prints every template with its one-line description (its variant's doc line).
fn list(json: bool) -> anyhow::Result<()> {
    let listings: Vec<TemplateListing> = <Template as clap::ValueEnum>::value_variants()
        .iter()
        .map(|template| TemplateListing {
            name: template_name(*template),
            description: clap::ValueEnum::to_possible_value(template)
                .and_then(|v| v.get_help().map(ToString::to_string))
                .unwrap_or_default(),
        })
        .collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&listings)?);
        return Ok(());
    }
    let width = listings.iter().map(|l| l.name.len()).max().unwrap_or(0);
    for listing in &listings {
        println!("{:width$}  {}", listing.name, listing.description);
    }
    println!("\nfolio init my-agent --template <name>");
    Ok(())
}

/// Writes [`SKILL`] to `target` unless an identical copy is there; an existing, different
/// file is replaced only with `force`. Returns whether it wrote.
fn install_skill(target: &Path, force: bool) -> anyhow::Result<bool> {
    match std::fs::read(target) {
        Ok(existing) if existing == SKILL.as_bytes() => return Ok(false),
        Ok(_) if !force => bail!(
            "{} exists and differs from this folio's skill: pass --force to replace it",
            target.display()
        ),
        Ok(_) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => bail!("cannot read {}: {err}", target.display()),
    }
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(target, SKILL).with_context(|| format!("cannot write {}", target.display()))?;
    Ok(true)
}
