//! The eight file tools synthesized from the turn's FileSystem (docs/tools.md): `Read`, `LS`,
//! `Grep`, `Glob`, `Write`, `StrReplace`, `Delete`, `SemanticSearch`.

use std::fmt::Write as _;

use folio_fs::{Content, EditError, FileKind, GrepQuery, Page, PageLine, PathError, SearchQuery};
use futures::{StreamExt, TryStreamExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use folio_project::FileTool;

use super::input;
use super::{ScratchMode, Tool, ToolContext, ToolError, ToolOutput};

/// Lines `Read` returns when no `limit` is given.
const DEFAULT_READ_LIMIT: u64 = 2000;
/// Hits `SemanticSearch` returns when no `numResults` is given.
const DEFAULT_SEARCH_RESULTS: u64 = 10;
/// Lines `Grep`, `Glob` and `LS` return when no `headLimit` is given: a page a model can read,
/// with a note saying how to get the next one.
const DEFAULT_HEAD_LIMIT: usize = 200;

/// One page of a listing: the lines from `offset`, at most `limit` of them, while every line
/// is counted so the result can say how many there are in all.
struct Pager {
    offset: usize,
    limit: usize,
    total: usize,
    lines: Vec<String>,
}

impl Pager {
    fn new(offset: Option<u64>, head_limit: Option<u64>) -> Pager {
        Pager {
            offset: offset.unwrap_or(0) as usize,
            limit: head_limit.map_or(DEFAULT_HEAD_LIMIT, |n| n as usize),
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

/// `Read`'s arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadInput {
    /// The file to read.
    path: String,
    /// 1-based line to start from (default 1).
    offset: Option<u64>,
    /// How many lines to return (default 2000).
    limit: Option<u64>,
}

/// `LS`' arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct LsInput {
    /// The directory to list (default: the root).
    path: Option<String>,
    /// Return at most this many output lines (default 200).
    #[serde(alias = "head_limit", alias = "limit")]
    head_limit: Option<u64>,
    /// Skip this many output lines first (for the next page).
    offset: Option<u64>,
}

/// `Grep`'s arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct GrepInput {
    /// A regular expression.
    pattern: String,
    /// A directory or file to search (default: the root).
    path: Option<String>,
    /// Only files matching this glob; `*.rs` matches at any depth.
    glob: Option<String>,
    /// Ignore case.
    #[serde(alias = "-i", alias = "case_insensitive")]
    case_insensitive: Option<bool>,
    /// `content` (default: path:line:text), `files_with_matches` or `count`.
    #[serde(alias = "output_mode")]
    output_mode: Option<String>,
    /// Return at most this many output lines (default 200).
    #[serde(alias = "head_limit", alias = "limit")]
    head_limit: Option<u64>,
    /// Skip this many output lines first (for the next page).
    offset: Option<u64>,
}

/// `Glob`'s arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct GlobInput {
    /// A glob relative to `path`; `*` does not cross `/`, `**` does.
    pattern: String,
    /// The directory the pattern is relative to (default: the root).
    path: Option<String>,
    /// Return at most this many output lines (default 200).
    #[serde(alias = "head_limit", alias = "limit")]
    head_limit: Option<u64>,
    /// Skip this many output lines first (for the next page).
    offset: Option<u64>,
}

/// `Write`'s arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteInput {
    /// The file to create or overwrite.
    path: String,
    /// The full new contents.
    #[serde(alias = "fileText", alias = "file_text", alias = "content")]
    contents: String,
}

/// `StrReplace`'s arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct StrReplaceInput {
    /// The file to edit.
    path: String,
    /// The exact text to replace.
    #[serde(alias = "old_string")]
    old_text: String,
    /// The replacement text.
    #[serde(alias = "new_string")]
    new_text: String,
    /// Replace every occurrence (default: exactly one must exist).
    #[serde(alias = "replace_all")]
    replace_all: Option<bool>,
}

/// `Delete`'s arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeleteInput {
    /// The file to delete.
    path: String,
}

/// `SemanticSearch`'s arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SemanticSearchInput {
    /// What to look for, in words.
    query: String,
    /// Only files within this path (default: everywhere).
    path: Option<String>,
    /// How many hits to return (default 10).
    #[serde(alias = "num_results")]
    num_results: Option<u64>,
}

/// A path the model gave, with a host spill path it still holds moved to its `/tmp` copy
/// under a root.
fn local_path(ctx: &ToolContext, path: String) -> String {
    super::spill::rewrite_spill_path(ctx, &path).unwrap_or(path)
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
        match self {
            FileTool::Read => input::schema::<ReadInput>(),
            FileTool::Ls => input::schema::<LsInput>(),
            FileTool::Grep => input::schema::<GrepInput>(),
            FileTool::Glob => input::schema::<GlobInput>(),
            FileTool::Write => input::schema::<WriteInput>(),
            FileTool::StrReplace => input::schema::<StrReplaceInput>(),
            FileTool::Delete => input::schema::<DeleteInput>(),
            FileTool::SemanticSearch => input::schema::<SemanticSearchInput>(),
        }
    }

    fn prepare(&self, value: Value) -> Result<Value, ToolError> {
        match self {
            FileTool::Read => input::prepare::<ReadInput>(value),
            FileTool::Ls => input::prepare::<LsInput>(value),
            FileTool::Grep => input::prepare::<GrepInput>(value),
            FileTool::Glob => input::prepare::<GlobInput>(value),
            FileTool::Write => input::prepare::<WriteInput>(value),
            FileTool::StrReplace => input::prepare::<StrReplaceInput>(value),
            FileTool::Delete => input::prepare::<DeleteInput>(value),
            FileTool::SemanticSearch => input::prepare::<SemanticSearchInput>(value),
        }
    }

    async fn call(&self, value: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let fs = ctx.fs.as_ref();
        match self {
            FileTool::Read => read(fs, ctx, input::parse(value)?).await,
            FileTool::Ls => ls(fs, ctx, input::parse(value)?).await,
            FileTool::Grep => grep(fs, ctx, input::parse(value)?).await,
            FileTool::Glob => {
                let GlobInput {
                    pattern,
                    path,
                    head_limit,
                    offset,
                } = input::parse(value)?;
                let mut entries = fs.glob(&pattern, path.as_deref());
                let mut page = Pager::new(offset, head_limit);
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
                let WriteInput { path, contents } = input::parse(value)?;
                let path = local_path(ctx, path);
                fs.write(&path, &contents).await?;
                Ok(ToolOutput::Text(format!("Wrote contents to {path}")))
            }
            FileTool::StrReplace => str_replace(fs, ctx, input::parse(value)?).await,
            FileTool::Delete => {
                let DeleteInput { path } = input::parse(value)?;
                let path = local_path(ctx, path);
                fs.delete(&path).await?;
                Ok(ToolOutput::Text(format!("Deleted {path}")))
            }
            FileTool::SemanticSearch => semantic_search(ctx, input::parse(value)?).await,
        }
    }
}

async fn read(
    fs: &dyn folio_fs::FileSystem,
    ctx: &ToolContext,
    input: ReadInput,
) -> Result<ToolOutput, ToolError> {
    let path = local_path(ctx, input.path);
    let offset = input.offset.unwrap_or(1).max(1);
    let limit = input.limit.unwrap_or(DEFAULT_READ_LIMIT).max(1);
    match fs.read_page(&path, offset, limit).await? {
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
    ctx: &ToolContext,
    input: LsInput,
) -> Result<ToolOutput, ToolError> {
    let path = local_path(ctx, input.path.unwrap_or_default());
    let path = path.as_str();
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
            let mut page = Pager::new(input.offset, input.head_limit);
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
    ctx: &ToolContext,
    input: GrepInput,
) -> Result<ToolOutput, ToolError> {
    let mode = input.output_mode.as_deref().unwrap_or("content");
    if !matches!(mode, "content" | "files_with_matches" | "count") {
        return Err(ToolError(format!(
            "argument \"outputMode\" must be content, files_with_matches or count, got \"{mode}\""
        )));
    }
    let query = GrepQuery {
        pattern: input.pattern,
        path: input.path.map(|path| local_path(ctx, path)),
        glob: input.glob,
        case_insensitive: input.case_insensitive.unwrap_or(false),
        // Every hit is counted so the page can say how many there are in all.
        max_results: None,
    };
    let mut hits = fs.grep(query);
    let mut page = Pager::new(input.offset, input.head_limit);
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
    ctx: &ToolContext,
    input: StrReplaceInput,
) -> Result<ToolOutput, ToolError> {
    let path = local_path(ctx, input.path);
    let path = path.as_str();
    let (old, new) = (input.old_text.as_str(), input.new_text.as_str());
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
    let (edited, count) = replace_literal(&text, old, new, input.replace_all.unwrap_or(false))
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
    input: SemanticSearchInput,
) -> Result<ToolOutput, ToolError> {
    let query = SearchQuery {
        query: input.query,
        path: input.path,
        max_results: Some(input.num_results.unwrap_or(DEFAULT_SEARCH_RESULTS) as usize),
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
