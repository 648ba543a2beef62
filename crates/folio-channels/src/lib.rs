//! Channels: turning provider deliveries into session messages, and replies back.
//!
//! A channel is declared in `agent/channels/<id>.toml` (typed by folio-project) and served
//! under `/v1/channels/<id>/…`. Every delivery passes the channel's auth chain (bad, missing
//! or stale signatures → `401`, nothing recorded or run), is checked (`body_schema` → `400`
//! naming the field), rendered into a message and continuation key (minijinja templates), and
//! recorded durably in the server's store (`<state>/channels/<id>/deliveries.ndjson`, synced,
//! or the shared PostgreSQL store) before the `202`. The
//! work then runs in the background: the continuation key picks the session (same key → same
//! session), and the delivery id is the message's idempotency key, so a provider retry within
//! 24 h (even across restarts, and on any server of a shared store) is acknowledged and not run
//! twice, and deliveries recorded but not finished when a process died run once after the
//! restart, or on another server once the dead one's claim expired ([`Channels::resume`]).
//! `[deliver]` posts each reply back with retries.
//!
//! [`Channels::router`] is an axum `Router` that `folio serve` mounts beside the session API
//! (behind the same guard, with the channel's own auth instead of the callers').

#![warn(missing_docs)]

mod acknowledge;
mod app_token;
mod auth;
mod checkout;
mod deliver;
mod follow;
mod github;
mod github_api;
#[doc(hidden)]
pub mod inspect;
mod sessions;
mod slack;
mod slack_api;
mod store;
mod templates;
mod webhook;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{ConnectInfo, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use folio_auth::Auth;
use folio_project::{AuthRule, ChannelManifest, ChannelSummary};
use folio_protocol::{DeliveriesResponse, ErrorBody, ErrorCode, OkTrue};
use folio_session::SessionManager;

pub use auth::sign_hex;
pub use folio_store::StoreError;

use crate::deliver::Replier;
use crate::follow::Followers;
use crate::github_api::Github;
use crate::slack_api::Slack;
use crate::store::Deliveries;
use crate::templates::Templates;

/// Reads an environment variable (the process environment in `folio serve`; a map in tests).
pub type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Why the channels of an agent cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// A template of the manifest does not compile.
    #[error("channels/{channel}.toml: {field}: {message} (fix the template)")]
    Template {
        /// The channel id.
        channel: String,
        /// The field holding the template (`routes[0].message`).
        field: String,
        /// What minijinja reported.
        message: String,
    },
    /// A `body_schema` does not compile.
    #[error("channels/{channel}.toml: {field}: {message}")]
    Schema {
        /// The channel id.
        channel: String,
        /// The field (`routes[0].body_schema`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// The channel's deliveries cannot be read from the store.
    #[error("channel {channel}: its deliveries cannot be read ({source}); check the store")]
    Store {
        /// The channel id.
        channel: String,
        /// The failure.
        #[source]
        source: StoreError,
    },
}

/// What the host hands the channels.
#[derive(Clone)]
pub struct ChannelOptions {
    /// Where secrets and tokens are read (`secret_env`, `token_env`, `${NAME}` headers).
    pub env: Env,
    /// The server's caller auth: `GET /v1/channels/<id>/deliveries` answers its callers.
    pub caller_auth: Auth,
    /// The agent's URL as clients reach it (`https://folio.example.com/<slug>`): check runs'
    /// details URLs open the session's playground under it.
    pub base_url: String,
}

/// One served channel.
pub(crate) struct Channel {
    /// The channel id (file name).
    pub(crate) id: String,
    /// The auth chain.
    pub(crate) auth: Vec<AuthRule>,
    /// The header naming deliveries (`id_header`).
    pub(crate) id_header: Option<String>,
    /// Deliveries, continuation keys and followed sessions.
    pub(crate) store: Deliveries,
    /// Compiled templates and schemas.
    pub(crate) templates: Templates,
    /// The agent's sessions.
    pub(crate) manager: SessionManager,
    /// Secrets.
    pub(crate) env: Env,
    /// Serializes this server's continuation lookups and session creation (across servers,
    /// the key's reservation does), so one key opens one session.
    pub(crate) sessions: tokio::sync::Mutex<()>,
    /// Posts replies back (`[deliver]`).
    pub(crate) replier: Option<Replier>,
    /// The GitHub side of a `github` channel.
    pub(crate) github: Option<Github>,
    /// The Slack side of a `slack` channel.
    pub(crate) slack: Option<Slack>,
    /// The sessions being followed to answer the provider.
    pub(crate) followers: Followers,
    /// The agent's URL (for links to sessions).
    pub(crate) base_url: String,
}

impl Channel {
    /// The principal owning the channel's sessions: `channel:<id>`.
    pub(crate) fn principal(&self) -> String {
        format!("channel:{}", self.id)
    }

    /// Where a person opens `session` (its playground page).
    pub(crate) fn session_url(&self, session: &str) -> String {
        format!(
            "{}/playground?session={session}",
            self.base_url.trim_end_matches('/')
        )
    }
}

/// The channels of one agent.
pub struct Channels {
    channels: Vec<Arc<Channel>>,
    caller_auth: Arc<Auth>,
}

impl Channels {
    /// Opens every channel of the manager's agent: compiles templates and schemas and reads
    /// each delivery record.
    pub fn open(
        manager: &SessionManager,
        options: ChannelOptions,
    ) -> Result<Channels, ChannelError> {
        let summaries: Vec<ChannelSummary> = manager.agent().definition.channels.clone();
        let mut channels = Vec::new();
        for summary in summaries {
            let (mut templates, mut id_header, mut replier) = (Templates::default(), None, None);
            let (mut github, mut slack) = (None, None);
            match &summary.manifest {
                ChannelManifest::Webhook(webhook) => {
                    templates = Templates::compile(&summary.id, webhook)?;
                    id_header = webhook.id_header.clone();
                    replier = webhook
                        .deliver
                        .clone()
                        .map(|config| Replier::new(config, options.env.clone()));
                }
                ChannelManifest::Github(config) => {
                    templates = Templates::compile_github(&summary.id, config)?;
                    github = Some(Github::new(config.clone(), options.env.clone()));
                }
                ChannelManifest::Slack(config) => {
                    slack = Some(Slack::new(config.clone(), options.env.clone()));
                }
            }
            let store = Deliveries::new(
                &summary.id,
                manager.channels().deliveries(),
                manager.channels().server_id(),
                manager.channels().claim_ttl(),
            );
            channels.push(Arc::new(Channel {
                id: summary.id.clone(),
                auth: summary.manifest.auth(),
                id_header,
                store,
                templates,
                manager: manager.clone(),
                env: options.env.clone(),
                sessions: tokio::sync::Mutex::new(()),
                replier,
                github,
                slack,
                followers: Followers::default(),
                base_url: options.base_url.clone(),
            }));
        }
        Ok(Channels {
            channels,
            caller_auth: Arc::new(options.caller_auth),
        })
    }

    /// Runs the work of deliveries that were acknowledged but not finished (by this server
    /// before it last stopped, or by a server of the same store that died: each once, since
    /// the delivery id keeps the session from admitting it twice), and follows again the
    /// sessions nobody follows any more, so turns that ended unreported (cut short by the
    /// crash) are reported to the provider. Then keeps doing so in the background, every half
    /// claim time to live, until the manager shuts down. An error of the first pass (the
    /// store cannot be read) is returned.
    pub async fn resume(&self) -> Result<(), ChannelError> {
        for channel in &self.channels {
            claim_unowned(channel)
                .await
                .map_err(|source| ChannelError::Store {
                    channel: channel.id.clone(),
                    source,
                })?;
            let channel = channel.clone();
            let stop = channel.manager.shutdown_token();
            let every = channel.store.ttl() / 2;
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(every) => {}
                    }
                    if let Err(err) = claim_unowned(&channel).await {
                        channel.manager.logs().warn(format!(
                            "channel {}: cannot claim unfinished deliveries: {err}",
                            channel.id
                        ));
                    }
                }
            });
        }
        Ok(())
    }

    /// The routes of every channel: `POST /v1/channels/<id><route>` and
    /// `GET /v1/channels/<id>/deliveries`.
    pub fn router(&self) -> Router {
        let mut router = Router::new();
        for channel in &self.channels {
            let base = format!("/v1/channels/{}", channel.id);
            if channel.github.is_some() {
                let channel = channel.clone();
                router = router.route(
                    &base,
                    post(move |req: Request| github::receive(channel, req)),
                );
            }
            if channel.slack.is_some() {
                let channel = channel.clone();
                router = router.route(
                    &format!("{base}/events"),
                    post(move |req: Request| slack::receive(channel, req)),
                );
            }
            for (index, path) in channel.templates.paths().enumerate() {
                let channel = channel.clone();
                router = router.route(
                    &format!("{base}{path}"),
                    post(move |req: Request| webhook::receive(channel, index, req)),
                );
            }
            let listed = channel.clone();
            let auth = self.caller_auth.clone();
            router = router.route(
                &format!("{base}/deliveries"),
                get(move |req: Request| list_deliveries(listed, auth, req)),
            );
        }
        router
    }
}

/// An error answer in the session API's shape.
pub(crate) fn error(code: ErrorCode, message: impl Into<String>) -> Response {
    let status = StatusCode::from_u16(code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(ErrorBody::new(code, message))).into_response()
}

/// Reads `req`'s raw body and runs it through `channel`'s auth chain: its headers and body, or
/// the answer to send instead (`400`/`413` for a body that cannot be read, `401` when no rule
/// of the chain admits the caller).
pub(crate) async fn admitted_body(
    channel: &Channel,
    req: Request,
) -> Result<(axum::http::HeaderMap, axum::body::Bytes), Response> {
    use axum::extract::FromRequest;
    let peer = peer(&req);
    let headers = req.headers().clone();
    let bytes = axum::body::Bytes::from_request(req, &())
        .await
        .map_err(|rejection| {
            let code = if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ErrorCode::PayloadTooLarge
            } else {
                ErrorCode::InvalidRequest
            };
            error(code, format!("body: {}", rejection.body_text()))
        })?;
    let presented = auth::Presented {
        headers: &headers,
        body: &bytes,
        peer,
        now: chrono::Utc::now().timestamp(),
    };
    auth::admit(&channel.auth, &presented, &channel.env)
        .map_err(|refused| error(ErrorCode::Unauthorized, refused.to_string()))?;
    Ok((headers, bytes))
}

/// The caller's address (unspecified, so never loopback, when the server did not say).
pub(crate) fn peer(req: &Request) -> SocketAddr {
    req.extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0)
        .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)))
}

async fn list_deliveries(channel: Arc<Channel>, auth: Arc<Auth>, req: Request) -> Response {
    if let Err(err) = auth.authenticate(req.headers(), peer(&req)) {
        let code = match err {
            folio_auth::AuthError::Unauthorized(_) => ErrorCode::Unauthorized,
            folio_auth::AuthError::Forbidden(_) => ErrorCode::Forbidden,
        };
        return error(code, err.to_string());
    }
    match channel.store.list().await {
        Ok(deliveries) => axum::Json(DeliveriesResponse {
            ok: OkTrue,
            deliveries,
        })
        .into_response(),
        Err(err) => error(
            ErrorCode::Internal,
            format!("the deliveries cannot be read from the store ({err}); retry"),
        ),
    }
}

/// Claims the follows and the pending deliveries nobody holds (see [`Channels::resume`]):
/// follows their sessions and runs their work.
async fn claim_unowned(channel: &Arc<Channel>) -> Result<(), StoreError> {
    if channel.replier.is_some() || channel.slack.is_some() || channel.github.is_some() {
        for follow in channel.store.claim_follows().await? {
            channel.followers.resume(channel.clone(), follow);
        }
    }
    let (runnable, unreadable) = channel.store.claim().await?;
    for received in runnable {
        tokio::spawn(sessions::run(channel.clone(), received, true));
    }
    for reason in unreadable {
        channel.manager.logs().error(format!(
            "channel {}: {reason}; the delivery is recorded as failed",
            channel.id
        ));
    }
    Ok(())
}
