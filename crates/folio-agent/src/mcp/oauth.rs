//! OAuth 2.1 for streamable-HTTP MCP connections, on rmcp's auth support.
//!
//! rmcp does the protocol: protected-resource and authorization-server metadata discovery (from
//! the 401's `WWW-Authenticate`, path-based and root, and the 2025-03-26 fallbacks), dynamic
//! client registration, PKCE, the RFC 8707 `resource` parameter, scope selection from the
//! challenge or `scopes_supported`, and refreshing tokens (before expiry, and once after a 401).
//! Folio adds where tokens live and the human step:
//!
//! - [`FileCredentialStore`]: one JSON file per principal and connection under the state root
//!   (`mcp-auth/<principal>/<connection>.json`), mode 0600, written atomically. Tokens never go
//!   into events or logs (rmcp's `Debug` of credentials redacts them; Folio logs none).
//! - [`McpLogin`]: how a person is asked — the authorization URL is printed on stderr (and
//!   opened with `$BROWSER` when set), and the code comes back to a loopback redirect
//!   (`http://127.0.0.1:<port>/callback`). `folio run` and `folio mcp login` ask this way.
//! - Under `folio serve` each session's principal has its own client of an HTTP server, with
//!   its own tokens (`mcp-auth/<principal>/`); when it needs authorization, the tool call parks
//!   on `action.authorization_requested` with the URL, and the redirect comes back to the
//!   server's `GET /v1/mcp-auth/callback` (see `McpTool`). The agent's own client, which lists
//!   the tools when the agent loads, uses the tokens `folio mcp login` stored for `local`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession, CredentialStore,
    StoredCredentials,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
}

impl McpAuth {
    /// The credentials store of connection `name`.
    pub fn store(&self, name: &str) -> FileCredentialStore {
        FileCredentialStore {
            path: self.dir.join(format!("{name}.json")),
        }
    }
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

/// OAuth credentials of one connection in a file (mode 0600, replaced atomically).
#[derive(Debug, Clone)]
pub struct FileCredentialStore {
    path: PathBuf,
}

impl FileCredentialStore {
    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn store_error(what: &str, path: &Path, err: impl std::fmt::Display) -> AuthError {
    AuthError::InternalError(format!("cannot {what} {}: {err}", path.display()))
}

#[async_trait::async_trait]
impl CredentialStore for FileCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        match tokio::fs::read(&self.path).await {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|err| {
                store_error(
                    "read the MCP credentials (delete the file and log in again)",
                    &self.path,
                    err,
                )
            }),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(store_error("read", &self.path, err)),
        }
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let bytes = serde_json::to_vec(&credentials)
            .map_err(|err| store_error("encode the credentials for", &self.path, err))?;
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || write_private(&path, &bytes))
            .await
            .map_err(|err| store_error("write", &self.path, err))?
            .map_err(|err| store_error("write", &self.path, err))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match tokio::fs::remove_file(&self.path).await {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                Err(store_error("remove", &self.path, err))
            }
            _ => Ok(()),
        }
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

/// The manifest's `[oauth]` client identity with its `${NAME}` templates resolved.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientIdentity {
    client_id: Option<String>,
    client_secret: Option<String>,
    client_metadata_url: Option<String>,
    scopes: Vec<String>,
}

impl ClientIdentity {
    /// Resolves `oauth` (none: dynamic registration) against `env`.
    pub(crate) fn resolve(
        oauth: Option<&folio_project::McpOAuth>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ClientIdentity, String> {
        let Some(oauth) = oauth else {
            return Ok(ClientIdentity::default());
        };
        let expand = |field: &str, value: &Option<String>| {
            value
                .as_deref()
                .map(|value| {
                    folio_project::expand_template(value, env)
                        .map_err(|err| format!("oauth.{field}: {err}"))
                })
                .transpose()
        };
        Ok(ClientIdentity {
            client_id: expand("client_id", &oauth.client_id)?,
            client_secret: expand("client_secret", &oauth.client_secret)?,
            client_metadata_url: oauth.client_metadata_url.clone(),
            scopes: oauth.scopes.clone(),
        })
    }
}

/// An authorization manager for `url` holding the stored credentials, if any.
pub(crate) async fn manager(
    url: &str,
    store: &FileCredentialStore,
) -> Result<AuthorizationManager, String> {
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|err| format!("cannot set up OAuth for {url}: {err}"))?;
    manager.set_credential_store(store.clone());
    if tokio::fs::try_exists(store.path()).await.unwrap_or(false) {
        manager
            .initialize_from_store()
            .await
            .map_err(|err| format!("cannot use the stored MCP credentials: {err}"))?;
    }
    Ok(manager)
}

/// Runs the authorization-code flow for `url` after its `challenge`: registers Folio (or uses
/// the stored client), shows the authorization URL to a person, receives the code on a loopback
/// redirect and stores the tokens.
pub(crate) async fn authorize(
    server: &str,
    url: &str,
    challenge: &str,
    store: &FileCredentialStore,
    login: &McpLogin,
    client: &ClientIdentity,
) -> Result<(), String> {
    let failed = |err: AuthError| format!("authorization failed: {err}");
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|err| format!("cannot listen for the OAuth redirect on 127.0.0.1: {err}"))?;
    let port = listener
        .local_addr()
        .map_err(|err| format!("cannot listen for the OAuth redirect: {err}"))?
        .port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let session = begin(url, challenge, store, client, &redirect_uri).await?;
    let auth_url = session.get_authorization_url().to_string();
    eprintln!("MCP server \"{server}\" needs authorization: open {auth_url}");
    if let Some(browser) = &login.browser {
        open(browser, &auth_url);
    }
    let state = query_param(&auth_url, "state");
    let callback = tokio::time::timeout(LOGIN_TIMEOUT, receive(&listener, port, state.as_deref()))
        .await
        .map_err(|_| {
            format!(
                "no authorization arrived within {}s; run the command again and open the URL it prints",
                LOGIN_TIMEOUT.as_secs()
            )
        })??;
    session
        .handle_callback_url(&callback)
        .await
        .map_err(failed)?;
    Ok(())
}

/// Starts an authorization-code flow for `url` after its `challenge`, redirecting to
/// `redirect_uri`: discovers the authorization server, registers Folio (or uses the configured
/// client) and builds the authorization URL; the session's callback stores the tokens in `store`.
/// `authorize` (a loopback redirect) and a turn parked under `folio serve` (the server's
/// callback route) both start here.
pub(crate) async fn begin(
    url: &str,
    challenge: &str,
    store: &FileCredentialStore,
    client: &ClientIdentity,
    redirect_uri: &str,
) -> Result<AuthorizationSession, String> {
    let failed = |err: AuthError| format!("authorization failed: {err}");
    let mut manager = AuthorizationManager::new(url).await.map_err(failed)?;
    manager.set_credential_store(store.clone());
    let resolution = manager
        .resolve_metadata_from_challenge(Some(challenge))
        .await
        .map_err(failed)?;
    manager.set_metadata(resolution.metadata);
    let mut request = AuthorizationRequest::new(redirect_uri)
        .with_client_name(CLIENT_NAME)
        .with_challenge(challenge)
        .with_scopes(client.scopes.clone());
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

/// Waits for the authorization server's redirect to `/callback` carrying the authorization
/// request's `state` (when it had one) and returns its full URL. Any other request (a web page
/// on this machine guessing the port, a stale tab) is answered 404 and the wait goes on, so it
/// can neither end the login nor slip in a code of its own.
async fn receive(
    listener: &tokio::net::TcpListener,
    port: u16,
    state: Option<&str>,
) -> Result<String, String> {
    loop {
        let (mut socket, _) = listener
            .accept()
            .await
            .map_err(|err| format!("the OAuth redirect listener failed: {err}"))?;
        let mut buffer = vec![0u8; 8192];
        let mut read = 0;
        while read < buffer.len() && !buffer[..read].windows(4).any(|w| w == b"\r\n\r\n") {
            match socket.read(&mut buffer[read..]).await {
                Ok(0) | Err(_) => break,
                Ok(n) => read += n,
            }
        }
        let head = String::from_utf8_lossy(&buffer[..read]);
        let target = head
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .filter(|target| target.starts_with("/callback?"))
            .filter(|target| {
                state.is_none_or(|state| {
                    query_param(&format!("http://127.0.0.1{target}"), "state").as_deref()
                        == Some(state)
                })
            });
        let (status, body) = match target {
            Some(_) => ("200 OK", "Folio is authorized; you can close this tab.\n"),
            None => (
                "404 Not Found",
                "Not the OAuth callback of this login (wrong path or state).\n",
            ),
        };
        let reply = format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = socket.write_all(reply.as_bytes()).await;
        if let Some(target) = target {
            return Ok(format!("http://127.0.0.1:{port}{target}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn get(port: u16, target: &str) -> String {
        let mut socket = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        socket
            .write_all(format!("GET {target} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = String::new();
        socket.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn only_the_callback_with_the_logins_state_ends_the_wait() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let waiting = tokio::spawn(async move { receive(&listener, port, Some("s3cret")).await });
        for forged in [
            "/callback?code=evil&state=guess",
            "/callback?code=evil",
            "/other?code=x&state=s3cret",
        ] {
            assert!(
                get(port, forged).await.starts_with("HTTP/1.1 404"),
                "{forged}"
            );
        }
        assert!(!waiting.is_finished());
        assert!(
            get(port, "/callback?code=good&state=s3cret")
                .await
                .starts_with("HTTP/1.1 200")
        );
        assert_eq!(
            waiting.await.unwrap().unwrap(),
            format!("http://127.0.0.1:{port}/callback?code=good&state=s3cret")
        );
    }
}
