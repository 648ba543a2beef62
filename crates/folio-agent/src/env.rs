//! The host environment that `${NAME}` templates (connection manifests, tool settings) resolve
//! against; a leaf module that the MCP client and the tools both read.

use std::sync::Arc;

/// Looks up an environment variable for `${NAME}` templates (never mutates the process env).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The process environment as an [`EnvLookup`].
pub fn process_env() -> EnvLookup {
    Arc::new(|name: &str| std::env::var(name).ok())
}
