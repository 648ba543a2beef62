//! A/B variants in the engine: the variant a new session is assigned once ([`assign`], recorded
//! as `ab.assigned` and kept in its metadata), and how each variant does over the sessions
//! assigned to it ([`stats`], `GET /v1/variants`).

use std::collections::BTreeMap;

use folio_agent::AgentDefinition;
use folio_project::{AssignKey, assign_variant};
use folio_protocol::{
    AbAssigned, ApprovalDecision, EventBody, OkTrue, TURN_INTERRUPTED, Usage, VariantStats,
    VariantStatus, VariantsResponse,
};

use crate::engine::Engine;
use crate::error::{ManagerError, store_error};
use crate::state::VariantChoice;

/// The reason `ab.assigned` records for a variant its creator chose (`folio eval --variants`,
/// a fork keeping its original's).
pub(crate) const REQUESTED: &str = "requested";

/// What a new session's variant is chosen from.
pub(crate) struct NewSessionKey<'a> {
    pub(crate) session_id: &'a str,
    pub(crate) continuation_key: Option<&'a str>,
    pub(crate) principal: &'a str,
    /// What its creator asked for.
    pub(crate) choice: &'a VariantChoice,
}

/// A new session's variant and the event recording it.
pub(crate) struct Assigned {
    pub(crate) variant: String,
    pub(crate) event: AbAssigned,
}

/// The variant a new session runs with: the one its creator chose (which must be defined),
/// none when it asked for none, else [`assign_variant`]'s pick (`None` when the agent has no
/// variant to assign).
pub(crate) fn assign(
    definition: &AgentDefinition,
    key: &NewSessionKey<'_>,
) -> Result<Option<Assigned>, ManagerError> {
    let assigned = |variant: &str, reason: &str| Assigned {
        variant: variant.to_string(),
        event: AbAssigned {
            experiment: definition.experiment.clone(),
            variant: variant.to_string(),
            reason: Some(reason.to_string()),
        },
    };
    let chosen = match key.choice {
        VariantChoice::Unassigned => return Ok(None),
        VariantChoice::Chosen(chosen) => Some(chosen.as_str()),
        VariantChoice::Assign => None,
    };
    if let Some(chosen) = chosen {
        if !definition.variants.iter().any(|v| v.name == chosen) {
            let defined: Vec<&str> = definition
                .variants
                .iter()
                .map(|v| v.name.as_str())
                .collect();
            return Err(ManagerError::Invalid(format!(
                "variant \"{chosen}\" is not defined in agent.toml (defined: {}); add [variants.{chosen}] or pick one of them",
                if defined.is_empty() {
                    "none".to_string()
                } else {
                    defined.join(", ")
                }
            )));
        }
        return Ok(Some(assigned(chosen, REQUESTED)));
    }
    let picked = assign_variant(
        &definition.variants,
        AssignKey {
            experiment: &definition.experiment,
            session_id: key.session_id,
            continuation_key: key.continuation_key,
            principal: key.principal,
        },
    );
    Ok(picked.map(|(variant, reason)| assigned(&variant.name, reason.as_str())))
}

/// What one variant's sessions add up to so far.
#[derive(Default)]
struct Tally {
    sessions: u64,
    turns: u64,
    failures: u64,
    approvals_denied: u64,
    usage: Vec<Usage>,
    durations: Vec<u64>,
}

/// How each variant does: every session (of every principal) assigned one, its turns,
/// failures, tokens and cost, its completed turns' latency and its denied approvals, read
/// from its metadata and log. Variants the agent defines come first, by name, then those only
/// past sessions name.
pub(crate) async fn stats(engine: &Engine) -> Result<VariantsResponse, ManagerError> {
    let agent = engine.agent();
    let definition = &agent.definition;
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    let mut before = None;
    const PAGE: usize = 200;
    loop {
        // The store's index serves the filter: sessions without a variant are not read.
        let query = folio_store::ListQuery {
            principal: None,
            before: before.take(),
            limit: PAGE,
            filter: folio_store::SessionFilter {
                field: Some(folio_store::FieldFilter {
                    key: folio_store::MetaKey::Variant,
                    value: None,
                }),
                ..Default::default()
            },
        };
        let page = engine
            .store
            .list_sessions(&query)
            .await
            .map_err(|err| store_error("cannot list sessions", err))?;
        let full = page.len() == PAGE;
        before = page.last().map(|meta| meta.session_id.clone());
        for stored in page {
            let meta = crate::queries::current_meta(engine, stored).await;
            let Some(variant) = meta.variant.clone() else {
                continue;
            };
            let tally = tallies.entry(variant).or_default();
            tally.sessions += 1;
            tally.turns += u64::from(meta.turns);
            tally.usage.push(meta.usage);
            for event in crate::events::all_events(engine, &meta.session_id).await? {
                match event.body {
                    EventBody::TurnCompleted(completed) => {
                        tally.durations.push(completed.duration_ms);
                    }
                    EventBody::TurnFailed(failed) if failed.message != TURN_INTERRUPTED => {
                        tally.failures += 1;
                    }
                    EventBody::ActionApprovalResolved(resolved)
                        if resolved.decision == ApprovalDecision::Deny =>
                    {
                        tally.approvals_denied += 1;
                    }
                    _ => {}
                }
            }
        }
        if !full {
            break;
        }
    }
    let defined = definition.variants.iter().map(|variant| {
        let status = if variant.enabled {
            VariantStatus::Enabled
        } else {
            VariantStatus::Disabled
        };
        let tally = tallies.remove(&variant.name).unwrap_or_default();
        row(&variant.name, status, variant.weight, tally)
    });
    let mut variants: Vec<VariantStats> = defined.collect();
    variants.extend(
        tallies
            .into_iter()
            .map(|(name, tally)| row(&name, VariantStatus::Removed, 0, tally)),
    );
    Ok(VariantsResponse {
        ok: OkTrue,
        experiment: definition.experiment.clone(),
        variants,
    })
}

/// One variant's row of `GET /v1/variants`.
fn row(name: &str, status: VariantStatus, weight: u32, mut tally: Tally) -> VariantStats {
    tally.durations.sort_unstable();
    VariantStats {
        name: name.to_string(),
        status,
        weight,
        sessions: tally.sessions,
        turns: tally.turns,
        failures: tally.failures,
        approvals_denied: tally.approvals_denied,
        usage: tally.usage.into_iter().sum(),
        latency_p50_ms: percentile(&tally.durations, 50),
        latency_p95_ms: percentile(&tally.durations, 95),
    }
}

/// The `p`th percentile of `sorted` (nearest rank); `None` when it is empty.
fn percentile(sorted: &[u64], p: usize) -> Option<u64> {
    let rank = (sorted.len() * p).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn percentiles_are_nearest_rank() {
        assert_eq!(percentile(&[], 50), None);
        assert_eq!(percentile(&[7], 95), Some(7));
        let hundred: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&hundred, 50), Some(50));
        assert_eq!(percentile(&hundred, 95), Some(95));
        assert_eq!(percentile(&[10, 20, 30, 40], 50), Some(20));
    }
}
