//! Skills (docs/agent-folder.md): on-demand procedures the model loads by reading them.
//! Three forms — flat `skills/<name>.md`, packaged `skills/<name>/SKILL.md` with siblings,
//! generated `skills/<name>.toml` whose command prints `{description, markdown, files}` — are
//! discovered here; folio-agent loads and materializes them.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::{GeneratedSkillManifest, SkillFrontmatter};
use crate::diagnostic::Severity;
use crate::report::{Report, explain_parse_error, is_valid_name, key_on_line};

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
    /// A generated skill's command (absent for flat and packaged skills).
    #[serde(skip)]
    pub generator: Option<SkillGenerator>,
}

/// The command of a generated skill (`skills/<name>.toml`), which prints
/// `{description, markdown, files}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillGenerator {
    /// The program and its arguments, resolved relative to `agent/skills/`.
    pub command: Vec<String>,
    /// Seconds before the command is killed.
    pub timeout_secs: u64,
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
                Severity::Error,
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
        generator: Some(SkillGenerator {
            command,
            timeout_secs: manifest
                .timeout_secs
                .unwrap_or(DEFAULT_GENERATE_TIMEOUT_SECS),
        }),
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
