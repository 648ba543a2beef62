//! `folio schema`: writes the JSON Schema of every agent-folder file kind (folio-project,
//! kebab-case names such as `agent`) and of every wire type (folio-protocol, type names such as
//! `Event`) as `<name>.json`, and the wire types as TypeScript declarations
//! ([`crate::schema_ts`], `folio-api.d.ts`). The repository commits them under `docs/schema/`;
//! a test fails when they drift from the Rust types. `--openapi FILE` writes the HTTP API's
//! OpenAPI 3.1 document (`folio_protocol::openapi`, committed as `docs/openapi.json`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::{Map, Value};

/// Arguments of `folio schema`.
#[derive(Debug, clap::Args)]
pub(crate) struct SchemaArgs {
    /// Write every schema as DIR/<name>.json (default: print them as one JSON object).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write the HTTP API's OpenAPI 3.1 document to FILE (the repository's is docs/openapi.json);
    /// without --out, only that.
    #[arg(long, value_name = "FILE")]
    openapi: Option<PathBuf>,
    /// Write the book's generated reference pages (CLI, HTTP, agent files, events, metrics)
    /// into DIR (the repository's are docs/reference/); without --out, only those.
    #[arg(long, value_name = "DIR")]
    reference: Option<PathBuf>,
}

/// Every schema Folio publishes, as `(file name, pretty JSON with a final newline)`, sorted.
pub(crate) fn schema_files() -> Vec<(String, String)> {
    let mut schemas: Vec<(String, Value)> = folio_project::schemas()
        .into_iter()
        .map(|file| (file.name.to_string(), file.schema))
        .collect();
    schemas.extend(
        folio_protocol::schemas()
            .into_iter()
            .map(|(name, schema)| (name.to_string(), schema.to_value())),
    );
    schemas.sort_by(|a, b| a.0.cmp(&b.0));
    schemas
        .into_iter()
        .map(|(name, schema)| {
            let text = serde_json::to_string_pretty(&schema).unwrap_or_default();
            (format!("{name}.json"), text + "\n")
        })
        .collect()
}

/// Prints the schemas, or writes them into `--out`; `cli` is the whole CLI, for the
/// reference pages.
pub(crate) fn schema(cli: clap::Command, args: SchemaArgs) -> anyhow::Result<ExitCode> {
    if let Some(path) = &args.openapi {
        let document = folio_protocol::openapi_json(folio_protocol::ApiServers::Any);
        std::fs::write(path, document)
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote the OpenAPI document to {}", path.display());
    }
    if let Some(dir) = &args.reference {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let pages = crate::reference::pages(&cli);
        for (name, text) in &pages {
            let path = dir.join(name);
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        eprintln!("wrote {} reference pages to {}", pages.len(), dir.display());
    }
    if args.out.is_none() && (args.openapi.is_some() || args.reference.is_some()) {
        return Ok(ExitCode::SUCCESS);
    }
    let files = schema_files();
    let Some(dir) = args.out else {
        let mut all = Map::new();
        for (name, text) in files {
            let schema: Value = serde_json::from_str(&text)
                .with_context(|| format!("the generated schema {name} is not JSON"))?;
            all.insert(name.trim_end_matches(".json").to_string(), schema);
        }
        println!("{}", serde_json::to_string_pretty(&Value::Object(all))?);
        return Ok(ExitCode::SUCCESS);
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (name, text) in &files {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let path = dir.join(crate::schema_ts::DECLARATIONS_FILE);
    std::fs::write(&path, crate::schema_ts::declarations())
        .with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!(
        "wrote {} schemas and {} to {}",
        files.len(),
        crate::schema_ts::DECLARATIONS_FILE,
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn repository() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
    }

    #[test]
    fn committed_schemas_match_the_rust_types() {
        let dir = repository().join("docs/schema");
        let generated = schema_files();
        let mut committed: Vec<String> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| name.ends_with(".json"))
                    .collect()
            })
            .unwrap_or_default();
        committed.sort();
        let names: Vec<String> = generated.iter().map(|(name, _)| name.clone()).collect();
        assert_eq!(
            committed, names,
            "docs/schema/ holds other files than the schemas: run `folio schema --out docs/schema`"
        );
        for (name, text) in &generated {
            let on_disk = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            assert!(
                on_disk == *text,
                "docs/schema/{name} is out of date: run `folio schema --out docs/schema`"
            );
        }
    }

    #[test]
    fn committed_reference_pages_match_the_code() {
        use clap::CommandFactory;
        let dir = repository().join("docs/reference");
        for (name, text) in crate::reference::pages(&crate::Cli::command()) {
            let on_disk = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            assert!(
                on_disk == text,
                "docs/reference/{name} is out of date: run `folio schema --reference docs/reference`"
            );
        }
    }

    #[test]
    fn committed_typescript_declarations_match_the_rust_types() {
        let name = crate::schema_ts::DECLARATIONS_FILE;
        let on_disk = std::fs::read_to_string(repository().join("docs/schema").join(name))
            .unwrap_or_default();
        assert!(
            on_disk == crate::schema_ts::declarations(),
            "docs/schema/{name} is out of date: run `folio schema --out docs/schema`"
        );
    }

    /// Every file of `dir`, as (path relative to `dir`, contents), skipping unreadable ones.
    fn files_under(dir: &Path, prefix: &str, out: &mut Vec<(String, String)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let path = entry.path();
            if path.is_dir() {
                files_under(&path, &rel, out);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                out.push((rel, text));
            }
        }
    }

    /// The data a schema describes: a TOML document as JSON, or a Markdown file's YAML
    /// frontmatter (the line after the opening `---` is the editor hint); `None` when a Markdown
    /// file has no frontmatter.
    fn instance(path: &str, text: &str) -> (Option<Value>, Option<String>) {
        if path.ends_with(".toml") {
            let value: Value = toml::from_str(text).unwrap_or_else(|err| panic!("{path}: {err}"));
            return (Some(value), text.lines().next().map(str::to_string));
        }
        let Some(rest) = text.strip_prefix("---\n") else {
            return (None, None);
        };
        let (yaml, _) = rest
            .split_once("\n---\n")
            .unwrap_or_else(|| panic!("{path}: no closing ---"));
        let value: Value = yaml_serde::from_str(yaml).unwrap_or_else(|err| panic!("{path}: {err}"));
        (Some(value), yaml.lines().next().map(str::to_string))
    }

    #[test]
    fn every_example_and_template_file_validates_and_carries_its_editor_hint() {
        let mut files: Vec<(String, String)> = Vec::new();
        let mut examples = Vec::new();
        files_under(&repository().join("examples"), "", &mut examples);
        for (path, text) in examples {
            // examples/<project>/<path inside the project>
            if let Some((_, inner)) = path.split_once('/') {
                files.push((format!("examples {path}|{inner}"), text));
            }
        }
        for template in <crate::init::Template as clap::ValueEnum>::value_variants() {
            for (path, text) in template.files() {
                files.push((
                    format!("template {template:?} {path}|{path}"),
                    text.to_string(),
                ));
            }
        }
        let mut checked = 0;
        for (label, text) in &files {
            let (label, inner) = label.split_once('|').unwrap_or((label, label));
            let Some(name) = folio_project::schema_name_for(inner) else {
                continue;
            };
            let schema_text = std::fs::read_to_string(
                repository()
                    .join("docs/schema")
                    .join(format!("{name}.json")),
            )
            .unwrap_or_else(|err| panic!("docs/schema/{name}.json: {err}"));
            let schema: Value = serde_json::from_str(&schema_text).unwrap();
            let validator = jsonschema::validator_for(&schema).unwrap();
            let (value, first_line) = instance(inner, text);
            let Some(value) = value else { continue };
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|err| format!("{}: {err}", err.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{label} against {name}.json: {errors:?}");
            let url = folio_project::schema_url(name);
            let hint = if inner.ends_with(".toml") {
                format!("#:schema {url}")
            } else {
                format!("# yaml-language-server: $schema={url}")
            };
            assert_eq!(
                first_line.as_deref(),
                Some(hint.as_str()),
                "{label}: the first line (of the frontmatter) must be the editor hint"
            );
            checked += 1;
        }
        assert!(checked >= 20, "only {checked} files were checked");
        // The schemas reject what discovery rejects: an unknown key, a wrong type.
        let agent: Value = serde_json::from_str(
            &std::fs::read_to_string(repository().join("docs/schema/agent.json")).unwrap(),
        )
        .unwrap();
        let validator = jsonschema::validator_for(&agent).unwrap();
        assert!(!validator.is_valid(&serde_json::json!({"max_stesp": 5})));
        assert!(!validator.is_valid(&serde_json::json!({"max_steps": "5"})));
        assert!(validator.is_valid(&serde_json::json!({"max_steps": 5, "tools": ["read"]})));
    }
}
