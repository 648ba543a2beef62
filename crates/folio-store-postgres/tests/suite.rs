//! The store conformance suite (`folio_store::suite`, the one the disk store runs) against
//! PostgreSQL, each case on a fresh database.

mod support;

use std::sync::Arc;

use folio_store::SessionStore;

#[tokio::test]
async fn postgres_passes_the_store_suite() {
    if support::test_db("postgres_passes_the_store_suite")
        .await
        .is_none()
    {
        return;
    }
    folio_store::suite::run_all(async || -> Arc<dyn SessionStore> {
        let (store, _db) = support::store("postgres_passes_the_store_suite")
            .await
            .expect("the test server is set");
        let store: Arc<dyn SessionStore> = Arc::new(store);
        store
    })
    .await;
}
