//! Which model an agent runs with, shared by `run`, `serve` and `dev`.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use folio_model::{MissingKeyProvider, ModelError, Provider, open_provider};
use folio_project::AgentDefinition;

/// The model spec of `definition`: `--model`, else `FOLIO_MODEL`, else `agent.toml`'s `model`;
/// a relative `replay:` fixture is resolved against the project directory `dir`.
pub(crate) fn model_spec(
    definition: &AgentDefinition,
    dir: &Path,
    model: Option<&str>,
) -> anyhow::Result<String> {
    let spec = model
        .map(str::to_string)
        .or_else(|| std::env::var("FOLIO_MODEL").ok().filter(|m| !m.is_empty()))
        .or_else(|| definition.config.model.clone())
        .context(
            "no model configured: set model in agent/agent.toml, pass --model, or set FOLIO_MODEL",
        )?;
    Ok(match spec.strip_prefix("replay:") {
        Some(path) if !Path::new(path).is_absolute() && !Path::new(path).exists() => {
            format!("replay:{}", dir.join(path).display())
        }
        _ => spec,
    })
}

/// Opens the model of `definition` ([`model_spec`]). A missing API key does not stop the
/// command: each turn fails at once with the variable to set.
pub(crate) fn open_model(
    definition: &AgentDefinition,
    dir: &Path,
    model: Option<&str>,
) -> anyhow::Result<(Arc<dyn Provider>, String)> {
    let env = |name: &str| std::env::var(name).ok();
    let spec = model_spec(definition, dir, model)?;
    let config = folio_agent::provider_config(&definition.config.provider);
    match open_provider(&spec, &config, &env) {
        Ok(opened) => Ok(opened),
        Err(ModelError::MissingKey { var }) => {
            let model = spec.split_once(':').map_or(spec.as_str(), |(_, m)| m);
            Ok((Arc::new(MissingKeyProvider::new(var)), model.to_string()))
        }
        Err(err) => Err(err.into()),
    }
}
