//! Skills at run time: a discovered [`Skill`] (folio-project reads the three forms) is loaded
//! into [`SkillContent`] — a generated skill by running its command — listed in the system
//! prompt's catalog, and materialized where `Read` finds them: `.folio/skills/<name>/` in a host
//! workspace, or a read-only `/skills` mount under an authored root.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use folio_fs::{FileSystem, TempFs, overlay_fs};
use folio_project::{Skill, SkillForm, SkillGenerator};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::tools::process::{Outcome, run_in_group, tail_lines};

/// Where skills land in a host session workspace.
pub const HOST_SKILLS_DIR: &str = ".folio/skills";

/// A loaded skill: its description and every file, `SKILL.md` included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillContent {
    /// The skill's name.
    pub name: String,
    /// The routing rule shown in the catalog.
    pub description: String,
    /// Relative path → bytes; always holds `SKILL.md`.
    pub files: BTreeMap<String, Vec<u8>>,
}

/// Why a skill could not be loaded or mounted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    /// Loading one skill failed (a read error, or its generating command failed).
    #[error("skill {skill}: {reason}")]
    Load {
        /// The skill's name.
        skill: String,
        /// What failed and what to do.
        reason: String,
    },
    /// The `/skills` tree could not be built from the loaded files.
    #[error("skills: {0}")]
    Mount(#[source] folio_fs::PathError),
}

fn load_error(skill: &Skill, reason: String) -> SkillError {
    SkillError::Load {
        skill: skill.name.clone(),
        reason,
    }
}

/// Every file under `dir`, as relative path → bytes, in path order.
fn read_tree(dir: &Path, prefix: &str, out: &mut BTreeMap<String, Vec<u8>>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let path = entry.path();
        if path.is_dir() {
            read_tree(&path, &rel, out)?;
        } else if path.is_file() {
            out.insert(rel, std::fs::read(&path)?);
        }
    }
    Ok(())
}

/// Reads the skill's files (running a generated skill's command) into [`SkillContent`].
pub async fn load(skill: &Skill) -> Result<SkillContent, SkillError> {
    let failed = |err: std::io::Error| load_error(skill, err.to_string());
    let mut files = BTreeMap::new();
    let description = match (&skill.form, &skill.generator) {
        (SkillForm::Flat, _) => {
            files.insert(
                "SKILL.md".to_string(),
                std::fs::read(&skill.path).map_err(failed)?,
            );
            skill.description.clone().unwrap_or_default()
        }
        (SkillForm::Packaged, _) => {
            read_tree(&skill.path, "", &mut files).map_err(failed)?;
            skill.description.clone().unwrap_or_default()
        }
        (SkillForm::Generated, None) => {
            return Err(load_error(skill, "has no command".into()));
        }
        (SkillForm::Generated, Some(generator)) => {
            let generated = generate(skill, generator).await?;
            for (path, contents) in generated.files {
                let normalized = folio_fs::normalize_fs_path(&path);
                let rel = normalized.trim_start_matches('/');
                if rel.is_empty() || rel == "SKILL.md" || path.contains("..") {
                    return Err(load_error(
                        skill,
                        format!("generated file path \"{path}\" is not allowed"),
                    ));
                }
                files.insert(rel.to_string(), contents.into_bytes());
            }
            let description = skill
                .description
                .clone()
                .or(generated.description)
                .filter(|d| !d.trim().is_empty())
                .ok_or_else(|| {
                    load_error(
                        skill,
                        format!(
                            "the command printed no description (print {{description, markdown, files}} or set description in {}.toml)",
                            skill.name
                        ),
                    )
                })?;
            let skill_md = format!(
                "---\nname: {}\ndescription: {}\n---\n\n{}",
                skill.name,
                serde_json::to_string(&description).unwrap_or_default(),
                generated.markdown
            );
            files.insert("SKILL.md".to_string(), skill_md.into_bytes());
            description
        }
    };
    Ok(SkillContent {
        name: skill.name.clone(),
        description,
        files,
    })
}

async fn generate(skill: &Skill, generator: &SkillGenerator) -> Result<Generated, SkillError> {
    let command = &generator.command;
    let dir = skill.path.parent().unwrap_or(Path::new("."));
    let program = Path::new(&command[0]);
    let program = if program.components().count() > 1 && program.is_relative() {
        dir.join(program)
    } else {
        program.to_path_buf()
    };
    let mut child = Command::new(program);
    child.args(&command[1..]).current_dir(dir);
    let finished = run_in_group(
        child,
        None,
        Duration::from_secs(generator.timeout_secs),
        &CancellationToken::new(),
    )
    .await
    .map_err(|err| load_error(skill, format!("could not start `{}`: {err}", command[0])))?;
    match finished.outcome {
        Outcome::Exited(status) if status.success() => {}
        Outcome::Exited(status) => {
            return Err(load_error(
                skill,
                format!(
                    "`{}` exited with {}: {}",
                    command.join(" "),
                    status
                        .code()
                        .map_or("a signal".into(), |c| format!("code {c}")),
                    tail_lines(&finished.stderr, 5)
                ),
            ));
        }
        Outcome::TimedOut | Outcome::Cancelled => {
            return Err(load_error(
                skill,
                format!(
                    "`{}` timed out after {} s",
                    command.join(" "),
                    generator.timeout_secs
                ),
            ));
        }
    }
    serde_json::from_str(finished.stdout.trim()).map_err(|err| {
        load_error(
            skill,
            format!("the command must print JSON {{description, markdown, files}}: {err}"),
        )
    })
}

/// What a generated skill's command prints.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Generated {
    description: Option<String>,
    markdown: String,
    #[serde(default)]
    files: BTreeMap<String, String>,
}

/// Loads every skill, failing on the first that cannot be loaded.
pub async fn load_all(skills: &[Skill]) -> Result<Vec<SkillContent>, SkillError> {
    let mut loaded = Vec::with_capacity(skills.len());
    for skill in skills {
        loaded.push(load(skill).await?);
    }
    Ok(loaded)
}

/// The skills section of the system prompt: each skill's name, its routing rule, and where to
/// `Read` it (`base` is [`HOST_SKILLS_DIR`] or [`folio_project::ROOT_SKILLS_MOUNT`]).
pub fn catalog(skills: &[SkillContent], base: &str) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let mut text = String::from(
        "# Skills\nSkills are procedures you load only when the task calls for one. To use a skill, first Read its SKILL.md (the path below), then follow it; its other files sit beside it.\n",
    );
    for skill in skills {
        let description = skill
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        text.push_str(&format!(
            "- {}: {description} (Read {base}/{}/SKILL.md)\n",
            skill.name, skill.name
        ));
    }
    Some(text.trim_end().to_string())
}

/// Writes every skill under `workspace/.folio/skills/<name>/`.
pub async fn materialize_host(skills: &[SkillContent], workspace: &Path) -> std::io::Result<()> {
    for skill in skills {
        let dir = workspace.join(HOST_SKILLS_DIR).join(&skill.name);
        for (rel, contents) in &skill.files {
            let path = dir.join(rel);
            if let Some(parent) = path.parent() {
                tokio::fs::create_dir_all(parent).await?;
            }
            tokio::fs::write(&path, contents).await?;
        }
    }
    Ok(())
}

/// The read-only tree mounted at [`folio_project::ROOT_SKILLS_MOUNT`] under an authored root:
/// `/<name>/SKILL.md` + files.
pub fn skills_mount(skills: &[SkillContent]) -> Result<Arc<dyn FileSystem>, SkillError> {
    let files = skills.iter().flat_map(|skill| {
        skill
            .files
            .iter()
            .map(move |(rel, contents)| (format!("/{}/{rel}", skill.name), contents.clone()))
    });
    let tree = TempFs::try_from_files(files).map_err(SkillError::Mount)?;
    Ok(overlay_fs([Arc::new(tree) as Arc<dyn FileSystem>]))
}
