//! The [`Approvals`] handle: decisions on parked tool calls and answers to elicitations, and
//! MCP OAuth redirects handed to the turn waiting for them (passed to another server's turn on
//! a shared store).

use std::sync::Arc;

use folio_protocol::{ActionApprovalResolved, ApprovalRequest};
use tokio::sync::oneshot;

use crate::authorize::{
    AUTHORIZATIONS, AUTHORIZE_CLAIM, AUTHORIZE_DONE, AUTHORIZE_SIGNAL, AUTHORIZED_SIGNAL,
    Authorize, AuthorizeStep, Authorized,
};
use crate::command::Command;
use crate::engine::Engine;
use crate::error::{ManagerError, store_error};
use crate::remote::{MAX_SIGNAL, Owner, Remote};
use crate::sync::lock;

/// Decides what turns wait for: approvals, elicitations, MCP authorizations.
#[derive(Clone)]
pub struct Approvals {
    pub(crate) engine: Arc<Engine>,
}

impl Approvals {
    /// Resolves a parked approval (or answers an elicitation) as `principal`; a second
    /// decision is refused.
    pub async fn resolve(
        &self,
        principal: &str,
        session_id: &str,
        call_id: &str,
        request: ApprovalRequest,
    ) -> Result<(), ManagerError> {
        let live = self.engine.owned(principal, session_id).await?;
        let resolved = ActionApprovalResolved {
            call_id: call_id.to_string(),
            decision: request.decision,
            reason: request.reason,
            by: principal.to_string(),
            content: request.content,
        };
        // A turn parked on another server gets the decision there.
        if let Owner::Done = self.engine.own(&live, &Remote::resolve(&resolved)?).await? {
            return Ok(());
        }
        self.engine
            .command(&live, &Remote::Busy, |reply| Command::Resolve {
                resolved,
                reply,
            })
            .await?
    }

    /// Hands an MCP OAuth redirect (`query`, of `GET /v1/mcp-auth/callback`) to the turn
    /// parked on the authorization whose request carried `state`, and waits for the code
    /// exchange. The `state` is the capability: unguessable, single-use, and shown only in the
    /// owning session's events; whoever brings it back, the tokens go to that session's
    /// principal (the turn's own client stores them). On a shared store, a redirect reaching a
    /// server whose turns do not wait for it is passed to the server whose turn does (a signal
    /// every server hears), and answered once that server completed it. `NotFound`: no turn of
    /// this agent waits for that `state` (already used, or the server restarted: the turn asks
    /// again); `Invalid`: the authorization failed, saying why.
    pub async fn mcp_authorization_redirect(
        &self,
        state: &str,
        query: &str,
    ) -> Result<(), ManagerError> {
        match take_authorization(&self.engine, state) {
            Some(waiter) => complete_authorization(waiter, query).await,
            // On a shared store the turn may wait on another server.
            None => relay_authorization(&self.engine, state, query).await,
        }
    }
}

/// The waiter of the authorization `state` names, if a turn of this server waits for it.
fn take_authorization(
    engine: &Engine,
    state: &str,
) -> Option<oneshot::Sender<folio_agent::AuthorizationRedirect>> {
    engine
        .live
        .all()
        .iter()
        .find_map(|live| lock(&live.approvals).take_authorization(state))
}

/// Hands the redirect's `query` to the turn waiting for it and waits until the authorization
/// completed.
async fn complete_authorization(
    waiter: oneshot::Sender<folio_agent::AuthorizationRedirect>,
    query: &str,
) -> Result<(), ManagerError> {
    let (done, outcome) = oneshot::channel();
    let redirect = folio_agent::AuthorizationRedirect {
        query: query.to_string(),
        done,
    };
    if waiter.send(redirect).is_err() {
        return Err(ManagerError::NotFound(
            "the turn that waited for this authorization ended".into(),
        ));
    }
    match outcome.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(why)) => Err(ManagerError::Invalid(why.to_string())),
        Err(_) => Err(ManagerError::NotFound(
            "the turn that waited for this authorization ended before it completed".into(),
        )),
    }
}

/// Completes a relayed authorization redirect when a turn of this server waits for it,
/// answering the server it reached; or hands an answer to this server's relay.
pub(crate) fn on_authorization_signal(engine: &Arc<Engine>, message: &str) {
    if let Some(json) = message.strip_prefix(AUTHORIZE_SIGNAL) {
        let Ok(ask) = serde_json::from_str::<Authorize>(json) else {
            return;
        };
        let Some(waiter) = take_authorization(engine, &ask.state) else {
            return;
        };
        let engine = engine.clone();
        engine.clone().life.tasks.spawn(async move {
            answer(&engine, &ask, AuthorizeStep::Claimed).await;
            let done = complete_authorization(waiter, &ask.query).await;
            let step = AuthorizeStep::Done(done.err().map(|err| err.to_string()));
            answer(&engine, &ask, step).await;
        });
    } else if let Some(json) = message.strip_prefix(AUTHORIZED_SIGNAL) {
        let Ok(answer) = serde_json::from_str::<Authorized>(json) else {
            return;
        };
        engine.relays.deliver(answer);
    }
}

/// Tells the server `ask` came from where its authorization stands.
async fn answer(engine: &Engine, ask: &Authorize, step: AuthorizeStep) {
    let answer = Authorized {
        id: ask.id.clone(),
        to: ask.from.clone(),
        step,
    };
    let message = format!(
        "{AUTHORIZED_SIGNAL}{}",
        serde_json::to_string(&answer).unwrap_or_default()
    );
    if let Err(err) = engine.store.signal(AUTHORIZATIONS, &message).await {
        engine.logs.warn(format!(
            "the server a redirect of an MCP authorization reached was not told how it went: {err}"
        ));
    }
}

/// Passes an authorization redirect that no turn of this server waits for to the server whose
/// turn does, and waits for it to complete there.
async fn relay_authorization(
    engine: &Engine,
    state: &str,
    query: &str,
) -> Result<(), ManagerError> {
    // A `state` an authorization of this agent can have issued (a random URL-safe token):
    // anything else is answered here, without asking every server.
    let plausible = (8..=256).contains(&state.len())
        && state
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~'));
    if !plausible {
        return Err(not_waiting());
    }
    let ask = Authorize {
        id: ulid::Ulid::generate().to_string(),
        from: engine.lease.server.clone(),
        state: state.to_string(),
        query: query.to_string(),
    };
    let message = format!(
        "{AUTHORIZE_SIGNAL}{}",
        serde_json::to_string(&ask).unwrap_or_default()
    );
    if message.len() > MAX_SIGNAL {
        return Err(ManagerError::Invalid(
            "the authorization redirect is too long to pass to the server running the turn".into(),
        ));
    }
    let mut steps = engine.relays.start(&ask.id);
    let relayed = async {
        engine
            .store
            .signal(AUTHORIZATIONS, &message)
            .await
            .map_err(|err| store_error("cannot pass the authorization on", err))?;
        match tokio::time::timeout(AUTHORIZE_CLAIM, steps.recv()).await {
            Ok(Some(AuthorizeStep::Claimed)) => {}
            Ok(Some(AuthorizeStep::Done(failed))) => return done(failed),
            _ => return Err(not_waiting()),
        }
        match tokio::time::timeout(AUTHORIZE_DONE, steps.recv()).await {
            Ok(Some(AuthorizeStep::Done(failed))) => done(failed),
            _ => Err(ManagerError::internal(
                "the server running the turn did not say whether the authorization completed; the session shows whether the turn went on",
            )),
        }
    };
    let outcome = relayed.await;
    engine.relays.end(&ask.id);
    outcome
}

/// The error of a redirect no turn waits for.
fn not_waiting() -> ManagerError {
    ManagerError::NotFound(
        "no turn waits for this authorization: it was completed already, or the server restarted (the turn then asks again with a new URL)".into(),
    )
}

/// A relayed authorization's outcome as the server that completed it told it.
fn done(failed: Option<String>) -> Result<(), ManagerError> {
    match failed {
        None => Ok(()),
        Some(why) => Err(ManagerError::Invalid(why)),
    }
}
