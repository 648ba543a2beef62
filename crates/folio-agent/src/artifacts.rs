//! The artifact store (`artifacts.toml` is parsed by folio-project into [`ArtifactsConfig`]):
//! typed records an agent tags during sessions, upserted by `(kind, key)`, validated against
//! their kind's JSON Schema, kept under the state root (`<state-root>/artifacts/<id>.json` plus
//! an optional `<id>.content`, [`DirArtifacts`]) or in a shared session store (any
//! [`ArtifactBackend`]), and evicted least recently updated first past the retention cap.
//! The model tags through `tag_artifact`, which records `artifact.tagged` in the session.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::Utc;
use folio_project::{ArtifactsConfig, InvalidSchema, compile_schema};
use folio_protocol::{ArtifactTagged, EventBody};
use serde_json::{Value, json};

use crate::sink::EventSink;
use crate::tools::TurnTool;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};

/// The kind used when none is given and no `artifacts.toml` exists.
pub const DEFAULT_KIND: &str = "artifact";
/// The model-facing tool name.
pub const TAG_ARTIFACT: &str = "tag_artifact";

pub use folio_protocol::ArtifactRecord;

/// What one tagging says.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TagRequest {
    /// The kind (default `artifact` when no kinds are configured).
    pub kind: Option<String>,
    /// The upsert key.
    pub key: String,
    /// A title.
    pub title: String,
    /// Structured data.
    pub data: Value,
    /// Optional contents (text).
    pub contents: Option<String>,
    /// The contents' MIME type (default `text/plain`).
    pub content_type: Option<String>,
    /// The tagging session.
    pub session_id: Option<String>,
}

/// Why tagging or reading an artifact failed.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// The request breaks a rule (unknown kind, schema violation, empty key); one line naming
    /// the field and the rule (a message about the input: there is no underlying error).
    #[error("{0}")]
    Invalid(String),
    /// A kind's `schema` in `[artifacts]` does not compile.
    #[error("kinds.{kind}.schema: {source}")]
    Schema {
        /// The kind.
        kind: String,
        /// Why its schema is invalid.
        #[source]
        source: InvalidSchema,
    },
    /// The session store the records live in failed (`folio serve --store`).
    #[error("the session store could not keep the artifact: {source}")]
    Store {
        /// The store's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Disk I/O under the store failed.
    #[error("artifact store {path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Where an agent's artifact records live: a directory ([`DirArtifacts`], the default) or a
/// session store that several servers share (`folio serve --store`).
#[async_trait::async_trait]
pub trait ArtifactBackend: Send + Sync {
    /// Stores `record` with `contents` (`None`: it has none) in place of the record of the same
    /// kind and key, whose id and creation time it keeps; then keeps only the `max` most
    /// recently updated records. Returns the record as stored.
    async fn put(
        &self,
        record: ArtifactRecord,
        contents: Option<Vec<u8>>,
        max: usize,
    ) -> Result<ArtifactRecord, ArtifactError>;

    /// Every record, most recently updated first.
    async fn list(&self) -> Result<Vec<ArtifactRecord>, ArtifactError>;

    /// The record `id` (`None`: no such record).
    async fn get(&self, id: &str) -> Result<Option<ArtifactRecord>, ArtifactError>;

    /// The contents of record `id` (`None`: no such record, or it has none).
    async fn content(&self, id: &str) -> Result<Option<Vec<u8>>, ArtifactError>;
}

/// The artifact records of one agent, validated against their kinds and kept by a backend.
#[derive(Clone)]
pub struct ArtifactStore {
    backend: Arc<dyn ArtifactBackend>,
    config: Arc<ArtifactsConfig>,
    validators: Arc<BTreeMap<String, jsonschema::Validator>>,
}

impl std::fmt::Debug for ArtifactStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArtifactStore").finish_non_exhaustive()
    }
}

impl ArtifactStore {
    /// The store in `dir` (usually `<state-root>/artifacts`) for `config`; created on first write.
    pub fn open(dir: impl Into<PathBuf>, config: ArtifactsConfig) -> Result<Self, ArtifactError> {
        Self::with_backend(Arc::new(DirArtifacts::new(dir)), config)
    }

    /// The store kept by `backend` for `config`.
    pub fn with_backend(
        backend: Arc<dyn ArtifactBackend>,
        config: ArtifactsConfig,
    ) -> Result<Self, ArtifactError> {
        let mut validators = BTreeMap::new();
        for (name, kind) in &config.kinds {
            if let Some(schema) = &kind.schema {
                let validator = compile_schema(schema).map_err(|source| ArtifactError::Schema {
                    kind: name.clone(),
                    source,
                })?;
                validators.insert(name.clone(), validator);
            }
        }
        Ok(ArtifactStore {
            backend,
            config: Arc::new(config),
            validators: Arc::new(validators),
        })
    }

    /// The registry the store enforces.
    pub fn config(&self) -> &ArtifactsConfig {
        &self.config
    }

    /// Upserts by `(kind, key)`: validates `data`, writes the record (and contents), then evicts
    /// past the retention cap. Returns the stored record.
    pub async fn tag(&self, request: TagRequest) -> Result<ArtifactRecord, ArtifactError> {
        let kind = match request.kind {
            Some(kind) if !kind.is_empty() => kind,
            _ if self.config.kinds.is_empty() => DEFAULT_KIND.to_string(),
            _ => {
                return Err(ArtifactError::Invalid(format!(
                    "kind: required; one of {}",
                    self.kind_names()
                )));
            }
        };
        if !self.config.kinds.is_empty() && !self.config.kinds.contains_key(&kind) {
            return Err(ArtifactError::Invalid(format!(
                "kind: unknown kind \"{kind}\"; one of {}",
                self.kind_names()
            )));
        }
        if request.key.trim().is_empty() {
            return Err(ArtifactError::Invalid("key: must not be empty".into()));
        }
        if let Some(validator) = self.validators.get(&kind)
            && let Some(error) = validator.iter_errors(&request.data).next()
        {
            let path = error.instance_path().to_string();
            let field = if path.is_empty() {
                "data".to_string()
            } else {
                format!("data{}", path.replace('/', "."))
            };
            return Err(ArtifactError::Invalid(format!(
                "{field}: {error} (schema of kind \"{kind}\")"
            )));
        }
        let now = Utc::now();
        // A new id and creation time, unless the backend keeps those of the same kind and key.
        let record = ArtifactRecord {
            id: format!("art_{}", ulid::Ulid::generate()),
            kind,
            key: request.key,
            title: request.title,
            data: request.data,
            content_type: request.contents.as_ref().map(|_| {
                request
                    .content_type
                    .clone()
                    .unwrap_or_else(|| "text/plain".to_string())
            }),
            session_id: request.session_id,
            created_at: now,
            updated_at: now,
        };
        let contents = request.contents.map(String::into_bytes);
        self.backend.put(record, contents, self.config.max).await
    }

    /// Every record, most recently updated first.
    pub async fn list(&self) -> Result<Vec<ArtifactRecord>, ArtifactError> {
        self.backend.list().await
    }

    /// The record `id`, if any.
    pub async fn get(&self, id: &str) -> Result<Option<ArtifactRecord>, ArtifactError> {
        if !is_artifact_id(id) {
            return Ok(None);
        }
        self.backend.get(id).await
    }

    /// The contents of record `id` with their content type, when it has contents.
    pub async fn content(&self, id: &str) -> Result<Option<(String, Vec<u8>)>, ArtifactError> {
        let Some(record) = self.get(id).await? else {
            return Ok(None);
        };
        let Some(content_type) = record.content_type else {
            return Ok(None);
        };
        Ok(self
            .backend
            .content(id)
            .await?
            .map(|bytes| (content_type, bytes)))
    }

    fn kind_names(&self) -> String {
        self.config
            .kinds
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Artifact records as files: `<dir>/<id>.json` plus an optional `<id>.content`, each written
/// in one step (temporary file, sync, rename); one writer at a time in this process.
pub struct DirArtifacts {
    dir: PathBuf,
    lock: tokio::sync::Mutex<()>,
}

impl DirArtifacts {
    /// The records in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        DirArtifacts {
            dir: dir.into(),
            lock: tokio::sync::Mutex::new(()),
        }
    }

    fn record_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn content_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.content"))
    }

    fn io(&self, path: &Path, source: std::io::Error) -> ArtifactError {
        ArtifactError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    fn read_all(&self) -> Result<Vec<ArtifactRecord>, ArtifactError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(self.io(&self.dir, source)),
        };
        let mut records = Vec::new();
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            match std::fs::read(&path)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<ArtifactRecord>(&bytes).ok())
            {
                Some(record) => records.push(record),
                None => {
                    tracing::warn!(path = %path.display(), "skipping an unreadable artifact record")
                }
            }
        }
        Ok(records)
    }
}

#[async_trait::async_trait]
impl ArtifactBackend for DirArtifacts {
    async fn put(
        &self,
        mut record: ArtifactRecord,
        contents: Option<Vec<u8>>,
        max: usize,
    ) -> Result<ArtifactRecord, ArtifactError> {
        let _guard = self.lock.lock().await;
        let mut records = self.read_all()?;
        if let Some(existing) = records
            .iter()
            .find(|r| r.kind == record.kind && r.key == record.key)
        {
            record.id = existing.id.clone();
            record.created_at = existing.created_at;
        }
        std::fs::create_dir_all(&self.dir).map_err(|source| self.io(&self.dir, source))?;
        let content_path = self.content_path(&record.id);
        match &contents {
            Some(contents) => write_atomic(&content_path, contents)
                .map_err(|source| self.io(&content_path, source))?,
            None => {
                remove_if_present(&content_path).map_err(|source| self.io(&content_path, source))?
            }
        }
        let record_path = self.record_path(&record.id);
        let bytes =
            serde_json::to_vec_pretty(&record).map_err(|err| self.io(&record_path, err.into()))?;
        write_atomic(&record_path, &bytes).map_err(|source| self.io(&record_path, source))?;
        records.retain(|r| r.id != record.id);
        records.push(record.clone());
        if records.len() > max {
            newest_first(&mut records);
            for evicted in records.split_off(max) {
                for path in [
                    self.record_path(&evicted.id),
                    self.content_path(&evicted.id),
                ] {
                    remove_if_present(&path).map_err(|source| self.io(&path, source))?;
                }
            }
        }
        Ok(record)
    }

    async fn list(&self) -> Result<Vec<ArtifactRecord>, ArtifactError> {
        let mut records = self.read_all()?;
        newest_first(&mut records);
        Ok(records)
    }

    async fn get(&self, id: &str) -> Result<Option<ArtifactRecord>, ArtifactError> {
        if !is_artifact_id(id) {
            return Ok(None);
        }
        let path = self.record_path(id);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|err| self.io(&path, err.into())),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(self.io(&path, source)),
        }
    }

    async fn content(&self, id: &str) -> Result<Option<Vec<u8>>, ArtifactError> {
        if !is_artifact_id(id) {
            return Ok(None);
        }
        let path = self.content_path(id);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(self.io(&path, source)),
        }
    }
}

/// Most recently updated first (then the newer id first).
fn newest_first(records: &mut [ArtifactRecord]) {
    records.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(b.id.cmp(&a.id)));
}

fn is_artifact_id(id: &str) -> bool {
    id.strip_prefix("art_")
        .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// Replaces `path` with `bytes` in one step: a reader sees the old file or the new one, and
/// the new one is on disk before it takes the name.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let tmp = path.with_extension(format!("tmp-{}", ulid::Ulid::generate()));
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(tmp, path)
}

fn remove_if_present(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

/// `tag_artifact`: the model tags an artifact of the session; records `artifact.tagged`.
pub struct TagArtifactTool {
    store: ArtifactStore,
    description: String,
}

impl TagArtifactTool {
    /// The tool over `store`.
    pub fn new(store: ArtifactStore) -> Self {
        let kinds: Vec<String> = store
            .config()
            .kinds
            .iter()
            .map(|(name, kind)| match &kind.description {
                Some(description) => format!("{name} ({description})"),
                None => name.clone(),
            })
            .collect();
        let description = format!(
            "Tag an artifact of this session: a record of a kind, upserted by key (tagging the same kind and key again updates it). Kinds: {}.",
            kinds.join("; ")
        );
        TagArtifactTool { store, description }
    }

    /// Tags for the turn and records `artifact.tagged` through `sink`.
    pub async fn tag_in_turn(
        &self,
        input: Value,
        ctx: &ToolContext,
        sink: &dyn EventSink,
        turn_id: &str,
    ) -> Result<ToolOutput, ToolError> {
        let record = self.tag(input, ctx).await?;
        sink.emit(
            Some(turn_id),
            EventBody::ArtifactTagged(ArtifactTagged {
                id: record.id.clone(),
                kind: record.kind.clone(),
                key: record.key.clone(),
                title: record.title.clone(),
            }),
        )
        .await
        .map_err(|err| ToolError(format!("could not record artifact.tagged: {err}")))?;
        Ok(ToolOutput::Json(
            json!({"id": record.id, "kind": record.kind, "key": record.key}),
        ))
    }

    async fn tag(&self, input: Value, ctx: &ToolContext) -> Result<ArtifactRecord, ToolError> {
        let text = |name: &str| input.get(name).and_then(Value::as_str).map(str::to_string);
        let request = TagRequest {
            kind: text("kind"),
            key: text("key").unwrap_or_default(),
            title: text("title").unwrap_or_default(),
            data: input.get("data").cloned().unwrap_or(Value::Null),
            contents: text("contents"),
            content_type: text("contentType"),
            session_id: Some(ctx.session_id.clone()),
        };
        self.store
            .tag(request)
            .await
            .map_err(|err| ToolError(err.to_string()))
    }
}

#[async_trait::async_trait]
impl Tool for TagArtifactTool {
    fn name(&self) -> &str {
        TAG_ARTIFACT
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        let kinds: Vec<&String> = self.store.config().kinds.keys().collect();
        json!({
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": kinds, "description": "The artifact kind"},
                "key": {"type": "string", "description": "Upsert key, unique within the kind"},
                "title": {"type": "string", "description": "A short title"},
                "data": {"description": "Structured data; must match the kind's schema"},
                "contents": {"type": "string", "description": "Optional full contents (text)"},
                "contentType": {"type": "string", "description": "MIME type of contents (default text/plain)"}
            },
            "required": ["kind", "key", "title", "data"],
            "additionalProperties": false
        })
    }

    fn prepare(&self, input: Value) -> Result<Value, ToolError> {
        let Value::Object(mut map) = input else {
            return Err(ToolError("input must be a JSON object".into()));
        };
        if let Some(value) = map.remove("content_type") {
            map.entry("contentType").or_insert(value);
        }
        const KNOWN: &[&str] = &["kind", "key", "title", "data", "contents", "contentType"];
        if let Some(unknown) = map.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(ToolError(format!(
                "unknown argument \"{unknown}\"; valid arguments: {}",
                KNOWN.join(", ")
            )));
        }
        for required in ["kind", "key", "title"] {
            match map.get(required) {
                Some(Value::String(_)) => {}
                Some(_) => return Err(ToolError(format!("{required}: must be a string"))),
                None => {
                    return Err(ToolError(format!(
                        "missing required argument \"{required}\""
                    )));
                }
            }
        }
        if !map.contains_key("data") {
            return Err(ToolError("missing required argument \"data\"".into()));
        }
        for optional in ["contents", "contentType"] {
            if map.get(optional).is_some_and(|v| !v.is_string()) {
                return Err(ToolError(format!("{optional}: must be a string")));
            }
        }
        Ok(Value::Object(map))
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        // Outside a turn (a direct call) there is no session log to record into.
        let record = self.tag(input, ctx).await?;
        Ok(ToolOutput::Json(
            json!({"id": record.id, "kind": record.kind, "key": record.key}),
        ))
    }

    fn turn_tool(&self) -> Option<&dyn TurnTool> {
        Some(self)
    }
}

#[async_trait::async_trait]
impl TurnTool for TagArtifactTool {
    async fn call_in_turn(
        &self,
        input: Value,
        ctx: &ToolContext,
        sink: &dyn EventSink,
        turn_id: &str,
    ) -> Result<ToolOutput, ToolError> {
        self.tag_in_turn(input, ctx, sink, turn_id).await
    }
}
