//! `WebSearch`: one query through the backend of `[tools.web_search]` (SearXNG, Brave, Tavily
//! or a local command); results as title / URL / snippet, large output spilled to scratch like
//! `WebFetch`'s (docs/filesystem.md "`/tmp` scratch").
//!
//! **Decisions (Folio):** the model passes only `query`; how many results come back is the
//! agent's choice (`max_results`, default 10, at most 20 asked of the hosted APIs). The API key
//! is read from the environment at each call, so a key set after start is used. A search with
//! no result is a success that says so; every failure is a tool error naming the provider, what
//! went wrong and what to change.

use std::path::{Path, PathBuf};
use std::time::Duration;

use folio_project::{SearchProvider, WebSearchConfig};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::process::Command;

use super::input;
use super::process::{Finished, Outcome, resolve_program, run_in_group, tail_lines};
use super::spill::spill_if_large;
use super::web::{WebClientError, read_capped, web_client};
use super::{Tool, ToolContext, ToolError, ToolOutput};
use crate::env::EnvLookup;

/// Results kept when `max_results` is omitted.
const DEFAULT_MAX_RESULTS: usize = 10;
/// The most results the hosted APIs (Brave, Tavily) are asked for in one request.
const API_MAX_COUNT: usize = 20;
/// Seconds a search may take when `timeout_secs` is omitted.
const DEFAULT_TIMEOUT_SECS: u64 = 30;
/// How much of an unexpected body an error message quotes.
const EXCERPT_CHARS: usize = 300;

/// `WebSearch`'s arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WebSearchInput {
    /// What to search the web for.
    query: String,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct SearchHit {
    /// The page title.
    #[serde(default)]
    title: String,
    /// The page URL.
    url: String,
    /// A short excerpt of the page.
    #[serde(default)]
    snippet: String,
}

/// The `WebSearch` tool over one configured backend.
#[derive(Clone)]
pub struct WebSearchTool {
    config: WebSearchConfig,
    client: reqwest::Client,
    env: EnvLookup,
    agent_dir: PathBuf,
}

impl std::fmt::Debug for WebSearchTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSearchTool")
            .field("provider", &self.config.provider)
            .field("endpoint", &self.config.endpoint)
            .finish_non_exhaustive()
    }
}

impl WebSearchTool {
    /// A search tool for `config`; a `command` backend resolves against `agent_dir`, API keys
    /// are looked up in `env` at each call.
    pub fn new(
        config: WebSearchConfig,
        agent_dir: &Path,
        env: EnvLookup,
    ) -> Result<Self, WebClientError> {
        let timeout =
            Duration::from_secs(config.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1));
        Ok(WebSearchTool {
            client: web_client(timeout)?,
            config,
            env,
            agent_dir: agent_dir.to_path_buf(),
        })
    }

    fn max_results(&self) -> usize {
        self.config
            .max_results
            .map_or(DEFAULT_MAX_RESULTS, |n| n.max(1) as usize)
    }

    fn provider(&self) -> &'static str {
        self.config.provider.as_str()
    }

    fn endpoint(&self) -> Result<&str, ToolError> {
        self.config
            .endpoint
            .as_deref()
            .or(self.config.provider.default_endpoint())
            .ok_or_else(|| {
                ToolError(format!(
                    "WebSearch: provider \"{}\" has no endpoint; set [tools.web_search] endpoint in agent.toml",
                    self.provider()
                ))
            })
    }

    /// The endpoint with `params` as its query string.
    fn url_with(&self, params: &[(&str, &str)]) -> Result<reqwest::Url, ToolError> {
        let endpoint = self.endpoint()?;
        reqwest::Url::parse_with_params(endpoint, params).map_err(|err| {
            ToolError(format!(
                "WebSearch: endpoint \"{endpoint}\" is not a URL ({err}); fix [tools.web_search] endpoint in agent.toml"
            ))
        })
    }

    /// The API key, when the provider takes one: required for Brave and Tavily, optional
    /// (a bearer token) for SearXNG.
    fn api_key(&self) -> Result<Option<String>, ToolError> {
        let provider = self.config.provider;
        let Some(var) = self
            .config
            .api_key_env
            .as_deref()
            .or(provider.default_key_env())
        else {
            return Ok(None);
        };
        match (self.env)(var).filter(|key| !key.is_empty()) {
            Some(key) => Ok(Some(key)),
            None => Err(ToolError(format!(
                "WebSearch: the API key variable {var} is not set; set it to your {} API key (or name another variable with [tools.web_search] api_key_env)",
                match provider {
                    SearchProvider::Brave => "Brave Search",
                    SearchProvider::Tavily => "Tavily",
                    SearchProvider::Searxng => "SearXNG",
                    SearchProvider::Command => "search",
                }
            ))),
        }
    }

    async fn search(&self, query: &str, ctx: &ToolContext) -> Result<Vec<SearchHit>, ToolError> {
        let count = self.max_results().min(API_MAX_COUNT);
        let mut hits = match self.config.provider {
            SearchProvider::Searxng => {
                let mut request = self
                    .client
                    .get(self.url_with(&[("q", query), ("format", "json")])?);
                if let Some(key) = self.api_key()? {
                    request = request.bearer_auth(key);
                }
                let body: SearxngResponse = self.send(request).await?;
                body.results
                    .into_iter()
                    .map(|r| SearchHit {
                        title: r.title,
                        url: r.url,
                        snippet: r.content.unwrap_or_default(),
                    })
                    .collect()
            }
            SearchProvider::Brave => {
                let key = self.api_key()?.unwrap_or_default();
                let count = count.to_string();
                let request = self
                    .client
                    .get(self.url_with(&[("q", query), ("count", count.as_str())])?)
                    .header(reqwest::header::ACCEPT, "application/json")
                    .header("X-Subscription-Token", key);
                let body: BraveResponse = self.send(request).await?;
                // Brave marks the query's words in titles and descriptions with HTML tags.
                body.web
                    .map(|web| web.results)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|r| SearchHit {
                        title: strip_tags(&r.title),
                        url: r.url,
                        snippet: strip_tags(&r.description.unwrap_or_default()),
                    })
                    .collect()
            }
            SearchProvider::Tavily => {
                let key = self.api_key()?.unwrap_or_default();
                let request = self
                    .client
                    .post(self.endpoint()?)
                    .bearer_auth(key)
                    .json(&json!({"query": query, "max_results": count}));
                let body: TavilyResponse = self.send(request).await?;
                body.results
                    .into_iter()
                    .map(|r| SearchHit {
                        title: r.title,
                        url: r.url,
                        snippet: r.content.unwrap_or_default(),
                    })
                    .collect()
            }
            SearchProvider::Command => self.run_command(query, ctx).await?,
        };
        hits.truncate(self.max_results());
        Ok(hits)
    }

    /// Sends `request` and reads the provider's JSON answer, or says why not.
    async fn send<T: for<'de> Deserialize<'de>>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, ToolError> {
        let provider = self.provider();
        let endpoint = self.endpoint()?;
        let mut response = request.send().await.map_err(|err| {
            ToolError(format!(
                "WebSearch: could not reach {provider} at {endpoint}: {err} (check [tools.web_search] endpoint and that the service is up)"
            ))
        })?;
        let status = response.status();
        let body = read_capped(&mut response).await.map_err(|err| {
            ToolError(format!(
                "WebSearch: {provider} at {endpoint} failed while answering: {err}"
            ))
        })?;
        let text = String::from_utf8_lossy(&body);
        if !status.is_success() {
            let hint = match (self.config.provider, status.as_u16()) {
                (SearchProvider::Searxng, 403) => {
                    "; enable the json format in the instance's settings (search.formats)"
                }
                (_, 401 | 403) => "; check the API key",
                (_, 429) => "; the API's rate limit was hit, try again later",
                _ => "",
            };
            return Err(ToolError(format!(
                "WebSearch: {provider} answered {status}: {}{hint}",
                excerpt(&text)
            )));
        }
        serde_json::from_slice(&body).map_err(|err| {
            ToolError(format!(
                "WebSearch: {provider} at {endpoint} answered with something that is not its search JSON ({err}): {}",
                excerpt(&text)
            ))
        })
    }

    /// Runs the `command` backend: `{"query", "maxResults"}` on stdin; stdout is a JSON array
    /// of `{title, url, snippet}` or an object with such a `results` array.
    async fn run_command(
        &self,
        query: &str,
        ctx: &ToolContext,
    ) -> Result<Vec<SearchHit>, ToolError> {
        let argv = self.config.command.as_deref().unwrap_or_default();
        let Some((program, args)) = argv.split_first() else {
            return Err(ToolError(
                "WebSearch: provider \"command\" has no command; set [tools.web_search] command in agent.toml".into(),
            ));
        };
        let mut command = Command::new(resolve_program(program, &self.agent_dir));
        command.args(args).current_dir(&self.agent_dir);
        let stdin = json!({"query": query, "maxResults": self.max_results()});
        let timeout = Duration::from_secs(
            self.config
                .timeout_secs
                .unwrap_or(DEFAULT_TIMEOUT_SECS)
                .max(1),
        );
        let Finished {
            outcome,
            stdout,
            stderr,
        } = run_in_group(command, Some(stdin.to_string().into_bytes()), timeout, &ctx.cancel)
            .await
            .map_err(|err| {
                ToolError(format!(
                    "WebSearch: could not start the search command {program}: {err} (check [tools.web_search] command)"
                ))
            })?;
        match outcome {
            Outcome::Exited(status) if status.success() => {}
            Outcome::Exited(status) => {
                return Err(ToolError(format!(
                    "WebSearch: the search command {program} failed ({status}): {}",
                    tail_lines(&stderr, 20)
                )));
            }
            Outcome::TimedOut => {
                return Err(ToolError(format!(
                    "WebSearch: the search command {program} ran past {}s and was killed (raise [tools.web_search] timeout_secs)",
                    timeout.as_secs()
                )));
            }
            Outcome::Cancelled => {
                return Err(ToolError("search cancelled: the turn was stopped".into()));
            }
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum CommandOutput {
            List(Vec<SearchHit>),
            Object { results: Vec<SearchHit> },
        }
        match serde_json::from_str::<CommandOutput>(&stdout) {
            Ok(CommandOutput::List(hits) | CommandOutput::Object { results: hits }) => Ok(hits),
            Err(err) => Err(ToolError(format!(
                "WebSearch: the search command {program} printed something that is not a JSON list of {{title, url, snippet}} ({err}): {}",
                excerpt(&stdout)
            ))),
        }
    }
}

/// The first [`EXCERPT_CHARS`] characters of `text`, trimmed.
fn excerpt(text: &str) -> String {
    text.trim().chars().take(EXCERPT_CHARS).collect()
}

/// `text` without HTML tags and with the common entities decoded (Brave's highlighting).
fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The model-facing text of a search: numbered results, one title / URL / snippet block each.
pub(crate) fn render(query: &str, hits: &[SearchHit]) -> String {
    if hits.is_empty() {
        return format!("No web results for \"{query}\".");
    }
    let mut out = format!("Web results for \"{query}\":\n");
    for (n, hit) in hits.iter().enumerate() {
        let squash = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
        out.push_str(&format!(
            "\n{}. {}\n   {}\n",
            n + 1,
            squash(&hit.title),
            hit.url.trim()
        ));
        let snippet = squash(&hit.snippet);
        if !snippet.is_empty() {
            out.push_str(&format!("   {snippet}\n"));
        }
    }
    out
}

/// SearXNG's `format=json` answer (the fields used).
#[derive(Deserialize)]
struct SearxngResponse {
    results: Vec<SearxngResult>,
}

#[derive(Deserialize)]
struct SearxngResult {
    url: String,
    #[serde(default)]
    title: String,
    content: Option<String>,
}

/// The Brave Search API's web search answer (the fields used).
#[derive(Deserialize)]
struct BraveResponse {
    web: Option<BraveWeb>,
}

#[derive(Deserialize)]
struct BraveWeb {
    results: Vec<BraveResult>,
}

#[derive(Deserialize)]
struct BraveResult {
    #[serde(default)]
    title: String,
    url: String,
    description: Option<String>,
}

/// Tavily's search answer (the fields used).
#[derive(Deserialize)]
struct TavilyResponse {
    results: Vec<TavilyResult>,
}

#[derive(Deserialize)]
struct TavilyResult {
    #[serde(default)]
    title: String,
    url: String,
    content: Option<String>,
}

#[async_trait::async_trait]
impl Tool for WebSearchTool {
    fn name(&self) -> &str {
        "WebSearch"
    }

    fn description(&self) -> &str {
        "Search the web. Returns the title, URL and a snippet of each result; fetch a page with WebFetch."
    }

    fn input_schema(&self) -> Value {
        input::schema::<WebSearchInput>()
    }

    fn prepare(&self, input: Value) -> Result<Value, ToolError> {
        input::prepare::<WebSearchInput>(input)
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let WebSearchInput { query } = input::parse(input)?;
        let query = query.trim();
        if query.is_empty() {
            return Err(ToolError(
                "argument \"query\" is empty; say what to search for".into(),
            ));
        }
        let hits = tokio::select! {
            result = self.search(query, ctx) => result?,
            () = ctx.cancel.cancelled() => return Err(ToolError("search cancelled: the turn was stopped".into())),
        };
        Ok(ToolOutput::Text(
            spill_if_large(ctx, render(query, &hits)).await?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_brave_highlighting() {
        assert_eq!(
            strip_tags("The <strong>Rust</strong> &amp; <em>Cargo</em> book &lt;3"),
            "The Rust & Cargo book <3"
        );
    }

    #[test]
    fn renders_numbered_blocks_and_the_empty_case() {
        let hits = [SearchHit {
            title: "A\ntitle".into(),
            url: "https://a.example/".into(),
            snippet: "  two\n\nlines ".into(),
        }];
        assert_eq!(
            render("q", &hits),
            "Web results for \"q\":\n\n1. A title\n   https://a.example/\n   two lines\n"
        );
        assert_eq!(render("q", &[]), "No web results for \"q\".");
    }
}
