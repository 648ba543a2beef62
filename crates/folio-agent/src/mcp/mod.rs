//! MCP connections at run time (`mcp-connections/<name>.toml`, `host-connections/<name>.toml`,
//! parsed by folio-project into [`McpServerConfig`]s): clients of MCP servers built on `rmcp`.
//!
//! [`connection`] holds one client's lifecycle, [`elicitation`] the handler of a server's
//! questions to the user (parked like approvals), [`tool`] the adapter that offers a model-facing
//! server's tools as `mcp__<server>__<tool>`, [`env`] the lookup `${NAME}` templates resolve
//! against, [`oauth`] OAuth 2.1 for HTTP servers. Host connections are never offered to the
//! model.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use folio_project::McpServerConfig;

mod connection;
mod elicitation;

mod oauth;
mod tool;
mod traced_http;

pub use crate::env::{EnvLookup, process_env};
pub use connection::{McpConnection, McpError, StartError};
pub use elicitation::{ANNOUNCED_PROTOCOL_VERSION, ElicitationContentError, elicitation_content};
pub use folio_project::McpTransport;
pub use oauth::{
    LOCAL_PRINCIPAL, McpAuth, McpCredentialStore, McpLogin, SharedCredentials,
    SharedCredentialsError, auth_state,
};
pub use tool::{McpTool, mcp_tool_name, tool_output};

/// The connections of an agent: model-facing ones and host-only ones, by name.
#[derive(Clone, Default)]
pub struct Connections {
    /// `mcp-connections/`: their tools are offered to the model.
    pub model: BTreeMap<String, Arc<McpConnection>>,
    /// `host-connections/`: callable from host code only.
    pub host: BTreeMap<String, Arc<McpConnection>>,
}

impl Connections {
    /// Connections for the given manifests (nothing starts yet); with `auth`, HTTP ones use
    /// OAuth (stored tokens, and the authorization flow when `auth` can ask a person).
    pub fn new(
        model: &[McpServerConfig],
        host: &[McpServerConfig],
        base_dir: &Path,
        env: &EnvLookup,
        auth: Option<&McpAuth>,
    ) -> Self {
        let open = |configs: &[McpServerConfig]| {
            configs
                .iter()
                .map(|config| {
                    let connection = McpConnection::new(config.clone(), base_dir, env.clone());
                    let connection = match auth {
                        Some(auth) => connection.with_auth(auth.clone()),
                        None => connection,
                    };
                    (config.name.clone(), Arc::new(connection))
                })
                .collect()
        };
        Connections {
            model: open(model),
            host: open(host),
        }
    }

    /// Stops every running server.
    pub async fn shutdown(&self) {
        for connection in self.model.values().chain(self.host.values()) {
            connection.shutdown().await;
        }
    }
}
