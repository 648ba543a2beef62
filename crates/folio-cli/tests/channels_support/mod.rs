//! Helpers of the tests that deliver to channels of a running `folio serve`: the deliveries
//! themselves are folio-test-support's ([`folio_test_support::channels`]); here is what depends
//! on the server being a `folio` process.
#![allow(dead_code)]

use std::time::Duration;

#[allow(unused_imports)]
pub use folio_test_support::channels::*;

use crate::serve_support::Served;

/// Kills the server process (`SIGKILL`) and waits for it.
pub async fn kill(mut server: Served) {
    server.child.start_kill().unwrap();
    tokio::time::timeout(Duration::from_secs(30), server.child.wait())
        .await
        .expect("the server exits within 30 s")
        .unwrap();
}
