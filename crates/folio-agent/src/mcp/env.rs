//! The host environment that `${NAME}` templates of connection manifests resolve against.

use std::sync::Arc;

/// Looks up an environment variable for `${NAME}` templates (never mutates the process env).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The process environment as an [`EnvLookup`].
pub fn process_env() -> EnvLookup {
    Arc::new(|name: &str| std::env::var(name).ok())
}
