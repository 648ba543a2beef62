//! Cancellation drops the stream promptly and the server sees the disconnect.

mod common;

use std::time::{Duration, Instant};

use common::{config, open, request};
use folio_model::ModelError;
use folio_test_support::{MockModelServer, MockReply};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

const LONG: &str = "one two three four five six seven eight nine ten eleven twelve";

async fn cancel_mid_stream(spec: &str, base: String, server: &MockModelServer) {
    let provider = open(spec, &config(base));
    let cancel = CancellationToken::new();
    let mut stream = provider
        .stream(&request("x"), cancel.clone())
        .await
        .unwrap();
    let first = stream.next().await;
    assert!(matches!(first, Some(Ok(_))), "{spec}: {first:?}");

    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        canceller.cancel();
    });
    let mut last = None;
    let ended = loop {
        match stream.next().await {
            Some(Ok(_)) => continue,
            Some(Err(error)) => {
                last = Some(error);
                break Instant::now();
            }
            None => break Instant::now(),
        }
    };
    assert!(
        matches!(last, Some(ModelError::Cancelled)),
        "{spec}: {last:?}"
    );
    assert!(
        stream.next().await.is_none(),
        "{spec}: stream ends after Cancelled"
    );
    let cancelled_at = ended; // the stream reported within the same poll it saw the token
    drop(stream);

    let disconnect = server
        .wait_for_disconnect(Duration::from_secs(2))
        .await
        .unwrap_or_else(|| panic!("{spec}: the server never saw the client go away"));
    let seen_after = disconnect.at.saturating_duration_since(cancelled_at);
    assert!(
        seen_after < Duration::from_millis(500),
        "{spec}: disconnect seen {seen_after:?} after cancel"
    );
}

#[tokio::test]
async fn cancellation_ends_the_stream_within_100ms_and_disconnects() {
    for spec in ["openai:test-model", "anthropic:test-model"] {
        let server = MockModelServer::start().await;
        server.push(MockReply::text(LONG).chunk_delay(Duration::from_millis(400)));
        let base = if spec.starts_with("openai") {
            server.openai_base_url()
        } else {
            server.anthropic_base_url()
        };
        let started = Instant::now();
        cancel_mid_stream(spec, base, &server).await;
        // The stream is slow (400 ms a chunk): finishing it would take seconds.
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{spec}: {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn cancel_latency_is_under_100ms() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text(LONG).chunk_delay(Duration::from_millis(500)));
    let provider = open("openai:test-model", &config(server.openai_base_url()));
    let cancel = CancellationToken::new();
    let mut stream = provider
        .stream(&request("x"), cancel.clone())
        .await
        .unwrap();
    assert!(matches!(stream.next().await, Some(Ok(_))));
    // Drain what is already buffered, then wait inside next() for the slow chunk.
    let waiter = tokio::spawn(async move {
        loop {
            match stream.next().await {
                Some(Ok(_)) => continue,
                other => return (other.map(|r| r.err()), Instant::now()),
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let cancelled = Instant::now();
    cancel.cancel();
    let (outcome, ended) = waiter.await.unwrap();
    let latency = ended.duration_since(cancelled);
    assert!(
        matches!(outcome, Some(Some(ModelError::Cancelled))),
        "{outcome:?}"
    );
    assert!(
        latency < Duration::from_millis(100),
        "cancel took {latency:?}"
    );
    let disconnect = server.wait_for_disconnect(Duration::from_secs(2)).await;
    let disconnect = disconnect.expect("server saw the disconnect");
    eprintln!(
        "cancel latency {latency:?}; server saw the disconnect {:?} after cancel",
        disconnect.at.saturating_duration_since(cancelled)
    );
}

#[tokio::test]
async fn cancellation_before_the_first_byte() {
    let server = MockModelServer::start().await;
    server.push(MockReply::text("late").first_byte_delay(Duration::from_secs(3)));
    let provider = open("anthropic:test-model", &config(server.anthropic_base_url()));
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let outcome = provider.stream(&request("x"), cancel).await;
    assert!(matches!(outcome, Err(ModelError::Cancelled)));
    assert!(
        started.elapsed() < Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn cancellation_during_retry_backoff() {
    let server = MockModelServer::start().await;
    server.push(MockReply::rate_limited(10));
    let provider = open("openai:test-model", &config(server.openai_base_url()));
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let outcome = provider.stream(&request("x"), cancel).await;
    assert!(matches!(outcome, Err(ModelError::Cancelled)));
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 1);
}
