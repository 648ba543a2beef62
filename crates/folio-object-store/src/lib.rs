//! Object stores as Folio trees: an `s3://`, `gs://`, `az://` (or `file://`) URL becomes a
//! [`FileSystem`] rooted at `/`, through the `object_store` crate.
//!
//! The tree is a [`folio_fs::HostFs`] over [`ObjectStoreFiles`], so it keeps host_fs's
//! contract: directories are implied by the keys under the URL's prefix; `list`/`glob` list by
//! prefix; `grep` fetches and searches one object at a time (streaming, stopping at
//! `max_results`); `search` is empty.
//!
//! **Writes never silently replace a version the writer did not see.** Every write is a
//! conditional put:
//! - after a read or write of a file, the next write is a compare-and-swap on the version seen
//!   then (`If-Match` on S3 and Azure, `x-goog-if-generation-match` on GCS). A writer that did
//!   not see the latest version gets `write failed: <path>: the file changed remotely since it
//!   was last read; read it again before writing`;
//! - a blind write (a file this session never read) creates the file only if none is there
//!   (`If-None-Match: *`; generation 0 on GCS). If one is, the write fails with `write failed:
//!   <path>: the file exists and was not read in this session; read it before writing it`.
//!
//! Decision: the seed's `hostFs` overwrites blindly, and its `Write` tool "creates or
//! overwrites". A bucket is shared by every session and every other program that writes to it,
//! so an object-store mount uses [`BlindWrites::CreateOnly`]: the model reads a file before
//! replacing it, as coding agents' Write tools require, and nothing it never saw is lost. The
//! folio-fs contract suite runs over these trees with that one documented exception (its
//! `write_overwrites` check reads first and checks the refusal of the blind overwrite).
//!
//! What a session has seen is its own: the tree given to a session is a
//! [`FileSystem::session_view`] with its own etag cache, so on one server session A's read
//! never vouches for session B's write. A session whose view was dropped (a server restart,
//! or past the agent's cache of session roots) reads again before it overwrites.
//!
//! `delete` is not conditional (the stores offer no conditional delete through `object_store`):
//! a delete removes whatever version is there.
//!
//! Settings come from the environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_ENDPOINT`, `AWS_REGION`, `GOOGLE_SERVICE_ACCOUNT`, `AZURE_STORAGE_ACCOUNT_NAME`, …)
//! and from `options`, which win; an option the store does not know is an error.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let options = [("endpoint", "http://127.0.0.1:5000"), ("allow_http", "true")];
//! let tree = folio_object_store::object_store_fs("s3://notes/team-a", options)?;
//! tree.write("/plan.md", "ship it\n").await?;
//! # Ok(()) }
//! ```

use std::str::FromStr;
use std::sync::Arc;

use folio_fs::{
    BlindWrites, FileSystem, HostFileMeta, HostFilesApi, HostFilesError, HostFs, PutOutcome,
    READ_BYTE_CAP,
};
use futures::StreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{
    ObjectMeta, ObjectStore, ObjectStoreExt, ObjectStoreScheme, PutMode, PutOptions, PutPayload,
    UpdateVersion,
};

/// Why an object-store tree could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    /// The location is not a URL.
    #[error("\"{url}\" is not a URL ({source}); write it like s3://bucket/prefix")]
    Url {
        /// The location as written.
        url: String,
        /// Why it does not parse.
        source: url::ParseError,
    },
    /// The URL's scheme names no supported store.
    #[error("\"{url}\": unsupported object store; use s3://, gs://, az:// or file://")]
    Scheme {
        /// The location as written.
        url: String,
    },
    /// An option that the store does not have.
    #[error("option \"{key}\" is not a setting of {store} stores (e.g. {example})")]
    UnknownOption {
        /// The option's name.
        key: String,
        /// `S3`, `GCS`, `Azure` or `local`.
        store: &'static str,
        /// Settings it does have.
        example: &'static str,
    },
    /// A writable local store: it cannot compare-and-swap.
    #[error(
        "{url}: a local object store cannot write with compare-and-swap; mount it with read_only = true, or use {{ host = \"dir\" }} for a writable directory"
    )]
    LocalWritable {
        /// The location as written.
        url: String,
    },
    /// The store rejected its configuration (a missing bucket name, bad credentials format…).
    #[error("cannot open \"{url}\": {source}")]
    Open {
        /// The location as written.
        url: String,
        /// The store's error.
        source: object_store::Error,
    },
}

/// Opens the object store at `url` (`s3://bucket/prefix`, `gs://…`, `az://container/…`,
/// `file:///dir`) as a tree rooted at `/` over the keys under the URL's path.
pub fn object_store_fs<I, K, V>(url: &str, options: I) -> Result<Arc<dyn FileSystem>, MountError>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: Into<String>,
{
    let (parsed, scheme) = parse_location(url)?;
    // The environment first (`AWS_REGION` → `aws_region`, …, as the stores' `from_env` read
    // it), then the mount's options, which win.
    let env_prefix = match scheme {
        ObjectStoreScheme::AmazonS3 => "AWS_",
        ObjectStoreScheme::GoogleCloudStorage => "GOOGLE_",
        ObjectStoreScheme::MicrosoftAzure => "AZURE_",
        _ => "",
    };
    let mut settings: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| !env_prefix.is_empty() && name.starts_with(env_prefix))
        .map(|(name, value)| (name.to_ascii_lowercase(), value))
        .filter(|(key, _)| check_option(&scheme, key).is_ok())
        .collect();
    for (key, value) in options {
        check_option(&scheme, key.as_ref())?;
        settings.push((key.as_ref().to_string(), value.into()));
    }
    if scheme == ObjectStoreScheme::AmazonS3
        && !settings
            .iter()
            .any(|(key, _)| key.ends_with("conditional_put"))
    {
        // Compare-and-swap needs S3's If-Match on PUT.
        settings.push(("aws_conditional_put".into(), "etag".into()));
    }
    let (store, prefix) =
        object_store::parse_url_opts(&parsed, settings).map_err(|source| MountError::Open {
            url: url.to_string(),
            source,
        })?;
    Ok(object_store_tree(Arc::from(store), prefix.as_ref()))
}

/// The tree over the keys under `prefix` of an opened `store` (what [`object_store_fs`]
/// returns): writes are conditional puts, and a file must be read before it is overwritten.
pub fn object_store_tree(store: Arc<dyn ObjectStore>, prefix: &str) -> Arc<dyn FileSystem> {
    let files = Arc::new(ObjectStoreFiles::new(store));
    Arc::new(HostFs::new(files, prefix).with_blind_writes(BlindWrites::CreateOnly))
}

/// Checks a mount without opening it: its URL names a supported store, each option key is a
/// setting of that store, and a local (`file:`) store is read-only. `folio validate` reports
/// these; loading the mount checks them again.
pub fn check_mount<'a>(
    url: &str,
    option_keys: impl IntoIterator<Item = &'a str>,
    read_only: bool,
) -> Result<(), MountError> {
    let (_, scheme) = parse_location(url)?;
    for key in option_keys {
        check_option(&scheme, key)?;
    }
    // Decision: a local store has no conditional put, so a writable one could not keep the
    // compare-and-swap promise; `host` mounts are the writable local directories.
    if scheme == ObjectStoreScheme::Local && !read_only {
        return Err(MountError::LocalWritable {
            url: url.to_string(),
        });
    }
    Ok(())
}

/// The URL `url` and the store it names (`s3:`, `gs:`, `az:` and their spellings, `file:`).
fn parse_location(url: &str) -> Result<(url::Url, ObjectStoreScheme), MountError> {
    let parsed = url::Url::parse(url).map_err(|source| MountError::Url {
        url: url.to_string(),
        source,
    })?;
    match ObjectStoreScheme::parse(&parsed) {
        Ok((ObjectStoreScheme::Http | ObjectStoreScheme::Memory, _)) | Err(_) => {
            Err(MountError::Scheme {
                url: url.to_string(),
            })
        }
        Ok((scheme, _)) => Ok((parsed, scheme)),
    }
}

/// Refuses an option the store of `scheme` does not have (the crate would ignore it).
fn check_option(scheme: &ObjectStoreScheme, key: &str) -> Result<(), MountError> {
    let unknown = |store, example| MountError::UnknownOption {
        key: key.to_string(),
        store,
        example,
    };
    match scheme {
        ObjectStoreScheme::AmazonS3 => object_store::aws::AmazonS3ConfigKey::from_str(key)
            .map(drop)
            .map_err(|_| {
                unknown(
                    "S3",
                    "endpoint, region, allow_http, access_key_id, secret_access_key",
                )
            }),
        ObjectStoreScheme::GoogleCloudStorage => object_store::gcp::GoogleConfigKey::from_str(key)
            .map(drop)
            .map_err(|_| unknown("GCS", "service_account, service_account_key")),
        ObjectStoreScheme::MicrosoftAzure => object_store::azure::AzureConfigKey::from_str(key)
            .map(drop)
            .map_err(|_| unknown("Azure", "account_name, access_key, use_emulator")),
        _ => Err(unknown("local", "no options")),
    }
}

/// An `object_store` bucket as the etag-versioned file API behind `host_fs`; keys are object
/// paths in the bucket.
pub struct ObjectStoreFiles {
    store: Arc<dyn ObjectStore>,
}

impl ObjectStoreFiles {
    /// The file API over `store`.
    pub fn new(store: Arc<dyn ObjectStore>) -> Self {
        ObjectStoreFiles { store }
    }

    /// One put of `bytes` at `key` under `mode`; a failed condition is
    /// [`PutOutcome::PreconditionFailed`].
    async fn put_mode(
        &self,
        key: &str,
        bytes: Vec<u8>,
        mode: PutMode,
    ) -> Result<PutOutcome, HostFilesError> {
        let conditional = mode != PutMode::Overwrite;
        let put = self
            .store
            .put_opts(
                &ObjectPath::from(key),
                PutPayload::from(bytes),
                PutOptions::from(mode),
            )
            .await;
        match put {
            Ok(result) => Ok(PutOutcome::Stored {
                etag: version_token(result.e_tag.as_deref(), result.version.as_deref()),
            }),
            // The version changed, the object is gone since it was seen, or (create) one is
            // there already.
            Err(
                object_store::Error::Precondition { .. }
                | object_store::Error::NotFound { .. }
                | object_store::Error::AlreadyExists { .. },
            ) if conditional => Ok(PutOutcome::PreconditionFailed),
            Err(object_store::Error::NotImplemented { .. }) => Err(HostFilesError {
                message: format!(
                    "object store: this store cannot write {key} conditionally (compare-and-swap on the version); use a store with conditional puts (S3, GCS, Azure)"
                ),
            }),
            Err(err) => Err(failure("write", key, err)),
        }
    }
}

fn failure(verb: &str, key: &str, err: object_store::Error) -> HostFilesError {
    HostFilesError {
        message: format!("object store: {verb} {key} failed: {err}"),
    }
}

/// The version token `host_fs` keeps for an object: its etag and, where the store has them,
/// its version (GCS compares generations, not etags), joined by a tab (neither holds one).
fn version_token(e_tag: Option<&str>, version: Option<&str>) -> String {
    match version {
        Some(version) => format!("{}\t{version}", e_tag.unwrap_or_default()),
        None => e_tag.unwrap_or_default().to_string(),
    }
}

/// The etag and version a [`version_token`] names.
fn update_version(token: &str) -> UpdateVersion {
    let (e_tag, version) = match token.split_once('\t') {
        Some((e_tag, version)) => (e_tag, Some(version.to_string())),
        None => (token, None),
    };
    UpdateVersion {
        e_tag: (!e_tag.is_empty()).then(|| e_tag.to_string()),
        version,
    }
}

fn meta_of(meta: ObjectMeta) -> HostFileMeta {
    HostFileMeta {
        key: meta.location.to_string(),
        size: meta.size,
        modified: Some(meta.last_modified.into()),
    }
}

#[async_trait::async_trait]
impl HostFilesApi for ObjectStoreFiles {
    async fn list(&self, prefix: &str) -> Result<Vec<HostFileMeta>, HostFilesError> {
        let prefix = prefix.trim_matches('/');
        let mut found = Vec::new();
        let location = (!prefix.is_empty()).then(|| ObjectPath::from(prefix));
        // A listing covers the keys below the prefix; the object at the prefix itself (a file
        // path asked about) needs its own lookup.
        if let Some(location) = &location {
            match self.store.head(location).await {
                Ok(meta) => found.push(meta_of(meta)),
                Err(object_store::Error::NotFound { .. }) => {}
                Err(err) => return Err(failure("stat", prefix, err)),
            }
        }
        let mut listing = self.store.list(location.as_ref());
        while let Some(meta) = listing.next().await {
            found.push(meta_of(meta.map_err(|err| failure("list", prefix, err))?));
        }
        Ok(found)
    }

    async fn get(&self, key: &str) -> Result<Option<(Vec<u8>, String)>, HostFilesError> {
        let result = match self.store.get(&ObjectPath::from(key)).await {
            Ok(result) => result,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(err) => return Err(failure("read", key, err)),
        };
        if result.meta.size > READ_BYTE_CAP {
            return Err(HostFilesError {
                message: format!(
                    "object store: {key} is {} bytes, over the {READ_BYTE_CAP}-byte read limit",
                    result.meta.size
                ),
            });
        }
        let etag = version_token(result.meta.e_tag.as_deref(), result.meta.version.as_deref());
        let bytes = result
            .bytes()
            .await
            .map_err(|err| failure("read", key, err))?;
        Ok(Some((bytes.to_vec(), etag)))
    }

    async fn put(
        &self,
        key: &str,
        bytes: Vec<u8>,
        if_match: Option<&str>,
    ) -> Result<PutOutcome, HostFilesError> {
        let mode = match if_match {
            Some(token) => PutMode::Update(update_version(token)),
            None => PutMode::Overwrite,
        };
        self.put_mode(key, bytes, mode).await
    }

    async fn create(&self, key: &str, bytes: Vec<u8>) -> Result<PutOutcome, HostFilesError> {
        self.put_mode(key, bytes, PutMode::Create).await
    }

    async fn delete(&self, key: &str) -> Result<bool, HostFilesError> {
        let location = ObjectPath::from(key);
        match self.store.head(&location).await {
            Ok(_) => {}
            Err(object_store::Error::NotFound { .. }) => return Ok(false),
            Err(err) => return Err(failure("delete", key, err)),
        }
        match self.store.delete(&location).await {
            Ok(()) => Ok(true),
            // Gone between the lookup and the delete (Azure answers 404; S3 does not say).
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(err) => Err(failure("delete", key, err)),
        }
    }
}
