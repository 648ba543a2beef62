//! Acknowledgement latency of a webhook channel under concurrent deliveries (figures in
//! bench/RESULTS.md): `N` signed deliveries (default 200) sent at once to a served channel,
//! each timed from send to its `202` (the delivery authenticated, rendered and fsynced; its
//! session's turn runs in the background on a zero-latency model). Run with
//! `cargo bench -p folio-cli --bench ack_latency` (optionally `-- --deliveries N
//! --rounds R`, and `--store postgres://…` for the sessions and deliveries in that empty
//! database instead of the state root); results print as Markdown rows.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use folio_agent::{Agent, discover};
use folio_auth::Auth;
use folio_channels::{ChannelOptions, Channels, sign_hex};
use folio_model::{Delta, DeltaStream, ModelError, ModelRequest, Provider};
use folio_protocol::FinishReason;
use folio_server::http::{HttpConfig, Layout, Mount, router_with};
use folio_session::{LogBuffer, SessionManager, StateRoot};
use futures::{StreamExt, stream};
use tokio_util::sync::CancellationToken;

const SECRET: &str = "bench-secret";

/// Answers every request at once.
struct ZeroLatency;

#[async_trait::async_trait]
impl Provider for ZeroLatency {
    async fn stream(
        &self,
        _request: &ModelRequest,
        _cancel: CancellationToken,
    ) -> Result<DeltaStream, ModelError> {
        let deltas = vec![
            Ok(Delta::Text("ok".into())),
            Ok(Delta::Finish(FinishReason::Stop)),
        ];
        Ok(stream::iter(deltas).boxed())
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

async fn round(url: &str, deliveries: usize, round: usize) -> Vec<f64> {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let sends = (0..deliveries).map(|i| {
        let client = client.clone();
        let body = format!(r#"{{"ticketId":{i},"message":"ticket {i}"}}"#);
        let signature = format!("sha256={}", sign_hex(SECRET.as_bytes(), &[body.as_bytes()]));
        let url = url.to_string();
        async move {
            let started = Instant::now();
            let answer = client
                .post(url)
                .header("content-type", "application/json")
                .header("x-signature-256", signature)
                .header("idempotency-key", format!("r{round}-d{i}"))
                .body(body)
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status().as_u16(), 202);
            started.elapsed().as_secs_f64() * 1000.0
        }
    });
    futures::future::join_all(sends).await
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let deliveries = flag("--deliveries", 200);
    let rounds = flag("--rounds", 3);
    // `--store postgres://…`: the sessions and deliveries in that (empty) database.
    let store = args
        .iter()
        .position(|a| a == "--store")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let agent_dir = dir.path().join("agent");
        std::fs::create_dir_all(agent_dir.join("channels")).unwrap();
        std::fs::write(agent_dir.join("instructions.md"), "Bench agent.\n").unwrap();
        std::fs::write(agent_dir.join("agent.toml"), "name = \"bench\"\nmodel = \"openai:zero\"\ntools = [\"read\"]\n").unwrap();
        std::fs::write(
            agent_dir.join("channels/tickets.toml"),
            "kind = \"webhook\"\nauth = [{ hmac = { secret_env = \"BENCH_SECRET\", header = \"X-Signature-256\", scheme = \"sha256=\" } }]\n[[routes]]\npath = \"/ticket\"\nmessage = \"{{ body.message }}\"\ncontinuation = \"{{ body.ticketId }}\"\n",
        )
        .unwrap();
        let definition = discover(dir.path()).definition.expect("valid project");
        let agent = Agent::load(definition, Arc::new(ZeroLatency), "zero".into())
            .await
            .unwrap();
        let state = tempfile::tempdir().unwrap();
        let state = StateRoot::new(state.path());
        let manager = match &store {
            None => SessionManager::open(state, Arc::new(agent), LogBuffer::new())
                .await
                .unwrap(),
            Some(url) => {
                let store = folio_store_postgres::PgStore::open(url, Default::default())
                    .await
                    .unwrap();
                let ttl = folio_session::DEFAULT_LEASE_TTL;
                let store: Arc<dyn folio_store::SessionStore> = Arc::new(store);
                SessionManager::open_on_store(state, Arc::new(agent), LogBuffer::new(), store, ttl)
                    .await
                    .unwrap()
            }
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let channels = Channels::open(
            &manager,
            ChannelOptions {
                env: Arc::new(|name: &str| (name == "BENCH_SECRET").then(|| SECRET.to_string())),
                caller_auth: Auth::LocalDevStrict,
                base_url: base.clone(),
            },
        )
        .unwrap();
        let app = router_with(
            vec![Mount {
                slug: "bench".into(),
                evals: manager.state().clone(),
                manager: manager.clone(),
                diagnostics: Vec::new(),
            }],
            HttpConfig {
                layout: Layout::Single,
                ..HttpConfig::default()
            },
            vec![("bench".into(), channels.router())],
        );
        let app = app.into_make_service_with_connect_info::<SocketAddr>();
        tokio::spawn(async move {
            axum::serve(folio_server::no_delay(listener), app).await.unwrap();
        });
        let url = format!("{base}/v1/channels/tickets/ticket");
        println!("| round | deliveries | p50 ack | p99 ack | max ack |");
        println!("| --- | --- | --- | --- | --- |");
        for r in 0..rounds {
            let mut latencies = round(&url, deliveries, r).await;
            latencies.sort_by(f64::total_cmp);
            println!(
                "| {} | {deliveries} | {:.1} ms | {:.1} ms | {:.1} ms |",
                r + 1,
                percentile(&latencies, 0.5),
                percentile(&latencies, 0.99),
                latencies[latencies.len() - 1],
            );
        }
        manager.shutdown().await;
    });
}
