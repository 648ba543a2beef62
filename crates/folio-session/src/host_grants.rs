//! The host API's live credentials: each token's grant (session, call, principal, agent), the
//! address grants carry, and each session's call budget (a token bucket). The engine holds
//! one [`HostGrants`]; the `host` module issues and serves grants.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use folio_agent::HostCaller;

use crate::sync::lock;

/// Calls a session's processes may make at once before the bucket empties.
pub const BURST: u32 = 200;
/// Calls per second the bucket refills.
pub const CALLS_PER_SECOND: u32 = 50;
/// The longest log line a call may write, in bytes.
pub const MAX_LOG_BYTES: usize = 8 * 1024;

/// What a token grants: one call's session, principal, agent and (for a tool) its context.
pub struct Grant {
    /// The session.
    pub session_id: String,
    /// The tool call (or `hook_<name>_<index>`) the token was issued for.
    pub call_id: String,
    /// The session's principal.
    pub principal: String,
    /// The agent's name.
    pub agent: String,
    pub(crate) turn_id: Option<String>,
    pub(crate) caller: HostCaller,
    pub(crate) span: tracing::Span,
}

impl Grant {
    /// Whether the call runs inside its session's actor (a direct tool call, outside any
    /// turn), so that what it records is written without the actor.
    pub(crate) fn inside_actor(&self) -> bool {
        matches!(&self.caller, HostCaller::Tool { context, .. } if context.turn_id.is_none())
    }
}

/// Issued tokens, the address they are valid at, and each session's call budget.
#[derive(Default)]
pub(crate) struct HostGrants {
    pub(crate) url: RwLock<Option<String>>,
    pub(crate) tokens: Arc<Mutex<HashMap<String, Arc<Grant>>>>,
    buckets: Mutex<HashMap<String, Bucket>>,
}

/// A token bucket: calls left and when it was last refilled.
struct Bucket {
    left: f64,
    at: Instant,
}

impl HostGrants {
    /// Takes one call from `session_id`'s bucket; `Err(wait)` when it is empty.
    pub(crate) fn take(&self, session_id: &str) -> Result<(), Duration> {
        let now = Instant::now();
        let mut buckets = lock(&self.buckets);
        if buckets.len() > 10_000 {
            // Forget the full buckets of sessions that stopped calling.
            buckets.retain(|_, bucket| {
                now.duration_since(bucket.at).as_secs_f64() * f64::from(CALLS_PER_SECOND)
                    < f64::from(BURST)
            });
        }
        let bucket = buckets.entry(session_id.to_string()).or_insert(Bucket {
            left: f64::from(BURST),
            at: now,
        });
        let refill = now.duration_since(bucket.at).as_secs_f64() * f64::from(CALLS_PER_SECOND);
        bucket.left = (bucket.left + refill).min(f64::from(BURST));
        bucket.at = now;
        if bucket.left >= 1.0 {
            bucket.left -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                (1.0 - bucket.left) / f64::from(CALLS_PER_SECOND),
            ))
        }
    }
}
