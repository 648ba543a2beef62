//! `WebFetch`: HTTP GET, HTML converted to Markdown, large output spilled to scratch.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::input;
use super::spill::spill_if_large;
use super::{Tool, ToolContext, ToolError, ToolOutput};

/// The largest response body read.
const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// `WebFetch`'s arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WebFetchInput {
    /// An http or https URL.
    url: String,
}

/// The `WebFetch` tool.
#[derive(Debug, Clone)]
pub struct WebFetchTool {
    client: reqwest::Client,
}

/// The HTTP client of a web tool could not be built (no TLS roots, a broken system setup).
#[derive(Debug, thiserror::Error)]
#[error("could not build the web tools' HTTP client: {0}")]
pub struct WebClientError(#[source] reqwest::Error);

/// The HTTP client of the web tools (`WebFetch`, `WebSearch`): `timeout` overall, up to 10
/// redirects, Folio's user agent.
pub(crate) fn web_client(timeout: Duration) -> Result<reqwest::Client, WebClientError> {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::limited(10))
        .user_agent(concat!("folio/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(WebClientError)
}

/// Reads a response body, keeping at most [`MAX_BODY_BYTES`].
pub(crate) async fn read_capped(
    response: &mut reqwest::Response,
) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_BODY_BYTES {
            body.truncate(MAX_BODY_BYTES);
            break;
        }
    }
    Ok(body)
}

impl WebFetchTool {
    /// A fetcher with a 30 s overall timeout and up to 10 redirects.
    pub fn new() -> Result<Self, WebClientError> {
        Ok(WebFetchTool {
            client: web_client(Duration::from_secs(30))?,
        })
    }
}

#[async_trait::async_trait]
impl Tool for WebFetchTool {
    fn name(&self) -> &str {
        "WebFetch"
    }

    fn description(&self) -> &str {
        "Fetch a URL with HTTP GET. HTML pages come back as Markdown."
    }

    fn input_schema(&self) -> Value {
        input::schema::<WebFetchInput>()
    }

    fn prepare(&self, input: Value) -> Result<Value, ToolError> {
        input::prepare::<WebFetchInput>(input)
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let WebFetchInput { url } = input::parse(input)?;
        let url = url.as_str();
        let parsed = reqwest::Url::parse(url)
            .map_err(|err| ToolError(format!("argument \"url\" is not a valid URL: {err}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ToolError(format!(
                "argument \"url\" must be http or https, got {}",
                parsed.scheme()
            )));
        }
        let fetch = async {
            let mut response = self
                .client
                .get(parsed.clone())
                .send()
                .await
                .map_err(|err| ToolError(format!("GET {url} failed: {err}")))?;
            let status = response.status();
            let is_html = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|ct| ct.contains("html"));
            let body = read_capped(&mut response)
                .await
                .map_err(|err| ToolError(format!("GET {url} failed while reading: {err}")))?;
            let text = String::from_utf8_lossy(&body).into_owned();
            if !status.is_success() {
                let excerpt: String = text.chars().take(300).collect();
                return Err(ToolError(format!("GET {url} answered {status}: {excerpt}")));
            }
            Ok(if is_html {
                htmd::convert(&text).unwrap_or(text)
            } else {
                text
            })
        };
        let text = tokio::select! {
            result = fetch => result?,
            () = ctx.cancel.cancelled() => return Err(ToolError("fetch cancelled: the turn was stopped".into())),
        };
        Ok(ToolOutput::Text(spill_if_large(ctx, text).await?))
    }
}
