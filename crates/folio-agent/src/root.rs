//! The authored root of `[root]` in `agent.toml`: a `union_fs` of host directories, in-memory
//! trees, object stores and overlays, each optionally indexed for `SemanticSearch`; and the per-turn binding
//! that adds an empty `/tmp` scratch mount (docs/filesystem.md).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use folio_fs::{FileSystem, TempFs, host_dir, indexed, overlay_fs, temp_fs, union_fs};

use folio_project::{MountSpec, ROOT_SKILLS_MOUNT};

/// A mount of `[root]` that could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("agent.toml [root] \"{mount}\": {reason}")]
pub struct RootError {
    /// The mount path.
    pub mount: String,
    /// What failed and what to do.
    pub reason: String,
}

/// Builds the authored root from `[root]`; host paths are relative to `agent_dir`.
pub async fn build_root(
    mounts: &BTreeMap<String, MountSpec>,
    agent_dir: &Path,
) -> Result<Arc<dyn FileSystem>, RootError> {
    let mut built = Vec::new();
    for (mount, spec) in mounts {
        let tree = build_mount(spec, agent_dir)
            .await
            .map_err(|reason| RootError {
                mount: mount.clone(),
                reason,
            })?;
        built.push((mount.clone(), tree));
    }
    Ok(union_fs(built))
}

async fn build_mount(spec: &MountSpec, agent_dir: &Path) -> Result<Arc<dyn FileSystem>, String> {
    let (tree, index) = match spec {
        MountSpec::Host {
            host,
            read_only,
            index,
        } => {
            let dir = agent_dir.join(host);
            if !dir.is_dir() {
                return Err(format!(
                    "host directory {} does not exist (paths are relative to {})",
                    dir.display(),
                    agent_dir.display()
                ));
            }
            (
                host_dir(&dir, *read_only).map_err(|e| e.to_string())?,
                *index,
            )
        }
        MountSpec::Temp { temp, index } => {
            let tree = TempFs::try_from_files(temp.iter()).map_err(|e| e.to_string())?;
            (Arc::new(tree) as Arc<dyn FileSystem>, *index)
        }
        MountSpec::ObjectStore {
            object_store,
            read_only,
            options,
            index,
        } => {
            // Decision: a local store has no conditional put, so a writable one could not keep
            // the compare-and-swap promise; `host` mounts are the writable local directories.
            if !*read_only && object_store.starts_with("file:") {
                return Err(format!(
                    "{object_store}: a local object store cannot write with compare-and-swap; mount it with read_only = true, or use {{ host = \"dir\" }} for a writable directory"
                ));
            }
            let mut settings = Vec::new();
            for (key, value) in options {
                let value =
                    folio_project::expand_template(value, &|name: &str| std::env::var(name).ok())
                        .map_err(|unset| {
                        format!("option \"{key}\": {unset} (set it, or write the value itself)")
                    })?;
                settings.push((key.clone(), value));
            }
            let tree = folio_object_store::object_store_fs(object_store, settings)
                .map_err(|e| e.to_string())?;
            // One layer of an overlay is that layer, read-only.
            let tree = if *read_only { overlay_fs([tree]) } else { tree };
            (tree, *index)
        }
        MountSpec::Overlay { overlay, index } => {
            let mut layers = Vec::new();
            for layer in overlay {
                layers.push(Box::pin(build_mount(layer, agent_dir)).await?);
            }
            (overlay_fs(layers), *index)
        }
    };
    if index {
        return indexed(tree).await.map_err(|e| e.to_string());
    }
    Ok(tree)
}

/// The tree a turn binds under an authored root: the root plus a fresh, empty `/tmp`.
/// Built per turn and dropped with it, so no turn reads another turn's scratch.
pub fn bind_turn_root(root: Arc<dyn FileSystem>) -> Arc<dyn FileSystem> {
    let scratch: Vec<(String, String)> = Vec::new();
    union_fs([
        ("/".to_string(), root),
        ("/tmp".to_string(), temp_fs(scratch)),
    ])
}

/// The authored root with the agent's skills mounted read-only at `/skills`.
pub fn with_skills_mount(
    root: Arc<dyn FileSystem>,
    skills: Arc<dyn FileSystem>,
) -> Arc<dyn FileSystem> {
    union_fs([
        ("/".to_string(), root),
        (ROOT_SKILLS_MOUNT.to_string(), skills),
    ])
}
