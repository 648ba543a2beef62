//! [`indexed`]: any tree with a full-text (BM25) index behind `search`, kept current on `write`
//! and `delete` through the wrapper.
//!
//! The index lives in RAM (tantivy). It is built once by walking the inner tree; afterwards each
//! write or delete through the wrapper replaces or removes that one document (delete-term, add,
//! commit, reload) instead of rebuilding. Changes made to the inner tree behind the wrapper's
//! back are not seen by `search` until the index is rebuilt ([`IndexedFs::rebuild`]).

use std::sync::{Arc, Mutex};

use futures::{StreamExt, TryStreamExt};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, QueryParser, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, STORED, STRING, Schema, TEXT, Value};
use tantivy::snippet::SnippetGenerator;
use tantivy::{DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::walk::blocking;
use crate::{
    Content, DirEntry, EntryKind, FileInfo, FileSystem, FsStream, GrepQuery, GrepResult, PathError,
    SearchQuery, SearchResult, normalize_fs_path,
};

/// Memory the index writer may use before flushing a segment.
const WRITER_BUDGET: usize = 64 * 1024 * 1024;
/// How many files the initial build reads at once.
const READ_AHEAD: usize = 8;
/// The longest snippet, in characters.
const SNIPPET_CHARS: usize = 240;

/// Wraps `inner` with a full-text index behind `search`, built now by walking `inner`.
///
/// Every other verb delegates to `inner`; `write` and `delete` also update the index.
pub async fn indexed(inner: Arc<dyn FileSystem>) -> Result<Arc<dyn FileSystem>, PathError> {
    Ok(Arc::new(IndexedFs::build(inner).await?))
}

#[derive(Clone, Copy)]
struct Fields {
    /// The file's path as the inner tree yields it (exact term; stored).
    path: Field,
    /// The path and each of its ancestor directories (exact terms), for `path` scopes.
    scope: Field,
    /// The file's text (tokenized; stored for snippets).
    body: Field,
}

struct Engine {
    index: Index,
    reader: IndexReader,
    writer: Mutex<IndexWriter>,
    fields: Fields,
}

/// A tree with a full-text index; see [`indexed`].
pub struct IndexedFs {
    inner: Arc<dyn FileSystem>,
    engine: Arc<Engine>,
    /// Serializes write/delete so the index applies changes in the order the tree did (shared
    /// by every session view).
    updates: Arc<tokio::sync::Mutex<()>>,
}

fn index_error(path: &str, err: impl std::fmt::Display) -> PathError {
    PathError::Other {
        path: path.to_string(),
        message: format!("search index: {path}: {err}"),
    }
}

impl Engine {
    fn new() -> Result<Self, PathError> {
        let mut schema = Schema::builder();
        let fields = Fields {
            path: schema.add_text_field("path", STRING | STORED),
            scope: schema.add_text_field("scope", STRING),
            body: schema.add_text_field("body", TEXT | STORED),
        };
        let index = Index::create_in_ram(schema.build());
        let writer = index
            .writer_with_num_threads(1, WRITER_BUDGET)
            .map_err(|err| index_error("/", err))?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|err| index_error("/", err))?;
        Ok(Engine {
            index,
            reader,
            writer: Mutex::new(writer),
            fields,
        })
    }

    fn writer(&self) -> std::sync::MutexGuard<'_, IndexWriter> {
        self.writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn document(&self, path: &str, text: &str) -> TantivyDocument {
        let mut doc = TantivyDocument::default();
        doc.add_text(self.fields.path, path);
        let mut ancestor = path;
        loop {
            doc.add_text(self.fields.scope, ancestor);
            if ancestor == "/" || ancestor.is_empty() {
                break;
            }
            ancestor = crate::parent(ancestor);
        }
        doc.add_text(self.fields.body, text);
        doc
    }

    /// Replaces (or, with `None`, removes) the document of `path`, then makes it searchable.
    fn apply(&self, path: &str, text: Option<&str>) -> Result<(), PathError> {
        let mut writer = self.writer();
        writer.delete_term(Term::from_field_text(self.fields.path, path));
        if let Some(text) = text {
            writer
                .add_document(self.document(path, text))
                .map_err(|err| index_error(path, err))?;
        }
        writer.commit().map_err(|err| index_error(path, err))?;
        self.reader.reload().map_err(|err| index_error(path, err))
    }

    fn search(&self, query: &SearchQuery) -> Result<Vec<SearchResult>, PathError> {
        let scope = query
            .path
            .as_deref()
            .filter(|p| !p.is_empty())
            .map(normalize_fs_path);
        let shown = scope.clone().unwrap_or_else(|| "/".to_string());
        let wanted = query.max_results.unwrap_or(usize::MAX);
        let searcher = self.reader.searcher();
        let total = usize::try_from(searcher.num_docs()).unwrap_or(usize::MAX);
        if wanted == 0 || total == 0 {
            return Ok(Vec::new());
        }
        let parser = QueryParser::for_index(&self.index, vec![self.fields.body]);
        let (text_query, _lenient) = parser.parse_query_lenient(&query.query);
        let full: Box<dyn Query> = match &scope {
            Some(scope) if scope != "/" => Box::new(BooleanQuery::new(vec![
                (Occur::Must, text_query.box_clone()),
                (
                    Occur::Must,
                    Box::new(TermQuery::new(
                        Term::from_field_text(self.fields.scope, scope),
                        IndexRecordOption::Basic,
                    )),
                ),
            ])),
            _ => text_query.box_clone(),
        };
        // Fetch past the cut until the score there drops, so ties are ordered by path exactly.
        let mut limit = wanted.saturating_add(1).min(total);
        let top: Vec<(f32, DocAddress)> = loop {
            let top = searcher
                .search(&*full, &TopDocs::with_limit(limit).order_by_score())
                .map_err(|err| index_error(&shown, err))?;
            let tie_at_cut = top.len() == limit
                && limit < total
                && top.len() > wanted
                && top[limit - 1].0 >= top[wanted - 1].0;
            if !tie_at_cut {
                break top;
            }
            limit = limit.saturating_mul(2).min(total);
        };
        let mut snippets = SnippetGenerator::create(&searcher, &*text_query, self.fields.body)
            .map_err(|err| index_error(&shown, err))?;
        snippets.set_max_num_chars(SNIPPET_CHARS);
        let mut results = Vec::with_capacity(top.len());
        for (score, address) in top {
            let doc: TantivyDocument = searcher
                .doc(address)
                .map_err(|err| index_error(&shown, err))?;
            let path = doc
                .get_first(self.fields.path)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string();
            let body = doc
                .get_first(self.fields.body)
                .and_then(|v| v.as_str())
                .unwrap_or_default();
            let (snippet, start_line, end_line) = passage(&snippets, body);
            results.push(SearchResult {
                path,
                score,
                snippet,
                start_line,
                end_line,
            });
        }
        results.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.path.cmp(&b.path))
        });
        results.truncate(wanted);
        Ok(results)
    }
}

/// The best passage of `body`: the whole lines from its first to its last highlighted term, with
/// their first and last line numbers (1-based, inclusive).
fn passage(snippets: &SnippetGenerator, body: &str) -> (String, u64, u64) {
    let snippet = snippets.snippet(body);
    let offset = snippet.fragment_range().start;
    let highlighted = snippet.highlighted();
    let (from, to) = match (highlighted.first(), highlighted.last()) {
        (Some(first), Some(last)) => (offset + first.start, offset + last.end),
        _ => (0, 0),
    };
    let line_start = body[..from].rfind('\n').map_or(0, |i| i + 1);
    let line_end = body[to..].find('\n').map_or(body.len(), |i| to + i);
    let lines = body[line_start..line_end].trim_end_matches('\r');
    let text = if lines.chars().count() <= SNIPPET_CHARS || snippet.is_empty() {
        truncate_chars(lines, SNIPPET_CHARS)
    } else {
        // Very long lines (minified files): the fragment tantivy chose around the terms.
        snippet.fragment()
    };
    let start_line = 1 + count_newlines(&body[..line_start]);
    let end_line = start_line + count_newlines(&body[line_start..line_end]);
    (text.to_string(), start_line, end_line)
}

fn count_newlines(text: &str) -> u64 {
    text.bytes().filter(|&b| b == b'\n').count() as u64
}

fn truncate_chars(text: &str, max: usize) -> &str {
    text.char_indices()
        .nth(max)
        .map_or(text, |(i, _)| &text[..i])
}

impl IndexedFs {
    /// Wraps `inner` and builds its index by walking it (see [`indexed`]).
    pub async fn build(inner: Arc<dyn FileSystem>) -> Result<Self, PathError> {
        let engine = Arc::new(Engine::new()?);
        let fs = IndexedFs {
            inner,
            engine,
            updates: Arc::default(),
        };
        fs.fill().await?;
        Ok(fs)
    }

    /// Drops the index and builds it again from the inner tree (for changes made behind the
    /// wrapper's back).
    pub async fn rebuild(&self) -> Result<(), PathError> {
        let _serial = self.updates.lock().await;
        let engine = Arc::clone(&self.engine);
        blocking("/", move || {
            engine
                .writer()
                .delete_all_documents()
                .map(drop)
                .map_err(|err| index_error("/", err))
        })
        .await?;
        self.fill().await
    }

    /// Adds every text file of the inner tree, then commits once.
    async fn fill(&self) -> Result<(), PathError> {
        let inner = Arc::clone(&self.inner);
        let mut texts = self
            .inner
            .glob("**", None)
            .try_filter(|entry| futures::future::ready(entry.kind == EntryKind::File))
            .map_ok(move |entry: DirEntry| {
                let inner = Arc::clone(&inner);
                async move {
                    match inner.read(&entry.path).await {
                        Ok(Content::Text(text)) => Ok(Some((entry.path, text))),
                        // Images, vanished files and what Read refuses (over the byte cap, not
                        // a regular file) are not indexed.
                        Ok(Content::Image { .. })
                        | Err(
                            PathError::FileNotFound { .. }
                            | PathError::TooLarge { .. }
                            | PathError::NotRegular { .. },
                        ) => Ok(None),
                        Err(err) => Err(err),
                    }
                }
            })
            .try_buffer_unordered(READ_AHEAD);
        let mut batch: Vec<(String, String)> = Vec::new();
        while let Some(text) = texts.try_next().await? {
            batch.extend(text);
            if batch.len() >= 256 {
                self.add_all(std::mem::take(&mut batch)).await?;
            }
        }
        self.add_all(batch).await?;
        let engine = Arc::clone(&self.engine);
        blocking("/", move || {
            engine
                .writer()
                .commit()
                .map_err(|err| index_error("/", err))?;
            engine.reader.reload().map_err(|err| index_error("/", err))
        })
        .await
    }

    async fn add_all(&self, batch: Vec<(String, String)>) -> Result<(), PathError> {
        let engine = Arc::clone(&self.engine);
        blocking("/", move || {
            let writer = engine.writer();
            for (path, text) in batch {
                writer
                    .add_document(engine.document(&path, &text))
                    .map_err(|err| index_error(&path, err))?;
            }
            Ok(())
        })
        .await
    }

    /// The path under which the inner tree reports `path` (what its walks yield).
    async fn shown_path(&self, path: &str) -> String {
        match self.inner.stat(path).await {
            Ok(info) => info.path,
            Err(_) => normalize_fs_path(path),
        }
    }
}

#[async_trait::async_trait]
impl FileSystem for IndexedFs {
    fn list(&self, prefix: &str) -> FsStream<DirEntry> {
        self.inner.list(prefix)
    }

    async fn stat(&self, path: &str) -> Result<FileInfo, PathError> {
        self.inner.stat(path).await
    }

    fn glob(&self, pattern: &str, dir: Option<&str>) -> FsStream<DirEntry> {
        self.inner.glob(pattern, dir)
    }

    async fn read(&self, path: &str) -> Result<Content, PathError> {
        self.inner.read(path).await
    }

    fn grep(&self, query: GrepQuery) -> FsStream<GrepResult> {
        self.inner.grep(query)
    }

    async fn write(&self, path: &str, contents: &str) -> Result<(), PathError> {
        let _serial = self.updates.lock().await;
        self.inner.write(path, contents).await?;
        let shown = self.shown_path(path).await;
        let engine = Arc::clone(&self.engine);
        let text = contents.to_string();
        blocking(&shown.clone(), move || engine.apply(&shown, Some(&text))).await
    }

    async fn delete(&self, path: &str) -> Result<(), PathError> {
        let _serial = self.updates.lock().await;
        self.inner.delete(path).await?;
        let shown = self.shown_path(path).await;
        let engine = Arc::clone(&self.engine);
        blocking(&shown.clone(), move || engine.apply(&shown, None)).await
    }

    fn search(&self, query: SearchQuery) -> FsStream<SearchResult> {
        let engine = Arc::clone(&self.engine);
        futures::stream::once(async move {
            let shown = query.path.clone().unwrap_or_else(|| "/".to_string());
            let results = blocking(&shown, move || engine.search(&query)).await;
            futures::stream::iter(match results {
                Ok(results) => results.into_iter().map(Ok).collect::<Vec<_>>(),
                Err(err) => vec![Err(err)],
            })
        })
        .flatten()
        .boxed()
    }

    fn session_view(&self) -> Option<Arc<dyn FileSystem>> {
        // One index for every session: each session's writes keep it current.
        let inner = self.inner.session_view()?;
        Some(Arc::new(IndexedFs {
            inner,
            engine: Arc::clone(&self.engine),
            updates: Arc::clone(&self.updates),
        }))
    }
}
