//! A tree whose every verb fails (`layer down: …`): a downed overlay layer, shared by the
//! virtual-tree contract tests and the union/overlay tests.

use folio_fs::{
    Content, DirEntry, FileInfo, FileSystem, FsStream, GrepQuery, GrepResult, PathError,
    SearchQuery, SearchResult,
};
use futures::{StreamExt, stream};

/// A downed tree.
pub struct Down;

fn down(path: &str) -> PathError {
    PathError::Other {
        path: path.to_string(),
        message: format!("layer down: {path}"),
    }
}

#[async_trait::async_trait]
impl FileSystem for Down {
    fn list(&self, prefix: &str) -> FsStream<DirEntry> {
        stream::iter([Err(down(prefix))]).boxed()
    }
    async fn stat(&self, path: &str) -> Result<FileInfo, PathError> {
        Err(down(path))
    }
    fn glob(&self, _pattern: &str, dir: Option<&str>) -> FsStream<DirEntry> {
        stream::iter([Err(down(dir.unwrap_or("/")))]).boxed()
    }
    async fn read(&self, path: &str) -> Result<Content, PathError> {
        Err(down(path))
    }
    fn grep(&self, query: GrepQuery) -> FsStream<GrepResult> {
        stream::iter([Err(down(query.path.as_deref().unwrap_or("/")))]).boxed()
    }
    async fn write(&self, path: &str, _contents: &str) -> Result<(), PathError> {
        Err(down(path))
    }
    async fn delete(&self, path: &str) -> Result<(), PathError> {
        Err(down(path))
    }
    fn search(&self, query: SearchQuery) -> FsStream<SearchResult> {
        stream::iter([Err(down(query.path.as_deref().unwrap_or("/")))]).boxed()
    }
}
