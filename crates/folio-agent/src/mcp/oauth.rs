//! OAuth 2.1 for streamable-HTTP MCP connections, on rmcp's auth support.
//!
//! rmcp does the protocol: protected-resource and authorization-server metadata discovery (from
//! the 401's `WWW-Authenticate`, path-based and root), dynamic client registration, Client ID
//! Metadata Documents, PKCE, the RFC 8707 `resource` parameter, scope selection from the
//! challenge or `scopes_supported`, refreshing tokens (before expiry, and once after a 401), and
//! the client-credentials grant (`client_secret_basic` / `_post`, `private_key_jwt`). Folio adds:
//!
//! - [`McpCredentialStore`]: one JSON file per principal and connection under the state root
//!   (`mcp-auth/<principal>/<connection>.json`), mode 0600, written atomically; under `folio
//!   serve --store`, the principals' credentials are rows of the shared store instead
//!   ([`SharedCredentials`]), so a person authorizes once through any server. Tokens never go
//!   into events or logs (rmcp's `Debug` of credentials redacts them; Folio logs none).
//! - [`McpLogin`]: how a person is asked — the authorization URL is printed on stderr (and
//!   opened with `$BROWSER` when set), and the code comes back to a one-route loopback server
//!   (`http://127.0.0.1:<port>/callback`) that takes only the redirect carrying the login's
//!   `state`. `folio run` and `folio mcp login` ask this way.
//! - `Authorizer`: what to do about a server's 401 or 403 challenge — authorize (or run the
//!   client-credentials grant), step up to more scopes on `insufficient_scope`, or give up with
//!   what to do, at most three times per operation.
//! - The 2025-03-26 back-compat rule for authorization-server metadata (see `resolve_metadata`).
//! - [`auth_state`]: a connection's OAuth state for `folio info`, without the token.
//! - Under `folio serve` each session's principal has its own client of an HTTP server, with
//!   its own tokens (`mcp-auth/<principal>/`); when it needs authorization, the tool call parks
//!   on `action.authorization_requested` with the URL, and the redirect comes back to the
//!   server's `GET /v1/mcp-auth/callback` (see `McpTool`). The agent's own client, which lists
//!   the tools when the agent loads, uses the tokens `folio mcp login` stored for `local`.

use std::future::IntoFuture as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use folio_project::{McpJwtAlgorithm, McpOAuthGrant, McpServerConfig, McpTransport};
use folio_protocol::ConnectionAuth;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession, ClientCredentialsConfig, CredentialStore, JwtSigningAlgorithm,
    StoredCredentials, WWWAuthenticateParams,
};

/// How long a person has to complete an authorization in the browser.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);
/// The client name sent in dynamic client registration.
const CLIENT_NAME: &str = "Folio";
/// The principal whose tokens a local command (`run`, `mcp login`, `serve`) uses.
pub const LOCAL_PRINCIPAL: &str = "local";

/// Where an agent's MCP tokens live and whether a person can be asked to authorize.
#[derive(Debug, Clone)]
pub struct McpAuth {
    /// `<state root>/mcp-auth/<principal>`: one credentials file per connection.
    pub dir: PathBuf,
    /// How to ask a person; none: a connection that needs authorization fails with how to log in.
    pub login: Option<McpLogin>,
    /// A store every server of the agent shares, keeping the tokens instead of `dir`, with the
    /// principal they are for (`folio serve --store`).
    pub shared: Option<(Arc<dyn SharedCredentials>, String)>,
}

impl McpAuth {
    /// The credentials file of connection `name` under `dir`.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }

    /// The credentials store of connection `name`.
    pub fn store(&self, name: &str) -> McpCredentialStore {
        let place = match &self.shared {
            Some((store, principal)) => Place::Shared {
                store: store.clone(),
                principal: principal.clone(),
                connection: name.to_string(),
            },
            None => Place::File(self.file(name)),
        };
        McpCredentialStore { place }
    }
}

/// Where the principals' MCP credentials are kept when a store other servers share holds them
/// (`folio serve --store`), as the JSON rmcp stores.
#[async_trait::async_trait]
pub trait SharedCredentials: Send + Sync + std::fmt::Debug {
    /// The credentials of `principal` for `connection` (`None`: none).
    async fn load(
        &self,
        principal: &str,
        connection: &str,
    ) -> Result<Option<serde_json::Value>, SharedCredentialsError>;
    /// Stores them in place of any before.
    async fn save(
        &self,
        principal: &str,
        connection: &str,
        credentials: serde_json::Value,
    ) -> Result<(), SharedCredentialsError>;
    /// Removes them.
    async fn clear(&self, principal: &str, connection: &str) -> Result<(), SharedCredentialsError>;
}

/// Why a [`SharedCredentials`] store could not load, save or clear credentials: the store's
/// own error as the source (a caller downcasts it to the backend's type to tell, say, a
/// connection failure from a conflict), its message as this error's.
#[derive(Debug, thiserror::Error)]
#[error("{source}")]
pub struct SharedCredentialsError {
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl SharedCredentialsError {
    /// Wraps the store's error (or a message).
    pub fn new(
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> SharedCredentialsError {
        SharedCredentialsError {
            source: source.into(),
        }
    }
}

/// Why an OAuth step of an MCP connection failed: a `[oauth]` setting that cannot be used, a
/// refusal of the server's, or a failed authorization, saying what to do. rmcp's, I/O and URL
/// errors are kept as the source (rmcp's boxed: it is large).
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// A `${NAME}` template of a `[oauth]` setting names a variable that is not set.
    #[error("oauth.{field}: {source}")]
    Template {
        field: &'static str,
        #[source]
        source: folio_project::UnsetVariable,
    },
    /// A secret or key file could not be opened or read.
    #[error("oauth.{field}: cannot read {}: {source}", path.display())]
    SecretFile {
        field: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A secret or key file is not a regular file (a device, a directory).
    #[error("oauth.{field}: cannot read {}: not a regular file", path.display())]
    SecretNotAFile { field: &'static str, path: PathBuf },
    /// A secret or key file is larger than [`MAX_SECRET_FILE`].
    #[error(
        "oauth.{field}: cannot read {}: larger than {max} bytes",
        path.display(),
        max = MAX_SECRET_FILE
    )]
    SecretTooLarge { field: &'static str, path: PathBuf },
    /// `grant = "client_credentials"` without a secret or a key.
    #[error("oauth: grant = \"client_credentials\" needs a client secret or a private key")]
    NoMachineCredential,
    /// `grant = "client_credentials"` without a client id.
    #[error("oauth.client_id: grant = \"client_credentials\" needs the client id")]
    NoClientId,
    /// The connection's `url` template names a variable that is not set.
    #[error("url: {source}")]
    UrlTemplate {
        #[source]
        source: folio_project::UnsetVariable,
    },
    /// The server's URL does not parse.
    #[error("{url}: {source}")]
    Url {
        url: String,
        #[source]
        source: url::ParseError,
    },
    /// Only a principal's client of a streamable-HTTP server is authorized from a turn.
    #[error("MCP server \"{server}\" cannot be authorized from a turn here")]
    NotFromATurn { server: String },
    /// Authorization from a turn is for streamable-HTTP servers.
    #[error("MCP server \"{server}\" is not a streamable-HTTP server")]
    NotHttp { server: String },
    /// rmcp could not set up OAuth for the server.
    #[error("cannot set up OAuth for {url}: {source}")]
    Setup {
        url: String,
        #[source]
        source: Box<AuthError>,
    },
    /// The authorization server's metadata could not be found or was refused.
    #[error("cannot discover the OAuth metadata of {url}: {source}")]
    Discovery {
        url: String,
        #[source]
        source: Box<AuthError>,
    },
    /// The stored credentials could not be read or used: log in again.
    #[error("cannot use the stored MCP credentials: {source}")]
    StoredCredentials {
        #[source]
        source: Box<AuthError>,
    },
    /// The server still refuses after [`MAX_AUTHORIZATIONS`] authorizations.
    #[error(
        "{url} still refuses after {max} authorizations ({refusal}); check the server's OAuth setup",
        max = MAX_AUTHORIZATIONS
    )]
    StillRefused { url: String, refusal: String },
    /// A `403 insufficient_scope` asking for scopes the token was granted.
    #[error(
        "{url} refuses the token for lack of scope \"{required}\", which it was granted ({refusal}); check the server's OAuth setup"
    )]
    ScopeGrantedYetRefused {
        url: String,
        required: String,
        refusal: String,
    },
    /// A step-up to more scopes that needs a person, and none can be asked here.
    #[error(
        "{url} needs the scopes \"{}\" too: add them to `scopes` in the connection's [oauth] and run `folio mcp login {server} --dir <project>` again",
        .missing.join(" ")
    )]
    MissingScopes {
        url: String,
        server: String,
        missing: Vec<String>,
    },
    /// The server refused a token it had just issued.
    #[error("{url} refused the token it just issued: {refusal}; check the server's OAuth setup")]
    FreshTokenRefused { url: String, refusal: String },
    /// An authorization that needs a person, and none can be asked here.
    #[error(
        "{url} needs OAuth authorization: run `folio mcp login {server} --dir <project>` and try again"
    )]
    NeedsLogin { url: String, server: String },
    /// The loopback redirect listener could not be bound.
    #[error("cannot listen for the OAuth redirect on 127.0.0.1: {source}")]
    Listen {
        #[source]
        source: std::io::Error,
    },
    /// The loopback redirect listener's port could not be read.
    #[error("cannot listen for the OAuth redirect: {source}")]
    ListenAddress {
        #[source]
        source: std::io::Error,
    },
    /// No redirect arrived within [`LOGIN_TIMEOUT`].
    #[error(
        "no authorization arrived within {}s; run the command again and open the URL it prints",
        LOGIN_TIMEOUT.as_secs()
    )]
    LoginTimedOut,
    /// The loopback redirect listener stopped before the redirect arrived.
    #[error("the OAuth redirect listener stopped")]
    ListenerStopped,
    /// The loopback redirect listener failed.
    #[error("the OAuth redirect listener failed: {source}")]
    ListenerFailed {
        #[source]
        source: std::io::Error,
    },
    /// The authorization-code flow failed (discovery, registration, or the code exchange).
    #[error("authorization failed: {source}")]
    Authorization {
        #[source]
        source: Box<AuthError>,
    },
    /// The client-credentials grant failed.
    #[error("the client-credentials grant failed: {source}")]
    ClientCredentials {
        #[source]
        source: Box<AuthError>,
    },
    /// The thread running the client-credentials grant panicked or was cancelled.
    #[error("the client-credentials grant failed: {source}")]
    ClientCredentialsTask {
        #[source]
        source: tokio::task::JoinError,
    },
}

/// How a person is asked to authorize: the URL is printed, and opened with `browser` when set.
#[derive(Debug, Clone, Default)]
pub struct McpLogin {
    /// A command that opens a URL (given as its last argument), e.g. `$BROWSER`.
    pub browser: Option<String>,
}

impl McpLogin {
    /// Asking a person through the process's `$BROWSER` (when set) and stderr.
    pub fn from_env() -> McpLogin {
        McpLogin {
            browser: std::env::var("BROWSER")
                .ok()
                .filter(|b| !b.trim().is_empty()),
        }
    }
}

/// OAuth credentials of one connection: in a file (mode 0600, replaced atomically), or in a
/// store other servers share.
#[derive(Debug, Clone)]
pub struct McpCredentialStore {
    place: Place,
}

#[derive(Debug, Clone)]
enum Place {
    File(PathBuf),
    Shared {
        store: Arc<dyn SharedCredentials>,
        principal: String,
        connection: String,
    },
}

impl McpCredentialStore {
    /// The credentials in the file `path`.
    pub fn file(path: PathBuf) -> McpCredentialStore {
        McpCredentialStore {
            place: Place::File(path),
        }
    }

    /// Whether credentials are stored.
    pub(crate) async fn exists(&self) -> bool {
        match &self.place {
            Place::File(path) => tokio::fs::try_exists(path).await.unwrap_or(false),
            Place::Shared { .. } => matches!(self.load_json().await, Ok(Some(_))),
        }
    }

    /// The stored credentials as JSON (`None`: none).
    pub async fn load_json(&self) -> Result<Option<serde_json::Value>, AuthError> {
        let path = match &self.place {
            Place::File(path) => path,
            Place::Shared {
                store,
                principal,
                connection,
            } => {
                return store
                    .load(principal, connection)
                    .await
                    .map_err(|err| shared_error("read", connection, err));
            }
        };
        match tokio::fs::read(path).await {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|err| corrupt(path, err)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(store_error("read", path, err)),
        }
    }

    /// Stores `credentials` (JSON) in place of any before.
    pub async fn save_json(&self, credentials: serde_json::Value) -> Result<(), AuthError> {
        let path = match &self.place {
            Place::File(path) => path,
            Place::Shared {
                store,
                principal,
                connection,
            } => {
                return store
                    .save(principal, connection, credentials)
                    .await
                    .map_err(|err| shared_error("store", connection, err));
            }
        };
        let bytes = serde_json::to_vec(&credentials)
            .map_err(|err| store_error("encode the credentials for", path, err))?;
        let target = path.clone();
        tokio::task::spawn_blocking(move || write_private(&target, &bytes))
            .await
            .map_err(|err| store_error("write", path, err))?
            .map_err(|err| store_error("write", path, err))
    }

    /// Removes the stored credentials (none: nothing to do).
    pub async fn remove(&self) -> Result<(), AuthError> {
        let path = match &self.place {
            Place::File(path) => path,
            Place::Shared {
                store,
                principal,
                connection,
            } => {
                return store
                    .clear(principal, connection)
                    .await
                    .map_err(|err| shared_error("remove", connection, err));
            }
        };
        match tokio::fs::remove_file(path).await {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                Err(store_error("remove", path, err))
            }
            _ => Ok(()),
        }
    }

    /// Where the credentials are, for messages.
    fn place_name(&self) -> String {
        match &self.place {
            Place::File(path) => path.display().to_string(),
            Place::Shared { connection, .. } => format!("the session store ({connection})"),
        }
    }
}

fn store_error(what: &str, path: &Path, err: impl std::fmt::Display) -> AuthError {
    AuthError::InternalError(format!("cannot {what} {}: {err}", path.display()))
}

fn corrupt(path: &Path, err: impl std::fmt::Display) -> AuthError {
    store_error(
        "read the MCP credentials (delete the file and log in again)",
        path,
        err,
    )
}

fn shared_error(what: &str, connection: &str, err: impl std::fmt::Display) -> AuthError {
    AuthError::InternalError(format!(
        "cannot {what} the MCP credentials of {connection} in the session store: {err}"
    ))
}

#[async_trait::async_trait]
impl CredentialStore for McpCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(json) = self.load_json().await? else {
            return Ok(None);
        };
        serde_json::from_value(json).map(Some).map_err(|err| {
            AuthError::InternalError(format!(
                "cannot read the MCP credentials in {} (delete them and log in again): {err}",
                self.place_name()
            ))
        })
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let json = serde_json::to_value(&credentials).map_err(|err| {
            AuthError::InternalError(format!("cannot encode the MCP credentials: {err}"))
        })?;
        self.save_json(json).await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.remove().await
    }
}

/// Writes `bytes` to `path` readable by the owner only: a 0600 temporary file renamed over it.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    if let Some(parent) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
    }
    let tmp = path.with_extension(format!("tmp-{}", ulid::Ulid::generate()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// The largest secret or key file Folio reads (a PEM key is a few KiB).
const MAX_SECRET_FILE: u64 = 64 * 1024;

/// How the client proves itself in a client-credentials grant.
#[derive(Clone)]
enum MachineCredential {
    /// `client_secret_basic` / `client_secret_post`, as the authorization server says.
    Secret(String),
    /// `private_key_jwt`: a PEM key signing an RFC 7523 client assertion.
    Key {
        pem: Vec<u8>,
        algorithm: JwtSigningAlgorithm,
    },
}

/// The manifest's `[oauth]` client identity with its templates and files resolved. It holds
/// secrets, so it has no `Debug`.
#[derive(Clone, Default)]
pub(crate) struct ClientIdentity {
    client_id: Option<String>,
    client_secret: Option<String>,
    client_metadata_url: Option<String>,
    pub(crate) scopes: Vec<String>,
    /// Set for `grant = "client_credentials"`: Folio authenticates as the client itself.
    machine: Option<MachineCredential>,
}

impl ClientIdentity {
    /// Resolves `oauth` (none: dynamic registration) against `env`, reading secret and key
    /// files relative to `manifest_dir`.
    pub(crate) fn resolve(
        oauth: Option<&folio_project::McpOAuth>,
        env: &dyn Fn(&str) -> Option<String>,
        manifest_dir: &Path,
    ) -> Result<ClientIdentity, OAuthError> {
        let Some(oauth) = oauth else {
            return Ok(ClientIdentity::default());
        };
        let expand = |field: &'static str, value: &Option<String>| {
            value
                .as_deref()
                .map(|value| {
                    folio_project::expand_template(value, env)
                        .map_err(|source| OAuthError::Template { field, source })
                })
                .transpose()
        };
        let file = |field: &'static str, value: &Option<String>| {
            value
                .as_deref()
                .map(|path| read_secret_file(&manifest_dir.join(path), field))
                .transpose()
        };
        let secret = match expand("client_secret", &oauth.client_secret)? {
            Some(secret) => Some(secret),
            None => file("client_secret_file", &oauth.client_secret_file)?
                .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_string()),
        };
        let key = match expand("private_key", &oauth.private_key)? {
            Some(pem) => Some(pem.into_bytes()),
            None => file("private_key_file", &oauth.private_key_file)?,
        };
        let machine = match oauth.grant {
            McpOAuthGrant::AuthorizationCode => None,
            McpOAuthGrant::ClientCredentials => match (key, &secret) {
                (Some(pem), _) => Some(MachineCredential::Key {
                    pem,
                    algorithm: jwt_algorithm(oauth.signing_algorithm),
                }),
                (None, Some(secret)) => Some(MachineCredential::Secret(secret.clone())),
                (None, None) => return Err(OAuthError::NoMachineCredential),
            },
        };
        Ok(ClientIdentity {
            client_id: expand("client_id", &oauth.client_id)?,
            client_secret: secret,
            client_metadata_url: oauth.client_metadata_url.clone(),
            scopes: oauth.scopes.clone(),
            machine,
        })
    }
}

/// rmcp's name for a manifest's `signing_algorithm` (default RS256).
fn jwt_algorithm(algorithm: Option<McpJwtAlgorithm>) -> JwtSigningAlgorithm {
    match algorithm.unwrap_or(McpJwtAlgorithm::RS256) {
        McpJwtAlgorithm::RS256 => JwtSigningAlgorithm::RS256,
        McpJwtAlgorithm::RS384 => JwtSigningAlgorithm::RS384,
        McpJwtAlgorithm::RS512 => JwtSigningAlgorithm::RS512,
        McpJwtAlgorithm::ES256 => JwtSigningAlgorithm::ES256,
        McpJwtAlgorithm::ES384 => JwtSigningAlgorithm::ES384,
    }
}

/// The bytes of a secret or key file: a regular file (a symlink to one is fine) of at most
/// [`MAX_SECRET_FILE`] bytes. Errors name the file, never its content.
fn read_secret_file(path: &Path, field: &'static str) -> Result<Vec<u8>, OAuthError> {
    use std::io::Read as _;
    let cannot = |source: std::io::Error| OAuthError::SecretFile {
        field,
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(cannot)?;
    let metadata = file.metadata().map_err(cannot)?;
    if !metadata.is_file() {
        return Err(OAuthError::SecretNotAFile {
            field,
            path: path.to_path_buf(),
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_SECRET_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_SECRET_FILE {
        return Err(OAuthError::SecretTooLarge {
            field,
            path: path.to_path_buf(),
        });
    }
    Ok(bytes)
}

/// The authorization server's metadata for the MCP server at `url`, after its `challenge` when
/// there was one: rmcp's discovery (protected-resource metadata, then the authorization-server
/// metadata of the server's URL), with the 2025-03-26 back-compat rule done here.
///
/// Under the 2025-03-26 specification a server publishes no protected-resource metadata, and
/// its authorization server's metadata sits at `/.well-known/oauth-authorization-server` of
/// the MCP server's origin (the "authorization base URL": the server URL without its path).
/// The client has no issuer identifier to check that document against, and such servers name
/// an issuer with a path (e.g. `https://mcp.example.com/oauth`), which RFC 8414's check
/// against the discovery URL refuses. So when rmcp refuses the issuer found there, and the
/// server publishes no protected-resource metadata (the challenge names none and neither
/// well-known location answers), Folio reads that document itself and accepts its issuer
/// when it is on the MCP server's own origin — the only server 2025-03-26 lets a client
/// trust. Any other refusal (a protected resource naming a mismatched authorization server,
/// an issuer on another origin) stands.
async fn resolve_metadata(
    manager: &AuthorizationManager,
    url: &str,
    challenge: Option<&str>,
) -> Result<AuthorizationMetadata, AuthError> {
    match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) => Ok(resolution.metadata),
        Err(refusal @ AuthError::AuthorizationServerMismatch { .. }) => {
            match legacy_metadata(url, challenge).await {
                Some(metadata) => Ok(metadata),
                None => Err(refusal),
            }
        }
        Err(err) => Err(err),
    }
}

/// The 2025-03-26 authorization-server metadata of the MCP server at `url` (see
/// [`resolve_metadata`]), when the server is a 2025-03-26 one and the document names an issuer
/// on its origin (or none).
async fn legacy_metadata(url: &str, challenge: Option<&str>) -> Option<AuthorizationMetadata> {
    let server = reqwest::Url::parse(url).ok()?;
    if challenge.is_some_and(|challenge| {
        WWWAuthenticateParams::parse(challenge, &server)
            .resource_metadata_url
            .is_some()
    }) {
        return None;
    }
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .ok()?;
    let at = |path: &str| {
        let mut candidate = server.clone();
        candidate.set_query(None);
        candidate.set_fragment(None);
        candidate.set_path(path);
        candidate
    };
    let resource_path = server.path().trim_end_matches('/');
    for candidate in [
        at(&format!(
            "/.well-known/oauth-protected-resource{resource_path}"
        )),
        at("/.well-known/oauth-protected-resource"),
    ] {
        match http.get(candidate).send().await {
            Ok(response) if response.status().is_success() => return None,
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    let response = http
        .get(at("/.well-known/oauth-authorization-server"))
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let metadata: AuthorizationMetadata = response.json().await.ok()?;
    let same_origin = |endpoint: &str| {
        reqwest::Url::parse(endpoint).is_ok_and(|endpoint| endpoint.origin() == server.origin())
    };
    metadata
        .issuer
        .as_deref()
        .is_none_or(same_origin)
        .then_some(metadata)
}

/// An authorization manager for `url` holding the stored credentials, if any.
pub(crate) async fn manager(
    url: &str,
    store: &McpCredentialStore,
) -> Result<AuthorizationManager, OAuthError> {
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|source| OAuthError::Setup {
            url: url.to_string(),
            source: Box::new(source),
        })?;
    manager.set_credential_store(store.clone());
    if store.exists().await {
        let metadata = resolve_metadata(&manager, url, None)
            .await
            .map_err(|source| OAuthError::Discovery {
                url: url.to_string(),
                source: Box::new(source),
            })?;
        manager.set_metadata(metadata);
        manager
            .initialize_from_store()
            .await
            .map_err(|source| OAuthError::StoredCredentials {
                source: Box::new(source),
            })?;
    }
    Ok(manager)
}

/// Answers a server's OAuth challenges during one operation (opening a connection, or one
/// tool call): runs the authorization (or the client-credentials grant) a `401` asks for, and
/// re-authorizes with the union of the granted and the required scopes when a `403
/// insufficient_scope` asks for scopes the token lacks ("step-up"). It gives up — with what
/// to do — when a person would be needed and none can be asked, when the server refuses a
/// token just issued, when it asks for scopes already granted, or after
/// [`MAX_AUTHORIZATIONS`].
pub(crate) struct Authorizer {
    server: String,
    url: String,
    store: McpCredentialStore,
    login: Option<McpLogin>,
    identity: ClientIdentity,
    authorizations: u32,
}

/// The most authorizations one operation runs: the first, and step-ups.
pub(crate) const MAX_AUTHORIZATIONS: u32 = 3;

impl Authorizer {
    /// An authorizer for connection `server` at `url`, storing tokens in `auth`'s store.
    pub(crate) fn new(server: &str, url: &str, auth: &McpAuth, identity: ClientIdentity) -> Self {
        Authorizer {
            server: server.to_string(),
            url: url.to_string(),
            store: auth.store(server),
            login: auth.login.clone(),
            identity,
            authorizations: 0,
        }
    }

    /// Whether answering a challenge needs a person and none can be asked here (no login, no
    /// machine identity): under `folio serve` the turn then parks on the authorization.
    pub(crate) fn needs_person(&self) -> bool {
        self.identity.machine.is_none() && self.login.is_none()
    }

    /// Obtains a token answering `challenge` (the `WWW-Authenticate` of a 401 or 403); `Err`
    /// says why not and what to do.
    pub(crate) async fn answer(&mut self, challenge: &str) -> Result<(), OAuthError> {
        let url = &self.url;
        let base = reqwest::Url::parse(url).map_err(|source| OAuthError::Url {
            url: url.clone(),
            source,
        })?;
        let params = WWWAuthenticateParams::parse(challenge, &base);
        let refusal = match (&params.error, &params.error_description) {
            (Some(error), Some(description)) => format!("{error}: {description}"),
            (Some(error), None) => error.clone(),
            (None, _) => format!("WWW-Authenticate: {challenge}"),
        };
        if self.authorizations >= MAX_AUTHORIZATIONS {
            return Err(OAuthError::StillRefused {
                url: url.clone(),
                refusal,
            });
        }
        let scopes = if params.is_insufficient_scope() {
            let granted = self
                .store
                .load()
                .await
                .ok()
                .flatten()
                .map(|stored| stored.granted_scopes)
                .unwrap_or_default();
            let required = params.scope.as_deref().unwrap_or_default();
            let missing: Vec<&str> = required
                .split_whitespace()
                .filter(|scope| !granted.iter().any(|granted| granted == scope))
                .collect();
            if missing.is_empty() {
                return Err(OAuthError::ScopeGrantedYetRefused {
                    url: url.clone(),
                    required: required.to_string(),
                    refusal,
                });
            }
            if self.identity.machine.is_none() && self.login.is_none() {
                return Err(OAuthError::MissingScopes {
                    url: url.clone(),
                    server: self.server.clone(),
                    missing: missing.into_iter().map(str::to_string).collect(),
                });
            }
            union(&granted, required, &self.identity.scopes)
        } else {
            if self.authorizations > 0 {
                return Err(OAuthError::FreshTokenRefused {
                    url: url.clone(),
                    refusal,
                });
            }
            self.identity.scopes.clone()
        };
        self.grant_or_authorize(challenge, scopes).await
    }

    /// Runs the client-credentials grant (a machine identity) or asks a person.
    async fn grant_or_authorize(
        &mut self,
        challenge: &str,
        scopes: Vec<String>,
    ) -> Result<(), OAuthError> {
        let (server, url, store) = (&self.server, &self.url, &self.store);
        match (&self.identity.machine, &self.login) {
            (Some(machine), _) => {
                client_credentials(url, challenge, store, &self.identity, machine, scopes).await?;
            }
            (None, Some(login)) => {
                authorize(server, url, challenge, store, login, &self.identity, scopes).await?;
            }
            (None, None) => {
                return Err(OAuthError::NeedsLogin {
                    url: url.clone(),
                    server: server.clone(),
                });
            }
        }
        self.authorizations += 1;
        Ok(())
    }
}

/// `granted`, then the scopes of `required` (space-separated), then `configured`, each once.
fn union(granted: &[String], required: &str, configured: &[String]) -> Vec<String> {
    let mut scopes: Vec<String> = Vec::new();
    for scope in granted
        .iter()
        .map(String::as_str)
        .chain(required.split_whitespace())
        .chain(configured.iter().map(String::as_str))
    {
        if !scopes.iter().any(|known| known == scope) {
            scopes.push(scope.to_string());
        }
    }
    scopes
}

/// Runs the authorization-code flow for `url` after its `challenge`: registers Folio (or uses
/// the configured client), shows the authorization URL to a person, receives the code on a
/// loopback redirect and stores the tokens. `scopes` empty: rmcp chooses (the challenge's,
/// else `scopes_supported`).
async fn authorize(
    server: &str,
    url: &str,
    challenge: &str,
    store: &McpCredentialStore,
    login: &McpLogin,
    client: &ClientIdentity,
    scopes: Vec<String>,
) -> Result<(), OAuthError> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|source| OAuthError::Listen { source })?;
    let port = listener
        .local_addr()
        .map_err(|source| OAuthError::ListenAddress { source })?
        .port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let session = begin(url, challenge, store, client, scopes, &redirect_uri).await?;
    let auth_url = session.get_authorization_url().to_string();
    eprintln!("MCP server \"{server}\" needs authorization: open {auth_url}");
    if let Some(browser) = &login.browser {
        open(browser, &auth_url);
    }
    let state = query_param(&auth_url, "state");
    let callback = tokio::time::timeout(LOGIN_TIMEOUT, receive(listener, port, state))
        .await
        .map_err(|_| OAuthError::LoginTimedOut)??;
    session
        .handle_callback_url(&callback)
        .await
        .map_err(|source| OAuthError::Authorization {
            source: Box::new(source),
        })?;
    Ok(())
}

/// Runs the client-credentials grant (RFC 6749 §4.4; SEP-1046) for `url` after its
/// `challenge`: Folio authenticates as the configured client — with its secret
/// (`client_secret_basic`, or `client_secret_post` when the server allows it) or an RFC 7523
/// JWT assertion signed with its key (`private_key_jwt`) — and stores the token. The RFC 8707
/// `resource` is the server's URL; `scopes` empty: the challenge's, else the resource's or the
/// authorization server's `scopes_supported`.
async fn client_credentials(
    url: &str,
    challenge: &str,
    store: &McpCredentialStore,
    client: &ClientIdentity,
    machine: &MachineCredential,
    scopes: Vec<String>,
) -> Result<(), OAuthError> {
    let failed = |source: AuthError| OAuthError::ClientCredentials {
        source: Box::new(source),
    };
    let mut manager = AuthorizationManager::new(url).await.map_err(failed)?;
    manager.set_credential_store(store.clone());
    let metadata = resolve_metadata(&manager, url, Some(challenge))
        .await
        .map_err(failed)?;
    manager.set_metadata(metadata);
    let scopes = if scopes.is_empty() {
        manager.select_scopes(None, &[])
    } else {
        scopes
    };
    let client_id = client.client_id.clone().ok_or(OAuthError::NoClientId)?;
    let resource = Some(url.to_string());
    let config = match machine {
        MachineCredential::Secret(secret) => ClientCredentialsConfig::ClientSecret {
            client_id,
            client_secret: secret.clone(),
            scopes,
            resource,
        },
        MachineCredential::Key { pem, algorithm } => ClientCredentialsConfig::PrivateKeyJwt {
            client_id,
            signing_key: pem.clone(),
            signing_algorithm: *algorithm,
            token_endpoint_audience: None,
            scopes,
            resource,
        },
    };
    manager
        .validate_client_credentials_metadata(&config)
        .map_err(failed)?;
    manager
        .configure_client_credentials(&config)
        .map_err(failed)?;
    // rmcp's exchange future is not `Send` (it holds a form serializer across an await), so
    // it runs on a blocking thread, driven there by this runtime's handle.
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        runtime
            .block_on(async move { manager.exchange_client_credentials(&config).await.map(drop) })
    })
    .await
    .map_err(|source| OAuthError::ClientCredentialsTask { source })?
    .map_err(failed)
}

/// Starts an authorization-code flow for `url` after its `challenge`, redirecting to
/// `redirect_uri`: discovers the authorization server, registers Folio (or uses the configured
/// client) and builds the authorization URL; the session's callback stores the tokens in `store`.
/// `authorize` (a loopback redirect) and a turn parked under `folio serve` (the server's
/// callback route) both start here.
pub(crate) async fn begin(
    url: &str,
    challenge: &str,
    store: &McpCredentialStore,
    client: &ClientIdentity,
    scopes: Vec<String>,
    redirect_uri: &str,
) -> Result<AuthorizationSession, OAuthError> {
    let failed = |source: AuthError| OAuthError::Authorization {
        source: Box::new(source),
    };
    let mut manager = AuthorizationManager::new(url).await.map_err(failed)?;
    manager.set_credential_store(store.clone());
    let metadata = resolve_metadata(&manager, url, Some(challenge))
        .await
        .map_err(failed)?;
    manager.set_metadata(metadata);
    let mut request = AuthorizationRequest::new(redirect_uri)
        .with_client_name(CLIENT_NAME)
        .with_challenge(challenge)
        .with_scopes(scopes);
    if let Some(id) = &client.client_id {
        request = request.with_preregistered_client(id);
    }
    if let Some(secret) = &client.client_secret {
        request = request.with_client_secret(secret);
    }
    if let Some(metadata_url) = &client.client_metadata_url {
        request = request.with_client_metadata_url(metadata_url);
    }
    AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, err)| failed(err))
}

/// Opens `url` with the `browser` command (its words, then the URL) without waiting for it
/// (the redirect it follows comes back to us); a failure is only reported, since the URL is
/// printed too.
fn open(browser: &str, url: &str) {
    let mut words = browser.split_whitespace();
    let Some(program) = words.next() else { return };
    let spawned = tokio::process::Command::new(program)
        .args(words)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(false)
        .spawn();
    match spawned {
        Ok(mut child) => {
            tokio::spawn(async move { child.wait().await });
        }
        Err(err) => eprintln!("cannot open the browser ({browser}): {err}; open the URL by hand"),
    }
}

/// The value of query parameter `name` in `url`, if any.
pub(crate) fn query_param(url: &str, name: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    url.query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

/// Whether a request to `/callback` with query `query` is this login's redirect: it carries
/// the authorization request's `state` (when it had one), exactly once.
fn is_the_callback(query: Option<&str>, state: Option<&str>) -> bool {
    let Some(state) = state else { return true };
    let Ok(mut url) = reqwest::Url::parse("http://127.0.0.1/callback") else {
        return false;
    };
    url.set_query(query);
    let mut states = url.query_pairs().filter(|(key, _)| key == "state");
    matches!((states.next(), states.next()), (Some((_, value)), None) if value == state)
}

/// The loopback redirect server's state: the login's `state`, and where the callback goes.
#[derive(Clone)]
struct Callback {
    port: u16,
    state: Option<Arc<str>>,
    arrived: Arc<std::sync::Mutex<Option<tokio::sync::oneshot::Sender<String>>>>,
}

/// `GET /callback`: the authorization server's redirect. Only the one carrying this login's
/// `state` is taken (200); anything else — a web page on this machine guessing the port, a
/// stale tab, a second delivery — gets 404 and the wait goes on.
async fn callback(
    axum::extract::State(callback): axum::extract::State<Callback>,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> (axum::http::StatusCode, &'static str) {
    let not_it = (
        axum::http::StatusCode::NOT_FOUND,
        "Not the OAuth callback of this login (wrong path or state).\n",
    );
    if !is_the_callback(query.as_deref(), callback.state.as_deref()) {
        return not_it;
    }
    let waiting = callback
        .arrived
        .lock()
        .ok()
        .and_then(|mut arrived| arrived.take());
    let Some(waiting) = waiting else {
        return not_it;
    };
    let _ = waiting.send(format!(
        "http://127.0.0.1:{}/callback?{}",
        callback.port,
        query.unwrap_or_default()
    ));
    (
        axum::http::StatusCode::OK,
        "Folio is authorized; you can close this tab.\n",
    )
}

/// Serves the loopback redirect (one route, `GET /callback`) on `listener` until the callback
/// carrying the authorization request's `state` arrives, and returns its full URL.
async fn receive(
    listener: tokio::net::TcpListener,
    port: u16,
    state: Option<String>,
) -> Result<String, OAuthError> {
    let (arrived, wait) = tokio::sync::oneshot::channel();
    let app = axum::Router::new()
        .route("/callback", axum::routing::get(callback))
        .with_state(Callback {
            port,
            state: state.map(Arc::from),
            arrived: Arc::new(std::sync::Mutex::new(Some(arrived))),
        });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    // Aborted if the login gives up first (its timeout drops this future).
    let mut server = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .into_future(),
    ));
    let outcome = tokio::select! {
        url = wait => url.map_err(|_| OAuthError::ListenerStopped),
        served = &mut server => Err(match served {
            Ok(Err(source)) => OAuthError::ListenerFailed { source },
            _ => OAuthError::ListenerStopped,
        }),
    };
    // Let it finish answering the browser, then stop.
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(2), &mut server).await;
    outcome
}

/// Where connection `config` stands with OAuth for the principal whose tokens are under
/// `auth_dir` (`folio info`), from its manifest and stored credentials; `None` for a
/// connection that is not over HTTP. It reads the stored token's expiry, scopes and whether it
/// can be refreshed, never the token itself.
pub async fn auth_state(config: &McpServerConfig, auth_dir: &Path) -> Option<ConnectionAuth> {
    let http = matches!(
        config.transport,
        McpTransport::Http { .. } | McpTransport::Peer { url: Some(_), .. }
    );
    if !http {
        return None;
    }
    Some(stored_auth_state(config, auth_dir).await)
}

/// [`auth_state`] of an HTTP connection.
async fn stored_auth_state(config: &McpServerConfig, auth_dir: &Path) -> ConnectionAuth {
    let machine = config
        .oauth
        .as_ref()
        .is_some_and(|oauth| oauth.grant == McpOAuthGrant::ClientCredentials);
    let store = McpCredentialStore::file(auth_dir.join(format!("{}.json", config.name)));
    let stored = match store.load().await {
        Ok(stored) => stored,
        Err(err) => {
            return ConnectionAuth::NeedsLogin {
                reason: err.to_string(),
            };
        }
    };
    let token = stored.as_ref().and_then(|stored| {
        stored
            .token_response
            .as_ref()
            .and_then(|token| serde_json::to_value(token).ok())
    });
    let (Some(stored), Some(token)) = (stored, token) else {
        return if machine {
            ConnectionAuth::ClientCredentials
        } else if config.oauth.is_some() {
            ConnectionAuth::NeedsLogin {
                reason: format!(
                    "no token stored: run `folio mcp login {} --dir <project>`",
                    config.name
                ),
            }
        } else {
            ConnectionAuth::None
        };
    };
    let expires_at = stored
        .token_received_at
        .zip(token.get("expires_in").and_then(serde_json::Value::as_u64))
        .and_then(|(received, lifetime)| {
            let at = i64::try_from(received.checked_add(lifetime)?).ok()?;
            chrono::DateTime::from_timestamp(at, 0)
        });
    let expired = expires_at.is_some_and(|at| at <= chrono::Utc::now());
    let refreshable = machine || token.get("refresh_token").is_some_and(|t| !t.is_null());
    match expires_at {
        Some(at) if expired && !refreshable => ConnectionAuth::NeedsLogin {
            reason: format!(
                "the stored token expired at {} and cannot be refreshed: run `folio mcp login {} --dir <project>`",
                at.to_rfc3339(),
                config.name
            ),
        },
        _ => ConnectionAuth::TokenStored {
            expires_at,
            expired,
            scopes: stored.granted_scopes,
            refreshable,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    async fn get(port: u16, target: &str) -> reqwest::StatusCode {
        reqwest::get(format!("http://127.0.0.1:{port}{target}"))
            .await
            .unwrap()
            .status()
    }

    #[tokio::test]
    async fn only_the_callback_with_the_logins_state_ends_the_wait() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let waiting =
            tokio::spawn(async move { receive(listener, port, Some("s3cret".into())).await });
        for forged in [
            "/callback?code=evil&state=guess",
            "/callback?code=evil",
            "/callback?code=evil&state=s3cret&state=guess",
            "/other?code=x&state=s3cret",
            "/callback/?code=x&state=s3cret",
        ] {
            assert_eq!(get(port, forged).await, 404, "{forged}");
        }
        assert!(!waiting.is_finished());
        assert_eq!(get(port, "/callback?code=good&state=s3cret").await, 200);
        assert_eq!(
            waiting.await.unwrap().unwrap(),
            format!("http://127.0.0.1:{port}/callback?code=good&state=s3cret")
        );
    }

    proptest! {
        /// Whatever a forger puts in the query, only the login's own `state`, once, is taken.
        #[test]
        fn a_callback_without_the_logins_state_is_refused(
            pairs in proptest::collection::vec(("[a-z_]{1,8}", "[A-Za-z0-9%&=+ ]{0,12}"), 0..5),
            state in "[A-Za-z0-9_-]{8,24}",
        ) {
            let query = pairs
                .iter()
                .map(|(key, value)| format!("{key}={value}"))
                .collect::<Vec<_>>()
                .join("&");
            let mut url = reqwest::Url::parse("http://127.0.0.1/callback").unwrap();
            url.set_query(Some(&query));
            let carried: Vec<String> = url
                .query_pairs()
                .filter(|(key, _)| key == "state")
                .map(|(_, value)| value.into_owned())
                .collect();
            prop_assert_eq!(
                is_the_callback(Some(&query), Some(&state)),
                carried == [state.clone()]
            );
            let genuine = format!("{query}&state={state}");
            prop_assert_eq!(
                is_the_callback(Some(&genuine), Some(&state)),
                carried.is_empty()
            );
        }
    }

    fn http_connection(oauth: Option<&str>) -> McpServerConfig {
        McpServerConfig {
            name: "x".into(),
            description: None,
            transport: McpTransport::Http {
                url: "https://mcp.example.com/mcp".into(),
                headers: Default::default(),
            },
            file: PathBuf::from("/agent/mcp-connections/x.toml"),
            call_timeout: Duration::from_secs(5),
            oauth: oauth.map(|oauth| toml::from_str(oauth).unwrap()),
        }
    }

    /// Writes stored credentials for connection `x` received `age` seconds ago.
    fn store(dir: &Path, token: serde_json::Value, scopes: &[&str], age: u64) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let stored = serde_json::json!({
            "client_id": "c",
            "token_response": token,
            "granted_scopes": scopes,
            "token_received_at": now - age,
        });
        std::fs::write(dir.join("x.json"), stored.to_string()).unwrap();
    }

    #[tokio::test]
    async fn auth_state_tells_every_state_apart_without_the_token() {
        let dir = tempfile::tempdir().unwrap();
        let code = "client_metadata_url = \"https://folio.example/client.json\"";
        let machine =
            "grant = \"client_credentials\"\nclient_id = \"svc\"\nclient_secret = \"${S}\"";
        let stdio = McpServerConfig {
            transport: McpTransport::Stdio {
                command: "server".into(),
                args: Vec::new(),
                env: Default::default(),
            },
            ..http_connection(None)
        };
        assert_eq!(auth_state(&stdio, dir.path()).await, None);
        let state = |oauth| {
            let config = http_connection(oauth);
            let dir = dir.path().to_path_buf();
            async move { auth_state(&config, &dir).await.unwrap() }
        };
        assert_eq!(state(None).await, ConnectionAuth::None);
        assert!(
            matches!(state(Some(code)).await, ConnectionAuth::NeedsLogin { reason } if reason.contains("folio mcp login x"))
        );
        assert_eq!(
            state(Some(machine)).await,
            ConnectionAuth::ClientCredentials
        );

        let fresh = serde_json::json!({"access_token": "tok-SECRET", "token_type": "bearer", "expires_in": 3600, "refresh_token": "ref-SECRET"});
        store(dir.path(), fresh, &["a", "b"], 60);
        let ConnectionAuth::TokenStored {
            expires_at: Some(at),
            expired: false,
            scopes,
            refreshable: true,
        } = state(None).await
        else {
            panic!("{:?}", state(None).await);
        };
        assert_eq!(scopes, ["a", "b"]);
        let left = at - chrono::Utc::now();
        assert!(
            left > chrono::Duration::minutes(58) && left <= chrono::Duration::minutes(59),
            "{at}"
        );

        let stale = serde_json::json!({"access_token": "tok-SECRET", "token_type": "bearer", "expires_in": 60});
        store(dir.path(), stale, &[], 3600);
        let ConnectionAuth::NeedsLogin { reason } = state(Some(code)).await else {
            panic!("{:?}", state(Some(code)).await);
        };
        assert!(
            reason.contains("expired") && reason.contains("cannot be refreshed"),
            "{reason}"
        );
        // A client-credentials grant renews an expired token by itself.
        assert!(matches!(
            state(Some(machine)).await,
            ConnectionAuth::TokenStored {
                expired: true,
                refreshable: true,
                ..
            }
        ));
        for described in [
            state(None).await,
            state(Some(code)).await,
            state(Some(machine)).await,
        ] {
            assert!(
                !format!("{described:?}").contains("SECRET"),
                "{described:?}"
            );
            assert!(
                !serde_json::to_string(&described)
                    .unwrap()
                    .contains("SECRET")
            );
        }

        std::fs::write(dir.path().join("x.json"), "{not json").unwrap();
        let ConnectionAuth::NeedsLogin { reason } = state(None).await else {
            panic!("{:?}", state(None).await);
        };
        assert!(
            reason.contains("delete the file and log in again"),
            "{reason}"
        );
    }

    #[test]
    fn a_machine_identity_reads_its_secret_from_the_environment_or_a_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("secret.txt"), "from-file\n").unwrap();
        std::fs::write(dir.path().join("key.pem"), "-----BEGIN PRIVATE KEY-----\n").unwrap();
        let env = |name: &str| (name == "S").then(|| "from-env".to_string());
        let resolve = |oauth: &str| {
            let oauth: folio_project::McpOAuth = toml::from_str(oauth).unwrap();
            ClientIdentity::resolve(Some(&oauth), &env, dir.path())
        };
        let secret = |identity: ClientIdentity| match identity.machine {
            Some(MachineCredential::Secret(secret)) => secret,
            _ => panic!("no client secret"),
        };
        let from_env = resolve(
            "grant = \"client_credentials\"\nclient_id = \"svc\"\nclient_secret = \"${S}\"",
        )
        .unwrap();
        assert_eq!(secret(from_env), "from-env");
        let from_file = resolve("grant = \"client_credentials\"\nclient_id = \"svc\"\nclient_secret_file = \"secret.txt\"").unwrap();
        assert_eq!(secret(from_file), "from-file");
        let key = resolve("grant = \"client_credentials\"\nclient_id = \"svc\"\nprivate_key_file = \"key.pem\"\nsigning_algorithm = \"ES256\"").unwrap();
        assert!(matches!(
            key.machine,
            Some(MachineCredential::Key { ref pem, algorithm: JwtSigningAlgorithm::ES256 }) if pem.starts_with(b"-----BEGIN")
        ));
        // A person's grant keeps the secret for the authorization-code exchange.
        let code = resolve("client_id = \"app\"\nclient_secret_file = \"secret.txt\"").unwrap();
        assert!(code.machine.is_none());
        assert_eq!(code.client_secret.as_deref(), Some("from-file"));
        let Err(unset) = resolve(
            "grant = \"client_credentials\"\nclient_id = \"svc\"\nclient_secret = \"${UNSET}\"",
        ) else {
            panic!("an unset variable resolved");
        };
        assert!(matches!(
            &unset,
            OAuthError::Template { field: "client_secret", source } if source.name == "UNSET"
        ));
        let unset = unset.to_string();
        assert!(
            unset.contains("oauth.client_secret") && unset.contains("UNSET"),
            "{unset}"
        );
        let Err(missing) = resolve(
            "grant = \"client_credentials\"\nclient_id = \"svc\"\nprivate_key_file = \"nope.pem\"",
        ) else {
            panic!("a missing key file resolved");
        };
        assert!(matches!(
            &missing,
            OAuthError::SecretFile { source, .. } if source.kind() == std::io::ErrorKind::NotFound
        ));
        let missing = missing.to_string();
        assert!(
            missing.contains("oauth.private_key_file") && missing.contains("nope.pem"),
            "{missing}"
        );
    }

    #[test]
    fn step_up_asks_for_the_granted_and_the_required_scopes_once_each() {
        assert_eq!(
            union(
                &["mcp:basic".to_string()],
                "mcp:basic  mcp:write",
                &["mcp:write".to_string(), "extra".to_string()]
            ),
            ["mcp:basic", "mcp:write", "extra"]
        );
    }

    #[test]
    fn a_secret_file_must_be_a_small_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "s3cret\n").unwrap();
        assert_eq!(
            read_secret_file(&secret, "client_secret_file").unwrap(),
            b"s3cret\n"
        );
        let err = read_secret_file(Path::new("/dev/zero"), "client_secret_file").unwrap_err();
        assert!(matches!(err, OAuthError::SecretNotAFile { .. }), "{err}");
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; MAX_SECRET_FILE as usize + 1]).unwrap();
        let err = read_secret_file(&big, "private_key_file")
            .unwrap_err()
            .to_string();
        assert!(err.contains("larger than"), "{err}");
        assert!(!err.contains("xxx"), "{err}");
    }
}
