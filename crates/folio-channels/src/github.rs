//! GitHub channels: `POST /v1/channels/<id>` receives GitHub webhooks (`X-GitHub-Event`,
//! `X-GitHub-Delivery`, `X-Hub-Signature-256`). Pull requests (opened, reopened, synchronize,
//! ready_for_review), PR comments mentioning `@bot_name` and failed check suites / workflow
//! runs wake the session `pr:owner/repo#N`; the bot's own comments and every other event are
//! recorded as ignored. Before the turn the channel writes `pr/diff.patch` and `pr/meta.json`
//! into the workspace; a 👀 reaction marks the work, replies post as PR comments, and check
//! runs report each turn (queued → in_progress → completed, details URL to the session).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::response::Response;
use chrono::Utc;
use folio_project::GithubChannel;
use folio_protocol::{Admission, ErrorCode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::app_token::AppTokens;
use crate::store::{Received, Work};
use crate::webhook::acknowledge;
use crate::{Channel, Env, error};

/// The public API, when the manifest names none.
const DEFAULT_API: &str = "https://api.github.com";
/// Attempts of one API call (5xx and connection errors are retried).
const API_ATTEMPTS: u32 = 3;

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
    ) -> Result<String, String> {
        let base = self
            .config
            .api_base_url
            .as_deref()
            .unwrap_or(DEFAULT_API)
            .trim_end_matches('/');
        let token = match &self.app {
            Some(app) => app.token(&self.client, base, pr.installation).await?,
            None => {
                let token_env = self.config.token_env.as_deref().unwrap_or("GITHUB_TOKEN");
                (self.env)(token_env).ok_or_else(|| {
                    format!(
                        "{token_env} is not set on the server (a token that may write to the repository)"
                    )
                })?
            }
        };
        let url = format!("{base}{path}");
        let mut last = String::new();
        for attempt in 1..=API_ATTEMPTS {
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
            match request.send().await {
                Ok(answer) if answer.status().is_success() => {
                    return answer
                        .text()
                        .await
                        .map_err(|err| format!("{method} {url}: {err}"));
                }
                Ok(answer) if answer.status().is_server_error() => {
                    last = format!("{method} {url} answered {}", answer.status());
                }
                Ok(answer) => return Err(format!("{method} {url} answered {}", answer.status())),
                Err(err) => last = format!("{method} {url} failed: {err}"),
            }
            if attempt < API_ATTEMPTS {
                tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
            }
        }
        Err(last)
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
    fn is_bot(&self, login: &str) -> bool {
        self.config
            .bot_name
            .as_deref()
            .is_some_and(|bot| login == bot || login == format!("{bot}[bot]"))
    }

    /// Whether a comment addresses the bot (`@bot_name`; every comment when no bot is named).
    fn mentioned(&self, text: &str) -> bool {
        match self.config.bot_name.as_deref() {
            Some(bot) => text.contains(&format!("@{bot}")),
            None => true,
        }
    }
}

/// What a GitHub delivery asks: the message, the PR and its metadata, or why it is ignored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Wake {
    pub(crate) message: String,
    pub(crate) title: String,
    pub(crate) pr: PrRef,
    pub(crate) meta: Value,
}

/// Reads event `event` (`X-GitHub-Event`) with payload `body`.
pub(crate) fn interpret(github: &Github, event: &str, body: &Value) -> Result<Wake, String> {
    let mut wake = interpret_event(github, event, body)?;
    wake.pr.installation = body["installation"]["id"].as_u64();
    Ok(wake)
}

/// What `event` asks, before the installation is noted.
fn interpret_event(github: &Github, event: &str, body: &Value) -> Result<Wake, String> {
    let action = body["action"].as_str().unwrap_or_default();
    let repo = body["repository"]["full_name"]
        .as_str()
        .ok_or("the payload has no repository.full_name")?
        .to_string();
    let sender = body["sender"]["login"].as_str().unwrap_or_default();
    match event {
        "pull_request" => {
            if !["opened", "reopened", "synchronize", "ready_for_review"].contains(&action) {
                return Err(format!("pull_request.{action} is not acted on"));
            }
            let pr = &body["pull_request"];
            let number = body["number"]
                .as_u64()
                .or(pr["number"].as_u64())
                .ok_or("no PR number")?;
            let title = pr["title"].as_str().unwrap_or_default();
            Ok(Wake {
                message: format!(
                    "Pull request {repo}#{number} was {}: {title}\n\n{}\n\n{}",
                    action.replace('_', " "),
                    pr["body"].as_str().unwrap_or_default(),
                    pr["html_url"].as_str().unwrap_or_default()
                ),
                title: format!("{repo}#{number}: {title}"),
                pr: PrRef {
                    react_path: format!("/repos/{repo}/issues/{number}/reactions"),
                    repo: repo.clone(),
                    number,
                    head_sha: pr["head"]["sha"].as_str().map(String::from),
                    installation: None,
                },
                meta: json!({
                    "repository": repo,
                    "number": number,
                    "title": title,
                    "body": pr["body"],
                    "author": pr["user"]["login"],
                    "url": pr["html_url"],
                    "base": pr["base"]["ref"],
                    "head": pr["head"]["ref"],
                    "headSha": pr["head"]["sha"],
                    "action": action,
                }),
            })
        }
        "issue_comment" | "pull_request_review_comment" => {
            if action != "created" {
                return Err(format!("{event}.{action} is not acted on"));
            }
            let comment = &body["comment"];
            let author = comment["user"]["login"].as_str().unwrap_or(sender);
            if github.is_bot(author) || github.is_bot(sender) {
                return Err("the bot's own comment (loop guard)".into());
            }
            let text = comment["body"].as_str().unwrap_or_default();
            if !github.mentioned(text) {
                return Err("the comment does not mention the bot".into());
            }
            let (number, title, url, react_path) = if event == "issue_comment" {
                let issue = &body["issue"];
                if issue.get("pull_request").is_none() {
                    return Err("a comment on an issue, not a pull request".into());
                }
                (
                    issue["number"].as_u64().ok_or("no issue number")?,
                    issue["title"].as_str().unwrap_or_default(),
                    issue["html_url"].as_str().unwrap_or_default(),
                    format!("/repos/{repo}/issues/comments/{}/reactions", comment["id"]),
                )
            } else {
                let pr = &body["pull_request"];
                (
                    pr["number"].as_u64().ok_or("no PR number")?,
                    pr["title"].as_str().unwrap_or_default(),
                    pr["html_url"].as_str().unwrap_or_default(),
                    format!("/repos/{repo}/pulls/comments/{}/reactions", comment["id"]),
                )
            };
            let head_sha = body["pull_request"]["head"]["sha"]
                .as_str()
                .map(String::from);
            Ok(Wake {
                message: format!("@{author} commented on {repo}#{number}:\n\n{text}"),
                title: format!("{repo}#{number}: {title}"),
                pr: PrRef {
                    repo: repo.clone(),
                    number,
                    head_sha: head_sha.clone(),
                    react_path,
                    installation: None,
                },
                meta: json!({
                    "repository": repo,
                    "number": number,
                    "title": title,
                    "url": url,
                    "headSha": head_sha,
                    "comment": { "author": author, "body": text, "url": comment["html_url"] },
                }),
            })
        }
        "check_suite" | "workflow_run" => {
            let run = &body[event];
            if action != "completed" || run["conclusion"].as_str() != Some("failure") {
                return Err(format!("{event}.{action} did not fail"));
            }
            let number = run["pull_requests"][0]["number"]
                .as_u64()
                .ok_or_else(|| format!("the failed {event} belongs to no pull request"))?;
            let sha = run["head_sha"].as_str().map(String::from);
            let name = run["name"]
                .as_str()
                .or(run["app"]["name"].as_str())
                .unwrap_or(event);
            Ok(Wake {
                message: format!(
                    "CI failed on {repo}#{number} ({name}, commit {}): {}",
                    sha.as_deref().unwrap_or("?"),
                    run["html_url"].as_str().unwrap_or_default()
                ),
                title: format!("{repo}#{number}"),
                pr: PrRef {
                    react_path: format!("/repos/{repo}/issues/{number}/reactions"),
                    repo: repo.clone(),
                    number,
                    head_sha: sha.clone(),
                    installation: None,
                },
                meta: json!({ "repository": repo, "number": number, "headSha": sha, "failed": name }),
            })
        }
        other => Err(format!("{other} events are not acted on")),
    }
}

/// Handles one GitHub delivery.
pub(crate) async fn receive(channel: Arc<Channel>, req: Request) -> Response {
    let Some(github) = channel.github.as_ref() else {
        return error(ErrorCode::NotFound, "not a GitHub channel");
    };
    let (headers, bytes) = match crate::admitted_body(&channel, req).await {
        Ok(admitted) => admitted,
        Err(answer) => return answer,
    };
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    };
    let (Some(event), Some(id)) = (text("x-github-event"), text("x-github-delivery")) else {
        return error(
            ErrorCode::InvalidRequest,
            "X-GitHub-Event and X-GitHub-Delivery headers are required (send GitHub webhooks here)",
        );
    };
    let body: Value = match serde_json::from_slice(&bytes) {
        Ok(body) => body,
        Err(err) => {
            return error(
                ErrorCode::InvalidRequest,
                format!(
                    "body: not JSON ({err}); set the webhook's content type to application/json"
                ),
            );
        }
    };
    let route = match body["action"].as_str() {
        Some(action) => format!("{event}.{action}"),
        None => event.clone(),
    };
    let (work, ignored) = match interpret(github, &event, &body) {
        Ok(wake) => (
            Some(Work {
                message: wake.message,
                continuation: Some(format!("pr:{}#{}", wake.pr.repo, wake.pr.number)),
                title: Some(wake.title),
                admission: Admission::Coalesce,
                workspace_files: BTreeMap::new(),
                body: json!({ "pr": wake.pr, "meta": wake.meta }),
                stop: false,
            }),
            None,
        ),
        Err(reason) => (None, Some(reason)),
    };
    acknowledge(
        channel.clone(),
        Received {
            id,
            received_at: Utc::now(),
            route,
            work,
            ignored,
            retry: None,
        },
    )
    .await
}
