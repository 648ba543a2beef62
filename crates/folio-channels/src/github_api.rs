//! The GitHub side of a `github` channel: its settings and REST client (a token from the
//! environment, or a GitHub App's installation tokens), and the pull request a delivery is
//! about. Both the receiving side (`github`) and the replying side (`sessions`, `follow`)
//! use it; it uses neither.

use std::collections::BTreeMap;
use std::time::Duration;

use folio_project::GithubChannel;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Env;
use crate::app_token::{AppTokenError, AppTokens};
use crate::templates::RenderError;

/// The public API, when the manifest names none.
const DEFAULT_API: &str = "https://api.github.com";
/// Attempts of one API call (5xx and connection errors are retried).
const API_ATTEMPTS: u32 = 3;
/// GitHub's JSON media type.
pub(crate) const JSON: &str = "application/vnd.github+json";

/// The pull request a delivery is about, and what to react to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PrRef {
    /// `owner/repo`.
    pub(crate) repo: String,
    /// The PR number.
    pub(crate) number: u64,
    /// The head commit, when the event names it (comment-only wakes do not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) head_sha: Option<String>,
    /// The reactions endpoint of what woke the agent (the comment, or the PR).
    pub(crate) react_path: String,
    /// The GitHub App installation the delivery came through (`installation.id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) installation: Option<u64>,
    /// The repository's clone URL (`repository.clone_url`), for the session's checkout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) clone_url: Option<String>,
}

/// Why a call to the GitHub API (or a check run) did not succeed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GithubError {
    /// The channel authenticates as a GitHub App, and no installation token was had.
    #[error(transparent)]
    AppToken(#[from] AppTokenError),
    /// The token variable is not set.
    #[error("{token_env} is not set on the server (a token that may write to the repository)")]
    TokenUnset {
        /// The variable (`token_env`, default `GITHUB_TOKEN`).
        token_env: String,
    },
    /// The API answered an error status (a 5xx after the last attempt).
    #[error("{method} {url} answered {status}")]
    Status {
        /// The method called.
        method: reqwest::Method,
        /// The URL called.
        url: String,
        /// The answer's status.
        status: reqwest::StatusCode,
    },
    /// The request failed (connection, timeout) on the last attempt.
    #[error("{method} {url} failed: {source}")]
    Unreachable {
        /// The method called.
        method: reqwest::Method,
        /// The URL called.
        url: String,
        /// What failed.
        #[source]
        source: reqwest::Error,
    },
    /// The answer's body could not be read.
    #[error("{method} {url}: {source}")]
    Body {
        /// The method called.
        method: reqwest::Method,
        /// The URL called.
        url: String,
        /// What failed.
        #[source]
        source: reqwest::Error,
    },
    /// A check run was asked of a channel that is not a GitHub channel.
    #[error("not a GitHub channel")]
    NotGithub,
    /// A check run needs the PR's head commit, and the delivery named none.
    #[error("no head SHA yet (a comment-only wake): the check waits for a PR or CI event")]
    NoHeadSha,
    /// The API created a check run but its answer has no id.
    #[error("POST {path} answered no check run id")]
    NoCheckRunId {
        /// The path called.
        path: String,
    },
    /// A `[check]` or `[banner]` template did not render.
    #[error(transparent)]
    Template(#[from] RenderError),
}

/// The GitHub side of a channel: settings and the API client.
pub(crate) struct Github {
    pub(crate) config: GithubChannel,
    env: Env,
    client: reqwest::Client,
    /// Installation tokens, when the channel authenticates as a GitHub App (`[app]`).
    app: Option<AppTokens>,
}

impl Github {
    /// The client of `config`, reading its token from `env`.
    pub(crate) fn new(config: GithubChannel, env: Env) -> Github {
        let app = config
            .app
            .clone()
            .map(|app| AppTokens::new(app, env.clone()));
        Github {
            config,
            env,
            client: reqwest::Client::new(),
            app,
        }
    }

    /// Calls the API about `pr`: `method path` with a JSON `body`, retried on 5xx and
    /// connection errors.
    pub(crate) async fn call(
        &self,
        pr: &PrRef,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        accept: &str,
    ) -> Result<String, GithubError> {
        let token = self.token(pr).await?;
        let url = format!("{}{path}", self.base());
        let mut attempt = 1;
        loop {
            let mut request = self
                .client
                .request(method.clone(), &url)
                .timeout(Duration::from_secs(15))
                .bearer_auth(&token)
                .header("accept", accept)
                .header("user-agent", "folio")
                .header("x-github-api-version", "2022-11-28");
            if let Some(body) = body {
                request = request.json(body);
            }
            let failure = match request.send().await {
                Ok(answer) if answer.status().is_success() => {
                    return answer.text().await.map_err(|source| GithubError::Body {
                        method,
                        url,
                        source,
                    });
                }
                Ok(answer) if answer.status().is_server_error() => GithubError::Status {
                    method: method.clone(),
                    url: url.clone(),
                    status: answer.status(),
                },
                Ok(answer) => {
                    return Err(GithubError::Status {
                        method,
                        url,
                        status: answer.status(),
                    });
                }
                Err(source) => GithubError::Unreachable {
                    method: method.clone(),
                    url: url.clone(),
                    source,
                },
            };
            if attempt == API_ATTEMPTS {
                return Err(failure);
            }
            tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
            attempt += 1;
        }
    }

    /// The API's base URL, without a trailing `/`.
    fn base(&self) -> &str {
        self.config
            .api_base_url
            .as_deref()
            .unwrap_or(DEFAULT_API)
            .trim_end_matches('/')
    }

    /// The token acting on `pr`: the App's installation token, else `token_env`'s.
    pub(crate) async fn token(&self, pr: &PrRef) -> Result<String, GithubError> {
        match &self.app {
            Some(app) => Ok(app
                .token(&self.client, self.base(), pr.installation)
                .await?),
            None => {
                let token_env = self.config.token_env.as_deref().unwrap_or("GITHUB_TOKEN");
                (self.env)(token_env).ok_or_else(|| GithubError::TokenUnset {
                    token_env: token_env.to_string(),
                })
            }
        }
    }

    /// The files written before the turn: the diff (from the API) and the PR's metadata.
    pub(crate) async fn pr_files(&self, pr: &PrRef, meta: &Value) -> BTreeMap<String, String> {
        let mut files = BTreeMap::new();
        let path = format!("/repos/{}/pulls/{}", pr.repo, pr.number);
        let diff = self
            .call(
                pr,
                reqwest::Method::GET,
                &path,
                None,
                "application/vnd.github.diff",
            )
            .await
            .unwrap_or_else(|err| format!("# the diff could not be fetched: {err}\n"));
        files.insert("pr/diff.patch".to_string(), diff);
        files.insert(
            "pr/meta.json".to_string(),
            serde_json::to_string_pretty(meta).unwrap_or_default(),
        );
        files
    }

    /// Whether `login` is the bot itself (`name` or the App's `name[bot]`).
    pub(crate) fn is_bot(&self, login: &str) -> bool {
        self.config
            .bot_name
            .as_deref()
            .is_some_and(|bot| login == bot || login == format!("{bot}[bot]"))
    }

    /// Whether a comment addresses the bot (`@bot_name`; every comment when no bot is named).
    pub(crate) fn mentioned(&self, text: &str) -> bool {
        match self.config.bot_name.as_deref() {
            Some(bot) => text.contains(&format!("@{bot}")),
            None => true,
        }
    }
}
