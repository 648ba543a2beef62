//! `langgraph dev` as a child process: the graph of `bench/peers` served by LangGraph's
//! in-memory runtime, with telemetry and the browser off.

use std::path::Path;
use std::time::Duration;

use crate::proc;

/// A running `langgraph dev`, stopped (with its descendants) by [`Server::stop`].
pub struct Server {
    child: tokio::process::Child,
    /// `http://127.0.0.1:P`.
    pub url: String,
    /// The server's working directory (a copy of the graph, and the runtime's own files).
    _dir: tempfile::TempDir,
}

impl Server {
    /// Starts `langgraph` (the venv's `bin/langgraph`) on a free port over a copy of the graph
    /// folder `graph` (`langgraph.json`, `graph.py`), with `jobs` runs at once, and waits until
    /// `GET /ok` answers.
    pub async fn start(langgraph: &Path, graph: &Path, jobs: usize) -> Server {
        let dir = tempfile::tempdir().expect("a temporary directory");
        for file in ["langgraph.json", "graph.py"] {
            std::fs::copy(graph.join(file), dir.path().join(file))
                .unwrap_or_else(|err| panic!("cannot copy {file} from {}: {err}", graph.display()));
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port();
        let log = dir.path().join("langgraph.log");
        let file = std::fs::File::create(&log).expect("the LangGraph log file");
        let child = tokio::process::Command::new(langgraph)
            .args(["dev", "--no-browser", "--no-reload", "--port"])
            .arg(port.to_string())
            .arg("--n-jobs-per-worker")
            .arg(jobs.to_string())
            .current_dir(dir.path())
            .env("LANGSMITH_TRACING", "false")
            .env("LANGCHAIN_TRACING_V2", "false")
            .env("LANGGRAPH_CLI_NO_ANALYTICS", "1")
            .env("LOG_LEVEL", "WARNING")
            .stdout(file.try_clone().expect("the LangGraph log file"))
            .stderr(file)
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {}: {err}", langgraph.display()));
        let url = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("an HTTP client");
        for _ in 0..600 {
            if let Ok(answer) = client.get(format!("{url}/ok")).send().await
                && answer.status().is_success()
            {
                return Server {
                    child,
                    url,
                    _dir: dir,
                };
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "langgraph dev did not answer GET /ok within 60 s; its log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("langgraph dev is running")
    }

    /// Stops the server and every process it started (SIGTERM, then SIGKILL after 5 s).
    pub async fn stop(mut self) {
        let pid = self.pid();
        let all: Vec<u32> = proc::descendants(pid).into_iter().chain([pid]).collect();
        for pid in &all {
            signal(*pid, libc::SIGTERM);
        }
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            for pid in &all {
                signal(*pid, libc::SIGKILL);
            }
            let _ = self.child.wait().await;
        }
    }
}

/// Sends `signal` to process `pid` (gone already is fine).
fn signal(pid: u32, signal: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) takes any pid and signal; a process that is gone answers ESRCH.
        unsafe {
            libc::kill(pid, signal);
        }
    }
}
