//! `folio-mock-model [PORT]`: the mock model server as a process, for tests written in other
//! languages (the TypeScript and Python clients' suites).
//!
//! It prints `mock model: http://127.0.0.1:PORT` once listening, then serves until it is
//! killed (or interrupted). Point `folio serve` at `http://127.0.0.1:PORT/v1`
//! (`OPENAI_BASE_URL`), script replies with `POST /mock/replies` and read what the model was
//! asked with `GET /mock/requests` (see [`folio_test_support::MockModelServer::start_on`]).

use folio_test_support::MockModelServer;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let port = match std::env::args().nth(1).map(|arg| arg.parse::<u16>()) {
        None => 0,
        Some(Ok(port)) => port,
        Some(Err(error)) => {
            eprintln!("folio-mock-model: the port must be a number from 0 to 65535 ({error})");
            return std::process::ExitCode::from(2);
        }
    };
    let server = match MockModelServer::start_on(port).await {
        Ok(server) => server,
        Err(error) => {
            eprintln!("folio-mock-model: cannot listen on 127.0.0.1:{port} ({error})");
            return std::process::ExitCode::FAILURE;
        }
    };
    println!("mock model: http://{}", server.addr());
    if let Err(error) = tokio::signal::ctrl_c().await {
        eprintln!("folio-mock-model: cannot wait for a signal ({error}); stopping");
    }
    std::process::ExitCode::SUCCESS
}
