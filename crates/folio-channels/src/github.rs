//! GitHub channels: `POST /v1/channels/<id>` receives GitHub webhooks (`X-GitHub-Event`,
//! `X-GitHub-Delivery`, `X-Hub-Signature-256`). Pull requests (opened, reopened, synchronize,
//! ready_for_review), PR comments mentioning `@bot_name` and failed check suites / workflow
//! runs wake the session `pr:owner/repo#N`; the bot's own comments and every other event are
//! recorded as ignored. Before the turn the channel writes `pr/diff.patch` and `pr/meta.json`
//! into the workspace and checks the PR's head out in `repo/` (`checkout`); a 👀 reaction marks
//! the work, replies post as PR comments, and check runs report each turn (queued →
//! in_progress → completed, their name, title, summary and details URL templated by
//! `[check]`), or, on a comment-only first wake, the banner comment.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use chrono::Utc;
use folio_protocol::{Admission, ErrorCode};
use serde_json::{Value, json};

use crate::acknowledge::acknowledge;
use crate::github_api::{Github, PrRef};
use crate::store::{Received, Work};
use crate::{Channel, error};

/// What a GitHub delivery asks: the message, the PR and its metadata, or why it is ignored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Wake {
    pub(crate) message: String,
    pub(crate) title: String,
    pub(crate) pr: PrRef,
    pub(crate) meta: Value,
}

/// Why a GitHub delivery is recorded as ignored (and wakes no session).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Ignored {
    /// The payload names no repository.
    #[error("the payload has no repository.full_name")]
    NoRepository,
    /// An action of an event that is not acted on (`pull_request.closed`).
    #[error("{event}.{action} is not acted on")]
    Action {
        /// The event (`X-GitHub-Event`).
        event: String,
        /// Its `action`.
        action: String,
    },
    /// An event that is not acted on at all.
    #[error("{event} events are not acted on")]
    Event {
        /// The event (`X-GitHub-Event`).
        event: String,
    },
    /// The payload names no pull request number.
    #[error("no PR number")]
    NoPrNumber,
    /// The payload names no issue number.
    #[error("no issue number")]
    NoIssueNumber,
    /// A comment by the bot itself.
    #[error("the bot's own comment (loop guard)")]
    OwnComment,
    /// A comment that does not mention the bot.
    #[error("the comment does not mention the bot")]
    NotMentioned,
    /// A comment on an issue.
    #[error("a comment on an issue, not a pull request")]
    IssueComment,
    /// A check suite or workflow run that did not fail.
    #[error("{event}.{action} did not fail")]
    DidNotFail {
        /// `check_suite` or `workflow_run`.
        event: String,
        /// Its `action`.
        action: String,
    },
    /// A failed check suite or workflow run of no pull request.
    #[error("the failed {event} belongs to no pull request")]
    NoPullRequest {
        /// `check_suite` or `workflow_run`.
        event: String,
    },
}

/// Reads event `event` (`X-GitHub-Event`) with payload `body`.
pub(crate) fn interpret(github: &Github, event: &str, body: &Value) -> Result<Wake, Ignored> {
    let mut wake = interpret_event(github, event, body)?;
    wake.pr.installation = body["installation"]["id"].as_u64();
    wake.pr.clone_url = body["repository"]["clone_url"].as_str().map(String::from);
    Ok(wake)
}

/// What `event` asks, before the installation is noted.
fn interpret_event(github: &Github, event: &str, body: &Value) -> Result<Wake, Ignored> {
    let action = body["action"].as_str().unwrap_or_default();
    let repo = body["repository"]["full_name"]
        .as_str()
        .ok_or(Ignored::NoRepository)?
        .to_string();
    let sender = body["sender"]["login"].as_str().unwrap_or_default();
    match event {
        "pull_request" => {
            if !["opened", "reopened", "synchronize", "ready_for_review"].contains(&action) {
                return Err(Ignored::Action {
                    event: event.to_string(),
                    action: action.to_string(),
                });
            }
            let pr = &body["pull_request"];
            let number = body["number"]
                .as_u64()
                .or(pr["number"].as_u64())
                .ok_or(Ignored::NoPrNumber)?;
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
                    clone_url: None,
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
                return Err(Ignored::Action {
                    event: event.to_string(),
                    action: action.to_string(),
                });
            }
            let comment = &body["comment"];
            let author = comment["user"]["login"].as_str().unwrap_or(sender);
            if github.is_bot(author) || github.is_bot(sender) {
                return Err(Ignored::OwnComment);
            }
            let text = comment["body"].as_str().unwrap_or_default();
            if !github.mentioned(text) {
                return Err(Ignored::NotMentioned);
            }
            let (number, title, url, react_path) = if event == "issue_comment" {
                let issue = &body["issue"];
                if issue.get("pull_request").is_none() {
                    return Err(Ignored::IssueComment);
                }
                (
                    issue["number"].as_u64().ok_or(Ignored::NoIssueNumber)?,
                    issue["title"].as_str().unwrap_or_default(),
                    issue["html_url"].as_str().unwrap_or_default(),
                    format!("/repos/{repo}/issues/comments/{}/reactions", comment["id"]),
                )
            } else {
                let pr = &body["pull_request"];
                (
                    pr["number"].as_u64().ok_or(Ignored::NoPrNumber)?,
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
                    clone_url: None,
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
                return Err(Ignored::DidNotFail {
                    event: event.to_string(),
                    action: action.to_string(),
                });
            }
            let number = run["pull_requests"][0]["number"].as_u64().ok_or_else(|| {
                Ignored::NoPullRequest {
                    event: event.to_string(),
                }
            })?;
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
                    clone_url: None,
                },
                meta: json!({ "repository": repo, "number": number, "headSha": sha, "failed": name }),
            })
        }
        other => Err(Ignored::Event {
            event: other.to_string(),
        }),
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
        Err(reason) => (None, Some(reason.to_string())),
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
