//! A/B variants: `[variants.<name>]` of `agent.toml` and `agent/variants/<name>.toml`, each a
//! named set of overrides (model, model parameters, instructions, tool allowlist, skills) with a
//! weight. Discovery checks them into [`VariantDefinition`]s; [`assign_variant`] picks the one a
//! new session runs with, once, by pin, continuation key or session id.

use std::collections::BTreeMap;
use std::path::{Component, Path};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::allowlist::{self, ALLOWLIST_NAMES, Backends, NativeTool, ROOT_FORBIDDEN};
use crate::config::{AgentConfig, VariantManifest};
use crate::naming::nearest_key;
use crate::report::{Report, is_slug, toml_files};
use crate::skills::Skill;

/// The folder of `agent/` holding one file per variant.
pub const VARIANTS_DIR: &str = "variants";

/// One checked variant.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantDefinition {
    /// The variant's name (the table key or the file name).
    pub name: String,
    /// Its share of new sessions among the enabled variants.
    pub weight: u32,
    /// Whether new sessions may be assigned to it.
    pub enabled: bool,
    /// Principals whose new sessions always get it.
    pub pin: Vec<String>,
    /// `provider:model` instead of the agent's.
    pub model: Option<String>,
    /// Merged over the agent's `model_params`.
    pub model_params: Map<String, Value>,
    /// The instructions instead of the agent's (the file's text).
    pub instructions: Option<String>,
    /// The built-in tools instead of the agent's (the allowlist resolved).
    pub native_tools: Option<Vec<NativeTool>>,
    /// The names of the skills it offers (`None`: every skill).
    pub skills: Option<Vec<String>>,
}

/// Why a session got its variant (`ab.assigned {reason}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssignReason {
    /// The session's principal is pinned to the variant.
    Pinned,
    /// The session's continuation key hashes to it (every session of the key gets it).
    ContinuationKey,
    /// The session's id hashes to it, by the variants' weights.
    Weight,
}

impl AssignReason {
    /// The reason as `ab.assigned` records it.
    pub fn as_str(self) -> &'static str {
        match self {
            AssignReason::Pinned => "pinned",
            AssignReason::ContinuationKey => "continuation_key",
            AssignReason::Weight => "weight",
        }
    }
}

/// What a new session is assigned from.
#[derive(Debug, Clone, Copy)]
pub struct AssignKey<'a> {
    /// The experiment (the hash is salted with it, so two experiments split independently).
    pub experiment: &'a str,
    /// The new session's id.
    pub session_id: &'a str,
    /// Its continuation key, when it has one.
    pub continuation_key: Option<&'a str>,
    /// Its principal.
    pub principal: &'a str,
}

/// The variant a new session gets: the one pinning its principal, else by the hash of its
/// continuation key (so every session of a key gets the same one while the weights stay),
/// else by the hash of its id, in proportion to the enabled variants' weights. `None` when no
/// enabled variant has a weight and none pins the principal.
pub fn assign_variant<'v>(
    variants: &'v [VariantDefinition],
    key: AssignKey<'_>,
) -> Option<(&'v VariantDefinition, AssignReason)> {
    let enabled = || variants.iter().filter(|v| v.enabled);
    if let Some(pinned) = enabled().find(|v| v.pin.iter().any(|p| p == key.principal)) {
        return Some((pinned, AssignReason::Pinned));
    }
    let total: u64 = enabled().map(|v| u64::from(v.weight)).sum();
    if total == 0 {
        return None;
    }
    let (reason, hashed) = match key.continuation_key {
        Some(continuation) => (AssignReason::ContinuationKey, format!("key:{continuation}")),
        None => (AssignReason::Weight, format!("session:{}", key.session_id)),
    };
    let digest = Sha256::new()
        .chain_update(key.experiment.as_bytes())
        .chain_update([0])
        .chain_update(hashed.as_bytes())
        .finalize();
    let mut head = [0u8; 8];
    head.copy_from_slice(&digest[..8]);
    // A point in [0, total), uniform over the hash's 64 bits.
    let mut point = ((u128::from(u64::from_be_bytes(head)) * u128::from(total)) >> 64) as u64;
    for variant in enabled() {
        let weight = u64::from(variant.weight);
        if point < weight {
            return Some((variant, reason));
        }
        point -= weight;
    }
    None
}

/// What the variants are checked against: the agent's own manifest and what discovery found.
pub(crate) struct VariantContext<'a> {
    pub(crate) agent_dir: &'a Path,
    pub(crate) manifest: &'a Path,
    pub(crate) config: &'a AgentConfig,
    pub(crate) skills: &'a [Skill],
    pub(crate) has_subagents: bool,
}

/// Reads `[variants.*]` of `agent.toml` and `agent/variants/*.toml`, sorted by name, checking
/// each field; a variant with an error is left out (discovery fails anyway).
pub(crate) fn discover_variants(
    context: &VariantContext<'_>,
    findings: &mut Report,
) -> Vec<VariantDefinition> {
    if context
        .config
        .experiment
        .as_deref()
        .is_some_and(|name| name.trim().is_empty())
    {
        findings.error(
            context.manifest,
            "experiment: empty; name the experiment (e.g. \"prompt-v2\") or remove it to use the agent's name".into(),
        );
    }
    let mut written: BTreeMap<String, (VariantManifest, std::path::PathBuf)> = BTreeMap::new();
    for (name, manifest) in &context.config.variants {
        written.insert(
            name.clone(),
            (manifest.clone(), context.manifest.to_path_buf()),
        );
    }
    for file in toml_files(&context.agent_dir.join(VARIANTS_DIR)) {
        let name = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(manifest) = findings.parse_optional::<VariantManifest>(&file) else {
            continue;
        };
        if written.contains_key(&name) {
            findings.error(
                &file,
                format!("variant \"{name}\" is also [variants.{name}] in agent.toml: keep one"),
            );
            continue;
        }
        written.insert(name, (manifest, file));
    }
    let mut pinned: BTreeMap<&str, &str> = BTreeMap::new();
    for (name, (manifest, _)) in &written {
        for principal in &manifest.pin {
            if let Some(first) = pinned.insert(principal, name) {
                findings.error(
                    context.manifest,
                    format!("variants: principal \"{principal}\" is pinned by both \"{first}\" and \"{name}\": pin it to one variant"),
                );
            }
        }
    }
    let variants: Vec<VariantDefinition> = written
        .iter()
        .filter_map(|(name, (manifest, file))| {
            check_variant(name, manifest, file, context, findings)
        })
        .collect();
    if !variants.is_empty() && variants.iter().filter(|v| v.enabled).all(|v| v.weight == 0) {
        findings.warning(
            context.manifest,
            "variants: no enabled variant has a weight, so new sessions get no variant unless their principal is pinned".into(),
        );
    }
    variants
}

/// One variant's fields checked; `None` after reporting its errors.
fn check_variant(
    name: &str,
    manifest: &VariantManifest,
    file: &Path,
    context: &VariantContext<'_>,
    findings: &mut Report,
) -> Option<VariantDefinition> {
    let before = findings.error_count();
    let field = |key: &str| format!("variants.{name}.{key}");
    if !is_slug(name) {
        findings.error(
            file,
            format!("variants: \"{name}\" is not a valid variant name (use [A-Za-z0-9][A-Za-z0-9_-]*, at most 64 characters)"),
        );
    }
    if manifest
        .model
        .as_deref()
        .is_some_and(|m| m.trim().is_empty())
    {
        findings.error(
            file,
            format!(
                "{}: empty; write provider:model (docs/models.md) or remove it",
                field("model")
            ),
        );
    }
    if manifest.pin.iter().any(|p| p.is_empty()) {
        findings.error(
            file,
            format!("{}: a principal cannot be empty", field("pin")),
        );
    }
    let enabled = manifest.enabled.unwrap_or(true);
    if !enabled && !manifest.pin.is_empty() {
        findings.warning(
            file,
            format!(
                "{}: the variant is disabled, so its pins assign nothing",
                field("pin")
            ),
        );
    }
    let instructions = manifest
        .instructions
        .as_deref()
        .and_then(|path| read_instructions(path, &field("instructions"), file, context, findings));
    let rooted = context.config.root.is_some();
    let native_tools = manifest.tools.as_deref().map(|names| {
        for tool in names {
            if !ALLOWLIST_NAMES.contains(&tool.as_str()) {
                let hint = nearest_key(tool, ALLOWLIST_NAMES)
                    .map(|near| format!(" (did you mean \"{near}\"?)"))
                    .unwrap_or_default();
                findings.error(
                    file,
                    format!("{}: unknown tool \"{tool}\"{hint}; valid names: {}", field("tools"), ALLOWLIST_NAMES.join(", ")),
                );
            } else if rooted && ROOT_FORBIDDEN.contains(&tool.as_str()) {
                findings.error(
                    file,
                    format!("{}: \"{tool}\" cannot be granted with [root] (it needs the host disk): remove it", field("tools")),
                );
            }
        }
        let resolved = allowlist::resolve(
            Some(names),
            rooted,
            context.has_subagents,
            Backends::of(context.config.tools.as_ref()),
        );
        for warning in resolved.warnings {
            findings.warning(file, format!("{}: {warning}", field("tools")));
        }
        resolved.tools
    });
    if let Some(skills) = &manifest.skills {
        let known: Vec<&str> = context.skills.iter().map(|s| s.name.as_str()).collect();
        for skill in skills.iter().filter(|s| !known.contains(&s.as_str())) {
            let hint = nearest_key(skill, &known)
                .map(|near| format!(" (did you mean \"{near}\"?)"))
                .unwrap_or_default();
            findings.error(
                file,
                format!("{}: \"{skill}\" is not a skill of the agent{hint} (skills live in agent/skills/)", field("skills")),
            );
        }
    }
    if findings.error_count() > before {
        return None;
    }
    Some(VariantDefinition {
        name: name.to_string(),
        weight: manifest.weight.unwrap_or(1),
        enabled,
        pin: manifest.pin.clone(),
        model: manifest.model.clone(),
        model_params: manifest.model_params.clone(),
        instructions,
        native_tools,
        skills: manifest.skills.clone(),
    })
}

/// The text of a variant's instructions file (`path` relative to `agent/`, inside it).
fn read_instructions(
    path: &str,
    field: &str,
    file: &Path,
    context: &VariantContext<'_>,
    findings: &mut Report,
) -> Option<String> {
    let relative = Path::new(path);
    if relative
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        findings.error(
            file,
            format!("{field}: \"{path}\" must be a path inside agent/ (relative, without ..)"),
        );
        return None;
    }
    match std::fs::read_to_string(context.agent_dir.join(relative)) {
        Ok(text) if text.trim().is_empty() => {
            findings.error(file, format!("{field}: agent/{path} is empty"));
            None
        }
        Ok(text) => Some(text),
        Err(err) => {
            findings.error(
                file,
                format!(
                    "{field}: cannot read agent/{path}: {err} (the path is relative to agent/)"
                ),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(name: &str, weight: u32) -> VariantDefinition {
        VariantDefinition {
            name: name.into(),
            weight,
            enabled: true,
            pin: Vec::new(),
            model: None,
            model_params: Map::new(),
            instructions: None,
            native_tools: None,
            skills: None,
        }
    }

    fn key<'a>(session_id: &'a str, continuation_key: Option<&'a str>) -> AssignKey<'a> {
        AssignKey {
            experiment: "exp",
            session_id,
            continuation_key,
            principal: "local",
        }
    }

    /// 1,000 sessions over weights 70/30 land within ±5% of 700/300.
    #[test]
    fn weights_split_sessions() {
        let variants = [variant("a", 70), variant("b", 30)];
        let mut a = 0;
        for n in 0..1000 {
            let id = format!("ses_{n:026}");
            let (chosen, reason) = assign_variant(&variants, key(&id, None)).expect("assigned");
            assert_eq!(reason, AssignReason::Weight);
            if chosen.name == "a" {
                a += 1;
            }
        }
        assert!((650..=750).contains(&a), "{a} of 1000 sessions got a");
    }

    #[test]
    fn continuation_keys_are_sticky_and_pins_win() {
        let mut variants = vec![variant("a", 1), variant("b", 1)];
        let first = assign_variant(&variants, key("ses_1", Some("thread-7"))).expect("assigned");
        for n in 0..20 {
            let id = format!("ses_{n}");
            let again = assign_variant(&variants, key(&id, Some("thread-7"))).expect("assigned");
            assert_eq!(
                (again.0.name.as_str(), again.1),
                (first.0.name.as_str(), AssignReason::ContinuationKey)
            );
        }
        variants[1].pin = vec!["local".into()];
        let pinned = assign_variant(&variants, key("ses_1", Some("thread-7"))).expect("assigned");
        assert_eq!(
            (pinned.0.name.as_str(), pinned.1),
            ("b", AssignReason::Pinned)
        );
        variants[1].enabled = false;
        for n in 0..20 {
            let id = format!("ses_{n}");
            let (chosen, _) = assign_variant(&variants, key(&id, None)).expect("assigned");
            assert_eq!(chosen.name, "a", "a disabled variant gets no new session");
        }
        variants[0].weight = 0;
        assert_eq!(assign_variant(&variants, key("ses_1", None)), None);
    }
}
