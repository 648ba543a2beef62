//! `folio chat --url URL`: talk to a running agent, following the session's stream; a REPL
//! when no `--message` is given.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, bail};
use folio_protocol::{
    CreateSession, ErrorBody, Event, EventBody, FollowUp, FollowUpAccepted, SessionCreated,
};
use futures::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::serve::runtime;

/// Arguments of `folio chat`.
#[derive(Debug, clap::Args)]
pub(crate) struct ChatArgs {
    /// The agent's URL as `folio serve` printed it (e.g. `http://127.0.0.1:3000/demo`).
    #[arg(long)]
    url: String,
    /// Send this one message, print the reply and exit (otherwise read messages from stdin).
    #[arg(long)]
    message: Option<String>,
    /// Bearer token for a server started with `--bearer-token` or `--tokens-file`.
    #[arg(long, env = "FOLIO_TOKEN")]
    token: Option<String>,
}

struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

impl Client {
    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let request = self.http.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// Posts `body` and reads the answer as `T`, or the server's [`ErrorBody`] as the error.
    async fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
    ) -> anyhow::Result<T> {
        let response = self
            .request(reqwest::Method::POST, path)
            .json(body)
            .send()
            .await
            .with_context(|| format!("cannot reach {}", self.base))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .with_context(|| format!("{status}: the answer broke off"))?;
        if !status.is_success() {
            match serde_json::from_slice::<ErrorBody>(&bytes) {
                Ok(error) => bail!("{status}: {error}"),
                Err(_) => bail!(
                    "{status}: {} (not a Folio error body: is --url a Folio agent?)",
                    String::from_utf8_lossy(&bytes)
                ),
            }
        }
        serde_json::from_slice(&bytes).with_context(|| {
            format!("{status}: the answer is not what a Folio agent sends: is --url a Folio agent?")
        })
    }

    /// Follows the stream from `start` until the turn ends; prints the reply as it streams.
    /// Returns the next index and whether the turn completed.
    async fn follow(&self, session: &str, start: u64) -> anyhow::Result<(u64, bool)> {
        let response = self
            .request(
                reqwest::Method::GET,
                &format!("/v1/session/{session}/stream?startIndex={start}"),
            )
            .send()
            .await
            .context("cannot open the stream")?
            .error_for_status()?;
        let mut bytes = response.bytes_stream();
        let mut buffer = Vec::new();
        let mut next = start;
        let mut ok = false;
        let mut stdout = std::io::stdout();
        while let Some(chunk) = bytes.next().await {
            buffer.extend_from_slice(&chunk.context("the stream broke")?);
            while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let event: Event = serde_json::from_slice(&line).context("a bad stream line")?;
                next = event.index + 1;
                match &event.body {
                    EventBody::MessageAppended(delta) => {
                        print!("{}", delta.delta);
                        let _ = stdout.flush();
                    }
                    EventBody::ActionsRequested(requested) => {
                        for call in &requested.calls {
                            eprintln!("\n[tool {} {}]", call.tool, call.input);
                        }
                    }
                    EventBody::ActionApprovalRequested(requested) => eprintln!(
                        "\n[approval needed: {} {} — POST /v1/session/{session}/approvals/{}]",
                        requested.tool, requested.input, requested.call_id
                    ),
                    EventBody::TurnCompleted(_) => ok = true,
                    EventBody::TurnFailed(failed) => {
                        eprintln!("\n[turn failed: {}]", failed.message);
                        ok = false;
                    }
                    EventBody::SessionWaiting(_)
                    | EventBody::SessionCompleted(_)
                    | EventBody::SessionFailed(_) => {
                        println!();
                        return Ok((next, ok));
                    }
                    _ => {}
                }
            }
        }
        Ok((next, ok))
    }
}

/// Runs `folio chat`.
pub(crate) fn chat(args: ChatArgs) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        let client = Client {
            http: reqwest::Client::new(),
            base: args.url.trim_end_matches('/').to_string(),
            token: args.token.clone(),
        };
        let mut messages: Box<dyn Iterator<Item = String>> = match &args.message {
            Some(message) => Box::new(std::iter::once(message.clone())),
            None => {
                eprintln!("folio chat: type a message and press enter (Ctrl-D to quit)");
                Box::new(std::io::stdin().lines().map_while(Result::ok))
            }
        };
        let mut session: Option<(String, String)> = None;
        let mut next = 0;
        let mut all_ok = true;
        for message in messages.by_ref() {
            if message.trim().is_empty() {
                continue;
            }
            let (id, token) = match &session {
                None => {
                    let created: SessionCreated = client
                        .post("/v1/session", &CreateSession::message(message))
                        .await?;
                    (created.session_id, created.continuation_token)
                }
                Some((id, token)) => {
                    let sent: FollowUpAccepted = client
                        .post(
                            &format!("/v1/session/{id}"),
                            &FollowUp::new(token.clone(), message),
                        )
                        .await?;
                    (sent.session_id, sent.continuation_token)
                }
            };
            let (after, ok) = client.follow(&id, next).await?;
            next = after;
            all_ok &= ok;
            session = Some((id, token));
        }
        Ok(if all_ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    })
}
