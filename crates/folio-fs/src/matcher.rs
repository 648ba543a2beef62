//! The grep and glob engines shared by every tree: ripgrep's crates for lines, `globset` for paths.

use std::path::Path;

use globset::{Glob, GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, sinks::Lossy};

use crate::{GrepQuery, GrepResult, PathError, basename};

/// A compiled grep query: the line regex plus the optional file filter of `GrepQuery::glob`.
#[derive(Clone, Debug)]
pub struct LineMatcher {
    matcher: RegexMatcher,
    file_filter: Option<PathFilter>,
}

impl LineMatcher {
    /// Compiles `query`; a bad regex is `invalid grep pattern: …` about `scope`.
    pub fn new(query: &GrepQuery, scope: &str) -> Result<Self, PathError> {
        // The `\n` line terminator lets grep-searcher run its fast path (one regex scan per
        // buffer, not per line), as ripgrep does.
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(query.case_insensitive)
            .line_terminator(Some(b'\n'))
            .build(&query.pattern)
            .map_err(|_| PathError::InvalidGrepPattern {
                path: scope.to_string(),
                pattern: query.pattern.clone(),
            })?;
        let file_filter = match query.glob.as_deref() {
            None | Some("") => None,
            Some(glob) => Some(PathFilter::for_grep(glob, scope)?),
        };
        Ok(LineMatcher {
            matcher,
            file_filter,
        })
    }

    /// Whether a file at `relative` (to the grep scope, no leading slash) passes the glob filter.
    pub fn wants_file(&self, relative: &str) -> bool {
        match &self.file_filter {
            None => true,
            Some(filter) => filter.matches(relative),
        }
    }

    /// A searcher configured like ripgrep's defaults (line numbers, binary files skipped).
    pub fn searcher() -> Searcher {
        SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(b'\x00'))
            // One giant line must not buffer a whole file: past this the file is skipped.
            .heap_limit(Some(crate::limits::READ_BYTE_CAP as usize))
            .build()
    }

    /// Matching lines of in-memory `bytes`, reported as `path`, at most `limit` of them.
    pub fn search_slice(
        &self,
        searcher: &mut Searcher,
        path: &str,
        bytes: &[u8],
        limit: Option<usize>,
    ) -> Vec<GrepResult> {
        let mut hits = Vec::new();
        if limit == Some(0) {
            return hits;
        }
        // Searching a slice cannot fail except through the sink, which never errors here.
        let _ = searcher.search_slice(&self.matcher, bytes, collect(path, limit, &mut hits));
        hits
    }

    /// Matching lines of host file `file`, reported as `path`, at most `limit` of them.
    pub fn search_file(
        &self,
        searcher: &mut Searcher,
        path: &str,
        file: &Path,
        limit: Option<usize>,
    ) -> std::io::Result<Vec<GrepResult>> {
        let mut hits = Vec::new();
        if limit == Some(0) {
            return Ok(hits);
        }
        searcher.search_path(&self.matcher, file, collect(path, limit, &mut hits))?;
        Ok(hits)
    }
}

fn collect<'a>(
    path: &'a str,
    limit: Option<usize>,
    hits: &'a mut Vec<GrepResult>,
) -> Lossy<impl FnMut(u64, &str) -> std::io::Result<bool> + 'a> {
    Lossy(move |line_number, line| {
        hits.push(GrepResult {
            path: path.to_string(),
            line_number,
            line: line.trim_end_matches(['\n', '\r']).to_string(),
        });
        Ok(limit.is_none_or(|limit| hits.len() < limit))
    })
}

/// A glob over paths relative to a directory, with the seed's scoping rules.
#[derive(Clone, Debug)]
pub struct PathFilter {
    matcher: GlobMatcher,
    basename_only: bool,
}

impl PathFilter {
    /// A `glob(pattern, dir)` pattern: matched against the whole path relative to `dir`,
    /// `*` never crossing `/` (so `*.ts` under `/src` is `/src/a.ts`, not `/src/nested/c.ts`).
    pub fn for_glob(pattern: &str, dir: &str) -> Result<Self, PathError> {
        let pattern = pattern.trim_start_matches("./").trim_start_matches('/');
        Ok(PathFilter {
            matcher: build(pattern, dir)?,
            basename_only: false,
        })
    }

    /// A grep `glob` filter: a slash-free glob matches the basename at any depth under the
    /// scope; one with a slash matches the path relative to the scope.
    pub fn for_grep(pattern: &str, scope: &str) -> Result<Self, PathError> {
        let basename_only = !pattern.contains('/');
        let pattern = pattern.trim_start_matches("./").trim_start_matches('/');
        Ok(PathFilter {
            matcher: build(pattern, scope)?,
            basename_only,
        })
    }

    /// Whether `relative` (no leading slash) matches.
    pub fn matches(&self, relative: &str) -> bool {
        if self.basename_only {
            self.matcher.is_match(basename(relative))
        } else {
            self.matcher.is_match(relative)
        }
    }

    /// The deepest directory (relative, `""` for the base) that can hold a match: the
    /// pattern's leading literal segments. Walks start there instead of at the base.
    pub fn literal_base(pattern: &str) -> String {
        let pattern = pattern.trim_start_matches("./").trim_start_matches('/');
        let segments: Vec<&str> = pattern.split('/').collect();
        let literal: Vec<&str> = segments[..segments.len().saturating_sub(1)]
            .iter()
            .take_while(|s| !s.contains(['*', '?', '[', '{', '\\']))
            .copied()
            .collect();
        literal.join("/")
    }
}

fn build(pattern: &str, scope: &str) -> Result<GlobMatcher, PathError> {
    let glob: Glob = GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|err| PathError::Other {
            path: scope.to_string(),
            message: format!("invalid glob pattern: {pattern}: {}", err.kind()),
        })?;
    Ok(glob.compile_matcher())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_scoping() {
        let f = PathFilter::for_glob("*.ts", "/src").unwrap();
        assert!(f.matches("a.ts"));
        assert!(!f.matches("nested/c.ts"));
        let f = PathFilter::for_glob("**/*.ts", "/").unwrap();
        assert!(f.matches("a.ts") && f.matches("x/y/c.ts"));
        let g = PathFilter::for_grep("*.ts", "/").unwrap();
        assert!(g.matches("deep/er/c.ts"));
        let g = PathFilter::for_grep("src/*.ts", "/").unwrap();
        assert!(g.matches("src/c.ts") && !g.matches("lib/src/c.ts"));
        assert_eq!(PathFilter::literal_base("src/lib/*.rs"), "src/lib");
        assert_eq!(PathFilter::literal_base("*.rs"), "");
        assert_eq!(PathFilter::literal_base("a/**/b.rs"), "a");
    }

    #[test]
    fn invalid_pattern_message() {
        let err = LineMatcher::new(&GrepQuery::new("a("), "/").unwrap_err();
        assert_eq!(err.to_string(), "invalid grep pattern: a(");
    }

    #[test]
    fn slice_search_numbers_lines_and_limits() {
        let m = LineMatcher::new(&GrepQuery::new("b"), "/").unwrap();
        let mut s = LineMatcher::searcher();
        let hits = m.search_slice(&mut s, "/f", b"a\nb\r\nab\nb", Some(2));
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].line_number, 2);
        assert_eq!(hits[0].line, "b");
        assert_eq!(hits[1].line, "ab");
        // The sink pushes a hit before checking the limit: zero must not yield one.
        assert!(m.search_slice(&mut s, "/f", b"b\n", Some(0)).is_empty());
    }
}
