//! Record and replay: a JSONL fixture of `{request, response: [deltas]}` lines.
//!
//! A fixture is appended one whole line per completed exchange (one `write` of the line, then
//! synced), so a crash loses at most the call in flight and every line on disk parses.

use std::future::Future;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::{
    Delta, DeltaStream, FixtureError, Message, ModelError, ModelRequest, Provider, ToolSpec,
};

/// One line of a fixture: a request and the deltas that answered it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Exchange {
    request: ModelRequest,
    response: Vec<Delta>,
}

/// Wraps a provider and appends every completed exchange to a JSONL fixture.
///
/// An exchange is written when its stream ends without error; failed or cancelled calls are
/// not recorded (a replay of them would prove nothing).
pub struct RecordingProvider {
    inner: Arc<dyn Provider>,
    path: PathBuf,
    file: Arc<Mutex<()>>,
}

impl RecordingProvider {
    /// Records `inner`'s exchanges into `path` (appending; the file is created when needed).
    pub fn new(inner: Arc<dyn Provider>, path: impl Into<PathBuf>) -> RecordingProvider {
        RecordingProvider {
            inner,
            path: path.into(),
            file: Arc::new(Mutex::new(())),
        }
    }
}

/// A [`ModelError::Fixture`] for `path`: `what` was being done when `source` failed.
fn fixture_error(
    path: &Path,
    what: impl Into<String>,
    source: impl Into<FixtureError>,
) -> ModelError {
    ModelError::Fixture {
        path: path.display().to_string(),
        what: what.into(),
        source: source.into(),
    }
}

fn append(path: &Path, lock: &Mutex<()>, exchange: &Exchange) -> Result<(), ModelError> {
    let mut line = serde_json::to_string(exchange)
        .map_err(|e| fixture_error(path, "cannot serialize the exchange", e))?;
    line.push('\n');
    let _guard = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        // Requests hold the conversation: only the owner reads a new fixture.
        .mode(0o600)
        .open(path)
        .map_err(|e| fixture_error(path, "cannot open for recording", e))?;
    drop_torn_tail(&file).map_err(|e| fixture_error(path, "cannot repair a torn last line", e))?;
    file.write_all(line.as_bytes())
        .and_then(|()| file.sync_data())
        .map_err(|e| fixture_error(path, "cannot write", e))
}

/// Cuts a last line left without its newline (a write torn by a crash) off `file`, so the next
/// exchange starts a line of its own and every line stays whole.
fn drop_torn_tail(file: &std::fs::File) -> std::io::Result<()> {
    use std::io::Read as _;
    use std::os::unix::fs::FileExt as _;
    let len = file.metadata()?.len();
    let mut last = [0u8];
    if len == 0 || (file.read_at(&mut last, len - 1)? == 1 && last[0] == b'\n') {
        return Ok(());
    }
    let mut text = Vec::new();
    (&*file).read_to_end(&mut text)?;
    let whole = text
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    tracing::warn!(
        dropped = text.len() - whole,
        "a fixture ended in a torn line (a crash while recording): dropped it"
    );
    file.set_len(whole as u64)
}

/// The stream of `inner` (answering `request`), appending the exchange to `path` when it ends
/// without error.
fn recorded(
    inner: DeltaStream,
    request: &ModelRequest,
    path: PathBuf,
    lock: Arc<Mutex<()>>,
) -> DeltaStream {
    let state = Recorder {
        inner,
        exchange: Some(Exchange {
            request: request.clone(),
            response: Vec::new(),
        }),
        path,
        lock,
    };
    futures::stream::unfold(state, Recorder::next).boxed()
}

#[async_trait]
impl Provider for RecordingProvider {
    fn name(&self) -> Option<&'static str> {
        self.inner.name()
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<DeltaStream, ModelError> {
        let inner = self.inner.stream(request, cancel).await?;
        Ok(recorded(
            inner,
            request,
            self.path.clone(),
            Arc::clone(&self.file),
        ))
    }
}

tokio::task_local! {
    /// The session the model call being made is for (see [`for_session`]).
    static SESSION: String;
}

/// Makes the model call `call` on behalf of session `id`, so a [`SessionRecordingProvider`]
/// knows whose fixture its exchange belongs to.
pub async fn for_session<F: Future>(id: &str, call: F) -> F::Output {
    SESSION.scope(id.to_string(), call).await
}

/// The fixture of a session id; `None` when the id cannot name a file.
pub type FixtureFor = Arc<dyn Fn(&str) -> Option<PathBuf> + Send + Sync>;

/// Wraps a provider shared by many sessions and appends each completed exchange to the fixture
/// of the session it was made for ([`for_session`]), as [`RecordingProvider`] does for one.
///
/// A fixture replays a session from its start, so one is only started by a session's first
/// model call (a request with no assistant message yet): a session from before recording began
/// is not recorded, and an existing fixture is appended to (a session continued after a
/// restart). A call made outside any session is not recorded.
pub struct SessionRecordingProvider {
    inner: Arc<dyn Provider>,
    fixture_for: FixtureFor,
    file: Arc<Mutex<()>>,
}

impl SessionRecordingProvider {
    /// Records `inner`'s exchanges of each session into `fixture_for(session id)`.
    pub fn new(inner: Arc<dyn Provider>, fixture_for: FixtureFor) -> SessionRecordingProvider {
        SessionRecordingProvider {
            inner,
            fixture_for,
            file: Arc::new(Mutex::new(())),
        }
    }
}

#[async_trait]
impl Provider for SessionRecordingProvider {
    fn name(&self) -> Option<&'static str> {
        self.inner.name()
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<DeltaStream, ModelError> {
        let Ok(session) = SESSION.try_with(String::clone) else {
            return self.inner.stream(request, cancel).await;
        };
        let Some(path) = (self.fixture_for)(&session) else {
            return Err(fixture_error(
                Path::new(&session),
                "cannot record",
                FixtureError::SessionId(session.clone()),
            ));
        };
        let started = request
            .messages
            .iter()
            .any(|message| matches!(message, Message::Assistant { .. }));
        if started && !path.exists() {
            return self.inner.stream(request, cancel).await;
        }
        let inner = self.inner.stream(request, cancel).await?;
        Ok(recorded(inner, request, path, Arc::clone(&self.file)))
    }
}

struct Recorder {
    inner: DeltaStream,
    /// `None` once written or abandoned.
    exchange: Option<Exchange>,
    path: PathBuf,
    lock: Arc<Mutex<()>>,
}

impl Recorder {
    async fn next(mut self) -> Option<(Result<Delta, ModelError>, Recorder)> {
        match self.inner.next().await {
            Some(Ok(delta)) => {
                if let Some(exchange) = self.exchange.as_mut() {
                    exchange.response.push(delta.clone());
                }
                Some((Ok(delta), self))
            }
            Some(Err(error)) => {
                self.exchange = None;
                Some((Err(error), self))
            }
            None => {
                let exchange = self.exchange.take()?;
                // Written and synced off the async workers.
                let (path, lock) = (self.path.clone(), Arc::clone(&self.lock));
                let written =
                    tokio::task::spawn_blocking(move || append(&path, &lock, &exchange)).await;
                match written {
                    Ok(Ok(())) => None,
                    Ok(Err(error)) => Some((Err(error), self)),
                    Err(stopped) => {
                        let error = fixture_error(
                            &self.path,
                            "recording stopped",
                            std::io::Error::other(stopped),
                        );
                        Some((Err(error), self))
                    }
                }
            }
        }
    }
}

/// Answers request N with recorded response N from a fixture written by [`RecordingProvider`].
///
/// A last line without its newline that does not parse (torn by a crash while recording) is
/// left out; any other line that is not an exchange fails [`ReplayProvider::open`].
///
/// A request whose messages or tools differ from the recording fails with
/// [`ModelError::ReplayMismatch`] carrying a line diff; asking past the end of the fixture fails
/// with [`ModelError::ReplayExhausted`].
pub struct ReplayProvider {
    path: String,
    exchanges: Vec<Exchange>,
    next: AtomicUsize,
}

impl ReplayProvider {
    /// Loads the fixture at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<ReplayProvider, ModelError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| fixture_error(path, "cannot read", e))?;
        let text = std::str::from_utf8(&bytes[..whole_lines(&bytes)]).map_err(|e| {
            fixture_error(
                path,
                "cannot read",
                std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            )
        })?;
        let exchanges = text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .map(|(number, line)| {
                serde_json::from_str(line)
                    .map_err(|e| fixture_error(path, format!("line {}", number + 1), e))
            })
            .collect::<Result<Vec<Exchange>, ModelError>>()?;
        Ok(ReplayProvider {
            path: path.display().to_string(),
            exchanges,
            next: AtomicUsize::new(0),
        })
    }

    /// Number of recorded exchanges.
    pub fn len(&self) -> usize {
        self.exchanges.len()
    }

    /// Whether the fixture holds no exchange.
    pub fn is_empty(&self) -> bool {
        self.exchanges.is_empty()
    }
}

/// How many bytes of a fixture are whole lines: all of them, unless it ends in a line without
/// its newline that is not an exchange (a write torn by a crash), which is left out.
fn whole_lines(bytes: &[u8]) -> usize {
    let start = bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    let last = &bytes[start..];
    if last.is_empty() || serde_json::from_slice::<Exchange>(last).is_ok() {
        bytes.len()
    } else {
        start
    }
}

/// The part of a request replay compares.
#[derive(Serialize)]
struct Compared<'a> {
    /// The conversation.
    messages: &'a [Message],
    /// The tools offered.
    tools: &'a [ToolSpec],
}

/// The part of a request replay compares, as pretty JSON.
fn compared(request: &ModelRequest) -> String {
    let value = Compared {
        messages: &request.messages,
        tools: &request.tools,
    };
    serde_json::to_string_pretty(&value).unwrap_or_else(|e| format!("<unserializable: {e}>"))
}

/// A unified line diff of `recorded` against `now`.
fn line_diff(recorded: &str, now: &str) -> String {
    similar::TextDiff::from_lines(recorded, now)
        .unified_diff()
        .context_radius(3)
        .header("recorded", "request")
        .to_string()
}

#[async_trait]
impl Provider for ReplayProvider {
    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<DeltaStream, ModelError> {
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        let exchange = self
            .exchanges
            .get(index)
            .ok_or_else(|| ModelError::ReplayExhausted {
                path: self.path.clone(),
                index,
                recorded: self.exchanges.len(),
            })?;
        let recorded = compared(&exchange.request);
        let now = compared(request);
        if recorded != now {
            return Err(ModelError::ReplayMismatch {
                path: self.path.clone(),
                index,
                diff: line_diff(&recorded, &now),
            });
        }
        let deltas = exchange.response.clone().into_iter();
        let stream = futures::stream::unfold(
            (deltas, cancel, false),
            |(mut deltas, cancel, stopped)| async move {
                if stopped {
                    return None;
                }
                if cancel.is_cancelled() {
                    return Some((Err(ModelError::Cancelled), (deltas, cancel, true)));
                }
                let delta = deltas.next()?;
                Some((Ok(delta), (deltas, cancel, false)))
            },
        );
        Ok(stream.boxed())
    }
}
