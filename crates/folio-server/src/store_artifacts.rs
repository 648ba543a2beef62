//! The agent's artifacts in a shared session store (`folio serve --store`): the artifact
//! backend every server's agent writes through, so `GET /v1/artifacts` on any server lists
//! what a turn on any other tagged.

use std::sync::Arc;

use folio_agent::{ArtifactBackend, ArtifactError, ArtifactRecord};
use folio_store::SessionStore;

/// Artifact records kept by a [`SessionStore`].
pub struct StoreArtifacts(Arc<dyn SessionStore>);

impl StoreArtifacts {
    /// The artifacts of the agent `store` serves.
    pub fn new(store: Arc<dyn SessionStore>) -> Self {
        StoreArtifacts(store)
    }
}

fn store_error(err: folio_store::StoreError) -> ArtifactError {
    ArtifactError::Invalid(format!(
        "the session store could not keep the artifact: {err}"
    ))
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
