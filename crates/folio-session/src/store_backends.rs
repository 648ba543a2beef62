//! What the agent keeps in a shared session store (`folio serve --store`) instead of the state
//! root ([`shared_backends`]): its artifacts, so `GET /v1/artifacts` on any server lists what a
//! turn on any other tagged, and the principals' MCP credentials, so a person authorizes an MCP
//! server once, through any server.

use std::sync::Arc;

use folio_agent::mcp::{SharedCredentials, SharedCredentialsError};
use folio_agent::{ArtifactBackend, ArtifactError, ArtifactRecord, SharedBackends};
use folio_store::SessionStore;

/// The agent's backends in `store`.
pub fn shared_backends(store: &Arc<dyn SessionStore>) -> SharedBackends {
    SharedBackends {
        artifacts: Some(Arc::new(StoreArtifacts::new(store.clone()))),
        mcp_credentials: Some(Arc::new(StoreCredentials(store.clone()))),
    }
}

/// Artifact records kept by a [`SessionStore`].
pub struct StoreArtifacts(Arc<dyn SessionStore>);

impl StoreArtifacts {
    /// The artifacts of the agent `store` serves.
    pub fn new(store: Arc<dyn SessionStore>) -> Self {
        StoreArtifacts(store)
    }
}

fn store_error(err: folio_store::StoreError) -> ArtifactError {
    ArtifactError::Store {
        source: Box::new(err),
    }
}

#[async_trait::async_trait]
impl ArtifactBackend for StoreArtifacts {
    async fn put(
        &self,
        record: ArtifactRecord,
        contents: Option<Vec<u8>>,
        max: usize,
    ) -> Result<ArtifactRecord, ArtifactError> {
        self.0
            .put_artifact(&record, contents.as_deref(), max)
            .await
            .map_err(store_error)
    }

    async fn list(&self) -> Result<Vec<ArtifactRecord>, ArtifactError> {
        self.0.list_artifacts().await.map_err(store_error)
    }

    async fn get(&self, id: &str) -> Result<Option<ArtifactRecord>, ArtifactError> {
        self.0.get_artifact(id).await.map_err(store_error)
    }

    async fn content(&self, id: &str) -> Result<Option<Vec<u8>>, ArtifactError> {
        self.0.artifact_content(id).await.map_err(store_error)
    }
}

/// The principals' MCP credentials kept by a [`SessionStore`].
pub struct StoreCredentials(Arc<dyn SessionStore>);

impl std::fmt::Debug for StoreCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoreCredentials({})", self.0.backend())
    }
}

#[async_trait::async_trait]
impl SharedCredentials for StoreCredentials {
    async fn load(
        &self,
        principal: &str,
        connection: &str,
    ) -> Result<Option<serde_json::Value>, SharedCredentialsError> {
        self.0
            .mcp_credentials(principal, connection)
            .await
            .map_err(SharedCredentialsError::new)
    }

    async fn save(
        &self,
        principal: &str,
        connection: &str,
        credentials: serde_json::Value,
    ) -> Result<(), SharedCredentialsError> {
        self.0
            .put_mcp_credentials(principal, connection, &credentials)
            .await
            .map_err(SharedCredentialsError::new)
    }

    async fn clear(&self, principal: &str, connection: &str) -> Result<(), SharedCredentialsError> {
        self.0
            .clear_mcp_credentials(principal, connection)
            .await
            .map_err(SharedCredentialsError::new)
    }
}
