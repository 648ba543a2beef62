//! The messages that pass an MCP OAuth redirect between servers sharing a store: a redirect
//! reaching a server whose turns do not wait for it is signalled to every server, and the one
//! whose turn waits answers how it went (the relay itself is in the `approvals` module).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::sync::lock;

/// The session id the signals carrying MCP authorization redirects use: not a session's (ids
/// are `ses_…`), heard by every server.
pub(crate) const AUTHORIZATIONS: &str = "mcp-auth";
/// The prefix of the signal passing an authorization redirect to whichever server has the turn
/// waiting for it ([`Authorize`] as JSON after the prefix).
pub(crate) const AUTHORIZE_SIGNAL: &str = "authorize ";
/// The prefix of that server's answers to the server the redirect reached ([`Authorized`]).
pub(crate) const AUTHORIZED_SIGNAL: &str = "authorized ";
/// How long the server a redirect reached waits for another to say it has the waiting turn.
pub(crate) const AUTHORIZE_CLAIM: Duration = Duration::from_secs(5);
/// How long it then waits for that server to complete the authorization.
pub(crate) const AUTHORIZE_DONE: Duration = Duration::from_secs(120);

/// An authorization redirect that reached a server whose turns do not wait for it.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Authorize {
    /// The relay's id, named in the answers.
    pub(crate) id: String,
    /// The server the redirect reached, which answers the browser.
    pub(crate) from: String,
    /// The redirect's `state`: which authorization it completes.
    pub(crate) state: String,
    /// The redirect's whole query string.
    pub(crate) query: String,
}

/// An answer to an [`Authorize`], from the server with the waiting turn.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Authorized {
    pub(crate) id: String,
    pub(crate) to: String,
    pub(crate) step: AuthorizeStep,
}

/// Where a relayed authorization stands.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum AuthorizeStep {
    /// The server with the waiting turn took the redirect.
    Claimed,
    /// It completed (`None`) or failed (why).
    Done(Option<String>),
}

/// The relays this server has under way, by relay id: where the answers to each go.
#[derive(Default)]
pub(crate) struct Relays(Mutex<HashMap<String, mpsc::UnboundedSender<AuthorizeStep>>>);

impl Relays {
    /// Starts relay `id`: its answers arrive on the returned receiver until [`Relays::end`].
    pub(crate) fn start(&self, id: &str) -> mpsc::UnboundedReceiver<AuthorizeStep> {
        let (relay, steps) = mpsc::unbounded_channel();
        lock(&self.0).insert(id.to_string(), relay);
        steps
    }

    /// Hands an answer to the relay it names, if it is still under way here.
    pub(crate) fn deliver(&self, answer: Authorized) {
        if let Some(relay) = lock(&self.0).get(&answer.id) {
            let _ = relay.send(answer.step);
        }
    }

    /// Ends relay `id`.
    pub(crate) fn end(&self, id: &str) {
        lock(&self.0).remove(id);
    }
}
