//! Skills (project-format.md "Skills", seed 003): on-demand procedures the model loads by
//! reading them. Three forms — flat `skills/<name>.md`, packaged `skills/<name>/SKILL.md` with
//! siblings, generated `skills/<name>.toml` whose command prints `{description, markdown,
//! files}` — are discovered here, loaded into [`SkillContent`], listed in the system prompt's
//! catalog, and materialized where `Read` finds them: `.folio/skills/<name>/` in a host
//! workspace, or a read-only `/skills` mount under an authored root.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use folio_fs::{FileSystem, TempFs, overlay_fs};
use serde::Serialize;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::config::{GeneratedSkillManifest, SkillFrontmatter};
use crate::discovery::is_valid_name;
use crate::manifest::{Report, explain_parse_error, key_on_line};
use crate::tools::process::{Outcome, run_in_group, tail_lines};

/// Where skills land in a host session workspace.
pub const HOST_SKILLS_DIR: &str = ".folio/skills";
/// Where skills are mounted under an authored root.
pub const ROOT_SKILLS_MOUNT: &str = "/skills";
/// Descriptions shorter than this draw a `validate` warning.
pub const MIN_DESCRIPTION_CHARS: usize = 20;
/// Seconds a generated skill's command may run when its manifest names no timeout.
const DEFAULT_GENERATE_TIMEOUT_SECS: u64 = 30;

/// How a skill is authored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SkillForm {
    /// `skills/<name>.md`.
    Flat,
    /// `skills/<name>/SKILL.md` plus siblings.
    Packaged,
    /// `skills/<name>.toml` with a generating command.
    Generated,
}

/// A discovered skill (its text is read by [`Skill::load`]).
#[derive(Debug, Clone, Serialize)]
pub struct Skill {
    /// The file or folder name; the model refers to the skill by it.
    pub name: String,
    /// The authoring form.
    pub form: SkillForm,
    /// The routing rule, when known before loading (always, except generated skills that
    /// leave it to their command).
    pub description: Option<String>,
    /// The frontmatter (kept keys such as `allowed-tools`, `metadata`, `license`).
    pub frontmatter: SkillFrontmatter,
    /// The `.md` file, the skill folder, or the `.toml` manifest.
    pub path: PathBuf,
    #[serde(skip)]
    generator: Option<(Vec<String>, u64)>,
}

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

/// Splits `---` YAML frontmatter from a markdown text: `(yaml, body, line of the yaml's first
/// line)`; `None` when the text has no frontmatter.
pub(crate) fn split_frontmatter(text: &str) -> Option<(&str, &str, u32)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..], 2));
        }
        offset += line.len();
    }
    None
}

/// Parses YAML frontmatter strictly, reporting errors with line and column in `file`.
pub(crate) fn parse_frontmatter<T: serde::de::DeserializeOwned + Default>(
    text: &str,
    file: &Path,
    findings: &mut Report,
) -> Option<(T, String)> {
    let Some((yaml, body, first_line)) = split_frontmatter(text) else {
        if text.starts_with("---") {
            findings.error(
                file,
                "frontmatter: no closing `---` line (frontmatter is YAML between two `---` lines)"
                    .into(),
            );
            return None;
        }
        return Some((T::default(), text.to_string()));
    };
    if yaml.trim().is_empty() {
        return Some((T::default(), body.to_string()));
    }
    match yaml_serde::from_str::<T>(yaml) {
        Ok(value) => Some((value, body.to_string())),
        Err(err) => {
            let (line, column) = err
                .location()
                .map(|l| (l.line() as u32 + first_line - 1, l.column() as u32))
                .unwrap_or((first_line, 1));
            let message = explain_parse_error(&err.to_string(), &[]);
            let message = message.split(" at line ").next().unwrap_or(&message);
            let message = if message.starts_with("unknown key") {
                message.to_string()
            } else {
                let yaml_line = line + 1 - first_line;
                format!("{}: {message}", key_on_line(yaml, yaml_line, ':'))
            };
            findings.push(
                crate::discovery::Severity::Error,
                file,
                Some(line),
                format!("column {column}: frontmatter: {message}"),
            );
            None
        }
    }
}

/// The first non-empty body line, without heading marks (a flat skill's fallback description).
fn first_body_line(body: &str) -> Option<String> {
    body.lines()
        .map(|line| line.trim().trim_start_matches('#').trim())
        .find(|line| !line.is_empty())
        .map(str::to_string)
}

/// Discovers every skill under `agent_dir/skills`, reporting problems into `findings`.
pub(crate) fn discover_skills(agent_dir: &Path, findings: &mut Report) -> Vec<Skill> {
    let dir = agent_dir.join("skills");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    let mut skills: Vec<Skill> = Vec::new();
    for path in paths {
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if file_name.starts_with('.') {
            continue;
        }
        let (name, skill) = if path.is_dir() {
            (file_name.clone(), packaged(&path, &file_name, findings))
        } else {
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            match path.extension().and_then(|e| e.to_str()) {
                Some("md") => (stem.clone(), flat(&path, &stem, findings)),
                Some("toml") => (stem.clone(), generated(&path, &stem, findings)),
                _ => {
                    findings.warning(
                        &path,
                        "skills: not a skill (expected <name>.md, <name>/SKILL.md or <name>.toml); ignored"
                            .into(),
                    );
                    continue;
                }
            }
        };
        if !is_valid_name(&name) {
            findings.error(
                &path,
                format!("name: \"{name}\" is not a valid skill name (use 1-64 letters, digits, `-` or `_`)"),
            );
            continue;
        }
        let Some(skill) = skill else { continue };
        if skills.iter().any(|s| s.name == skill.name) {
            findings.error(
                &path,
                format!(
                    "name: two skills are named \"{name}\" (keep one of {name}.md, {name}/ and {name}.toml)"
                ),
            );
            continue;
        }
        if let Some(description) = &skill.description
            && description.chars().count() < MIN_DESCRIPTION_CHARS
        {
            findings.warning(
                &path,
                format!(
                    "description: \"{description}\" is shorter than {MIN_DESCRIPTION_CHARS} characters; write a routing rule such as \"Use when …\""
                ),
            );
        }
        skills.push(skill);
    }
    skills
}

fn check_name(frontmatter: &SkillFrontmatter, name: &str, file: &Path, findings: &mut Report) {
    if let Some(declared) = &frontmatter.name
        && declared != name
    {
        findings.error(
            file,
            format!(
                "name: frontmatter name \"{declared}\" must equal the skill's file or folder name \"{name}\""
            ),
        );
    }
}

fn flat(path: &Path, name: &str, findings: &mut Report) -> Option<Skill> {
    let text = read_text(path, findings)?;
    let (frontmatter, body) = parse_frontmatter::<SkillFrontmatter>(&text, path, findings)?;
    check_name(&frontmatter, name, path, findings);
    let description = frontmatter
        .description
        .clone()
        .filter(|d| !d.trim().is_empty())
        .or_else(|| first_body_line(&body));
    if description.is_none() {
        findings.error(
            path,
            "description: the skill is empty (add `description` frontmatter or a first line)"
                .into(),
        );
        return None;
    }
    Some(Skill {
        name: name.to_string(),
        form: SkillForm::Flat,
        description,
        frontmatter,
        path: path.to_path_buf(),
        generator: None,
    })
}

fn packaged(dir: &Path, name: &str, findings: &mut Report) -> Option<Skill> {
    let file = dir.join("SKILL.md");
    if !file.is_file() {
        findings.error(
            &file,
            "missing: a packaged skill folder needs a SKILL.md".into(),
        );
        return None;
    }
    let text = read_text(&file, findings)?;
    let (frontmatter, _) = parse_frontmatter::<SkillFrontmatter>(&text, &file, findings)?;
    check_name(&frontmatter, name, &file, findings);
    let Some(description) = frontmatter
        .description
        .clone()
        .filter(|d| !d.trim().is_empty())
    else {
        findings.error(
            &file,
            "description: a packaged skill needs `description` frontmatter (a routing rule: \"Use when …\")"
                .into(),
        );
        return None;
    };
    Some(Skill {
        name: name.to_string(),
        form: SkillForm::Packaged,
        description: Some(description),
        frontmatter,
        path: dir.to_path_buf(),
        generator: None,
    })
}

fn generated(path: &Path, name: &str, findings: &mut Report) -> Option<Skill> {
    let manifest: GeneratedSkillManifest = findings.parse_optional(path)?;
    let Some(command) = manifest.command.filter(|c| !c.is_empty()) else {
        findings.error(
            path,
            "command: missing (a generated skill's command prints {description, markdown, files})"
                .into(),
        );
        return None;
    };
    Some(Skill {
        name: name.to_string(),
        form: SkillForm::Generated,
        description: manifest.description,
        frontmatter: SkillFrontmatter::default(),
        path: path.to_path_buf(),
        generator: Some((
            command,
            manifest
                .timeout_secs
                .unwrap_or(DEFAULT_GENERATE_TIMEOUT_SECS),
        )),
    })
}

fn read_text(path: &Path, findings: &mut Report) -> Option<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(err) => {
            findings.error(path, format!("cannot read: {err}"));
            None
        }
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

impl Skill {
    /// Reads the skill's files (running a generated skill's command) into [`SkillContent`].
    pub async fn load(&self) -> Result<SkillContent, String> {
        let failed = |err: std::io::Error| format!("skill {}: {err}", self.name);
        let mut files = BTreeMap::new();
        let description = match self.form {
            SkillForm::Flat => {
                files.insert(
                    "SKILL.md".to_string(),
                    std::fs::read(&self.path).map_err(failed)?,
                );
                self.description.clone().unwrap_or_default()
            }
            SkillForm::Packaged => {
                read_tree(&self.path, "", &mut files).map_err(failed)?;
                self.description.clone().unwrap_or_default()
            }
            SkillForm::Generated => {
                let generated = self.generate().await?;
                for (path, contents) in generated.files {
                    let normalized = folio_fs::normalize_fs_path(&path);
                    let rel = normalized.trim_start_matches('/');
                    if rel.is_empty() || rel == "SKILL.md" || path.contains("..") {
                        return Err(format!(
                            "skill {}: generated file path \"{path}\" is not allowed",
                            self.name
                        ));
                    }
                    files.insert(rel.to_string(), contents.into_bytes());
                }
                let description = self
                    .description
                    .clone()
                    .or(generated.description)
                    .filter(|d| !d.trim().is_empty())
                    .ok_or_else(|| {
                        format!(
                            "skill {}: the command printed no description (print {{description, markdown, files}} or set description in {}.toml)",
                            self.name, self.name
                        )
                    })?;
                let skill_md = format!(
                    "---\nname: {}\ndescription: {}\n---\n\n{}",
                    self.name,
                    serde_json::to_string(&description).unwrap_or_default(),
                    generated.markdown
                );
                files.insert("SKILL.md".to_string(), skill_md.into_bytes());
                description
            }
        };
        Ok(SkillContent {
            name: self.name.clone(),
            description,
            files,
        })
    }

    async fn generate(&self) -> Result<Generated, String> {
        let Some((command, timeout_secs)) = &self.generator else {
            return Err(format!("skill {} has no command", self.name));
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
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
            Duration::from_secs(*timeout_secs),
            &CancellationToken::new(),
        )
        .await
        .map_err(|err| {
            format!(
                "skill {}: could not start `{}`: {err}",
                self.name, command[0]
            )
        })?;
        match finished.outcome {
            Outcome::Exited(status) if status.success() => {}
            Outcome::Exited(status) => {
                return Err(format!(
                    "skill {}: `{}` exited with {}: {}",
                    self.name,
                    command.join(" "),
                    status
                        .code()
                        .map_or("a signal".into(), |c| format!("code {c}")),
                    tail_lines(&finished.stderr, 5)
                ));
            }
            Outcome::TimedOut | Outcome::Cancelled => {
                return Err(format!(
                    "skill {}: `{}` timed out after {timeout_secs} s",
                    self.name,
                    command.join(" ")
                ));
            }
        }
        serde_json::from_str(finished.stdout.trim()).map_err(|err| {
            format!(
                "skill {}: the command must print JSON {{description, markdown, files}}: {err}",
                self.name
            )
        })
    }
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
pub async fn load_all(skills: &[Skill]) -> Result<Vec<SkillContent>, String> {
    let mut loaded = Vec::with_capacity(skills.len());
    for skill in skills {
        loaded.push(skill.load().await?);
    }
    Ok(loaded)
}

/// The skills section of the system prompt: each skill's name, its routing rule, and where to
/// `Read` it (`base` is [`HOST_SKILLS_DIR`] or [`ROOT_SKILLS_MOUNT`]).
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

/// The read-only tree mounted at `/skills` under an authored root: `/<name>/SKILL.md` + files.
pub fn skills_mount(skills: &[SkillContent]) -> Result<Arc<dyn FileSystem>, String> {
    let files = skills.iter().flat_map(|skill| {
        skill
            .files
            .iter()
            .map(move |(rel, contents)| (format!("/{}/{rel}", skill.name), contents.clone()))
    });
    let tree = TempFs::try_from_files(files).map_err(|err| format!("skills: {err}"))?;
    Ok(overlay_fs([Arc::new(tree) as Arc<dyn FileSystem>]))
}
