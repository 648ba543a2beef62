//! The channel tests' server: an agent folder loaded on the mock model, its `SessionManager`
//! on a state root (or a PostgreSQL store), and [`Channels::router`] on a real
//! `127.0.0.1:0` listener, spoken to over HTTP with deliveries signed by the providers' own
//! libraries ([`folio_test_support::channels`]).
//!
//! [`serve_with_env`] runs it in this test process. A crash test needs a process it can
//! `kill -9` or abort at a `FaultPoint`: [`spawn_server`] re-executes this test binary
//! (`std::env::current_exe()`) running only [`child_server`], which serves the same way until
//! it is killed, so no `folio` binary is involved.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use folio_agent::{Agent, LoadOptions};
use folio_auth::Auth;
use folio_channels::{ChannelOptions, Channels, Env};
use folio_session::{FaultPoint, LogBuffer, SessionManager, StateRoot};
use folio_store::SessionStore;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, BufReader};

pub use folio_test_support::channels::*;
#[allow(unused_imports)]
pub use folio_test_support::{Project, project, write_files};

/// Where the sessions under test are kept.
pub enum Store {
    /// The state root's files.
    Disk,
    /// A PostgreSQL database (its URL), with a three-second lease (long enough that a server
    /// starved by a loaded CI machine keeps it).
    Postgres(String),
}

/// What a test server serves: the project, its state root, the mock model, its environment.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Config {
    /// The agent project (a folder holding `agent/`).
    project: PathBuf,
    /// The state root.
    state: PathBuf,
    /// The PostgreSQL store's URL; `None`: the state root's files.
    postgres: Option<String>,
    /// The environment the agent and its channels read (secrets, tokens, the model's URL).
    env: Vec<(String, String)>,
    /// The crash-test fault point to arm (`FaultPoint`'s name).
    fault: Option<String>,
}

impl Config {
    fn new(model_url: &str, dir: &Path, state: &Path, env: &[(&str, &str)]) -> Config {
        let mut pairs = vec![
            ("OPENAI_API_KEY".to_string(), "test-key".to_string()),
            ("OPENAI_BASE_URL".to_string(), model_url.to_string()),
        ];
        pairs.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Config {
            project: dir.to_path_buf(),
            state: state.to_path_buf(),
            postgres: None,
            env: pairs,
            fault: None,
        }
    }

    /// The environment as the agent and the channels read it.
    fn lookup(&self) -> Env {
        let pairs = self.env.clone();
        Arc::new(move |name: &str| {
            pairs
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        })
    }
}

/// A running test server.
pub struct Served {
    /// The agent's base URL (`http://127.0.0.1:P`): channels are under `/v1/channels/<id>`.
    pub url: String,
    running: Running,
}

enum Running {
    /// In this process: the manager and the HTTP task, stopped when dropped.
    InProcess {
        manager: SessionManager,
        http: tokio::task::JoinHandle<()>,
    },
    /// A child process serving ([`spawn_server`]).
    Child(tokio::process::Child),
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Running::InProcess { manager, http } = &self.running {
            http.abort();
            manager.shutdown_token().cancel();
        }
    }
}

impl Served {
    /// The child process of a [`spawn_server`] server.
    pub fn child(&mut self) -> &mut tokio::process::Child {
        match &mut self.running {
            Running::Child(child) => child,
            Running::InProcess { .. } => panic!("an in-process server has no process"),
        }
    }
}

/// Loads the project's agent, opens its sessions and channels and serves them on
/// `127.0.0.1:0`: the URL, the manager and the HTTP task.
async fn open(config: &Config) -> (String, SessionManager, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let env = config.lookup();
    let discovery = folio_project::discover(&config.project);
    assert!(
        !discovery.has_errors(),
        "discovery errors: {:#?}",
        discovery.diagnostics
    );
    let definition = discovery.definition.unwrap();
    let spec = definition
        .config
        .model
        .clone()
        .expect("agent.toml names a model");
    let provider_config = folio_agent::provider_config(&definition.config.provider);
    let (provider, model) =
        folio_model::open_provider(&spec, &provider_config, &|name: &str| env(name)).unwrap();
    let state = StateRoot::new(&config.state);
    let store: Option<Arc<dyn SessionStore>> = match &config.postgres {
        None => None,
        Some(url) => Some(Arc::new(
            folio_store_postgres::PgStore::open(url, folio_store_postgres::PgOptions::default())
                .await
                .unwrap(),
        )),
    };
    let options = LoadOptions {
        env: Some(env.clone()),
        state_root: Some(state.clone()),
        keep_failed_connections: true,
        shared: store
            .as_ref()
            .map(folio_session::shared_backends)
            .unwrap_or_default(),
        ..LoadOptions::default()
    };
    let agent = Agent::load_with(definition, provider, model, options)
        .await
        .unwrap();
    let manager = match store {
        None => SessionManager::open(state, Arc::new(agent), LogBuffer::new()).await,
        Some(store) => {
            SessionManager::open_on_store(
                state,
                Arc::new(agent),
                LogBuffer::new(),
                store,
                Duration::from_millis(3000),
            )
            .await
        }
    }
    .unwrap();
    manager.set_fault(
        config
            .fault
            .as_deref()
            .map(|name| name.parse::<FaultPoint>().unwrap()),
    );
    let channels = Channels::open(
        &manager,
        ChannelOptions {
            env,
            caller_auth: Auth::LocalDevStrict,
            base_url: url.clone(),
        },
    )
    .unwrap();
    channels.resume().await.unwrap();
    let app = channels
        .router()
        .into_make_service_with_connect_info::<SocketAddr>();
    let http = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (url, manager, http)
}

/// Serves the channels of the project at `dir` in this process, with the mock model at
/// `model_url` and `env` for secrets; the sessions live in the state root `state`.
pub async fn serve_with_env(
    model_url: &str,
    dir: &Path,
    state: &Path,
    env: &[(&str, &str)],
) -> Served {
    let (url, manager, http) = open(&Config::new(model_url, dir, state, env)).await;
    Served {
        url,
        running: Running::InProcess { manager, http },
    }
}

/// Set in the environment of a [`spawn_server`] child: the [`Config`] it serves, as JSON.
const CHILD_CONFIG: &str = "FOLIO_CHANNELS_TEST_SERVER";
/// What the child prints before its URL once it serves.
const LISTENING: &str = "channels test server listening on ";

/// Serves like [`serve_with_env`] in a child process (this test binary running only
/// [`child_server`]), on `store`, with the crash-test `fault` point armed: a `kill -9` or a
/// fault's abort ends it as a crash ends `folio serve`.
pub async fn spawn_server(
    model_url: &str,
    dir: &Path,
    state: &Path,
    store: &Store,
    env: &[(&str, &str)],
    fault: Option<&str>,
) -> Served {
    let mut config = Config::new(model_url, dir, state, env);
    config.postgres = match store {
        Store::Disk => None,
        Store::Postgres(url) => Some(url.clone()),
    };
    config.fault = fault.map(str::to_string);
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["support::child_server", "--exact", "--nocapture"])
        .env(CHILD_CONFIG, serde_json::to_string(&config).unwrap())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the test binary starts as a server");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.strip_prefix(LISTENING) {
                return url.trim().to_string();
            }
        }
        panic!("the server process exited before it listened");
    })
    .await
    .expect("the server process listens within 60 s");
    // Keep draining stdout so the server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Served {
        url,
        running: Running::Child(child),
    }
}

/// Kills a [`spawn_server`] server (`SIGKILL`) and waits for it.
pub async fn kill(mut server: Served) {
    let child = server.child();
    child.start_kill().unwrap();
    tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the server exits within 30 s")
        .unwrap();
}

/// The server of a [`spawn_server`] child process; passes at once in any other run of the
/// test binary (without [`CHILD_CONFIG`] set).
#[test]
fn child_server() {
    let Ok(config) = std::env::var(CHILD_CONFIG) else {
        return;
    };
    let config: Config = serde_json::from_str(&config).unwrap();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let (url, _manager, http) = open(&config).await;
            println!("{LISTENING}{url}");
            http.await.unwrap();
        });
}

/// Runs each test (an `async fn(Store)` of the test file) on both stores: `on_disk::<test>`
/// and `on_postgres::<test>` (skipped without `FOLIO_TEST_DATABASE_URL`).
#[macro_export]
macro_rules! on_both_stores {
    ($($test:ident),* $(,)?) => {
        mod on_disk {
            $(
                #[tokio::test(flavor = "multi_thread")]
                async fn $test() {
                    super::$test($crate::support::Store::Disk).await;
                }
            )*
        }
        mod on_postgres {
            $(
                #[tokio::test(flavor = "multi_thread")]
                async fn $test() {
                    let Some(url) =
                        folio_store_postgres::testing::test_database(stringify!($test)).await
                    else {
                        return;
                    };
                    super::$test($crate::support::Store::Postgres(url)).await;
                }
            )*
        }
    };
}

/// The stored event types of `session` under the state root.
pub fn event_types(state: &Path, session: &str) -> Vec<String> {
    session_events(state, session)
        .iter()
        .map(|event| event.event_type().to_string())
        .collect()
}

/// The events of `session`, read from its log under the state root.
pub fn session_events(state: &Path, session: &str) -> Vec<folio_protocol::Event> {
    let log = state.join("traces").join(format!("{session}.ndjson"));
    folio_test_support::read_ndjson(&std::fs::read_to_string(&log).unwrap_or_default())
}

/// Waits until `session` records `n` answers sent back to the provider (`channel.delivery`
/// `replied`), at most 30 s.
pub async fn answered(state: &Path, session: &str, n: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let replied = folio_test_support::all::<folio_protocol::ChannelDelivery>(&session_events(
            state, session,
        ))
        .iter()
        .filter(|d| d.outcome == folio_protocol::ChannelDeliveryOutcome::Replied)
        .count();
        if replied >= n {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "session {session} reported {replied} answers after 30 s, expected {n}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
