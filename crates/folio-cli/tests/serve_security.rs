//! `folio serve`'s security flags: `--public-url` / `--allowed-host` / `--allowed-origin` widen
//! the browser guard, and the `--unconfined-files` opt-out is refused where it is unsafe.

mod serve_support;

use folio_test_support::MockModelServer;
use serve_support::*;

#[tokio::test]
async fn public_url_and_allowed_hosts_extend_the_host_and_origin_allowlists() {
    let mock = MockModelServer::start().await;
    let dir = project("name = \"guarded\"\nmodel = \"openai:gpt-test\"\n");
    let state = tempfile::tempdir().unwrap();
    let server = serve(
        &mock.openai_base_url(),
        dir.path(),
        state.path(),
        &[
            "--public-url",
            "https://folio.example.com",
            "--allowed-host",
            "internal.example:8443",
            "--allowed-origin",
            "https://app.example.com",
        ],
    )
    .await;
    let url = format!("{}/v1/sessions", server.url);
    let cases: &[(&[(&str, &str)], u16)] = &[
        (&[("host", "folio.example.com")], 200),
        (&[("host", "internal.example:8443")], 200),
        (&[("host", "internal.example:9999")], 403),
        (&[("host", "attacker.example")], 403),
        (&[("origin", "https://folio.example.com")], 200),
        (&[("origin", "https://app.example.com")], 200),
        (
            &[
                ("origin", "https://app.example.com"),
                ("sec-fetch-site", "cross-site"),
            ],
            200,
        ),
        (&[("origin", "https://evil.example.com")], 403),
        (&[("sec-fetch-site", "cross-site")], 403),
    ];
    for (headers, status) in cases {
        let mut request = reqwest::Client::new().get(&url);
        for (name, value) in *headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), *status, "{headers:?}");
    }
}

#[test]
fn unconfined_files_is_refused_with_several_principals_or_beyond_loopback() {
    let dir = project("name = \"guarded\"\nmodel = \"openai:gpt-test\"\n");
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tokens.path(), "alice = \"a\"\nbob = \"b\"\n").unwrap();
    let tokens = tokens.path().to_str().unwrap().to_string();
    let cases: [(Vec<&str>, &str); 2] = [
        (
            vec!["--tokens-file", &tokens],
            "--unconfined-files is for a single user, but --tokens-file names 2 principals: drop the flag",
        ),
        (
            vec!["--host", "0.0.0.0", "--bearer-token", "s"],
            "--unconfined-files is for a single user on this machine, but --host 0.0.0.0 listens beyond loopback: drop the flag or listen on 127.0.0.1",
        ),
    ];
    for (extra, message) in cases {
        let output = std::process::Command::new(folio_bin())
            .env("OPENAI_API_KEY", "test-key")
            .args(["serve", "--port", "0", "--unconfined-files", "--dir"])
            .arg(dir.path())
            .args(&extra)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{extra:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{extra:?}: {stderr}");
    }
}
