//! The workspace's architecture rules (issue 28), checked against the sources on disk:
//!
//! 1. **No module import cycles.** Within each crate, the top-level modules (`src/foo.rs` or
//!    `src/foo/` is module `foo`) form a graph: module `a` has an edge to `b` when code of `a`
//!    names `crate::b…`, `super::…b…` (resolved), or a crate-root item re-exported from `b`
//!    (`crate::Item` where `lib.rs` says `pub use b::Item`). The graph must be acyclic: a
//!    module that really must import back up its crate's layers says why on the importing line
//!    (or the line above) with a `// layering: <reason>` comment, and that edge is left out.
//!    Items defined in the crate root itself (`lib.rs`, `main.rs`) are not a module and give no
//!    edge.
//! 2. **Crate dependencies.** No workspace crate but `folio-cli` depends on `folio-server` (in
//!    `[dependencies]`, `[dev-dependencies]`, `[build-dependencies]` or a target's tables), and
//!    the dependency graph of the workspace crates (all those tables) has no cycle.
//! 3. **No `Result<_, String>`** anywhere in a workspace crate's `src/`: errors are enums
//!    (thiserror) whose variants carry the cause a caller can act on.
//!
//! No violation is allowed: the allowlist these rules started with (issue 28) is empty, and
//! went away with its last entry, the session engine's module knot.
//!
//! Run: `cargo test -p folio-test-support --test architecture` (`-- --nocapture` also prints
//! the imports a `// layering:` reason left out).
//!
//! The parser is deliberately small (a tokenizer that drops comments and literals, a reader
//! of `use` trees and `crate::`/`super::` paths); it needs no dependency but `toml`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------------
// The tests.

#[test]
fn module_imports_are_acyclic() {
    let workspace = Workspace::read();
    let mut found = Vec::new();
    let mut waived = Vec::new();
    for krate in &workspace.crates {
        for root in &krate.roots {
            let graph = module_graph(&workspace.root, root);
            waived.extend(graph.waived.iter().cloned());
            for component in strongly_connected(&graph.edges) {
                if component.len() > 1 {
                    found.push(Finding {
                        detail: describe_cycle(&workspace.root, root, &graph, &component),
                    });
                }
            }
        }
    }
    if !waived.is_empty() {
        println!("imports left out of the module graph by a `// layering:` reason:");
        for line in &waived {
            println!("  {line}");
        }
    }
    judge(
        "module import cycles",
        "Break the cycle: move what both sides use into a small leaf module that imports neither \
         (or, where a module really must import back up, say why with `// layering: <reason>` \
         on the importing line).",
        found,
    );
}

#[test]
fn only_the_cli_depends_on_the_server() {
    let workspace = Workspace::read();
    let mut found = Vec::new();
    for krate in &workspace.crates {
        // The binary wires everything; an example under `examples/` is a binary too, showing
        // how to embed the HTTP server in one's own program; the fuzz targets drive the
        // server's request parsers, and nothing depends on them.
        if krate.name == "folio-cli"
            || krate.name == "folio-fuzz"
            || krate.manifest.starts_with("examples")
        {
            continue;
        }
        let tables: Vec<&str> = krate
            .dependencies
            .iter()
            .filter(|dep| dep.name == "folio-server")
            .map(|dep| dep.table.as_str())
            .collect();
        if !tables.is_empty() {
            found.push(Finding {
                detail: format!(
                    "{} depends on folio-server in {} ({})",
                    krate.name,
                    tables.join(", "),
                    krate.manifest.display()
                ),
            });
        }
    }
    judge(
        "only folio-cli depends on folio-server",
        "Depend on what the server offers through a crate below it (folio-protocol, \
         folio-store, or a trait the server implements), not on folio-server itself.",
        found,
    );
}

#[test]
fn crate_dependencies_are_acyclic() {
    let workspace = Workspace::read();
    let names: BTreeSet<&str> = workspace.crates.iter().map(|c| c.name.as_str()).collect();
    let mut edges: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for krate in &workspace.crates {
        let out = edges.entry(krate.name.clone()).or_default();
        for dep in &krate.dependencies {
            if dep.name != krate.name && names.contains(dep.name.as_str()) {
                out.entry(dep.name.clone()).or_default().push(format!(
                    "{} [{}]",
                    krate.manifest.display(),
                    dep.table
                ));
            }
        }
    }
    let mut found = Vec::new();
    for component in strongly_connected(&edges) {
        if component.len() > 1 {
            let mut detail = format!("crates {} depend on each other:", component.join(", "));
            for from in &component {
                for (to, wheres) in &edges[from] {
                    if component.contains(to) {
                        let _ = write!(detail, "\n      {from} -> {to} ({})", wheres.join("; "));
                    }
                }
            }
            found.push(Finding { detail });
        }
    }
    judge(
        "acyclic crate dependencies",
        "Remove one dependency of the cycle: move what it needs into the lower crate.",
        found,
    );
}

#[test]
fn no_string_errors() {
    let workspace = Workspace::read();
    let mut found = Vec::new();
    for krate in &workspace.crates {
        for file in rust_files(&krate.dir.join("src")) {
            let text = read(&file);
            let lines = string_error_lines(&tokenize(&text).tokens);
            if !lines.is_empty() {
                let relative = relative(&workspace.root, &file);
                let list: Vec<String> = lines.iter().map(u32::to_string).collect();
                found.push(Finding {
                    detail: format!(
                        "{relative}: {} `Result<_, String>` (lines {})",
                        lines.len(),
                        list.join(", ")
                    ),
                });
            }
        }
    }
    judge(
        "no Result<_, String>",
        "Return an error enum (thiserror) whose variants carry the cause a caller can act on; \
         keep the user-facing wording in its #[error(...)] messages.",
        found,
    );
}

/// The parser itself: cycles are found (also through `super::` and groups), and string errors
/// are counted, on a made-up crate.
#[test]
fn the_checks_see_what_they_should() {
    let dir = std::env::temp_dir().join(format!("folio-architecture-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let src = dir.join("src");
    fs::create_dir_all(src.join("b")).unwrap();
    fs::write(
        src.join("lib.rs"),
        "mod a;\nmod b;\nmod c;\nmod d;\npub use d::Thing;\n",
    )
    .unwrap();
    // a -> b through a group, b -> c through `super::super::` from a file below b, c -> a
    // through a path in an expression; d is reached through the root's re-export only.
    fs::write(
        src.join("a.rs"),
        "use crate::{b::{self, x}, Thing};\n// crate::c::nothing (a comment)\nconst S: &str = \"crate::c::z\";\n",
    )
    .unwrap();
    fs::write(src.join("b/mod.rs"), "mod inner;\n").unwrap();
    fs::write(
        src.join("b/inner.rs"),
        "pub fn f() -> Result<(), String> { super::super::c::g(); Ok(()) }\nmod t { use super::super::super::d; }\n",
    )
    .unwrap();
    fs::write(
        src.join("c.rs"),
        "pub fn g() { let _ = crate::a::S; }\npub fn h() -> Result<Vec<String>, Box<dyn Fn() -> u8>> { todo!() }\n",
    )
    .unwrap();
    fs::write(
        src.join("d.rs"),
        "pub struct Thing;\n// layering: d reads a's constant on purpose (test)\nuse crate::a::S;\n",
    )
    .unwrap();
    let graph = module_graph(&dir, &src.join("lib.rs"));
    let cycles: Vec<Vec<String>> = strongly_connected(&graph.edges)
        .into_iter()
        .filter(|c| c.len() > 1)
        .collect();
    let _ = fs::remove_dir_all(&dir);
    assert_eq!(
        cycles,
        vec![vec!["a", "b", "c"]],
        "edges: {:?}",
        graph.edges
    );
    assert!(graph.edges["a"].contains_key("d"), "{:?}", graph.edges);
    assert!(graph.edges["b"].contains_key("d"), "{:?}", graph.edges);
    assert!(!graph.edges["d"].contains_key("a"), "{:?}", graph.edges);
    assert_eq!(graph.waived.len(), 1, "{:?}", graph.waived);
    let counted = string_error_lines(
        &tokenize("fn f() -> Result<(), String> {}\ntype R<T> = std::result::Result<T, std::string::String>;\nfn g() -> Result<String> {}\nfn h() -> Result<(u8, String), Vec<String>> {}\nfn i() -> Result<\n    (u8, u8),\n    String,\n> {}\nfn j() -> Result<String,> {}")
            .tokens,
    );
    assert_eq!(counted, vec![1, 2, 5]);
}

// ---------------------------------------------------------------------------------------------
// Reporting.

/// A violation found, and where it is.
struct Finding {
    detail: String,
}

/// Fails when any violation of `rule` was found, saying where and what to do.
fn judge(rule: &str, remedy: &str, found: Vec<Finding>) {
    if found.is_empty() {
        return;
    }
    let mut message = format!(
        "architecture rule broken: {rule}\n\n{} violation(s):\n",
        found.len()
    );
    for finding in &found {
        let _ = writeln!(message, "  - {}", finding.detail);
    }
    let _ = writeln!(message, "  What to do: {remedy}");
    panic!("{message}");
}

// ---------------------------------------------------------------------------------------------
// The workspace.

struct Workspace {
    root: PathBuf,
    crates: Vec<Crate>,
}

struct Crate {
    name: String,
    dir: PathBuf,
    manifest: PathBuf,
    /// `src/lib.rs` and/or `src/main.rs` (or the paths `[lib]` / `[[bin]]` name).
    roots: Vec<PathBuf>,
    dependencies: Vec<Dependency>,
}

struct Dependency {
    /// The package depended on (its `package` when renamed).
    name: String,
    /// `dependencies`, `dev-dependencies`, `build-dependencies`, `target.<cfg>.dependencies`…
    table: String,
}

impl Workspace {
    fn read() -> Workspace {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .canonicalize()
            .expect("the workspace root is two levels above folio-test-support");
        let manifest: toml::Table = parse_toml(&root.join("Cargo.toml"));
        let members = manifest["workspace"]["members"]
            .as_array()
            .expect("[workspace] members");
        let mut dirs = Vec::new();
        for member in members {
            let member = member.as_str().expect("a member is a path");
            match member.strip_suffix("/*") {
                Some(parent) => {
                    let mut found: Vec<PathBuf> = fs::read_dir(root.join(parent))
                        .unwrap_or_else(|err| panic!("{parent}: {err}"))
                        .filter_map(|entry| entry.ok().map(|e| e.path()))
                        .filter(|dir| dir.join("Cargo.toml").is_file())
                        .collect();
                    found.sort();
                    dirs.extend(found);
                }
                None => dirs.push(root.join(member)),
            }
        }
        let crates = dirs
            .into_iter()
            .map(|dir| Crate::read(&root, dir))
            .collect();
        Workspace { root, crates }
    }
}

impl Crate {
    fn read(workspace: &Path, dir: PathBuf) -> Crate {
        let manifest = dir.join("Cargo.toml");
        let table = parse_toml(&manifest);
        let name = table["package"]["name"]
            .as_str()
            .expect("package.name")
            .to_string();
        let mut roots = BTreeSet::new();
        let lib = table
            .get("lib")
            .and_then(|l| l.get("path"))
            .and_then(|p| p.as_str())
            .unwrap_or("src/lib.rs");
        roots.insert(dir.join(lib));
        roots.insert(dir.join("src/main.rs"));
        for bin in table
            .get("bin")
            .and_then(|b| b.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(path) = bin.get("path").and_then(|p| p.as_str()) {
                roots.insert(dir.join(path));
            }
        }
        let roots = roots.into_iter().filter(|r| r.is_file()).collect();
        let mut dependencies = Vec::new();
        let mut collect = |tables: &toml::Table, prefix: &str| {
            for kind in ["dependencies", "dev-dependencies", "build-dependencies"] {
                let Some(deps) = tables.get(kind).and_then(|d| d.as_table()) else {
                    continue;
                };
                for (key, value) in deps {
                    let name = value
                        .get("package")
                        .and_then(|p| p.as_str())
                        .unwrap_or(key)
                        .to_string();
                    dependencies.push(Dependency {
                        name,
                        table: format!("{prefix}{kind}"),
                    });
                }
            }
        };
        collect(&table, "");
        if let Some(targets) = table.get("target").and_then(|t| t.as_table()) {
            for (cfg, tables) in targets {
                if let Some(tables) = tables.as_table() {
                    collect(tables, &format!("target.{cfg}."));
                }
            }
        }
        Crate {
            name,
            manifest: PathBuf::from(relative(workspace, &manifest)),
            dir,
            roots,
            dependencies,
        }
    }
}

fn parse_toml(path: &Path) -> toml::Table {
    read(path)
        .parse()
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

// ---------------------------------------------------------------------------------------------
// Tokens.

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
    /// A string, char or number literal (its text is not kept).
    Literal,
    /// A lifetime or loop label.
    Lifetime,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: u32,
}

struct Tokens {
    tokens: Vec<Token>,
    /// The text of the line comments on each line.
    comments: BTreeMap<u32, String>,
}

impl Token {
    fn ident(&self) -> Option<&str> {
        match &self.tok {
            Tok::Ident(name) => Some(name),
            _ => None,
        }
    }

    fn is(&self, c: char) -> bool {
        self.tok == Tok::Punct(c)
    }
}

/// Splits Rust source into tokens, dropping comments (line comments are kept aside for
/// `// layering:` reasons) and the contents of literals.
fn tokenize(text: &str) -> Tokens {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut comments: BTreeMap<u32, String> = BTreeMap::new();
    let mut line = 1u32;
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            let start = i;
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            let comment: String = chars[start..i].iter().collect();
            comments.entry(line).or_default().push_str(&comment);
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if let Some(end) = raw_string_end(&chars, i) {
            line += chars[i..end].iter().filter(|c| **c == '\n').count() as u32;
            tokens.push(Token {
                tok: Tok::Literal,
                line,
            });
            i = end;
        } else if c == '"' || ((c == 'b' || c == 'c') && at(i + 1) == '"') {
            let start_line = line;
            i += if c == '"' { 1 } else { 2 };
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if at(i) == '\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 1;
            tokens.push(Token {
                tok: Tok::Literal,
                line: start_line,
            });
        } else if c == '\'' || (c == 'b' && at(i + 1) == '\'') {
            let q = if c == '\'' { i } else { i + 1 };
            if at(q + 1) == '\\' {
                // An escaped char literal: up to the closing quote.
                let mut j = q + 2;
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                tokens.push(Token {
                    tok: Tok::Literal,
                    line,
                });
            } else if at(q + 2) == '\'' {
                i = q + 3;
                tokens.push(Token {
                    tok: Tok::Literal,
                    line,
                });
            } else {
                // A lifetime or label.
                let mut j = q + 1;
                while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                    j += 1;
                }
                i = j;
                tokens.push(Token {
                    tok: Tok::Lifetime,
                    line,
                });
            }
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(Token {
                tok: Tok::Literal,
                line,
            });
        } else if c.is_alphabetic() || c == '_' {
            if c == 'r' && at(i + 1) == '#' {
                i += 2;
            }
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(Token {
                tok: Tok::Ident(chars[start..i].iter().collect()),
                line,
            });
        } else if c == ':' && at(i + 1) == ':' {
            tokens.push(Token {
                tok: Tok::PathSep,
                line,
            });
            i += 2;
        } else {
            tokens.push(Token {
                tok: Tok::Punct(c),
                line,
            });
            i += 1;
        }
    }
    Tokens { tokens, comments }
}

/// The end of a raw string literal (`r"…"`, `r#"…"#`, `br#"…"#`, `cr"…"`) starting at `i`.
fn raw_string_end(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if matches!(chars.get(j), Some('b' | 'c')) {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    // Not the tail of an identifier (`bar"` cannot occur, but `for` followed by `"` can't
    // either): the caller only tries this at the start of a token.
    j += 1;
    let mut hashes = 0;
    while chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if chars[j] == '"' && (0..hashes).all(|h| chars.get(j + 1 + h) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(chars.len())
}

// ---------------------------------------------------------------------------------------------
// Rule 3: `Result<_, String>`.

/// The lines of the `Result<…, String>` types in `tokens` (a `Result` whose last generic
/// argument is `String`, `std::string::String` or `alloc::string::String`).
fn string_error_lines(tokens: &[Token]) -> Vec<u32> {
    let mut lines = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        if token.ident() != Some("Result") || !tokens.get(i + 1).is_some_and(|t| t.is('<')) {
            continue;
        }
        // The generic arguments, split at top-level commas.
        let mut args: Vec<Vec<&Tok>> = vec![Vec::new()];
        let mut angle = 0;
        let mut nested = 0;
        let mut j = i + 1;
        while j < tokens.len() {
            let t = &tokens[j];
            let arrow = t.is('>') && j > 0 && tokens[j - 1].is('-');
            if t.is('<') {
                angle += 1;
                if angle == 1 {
                    j += 1;
                    continue;
                }
            } else if t.is('>') && !arrow {
                angle -= 1;
                if angle == 0 {
                    break;
                }
            } else if t.is('(') || t.is('[') {
                nested += 1;
            } else if t.is(')') || t.is(']') {
                nested -= 1;
            } else if t.is(';') || t.is('{') {
                // Not a type after all (`a < b`).
                args.clear();
                break;
            } else if t.is(',') && angle == 1 && nested == 0 {
                args.push(Vec::new());
                j += 1;
                continue;
            }
            if let Some(last) = args.last_mut() {
                last.push(&t.tok);
            }
            j += 1;
        }
        // A trailing comma (`Result<\n    T,\n    String,\n>`) leaves an empty last argument.
        if args.last().is_some_and(Vec::is_empty) {
            args.pop();
        }
        if args.len() < 2 {
            continue;
        }
        let error: Vec<String> = args
            .last()
            .unwrap()
            .iter()
            .filter(|t| **t != &Tok::PathSep)
            .map(|t| match t {
                Tok::Ident(name) => name.clone(),
                Tok::Punct(c) => c.to_string(),
                _ => "?".to_string(),
            })
            .collect();
        let error: Vec<&str> = error.iter().map(String::as_str).collect();
        if matches!(
            error.as_slice(),
            ["String"] | ["std", "string", "String"] | ["alloc", "string", "String"]
        ) {
            lines.push(token.line);
        }
    }
    lines
}

// ---------------------------------------------------------------------------------------------
// Rule 1: module graphs.

/// The import graph of one crate root's top-level modules.
struct ModuleGraph {
    /// Module → module → where (`file:line`).
    edges: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    /// Module → its files.
    files: BTreeMap<String, Vec<String>>,
    /// Imports left out because a `// layering:` comment gives the reason.
    waived: Vec<String>,
}

/// One path named in the code: its segments and lines.
struct PathRef {
    segments: Vec<String>,
    /// The line of its first token, and of its last.
    lines: (u32, u32),
    /// The names of the inline modules (`mod tests { … }`) around it.
    inline: Vec<String>,
    /// Whether it is the path of a `use` declaration.
    from_use: bool,
}

fn module_graph(workspace: &Path, root_file: &Path) -> ModuleGraph {
    let src = root_file.parent().expect("a root file is in a directory");
    let root = tokenize(&read(root_file));
    let modules = declared_modules(&root.tokens);
    let mut files: BTreeMap<String, Vec<(PathBuf, Vec<String>)>> = BTreeMap::new();
    for module in &modules {
        let mut list = Vec::new();
        let flat = src.join(format!("{module}.rs"));
        if flat.is_file() {
            list.push((flat, vec![module.clone()]));
        }
        let dir = src.join(module);
        for file in rust_files(&dir) {
            let mut path = vec![module.clone()];
            let inner = file.strip_prefix(&dir).unwrap();
            for part in inner.iter() {
                let part = part.to_string_lossy();
                let part = part.strip_suffix(".rs").unwrap_or(&part);
                if part != "mod" {
                    path.push(part.to_string());
                }
            }
            list.push((file, path));
        }
        files.insert(module.clone(), list);
    }
    // Root items re-exported from a module: `pub use m::{A, B as C}`, `pub use m::*`.
    let mut reexports: BTreeMap<String, String> = BTreeMap::new();
    let mut globbed = Vec::new();
    for path in use_paths(&root.tokens) {
        let mut segments = path.segments.as_slice();
        if matches!(segments.first().map(String::as_str), Some("crate" | "self")) {
            segments = &segments[1..];
        }
        let Some(module) = segments.first().filter(|m| modules.contains(*m)) else {
            continue;
        };
        match segments.last().map(String::as_str) {
            Some("*") if segments.len() == 2 => globbed.push(module.clone()),
            Some(leaf) if segments.len() >= 2 => {
                reexports.insert(leaf.to_string(), module.clone());
            }
            _ => {}
        }
    }
    for module in globbed {
        for (file, path) in &files[&module] {
            if path.len() > 1 {
                continue;
            }
            for name in declared_items(&tokenize(&read(file)).tokens) {
                reexports.entry(name).or_insert_with(|| module.clone());
            }
        }
    }
    let mut graph = ModuleGraph {
        edges: modules
            .iter()
            .map(|m| (m.clone(), BTreeMap::new()))
            .collect(),
        files: BTreeMap::new(),
        waived: Vec::new(),
    };
    for (module, list) in &files {
        for (file, file_path) in list {
            let shown = relative(workspace, file);
            graph
                .files
                .entry(module.clone())
                .or_default()
                .push(shown.clone());
            let tokens = tokenize(&read(file));
            for reference in path_refs(&tokens.tokens) {
                let mut here = file_path.clone();
                here.extend(reference.inline.iter().cloned());
                let Some(target) = resolve(&reference.segments, &here, &modules, &reexports) else {
                    continue;
                };
                if &target == module {
                    continue;
                }
                let (first, last) = reference.lines;
                let reason = [first.saturating_sub(1), first, last]
                    .iter()
                    .filter_map(|l| tokens.comments.get(l))
                    .find_map(|c| c.split_once("layering:").map(|(_, r)| r.trim()))
                    .filter(|r| !r.is_empty());
                let place = format!("{shown}:{first}");
                match reason {
                    Some(reason) => graph
                        .waived
                        .push(format!("{place}: {module} -> {target} ({reason})")),
                    None => {
                        let places = graph
                            .edges
                            .get_mut(module)
                            .unwrap()
                            .entry(target)
                            .or_default();
                        if !places.contains(&place) {
                            places.push(place);
                        }
                    }
                }
            }
        }
    }
    graph
}

/// The module a path names, when it is another top-level module of the crate.
fn resolve(
    segments: &[String],
    here: &[String],
    modules: &BTreeSet<String>,
    reexports: &BTreeMap<String, String>,
) -> Option<String> {
    let absolute: Vec<String> = match segments.first().map(String::as_str) {
        Some("crate") => segments[1..].to_vec(),
        Some("super") => {
            let ups = segments.iter().take_while(|s| *s == "super").count();
            let base = here.len().checked_sub(ups)?;
            here[..base]
                .iter()
                .chain(&segments[ups..])
                .cloned()
                .collect()
        }
        _ => return None,
    };
    let first = absolute.first()?;
    if modules.contains(first) {
        return Some(first.clone());
    }
    reexports.get(first).cloned()
}

/// The modules a crate root declares from files (`mod name;`).
fn declared_modules(tokens: &[Token]) -> BTreeSet<String> {
    let mut modules = BTreeSet::new();
    let mut depth = 0;
    for (i, token) in tokens.iter().enumerate() {
        if token.is('{') {
            depth += 1;
        } else if token.is('}') {
            depth -= 1;
        } else if depth == 0
            && token.ident() == Some("mod")
            && let Some(name) = tokens.get(i + 1).and_then(Token::ident)
            && tokens.get(i + 2).is_some_and(|t| t.is(';'))
        {
            modules.insert(name.to_string());
        }
    }
    modules
}

/// The names of the items a file declares at its top level.
fn declared_items(tokens: &[Token]) -> Vec<String> {
    let mut names = Vec::new();
    let mut depth = 0;
    for (i, token) in tokens.iter().enumerate() {
        if token.is('{') {
            depth += 1;
        } else if token.is('}') {
            depth -= 1;
        } else if depth == 0
            && matches!(
                token.ident(),
                Some("struct" | "enum" | "fn" | "trait" | "type" | "const" | "static" | "union")
            )
            && let Some(name) = tokens.get(i + 1).and_then(Token::ident)
        {
            names.push(name.to_string());
        }
    }
    names
}

/// The paths of the `use` declarations in `tokens` (groups expanded; a glob ends in `*`).
fn use_paths(tokens: &[Token]) -> Vec<PathRef> {
    path_refs(tokens)
        .into_iter()
        .filter(|p| p.from_use && p.inline.is_empty())
        .collect()
}

/// Every `crate::…`/`super::…`/`self::…` path in `tokens`, and every path of a `use`
/// declaration, with the inline modules around it.
fn path_refs(tokens: &[Token]) -> Vec<PathRef> {
    let mut refs = Vec::new();
    // The inline modules open around the current token, with the brace depth they opened at.
    let mut inline: Vec<(String, i32)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        let token = &tokens[i];
        if token.is('{') {
            depth += 1;
        } else if token.is('}') {
            depth -= 1;
            if inline.last().is_some_and(|(_, d)| *d == depth) {
                inline.pop();
            }
        }
        let names: Vec<String> = inline.iter().map(|(n, _)| n.clone()).collect();
        match token.ident() {
            Some("mod")
                if tokens.get(i + 2).is_some_and(|t| t.is('{'))
                    && let Some(name) = tokens.get(i + 1).and_then(Token::ident) =>
            {
                inline.push((name.to_string(), depth));
                depth += 1;
                i += 3;
                continue;
            }
            // `use` — but not `+ use<'a>` (precise capturing).
            Some("use") if !tokens.get(i + 1).is_some_and(|t| t.is('<')) => {
                let mut j = i + 1;
                let mut found = Vec::new();
                use_tree(tokens, &mut j, Vec::new(), None, &mut found);
                for (segments, lines) in found {
                    refs.push(PathRef {
                        segments,
                        lines,
                        inline: names.clone(),
                        from_use: true,
                    });
                }
                // Up to the `;` (a malformed tree stops at the first token it cannot read).
                while j < tokens.len() && !tokens[j].is(';') {
                    j += 1;
                }
                i = j + 1;
                continue;
            }
            Some("crate" | "super")
                if tokens.get(i + 1).is_some_and(|t| t.tok == Tok::PathSep)
                    // `$crate::` belongs to where a macro expands; `pub(in crate::x)` is
                    // no import.
                    && !(i > 0 && tokens[i - 1].is('$'))
                    && !(i > 0 && tokens[i - 1].ident() == Some("in")) =>
            {
                let mut segments = Vec::new();
                let mut j = i;
                let mut last = token.line;
                while let Some(name) = tokens.get(j).and_then(Token::ident) {
                    segments.push(name.to_string());
                    last = tokens[j].line;
                    if tokens.get(j + 1).is_some_and(|t| t.tok == Tok::PathSep) {
                        j += 2;
                    } else {
                        j += 1;
                        break;
                    }
                }
                refs.push(PathRef {
                    segments,
                    lines: (token.line, last),
                    inline: names,
                    from_use: false,
                });
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    refs
}

/// Reads one use tree at `*j` (after `use`, or inside a group), adding its full paths.
fn use_tree(
    tokens: &[Token],
    j: &mut usize,
    mut prefix: Vec<String>,
    mut first_line: Option<u32>,
    out: &mut Vec<(Vec<String>, (u32, u32))>,
) {
    if tokens.get(*j).is_some_and(|t| t.tok == Tok::PathSep) {
        // `use ::extern_crate::…`
        prefix.push("::".to_string());
        *j += 1;
    }
    loop {
        let Some(token) = tokens.get(*j) else { return };
        first_line.get_or_insert(token.line);
        if let Some(name) = token.ident() {
            *j += 1;
            if name == "self" && !prefix.is_empty() {
                // `a::{self}` is `a` itself.
            } else {
                prefix.push(name.to_string());
            }
            if tokens.get(*j).is_some_and(|t| t.tok == Tok::PathSep) {
                *j += 1;
                continue;
            }
            if tokens.get(*j).and_then(Token::ident) == Some("as") {
                *j += 2;
            }
            out.push((prefix, (first_line.unwrap(), token.line)));
            return;
        }
        if token.is('*') {
            *j += 1;
            prefix.push("*".to_string());
            out.push((prefix, (first_line.unwrap(), token.line)));
            return;
        }
        if token.is('{') {
            *j += 1;
            loop {
                if tokens.get(*j).is_none_or(|t| t.is('}')) {
                    *j += 1;
                    return;
                }
                use_tree(tokens, j, prefix.clone(), None, out);
                if tokens.get(*j).is_some_and(|t| t.is(',')) {
                    *j += 1;
                }
                if tokens.get(*j).is_some_and(|t| t.is(';')) {
                    return;
                }
            }
        }
        return;
    }
}

// ---------------------------------------------------------------------------------------------
// Graphs.

/// The strongly connected components of `edges` (Tarjan), each sorted, in a stable order.
fn strongly_connected<V>(edges: &BTreeMap<String, BTreeMap<String, V>>) -> Vec<Vec<String>> {
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a, V>(
        node: &'a str,
        edges: &'a BTreeMap<String, BTreeMap<String, V>>,
        s: &mut State<'a>,
    ) {
        s.index.insert(node, s.next);
        s.low.insert(node, s.next);
        s.next += 1;
        s.stack.push(node);
        s.on_stack.insert(node);
        for next in edges.get(node).into_iter().flat_map(|e| e.keys()) {
            let next = next.as_str();
            if !s.index.contains_key(next) {
                visit(next, edges, s);
                let low = s.low[node].min(s.low[next]);
                s.low.insert(node, low);
            } else if s.on_stack.contains(next) {
                let low = s.low[node].min(s.index[next]);
                s.low.insert(node, low);
            }
        }
        if s.low[node] == s.index[node] {
            let mut component = Vec::new();
            while let Some(top) = s.stack.pop() {
                s.on_stack.remove(top);
                component.push(top.to_string());
                if top == node {
                    break;
                }
            }
            component.sort();
            s.out.push(component);
        }
    }
    let mut state = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for node in edges.keys() {
        if !state.index.contains_key(node.as_str()) {
            visit(node, edges, &mut state);
        }
    }
    state.out.sort();
    state.out
}

/// A cycle's modules, their files, and the imports between them.
fn describe_cycle(
    workspace: &Path,
    root: &Path,
    graph: &ModuleGraph,
    component: &[String],
) -> String {
    let mut text = format!(
        "{}: modules {} import each other:",
        relative(workspace, root),
        component.join(", ")
    );
    for module in component {
        let files = graph.files.get(module).cloned().unwrap_or_default();
        let _ = write!(text, "\n      {module} ({})", files.join(", "));
        for (to, places) in &graph.edges[module] {
            if component.contains(to) {
                let shown: Vec<&str> = places.iter().take(3).map(String::as_str).collect();
                let more = if places.len() > 3 {
                    format!(" and {} more", places.len() - 3)
                } else {
                    String::new()
                };
                let _ = write!(text, "\n        -> {to} at {}{more}", shown.join(", "));
            }
        }
    }
    text
}
