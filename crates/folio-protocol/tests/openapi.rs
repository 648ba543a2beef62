//! `docs/openapi.json` is the document the route table and the wire types generate.

use folio_protocol::{ApiServers, openapi_json};

#[test]
fn committed_openapi_document_matches_the_route_table_and_the_types() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == openapi_json(ApiServers::Any),
        "docs/openapi.json is out of date: run `folio schema --openapi docs/openapi.json`"
    );
}
