//! Reading the manifests of an agent folder into typed values, with parse errors as [`Diagnostic`]s carrying line and column.

use std::path::{Path, PathBuf};

use crate::diagnostic::{Diagnostic, Severity};
use crate::naming::nearest_key;

/// Diagnostics of one capability folder, with files named relative to the project directory.
pub(crate) struct Report {
    project_dir: PathBuf,
    /// Every finding so far.
    pub(crate) diagnostics: Vec<Diagnostic>,
}

impl Report {
    /// An empty report for a project.
    pub(crate) fn new(project_dir: &Path) -> Self {
        Report {
            project_dir: project_dir.to_path_buf(),
            diagnostics: Vec::new(),
        }
    }

    /// Records a finding about `file`, at `line` when known.
    pub(crate) fn push(
        &mut self,
        severity: Severity,
        file: &Path,
        line: Option<u32>,
        message: String,
    ) {
        let file = match file.strip_prefix(&self.project_dir) {
            Ok(relative) if !relative.as_os_str().is_empty() => relative,
            // The project directory itself is named as given.
            _ => file,
        }
        .to_string_lossy()
        .into_owned();
        self.diagnostics.push(Diagnostic {
            severity,
            file,
            line,
            message,
        });
    }

    /// Records an error about `file`.
    pub(crate) fn error(&mut self, file: &Path, message: String) {
        self.push(Severity::Error, file, None, message);
    }

    /// How many errors were recorded so far.
    pub(crate) fn error_count(&self) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }

    /// Records a warning about `file`.
    pub(crate) fn warning(&mut self, file: &Path, message: String) {
        self.push(Severity::Warning, file, None, message);
    }

    /// Parses required TOML `file` strictly; a missing or unparsable file is recorded and
    /// gives `None`. `valid_keys` name the keys when serde's message does not list them.
    pub(crate) fn parse<T: serde::de::DeserializeOwned>(
        &mut self,
        file: &Path,
        valid_keys: &[&str],
    ) -> Option<T> {
        match std::fs::read_to_string(file) {
            Ok(text) => self.parse_text(file, &text, valid_keys),
            Err(err) => {
                self.error(file, format!("cannot read: {err}"));
                None
            }
        }
    }

    /// Parses optional TOML `file` strictly; a missing file is `None` without a diagnostic.
    pub(crate) fn parse_optional<T: serde::de::DeserializeOwned>(
        &mut self,
        file: &Path,
    ) -> Option<T> {
        match std::fs::read_to_string(file) {
            Ok(text) => self.parse_text(file, &text, &[]),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => {
                self.error(file, format!("cannot read: {err}"));
                None
            }
        }
    }

    /// A parse error is recorded with line and column, naming the field on that line (unknown
    /// keys name the nearest valid key).
    pub(crate) fn parse_text<T: serde::de::DeserializeOwned>(
        &mut self,
        file: &Path,
        text: &str,
        valid_keys: &[&str],
    ) -> Option<T> {
        match toml::from_str(text) {
            Ok(value) => Some(value),
            Err(err) => {
                let (line, column) = err
                    .span()
                    .map(|span| line_column(text, span.start))
                    .unwrap_or((1, 1));
                let message = explain_parse_error(err.message(), valid_keys);
                let message = if message.starts_with("unknown key") {
                    message
                } else {
                    format!("{}: {message}", key_on_line(text, line, '='))
                };
                self.push(
                    Severity::Error,
                    file,
                    Some(line),
                    format!("column {column}: {message}"),
                );
                None
            }
        }
    }
}

/// The key written at the start of 1-based `line` (before `separator`), or `syntax` when the
/// line holds none: names the field of a parse error.
pub(crate) fn key_on_line(text: &str, line: u32, separator: char) -> String {
    text.lines()
        .nth(line.saturating_sub(1) as usize)
        .and_then(|l| l.split_once(separator))
        .map(|(key, _)| {
            key.trim()
                .trim_matches('"')
                .trim_start_matches('[')
                .to_string()
        })
        .filter(|key| {
            !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        })
        .unwrap_or_else(|| "syntax".to_string())
}

pub(crate) fn line_column(text: &str, offset: usize) -> (u32, u32) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() as u32 + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u32 + 1;
    (line, column)
}

/// Rewrites serde's unknown-field message (TOML or YAML) into one naming the nearest valid key;
/// `fallback_keys` are used when the message does not list the expected keys.
pub(crate) fn explain_parse_error(message: &str, fallback_keys: &[&str]) -> String {
    let message = message.trim();
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return message.to_string();
    };
    let unknown = rest.split('`').next().unwrap_or_default();
    let expected = rest
        .split_once(", expected ")
        .map(|(_, e)| {
            let e = e.split(" at line ").next().unwrap_or(e);
            e.trim_start_matches("one of ").replace('`', "")
        })
        .unwrap_or_else(|| fallback_keys.join(", "));
    let keys: Vec<&str> = expected.split(", ").collect();
    match nearest_key(unknown, &keys) {
        Some(near) => format!("unknown key `{unknown}` (did you mean `{near}`?)"),
        None => format!("unknown key `{unknown}`; valid keys: {expected}"),
    }
}

/// Whether `name` is a valid tool or skill name: 1-64 of `[A-Za-z0-9_-]`.
pub(crate) fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Whether `name` is a valid capability name (`[A-Za-z0-9][A-Za-z0-9_-]*`, at most 64 bytes).
pub(crate) fn is_slug(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The `*.toml` files directly in `dir`, sorted; a missing folder has none.
pub(crate) fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "toml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// A `${NAME}` template that references a variable the environment does not set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("${{{name}}} is not set in the environment")]
pub struct UnsetVariable {
    /// The variable's name.
    pub name: String,
}

/// Expands `${NAME}` templates from `env`; an unset variable is an error naming it.
pub fn expand_template(
    template: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, UnsetVariable> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let name = &after[..end];
        match env(name) {
            Some(value) => out.push_str(&value),
            None => {
                return Err(UnsetVariable {
                    name: name.to_string(),
                });
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The variable names `${NAME}` referenced by `template`.
pub(crate) fn template_vars(template: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        names.push(after[..end].to_string());
        rest = &after[end + 1..];
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_expand_from_the_lookup() {
        let env = |name: &str| (name == "TOKEN").then(|| "s3cret".to_string());
        assert_eq!(
            expand_template("Bearer ${TOKEN}!", &env).unwrap(),
            "Bearer s3cret!"
        );
        assert_eq!(expand_template("plain", &env).unwrap(), "plain");
        assert_eq!(expand_template("a ${open", &env).unwrap(), "a ${open");
        assert_eq!(
            expand_template("${MISSING}", &env).unwrap_err().to_string(),
            "${MISSING} is not set in the environment"
        );
        assert_eq!(template_vars("${A}-${B}"), ["A", "B"]);
    }

    #[test]
    fn slugs() {
        assert!(is_slug("everything"));
        assert!(is_slug("my_server-2"));
        assert!(!is_slug("-x"));
        assert!(!is_slug("a.b"));
        assert!(!is_slug(""));
    }
}
