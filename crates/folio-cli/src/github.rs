//! `folio github replay`: turns a real pull request (its URL, read through the GitHub API) or a
//! saved webhook payload into a signed GitHub delivery — body and headers written to a fixtures
//! folder, and optionally POSTed to a running channel — for local runs and evals.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// `folio github …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum GithubCommand {
    /// Turn a pull request URL or a saved payload file into a signed delivery.
    Replay(ReplayArgs),
}

/// Arguments of `folio github replay`.
#[derive(Debug, clap::Args)]
pub(crate) struct ReplayArgs {
    /// `https://github.com/owner/repo/pull/N`, or a saved webhook payload (JSON file).
    source: String,
    /// Where the delivery is written (`<id>.body.json`, the exact signed bytes, and
    /// `<id>.headers.json`).
    #[arg(long)]
    fixtures_dir: PathBuf,
    /// The `X-GitHub-Event` of a payload file (default: inferred; a PR URL is `pull_request`).
    #[arg(long)]
    event: Option<String>,
    /// The environment variable holding the webhook secret the channel checks.
    #[arg(long, default_value = "GITHUB_WEBHOOK_SECRET")]
    secret_env: String,
    /// The GitHub API a PR URL is read from (token in `GITHUB_TOKEN` when set).
    #[arg(long, default_value = "https://api.github.com")]
    api_base_url: String,
    /// Also POST the delivery to this channel URL (`http://127.0.0.1:3000/<slug>/v1/channels/<id>`).
    #[arg(long)]
    deliver: Option<String>,
}

/// Runs `folio github …`.
pub(crate) fn github(command: GithubCommand) -> anyhow::Result<ExitCode> {
    let GithubCommand::Replay(args) = command;
    crate::serve::runtime()?.block_on(replay(args))
}

async fn replay(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let secret = std::env::var(&args.secret_env).with_context(|| {
        format!(
            "{} is not set: set it to the webhook secret of the channel (or pass --secret-env)",
            args.secret_env
        )
    })?;
    let client = reqwest::Client::new();
    let (event, payload) = match pull_url(&args.source) {
        Some((repo, number)) => (
            "pull_request".to_string(),
            fetch_pull(&client, &args.api_base_url, &repo, number).await?,
        ),
        None => {
            let path = Path::new(&args.source);
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the payload {}", path.display()))?;
            let payload: Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not a JSON webhook payload", path.display()))?;
            let event = match &args.event {
                Some(event) => event.clone(),
                None => infer_event(&payload).with_context(|| {
                    format!("cannot tell the event of {}: pass --event", path.display())
                })?,
            };
            (event, payload)
        }
    };
    let body = serde_json::to_string(&payload)?;
    let id = format!("replay-{}", ulid::Ulid::generate());
    let signature = format!(
        "sha256={}",
        folio_channels::sign_hex(secret.as_bytes(), &[body.as_bytes()])
    );
    let headers = json!({
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": id,
        "X-Hub-Signature-256": signature,
    });
    std::fs::create_dir_all(&args.fixtures_dir)
        .with_context(|| format!("cannot create {}", args.fixtures_dir.display()))?;
    let body_file = args.fixtures_dir.join(format!("{id}.body.json"));
    std::fs::write(&body_file, &body)
        .with_context(|| format!("cannot write {}", body_file.display()))?;
    let headers_file = args.fixtures_dir.join(format!("{id}.headers.json"));
    std::fs::write(&headers_file, serde_json::to_string_pretty(&headers)?)
        .with_context(|| format!("cannot write {}", headers_file.display()))?;
    println!("{}", body_file.display());
    println!("{}", headers_file.display());
    let Some(url) = &args.deliver else {
        return Ok(ExitCode::SUCCESS);
    };
    let mut request = client.post(url).body(body);
    for (name, value) in headers.as_object().into_iter().flatten() {
        request = request.header(name.as_str(), value.as_str().unwrap_or_default());
    }
    let answer = request
        .send()
        .await
        .with_context(|| format!("cannot POST the delivery to {url}"))?;
    let status = answer.status();
    let text = answer.text().await.unwrap_or_default();
    println!("{} {text}", status.as_u16());
    if !status.is_success() {
        bail!("{url} answered {status}: {text}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `(owner/repo, N)` of `https://github.com/owner/repo/pull/N`.
fn pull_url(source: &str) -> Option<(String, u64)> {
    let rest = source
        .strip_prefix("https://github.com/")
        .or_else(|| source.strip_prefix("http://github.com/"))?;
    let parts: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    match parts.as_slice() {
        [owner, repo, "pull", number, ..] => {
            Some((format!("{owner}/{repo}"), number.parse().ok()?))
        }
        _ => None,
    }
}

/// The event of a saved payload, from the keys GitHub's payloads carry.
fn infer_event(payload: &Value) -> Option<String> {
    let event = if payload.get("comment").is_some() && payload.get("pull_request").is_some() {
        "pull_request_review_comment"
    } else if payload.get("comment").is_some() && payload.get("issue").is_some() {
        "issue_comment"
    } else if payload.get("pull_request").is_some() {
        "pull_request"
    } else if payload.get("check_suite").is_some() {
        "check_suite"
    } else if payload.get("workflow_run").is_some() {
        "workflow_run"
    } else {
        return None;
    };
    Some(event.to_string())
}

/// A `pull_request` `opened` payload built from the API's view of the PR.
async fn fetch_pull(
    client: &reqwest::Client,
    api: &str,
    repo: &str,
    number: u64,
) -> anyhow::Result<Value> {
    let url = format!("{}/repos/{repo}/pulls/{number}", api.trim_end_matches('/'));
    let mut request = client
        .get(&url)
        .header("accept", "application/vnd.github+json")
        .header("user-agent", "folio");
    if let Ok(token) = std::env::var("GITHUB_TOKEN") {
        request = request.bearer_auth(token);
    }
    let answer = request
        .send()
        .await
        .with_context(|| format!("cannot read {url}"))?;
    if !answer.status().is_success() {
        bail!(
            "{url} answered {} (private repositories need GITHUB_TOKEN)",
            answer.status()
        );
    }
    let pull: Value = answer
        .json()
        .await
        .with_context(|| format!("{url}: not JSON"))?;
    Ok(json!({
        "action": "opened",
        "number": number,
        "pull_request": pull,
        "repository": pull["base"]["repo"],
        "sender": pull["user"],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_urls_and_events_are_recognised() {
        assert_eq!(
            pull_url("https://github.com/o/r/pull/12/files"),
            Some(("o/r".into(), 12))
        );
        assert_eq!(pull_url("https://github.com/o/r/issues/12"), None);
        assert_eq!(pull_url("payload.json"), None);
        assert_eq!(
            infer_event(&json!({"comment": {}, "issue": {}})).as_deref(),
            Some("issue_comment")
        );
        assert_eq!(infer_event(&json!({"zen": "ok"})), None);
    }
}
