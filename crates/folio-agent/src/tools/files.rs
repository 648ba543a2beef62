//! The eight file tools synthesized from the turn's FileSystem (tools.md, seed 000 "Tool
//! synthesis"): `Read`, `LS`, `Grep`, `Glob`, `Write`, `StrReplace`, `Delete`, `SemanticSearch`.

use std::fmt::Write as _;

use folio_fs::{Content, EditError, FileKind, GrepQuery, Page, PageLine, PathError, SearchQuery};
use futures::{StreamExt, TryStreamExt};
use serde_json::{Map, Value, json};

use super::args::{Arg, ArgType, ArgsExt};
use super::{ScratchMode, Tool, ToolContext, ToolError, ToolOutput, prepare_with};

/// Lines `Read` returns when no `limit` is given.
const DEFAULT_READ_LIMIT: u64 = 2000;
/// Hits `SemanticSearch` returns when no `numResults` is given.
const DEFAULT_SEARCH_RESULTS: u64 = 10;
/// Lines `Grep`, `Glob` and `LS` return when no `headLimit` is given: a page a model can read,
/// with a note saying how to get the next one.
const DEFAULT_HEAD_LIMIT: usize = 200;

/// The two paging arguments of `Grep`, `Glob` and `LS`.
const fn paging_args() -> [Arg; 2] {
    [
        Arg::new(
            "headLimit",
            ArgType::Integer,
            "Return at most this many output lines (default 200).",
        )
        .aliases(&["head_limit", "limit"]),
        Arg::new(
            "offset",
            ArgType::Integer,
            "Skip this many output lines first (for the next page).",
        ),
    ]
}

/// One page of a listing: the lines from `offset`, at most `limit` of them, while every line
/// is counted so the result can say how many there are in all.
struct Pager {
    offset: usize,
    limit: usize,
    total: usize,
    lines: Vec<String>,
}

impl Pager {
    fn new(args: &Map<String, Value>) -> Pager {
        Pager {
            offset: args.u64_arg("offset").unwrap_or(0) as usize,
            limit: args
                .u64_arg("headLimit")
                .map_or(DEFAULT_HEAD_LIMIT, |n| n as usize),
            total: 0,
            lines: Vec::new(),
        }
    }

    fn push(&mut self, line: String) {
        if self.total >= self.offset && self.lines.len() < self.limit {
            self.lines.push(line);
        }
        self.total += 1;
    }

    /// The page, with a note when lines were left out; `empty` when there were none at all.
    fn finish(self, tool: &str, unit: &str, empty: &str) -> String {
        if self.total == 0 {
            return empty.to_string();
        }
        if self.lines.is_empty() {
            return format!(
                "No {unit} at offset {} ({} in all)",
                self.offset, self.total
            );
        }
        let first = self.offset + 1;
        let last = self.offset + self.lines.len();
        let mut out = self.lines.join("\n");
        if last < self.total {
            let _ = write!(
                out,
                "\n… showing {unit} {first}–{last} of {}; call {tool} with offset={last} for the next page, or narrow the pattern",
                self.total
            );
        }
        out
    }
}

/// Which of the eight synthesized file tools this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FileTool {
    /// `Read`: a file's lines, numbered; images as image parts.
    Read,
    /// `LS`: a directory's entries.
    Ls,
    /// `Grep`: regex search over file lines.
    Grep,
    /// `Glob`: paths matching a pattern.
    Glob,
    /// `Write`: create or overwrite a file.
    Write,
    /// `StrReplace`: exact, literal replacement inside a file.
    StrReplace,
    /// `Delete`: remove a file.
    Delete,
    /// `SemanticSearch`: ranked full-text search through the tree's index.
    SemanticSearch,
}

const READ_ARGS: &[Arg] = &[
    Arg::new("path", ArgType::String, "The file to read.").required(),
    Arg::new(
        "offset",
        ArgType::Integer,
        "1-based line to start from (default 1).",
    ),
    Arg::new(
        "limit",
        ArgType::Integer,
        "How many lines to return (default 2000).",
    ),
];
const LS_ARGS: &[Arg] = &[
    Arg::new(
        "path",
        ArgType::String,
        "The directory to list (default: the root).",
    ),
    paging_args()[0],
    paging_args()[1],
];
const GREP_ARGS: &[Arg] = &[
    Arg::new("pattern", ArgType::String, "A regular expression.").required(),
    Arg::new(
        "path",
        ArgType::String,
        "A directory or file to search (default: the root).",
    ),
    Arg::new(
        "glob",
        ArgType::String,
        "Only files matching this glob; `*.rs` matches at any depth.",
    ),
    Arg::new("caseInsensitive", ArgType::Boolean, "Ignore case.")
        .aliases(&["-i", "case_insensitive"]),
    Arg::new(
        "outputMode",
        ArgType::String,
        "`content` (default: path:line:text), `files_with_matches` or `count`.",
    )
    .aliases(&["output_mode"]),
    paging_args()[0],
    paging_args()[1],
];
const GLOB_ARGS: &[Arg] = &[
    Arg::new(
        "pattern",
        ArgType::String,
        "A glob relative to `path`; `*` does not cross `/`, `**` does.",
    )
    .required(),
    Arg::new(
        "path",
        ArgType::String,
        "The directory the pattern is relative to (default: the root).",
    ),
    paging_args()[0],
    paging_args()[1],
];
const WRITE_ARGS: &[Arg] = &[
    Arg::new("path", ArgType::String, "The file to create or overwrite.").required(),
    Arg::new("contents", ArgType::String, "The full new contents.")
        .aliases(&["fileText", "file_text", "content"])
        .required(),
];
const STR_REPLACE_ARGS: &[Arg] = &[
    Arg::new("path", ArgType::String, "The file to edit.").required(),
    Arg::new("oldText", ArgType::String, "The exact text to replace.")
        .aliases(&["old_string"])
        .required(),
    Arg::new("newText", ArgType::String, "The replacement text.")
        .aliases(&["new_string"])
        .required(),
    Arg::new(
        "replaceAll",
        ArgType::Boolean,
        "Replace every occurrence (default: exactly one must exist).",
    )
    .aliases(&["replace_all"]),
];
const DELETE_ARGS: &[Arg] = &[Arg::new("path", ArgType::String, "The file to delete.").required()];
const SEARCH_ARGS: &[Arg] = &[
    Arg::new("query", ArgType::String, "What to look for, in words.").required(),
    Arg::new(
        "path",
        ArgType::String,
        "Only files within this path (default: everywhere).",
    ),
    Arg::new(
        "numResults",
        ArgType::Integer,
        "How many hits to return (default 10).",
    )
    .aliases(&["num_results"]),
];

impl FileTool {
    /// All eight, in a stable order.
    pub const ALL: [FileTool; 8] = [
        FileTool::Read,
        FileTool::Ls,
        FileTool::Grep,
        FileTool::Glob,
        FileTool::Write,
        FileTool::StrReplace,
        FileTool::Delete,
        FileTool::SemanticSearch,
    ];

    /// The model-facing name.
    pub const fn tool_name(self) -> &'static str {
        match self {
            FileTool::Read => "Read",
            FileTool::Ls => "LS",
            FileTool::Grep => "Grep",
            FileTool::Glob => "Glob",
            FileTool::Write => "Write",
            FileTool::StrReplace => "StrReplace",
            FileTool::Delete => "Delete",
            FileTool::SemanticSearch => "SemanticSearch",
        }
    }

    fn args(self) -> &'static [Arg] {
        match self {
            FileTool::Read => READ_ARGS,
            FileTool::Ls => LS_ARGS,
            FileTool::Grep => GREP_ARGS,
            FileTool::Glob => GLOB_ARGS,
            FileTool::Write => WRITE_ARGS,
            FileTool::StrReplace => STR_REPLACE_ARGS,
            FileTool::Delete => DELETE_ARGS,
            FileTool::SemanticSearch => SEARCH_ARGS,
        }
    }
}

#[async_trait::async_trait]
impl Tool for FileTool {
    fn name(&self) -> &str {
        self.tool_name()
    }

    fn description(&self) -> &str {
        match self {
            FileTool::Read => {
                "Read a file. Text comes back with numbered lines (offset/limit page through long files); images come back as images."
            }
            FileTool::Ls => "List a directory: one entry per line, directories end with `/`.",
            FileTool::Grep => {
                "Search file contents with a regular expression. Output modes: content (path:line:text), files_with_matches, count."
            }
            FileTool::Glob => "Find paths matching a glob pattern, sorted.",
            FileTool::Write => "Create or overwrite a file with the given contents.",
            FileTool::StrReplace => {
                "Replace exact text in a file. oldText must occur exactly once unless replaceAll is set."
            }
            FileTool::Delete => "Delete a file.",
            FileTool::SemanticSearch => {
                "Full-text search ranked by relevance; returns paths, line ranges and snippets."
            }
        }
    }

    fn input_schema(&self) -> Value {
        super::args::schema(self.args())
    }

    fn prepare(&self, input: Value) -> Result<Value, ToolError> {
        prepare_with(self.args(), input)
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args = match input {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let fs = ctx.fs.as_ref();
        // A host spill path the model still holds is read from its /tmp copy under a root.
        let rewritten = args
            .str_arg("path")
            .and_then(|path| super::spill::rewrite_spill_path(ctx, path));
        let path = rewritten.as_deref().or(args.str_arg("path")).unwrap_or("");
        match self {
            FileTool::Read => read(fs, path, &args).await,
            FileTool::Ls => ls(fs, path, &args).await,
            FileTool::Grep => grep(fs, rewritten.as_deref().or(args.str_arg("path")), &args).await,
            FileTool::Glob => {
                let pattern = args.str_arg("pattern").unwrap_or_default();
                let dir = args.str_arg("path");
                let mut entries = fs.glob(pattern, dir);
                let mut page = Pager::new(&args);
                while let Some(entry) = entries.next().await {
                    page.push(entry?.path);
                }
                Ok(ToolOutput::Text(page.finish(
                    "Glob",
                    "paths",
                    "No files found",
                )))
            }
            FileTool::Write => {
                let contents = args.str_arg("contents").unwrap_or_default();
                fs.write(path, contents).await?;
                Ok(ToolOutput::Text(format!("Wrote contents to {path}")))
            }
            FileTool::StrReplace => str_replace(fs, path, &args).await,
            FileTool::Delete => {
                fs.delete(path).await?;
                Ok(ToolOutput::Text(format!("Deleted {path}")))
            }
            FileTool::SemanticSearch => semantic_search(ctx, &args).await,
        }
    }
}

async fn read(
    fs: &dyn folio_fs::FileSystem,
    path: &str,
    args: &Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let offset = args.u64_arg("offset").unwrap_or(1).max(1);
    let limit = args.u64_arg("limit").unwrap_or(DEFAULT_READ_LIMIT).max(1);
    match fs.read_page(path, offset, limit).await? {
        Page::Image { bytes, mime } => Ok(ToolOutput::image(mime, &bytes)),
        Page::Text { lines, total } => Ok(ToolOutput::Text(number_lines(&lines, total, offset)?)),
    }
}

/// `Read`'s text rendering: `{n:>6}\t{line}` per line, long lines cut, a note when more remain.
fn number_lines(lines: &[PageLine], total: u64, offset: u64) -> Result<String, ToolError> {
    if total == 0 {
        return Ok("(empty file)".to_string());
    }
    if offset > total {
        return Err(ToolError(format!(
            "offset {offset} is past the end of the file ({total} lines)"
        )));
    }
    let mut out = String::new();
    for line in lines {
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = write!(out, "{:>6}\t{}", line.number, line.text);
        if line.cut_chars > 0 {
            let _ = write!(out, "… [line cut: {} more characters]", line.cut_chars);
        }
    }
    let next = offset + lines.len() as u64;
    if next <= total {
        let _ = write!(
            out,
            "\n… {} more lines; call Read with offset={next}",
            total - next + 1
        );
    }
    Ok(out)
}

async fn ls(
    fs: &dyn folio_fs::FileSystem,
    path: &str,
    args: &Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let info = fs.stat(path).await?;
    match info.kind {
        FileKind::Missing => {
            let shown = if path.is_empty() { "/" } else { path };
            Err(PathError::FileNotFound {
                path: shown.to_string(),
            }
            .into())
        }
        FileKind::File => Ok(ToolOutput::Text(info.path)),
        FileKind::Directory => {
            let mut entries = fs.list(path);
            let mut page = Pager::new(args);
            while let Some(entry) = entries.next().await {
                let entry = entry?;
                page.push(match entry.kind {
                    folio_fs::EntryKind::Directory => format!("{}/", entry.path),
                    folio_fs::EntryKind::File => entry.path,
                });
            }
            Ok(ToolOutput::Text(page.finish(
                "LS",
                "entries",
                "(empty directory)",
            )))
        }
    }
}

async fn grep(
    fs: &dyn folio_fs::FileSystem,
    path: Option<&str>,
    args: &Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let mode = args.str_arg("outputMode").unwrap_or("content");
    if !matches!(mode, "content" | "files_with_matches" | "count") {
        return Err(ToolError(format!(
            "argument \"outputMode\" must be content, files_with_matches or count, got \"{mode}\""
        )));
    }
    let query = GrepQuery {
        pattern: args.str_arg("pattern").unwrap_or_default().to_string(),
        path: path.map(str::to_string),
        glob: args.str_arg("glob").map(str::to_string),
        case_insensitive: args.bool_arg("caseInsensitive"),
        // Every hit is counted so the page can say how many there are in all.
        max_results: None,
    };
    let mut hits = fs.grep(query);
    let mut page = Pager::new(args);
    // The file-level modes: the current file and its hit count (hits come in path order).
    let mut file: Option<(String, u64)> = None;
    let file_line = |(path, count): (String, u64)| match mode {
        "count" => format!("{path}:{count}"),
        _ => path,
    };
    while let Some(hit) = hits.next().await {
        let hit = hit?;
        if mode == "content" {
            page.push(format!("{}:{}:{}", hit.path, hit.line_number, hit.line));
            continue;
        }
        match &mut file {
            Some((path, count)) if *path == hit.path => *count += 1,
            _ => {
                if let Some(done) = file.replace((hit.path, 1)) {
                    page.push(file_line(done));
                }
            }
        }
    }
    if let Some(done) = file {
        page.push(file_line(done));
    }
    let unit = match mode {
        "content" => "lines",
        _ => "files",
    };
    Ok(ToolOutput::Text(page.finish(
        "Grep",
        unit,
        "No matches found",
    )))
}

async fn str_replace(
    fs: &dyn folio_fs::FileSystem,
    path: &str,
    args: &Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let old = args.str_arg("oldText").unwrap_or_default();
    let new = args.str_arg("newText").unwrap_or_default();
    let edit_error = |message| PathError::Edit {
        path: path.to_string(),
        message,
    };
    if old.is_empty() {
        return Err(edit_error(EditError::EmptyOldText).into());
    }
    if old == new {
        return Err(edit_error(EditError::NoChange).into());
    }
    let text = match fs.read(path).await? {
        Content::Text(text) => text,
        Content::Image { .. } => {
            return Err(ToolError(format!(
                "{path} is an image; StrReplace edits text files only"
            )));
        }
    };
    let (edited, count) = replace_literal(&text, old, new, args.bool_arg("replaceAll"))
        .map_err(|message| ToolError::from(edit_error(message)))?;
    fs.write(path, &edited).await.map_err(|err| match err {
        PathError::WriteFailed { .. } => ToolError::from(err),
        other => ToolError::from(PathError::WriteFailed {
            path: path.to_string(),
            message: Some(other.to_string()),
        }),
    })?;
    Ok(ToolOutput::Json(json!({"occurrencesModified": count})))
}

/// Literal, non-overlapping, left-to-right replacement with StrReplace's uniqueness rules.
fn replace_literal(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<(String, usize), EditError> {
    let count = text.matches(old).count();
    match count {
        0 => Err(EditError::NotFound),
        1 => Ok((text.replacen(old, new, 1), 1)),
        _ if replace_all => Ok((text.replace(old, new), count)),
        _ => Err(EditError::MultipleMatches),
    }
}

/// Ranked search through the tree's index. On the host default the workspace has no standing
/// index (Shell and other processes change it behind the tree's back), so the index is built
/// from the workspace as it is now, when the model searches, instead of on every turn.
async fn semantic_search(
    ctx: &ToolContext,
    args: &Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let query = SearchQuery {
        query: args.str_arg("query").unwrap_or_default().to_string(),
        path: args.str_arg("path").map(str::to_string),
        max_results: Some(args.u64_arg("numResults").unwrap_or(DEFAULT_SEARCH_RESULTS) as usize),
    };
    let fs = match ctx.scratch {
        ScratchMode::Host => folio_fs::indexed(ctx.fs.clone()).await?,
        ScratchMode::Rooted => ctx.fs.clone(),
    };
    let hits: Vec<_> = fs.search(query).try_collect().await?;
    let blocks: Vec<String> = hits
        .iter()
        .map(|hit| {
            format!(
                "{}:{}-{} (score {:.3})\n{}",
                hit.path, hit.start_line, hit.end_line, hit.score, hit.snippet
            )
        })
        .collect();
    Ok(ToolOutput::Text(blocks.join("\n\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders `text` as `Read` does, paged in memory.
    fn render(text: &str, offset: u64, limit: u64) -> Result<String, ToolError> {
        match Page::of_content(Content::Text(text.to_string()), offset, limit) {
            Page::Text { lines, total } => number_lines(&lines, total, offset),
            Page::Image { .. } => unreachable!("text pages"),
        }
    }

    #[test]
    fn numbers_lines_and_pages() {
        assert_eq!(render("a\nb\n", 1, 2000).unwrap(), "     1\ta\n     2\tb");
        assert_eq!(
            render("a\nb\nc\nd", 2, 2).unwrap(),
            "     2\tb\n     3\tc\n… 1 more lines; call Read with offset=4"
        );
        assert_eq!(
            render("a", 5, 1).unwrap_err().0,
            "offset 5 is past the end of the file (1 lines)"
        );
        let long = "x".repeat(2005);
        assert_eq!(
            render(&long, 1, 10).unwrap(),
            format!(
                "     1\t{}… [line cut: 5 more characters]",
                "x".repeat(2000)
            )
        );
    }

    #[test]
    fn literal_replace_rules() {
        assert_eq!(
            replace_literal("a$1a", "$1", "b", false).unwrap(),
            ("aba".into(), 1)
        );
        assert_eq!(
            replace_literal("aaa", "aa", "b", true).unwrap(),
            ("ba".into(), 1)
        );
        assert_eq!(replace_literal("xax", "a", "b", false).unwrap().1, 1);
        assert_eq!(
            replace_literal("x", "a", "b", false),
            Err(EditError::NotFound)
        );
        assert_eq!(
            replace_literal("aa", "a", "b", false),
            Err(EditError::MultipleMatches)
        );
        assert_eq!(
            replace_literal("aa", "a", "b", true).unwrap(),
            ("bb".into(), 2)
        );
    }
}
