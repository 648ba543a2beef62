//! `WebSearch` end to end: `folio run` with the mock model calling WebSearch against local fakes
//! of the SearXNG, Brave Search and Tavily HTTP APIs (their real request and answer shapes) and
//! a `command` backend; large results spilled to `agent-tools/` on the host and to `/tmp` under
//! a root; the errors a user can meet (missing key, HTTP errors, bad JSON, a failing command).

mod common;

use common::*;
use folio_protocol::RunResult;
use folio_test_support::{ApiCall, FakeApi, MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Runs one turn in which the model calls WebSearch with each of `queries`, with `env` set on
/// the `folio` process only.
async fn search_run(
    agent_toml: &str,
    env: &[(&str, &str)],
    queries: &[&str],
) -> (Project, RunResult) {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls(
        queries.iter().map(|q| ("WebSearch", json!({"query": q}))),
    ));
    mock.push(MockReply::text("Searched."));
    let dir = project(agent_toml);
    let mut command = folio(&mock.openai_base_url());
    command.envs(env.iter().copied());
    let output = command
        .args(["run", "--json", "--message", "search the web", "--dir"])
        .arg(dir.path())
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // WebSearch is offered to the model only because it is configured.
    assert!(
        mock.requests()[0]
            .tool_names()
            .contains(&"WebSearch".to_string())
    );
    (dir, result_of(&output))
}

fn outputs(result: &RunResult) -> Vec<(bool, Value)> {
    tool_outputs(result)
        .into_iter()
        .map(|(tool, is_error, output)| {
            assert_eq!(tool, "WebSearch");
            (is_error, output)
        })
        .collect()
}

fn header<'a>(call: &'a ApiCall, name: &str) -> Option<&'a str> {
    call.headers.get(name).map(String::as_str)
}

const RUST_RESULTS: &str = "Web results for \"rust language\":\n\n1. Rust Programming Language\n   https://www.rust-lang.org/\n   A language empowering everyone to build reliable and efficient software.\n\n2. The Rust Book\n   https://doc.rust-lang.org/book/\n   An introductory book about Rust.\n";

#[tokio::test]
async fn searxng_json_api() {
    let api = FakeApi::start().await;
    // SearXNG's `format=json` answer, as an instance prints it (fields Folio does not read too).
    api.respond(
        "/search",
        json!({
            "query": "rust language",
            "number_of_results": 0,
            "results": [
                {"url": "https://www.rust-lang.org/", "title": "Rust Programming Language",
                 "content": "A language empowering everyone to build reliable and efficient software.",
                 "engine": "duckduckgo", "parsed_url": ["https", "www.rust-lang.org", "/", "", "", ""],
                 "template": "default.html", "engines": ["duckduckgo", "brave"], "positions": [1, 1],
                 "score": 4.0, "category": "general"},
                {"url": "https://doc.rust-lang.org/book/", "title": "The Rust Book",
                 "content": "An introductory\nbook about Rust.", "engine": "brave",
                 "engines": ["brave"], "positions": [2], "score": 0.5, "category": "general"}
            ],
            "answers": [], "corrections": [], "infoboxes": [], "suggestions": [],
            "unresponsive_engines": []
        }),
    );
    let toml = format!(
        "model = \"openai:gpt-test\"\n\n[tools.web_search]\nprovider = \"searxng\"\nendpoint = \"{}/search\"\n",
        api.url()
    );
    let (_dir, result) = search_run(&toml, &[], &["rust language"]).await;
    assert_eq!(outputs(&result), vec![(false, json!(RUST_RESULTS))]);
    let calls = api.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].method, "GET");
    assert_eq!(calls[0].path, "/search?q=rust+language&format=json");
    assert_eq!(header(&calls[0], "authorization"), None);
}

#[tokio::test]
async fn brave_search_api_with_its_key_and_count() {
    let api = FakeApi::start().await;
    // The Brave Search API's web search answer: highlighting tags in titles and descriptions.
    let result = |title: &str, url: &str, description: &str| {
        json!({"title": title, "url": url, "is_source_local": false, "is_source_both": false,
               "description": description, "language": "en", "family_friendly": true,
               "type": "search_result", "subtype": "generic",
               "meta_url": {"scheme": "https", "netloc": "example", "hostname": "example", "path": "/"}})
    };
    api.respond(
        "/res/v1/web/search",
        json!({
            "type": "search",
            "query": {"original": "rust language", "show_strict_warning": false, "is_navigational": false,
                      "spellcheck_off": true, "country": "us", "more_results_available": true},
            "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}]},
            "web": {"type": "search", "family_friendly": true, "results": [
                result("<strong>Rust</strong> Programming Language", "https://www.rust-lang.org/",
                       "A <strong>language</strong> empowering everyone to build reliable and efficient software."),
                result("The <strong>Rust</strong> Book", "https://doc.rust-lang.org/book/", "An introductory book about Rust."),
                result("Third", "https://third.example/", "Not kept: max_results is 2."),
            ]}
        }),
    );
    let toml = format!(
        "model = \"openai:gpt-test\"\n\n[tools.web_search]\nprovider = \"brave\"\nendpoint = \"{}/res/v1/web/search\"\napi_key_env = \"TEST_BRAVE_KEY\"\nmax_results = 2\n",
        api.url()
    );
    let (_dir, result) = search_run(
        &toml,
        &[("TEST_BRAVE_KEY", "brave-key-1")],
        &["rust language"],
    )
    .await;
    assert_eq!(outputs(&result), vec![(false, json!(RUST_RESULTS))]);
    let calls = api.calls();
    assert_eq!(calls[0].method, "GET");
    assert_eq!(calls[0].path, "/res/v1/web/search?q=rust+language&count=2");
    assert_eq!(
        header(&calls[0], "x-subscription-token"),
        Some("brave-key-1")
    );
    assert_eq!(header(&calls[0], "accept"), Some("application/json"));
}

#[tokio::test]
async fn tavily_search_api_posts_json_with_a_bearer_key() {
    let api = FakeApi::start().await;
    api.respond(
        "/search",
        json!({
            "query": "rust language",
            "follow_up_questions": null,
            "answer": null,
            "images": [],
            "results": [
                {"title": "Rust Programming Language", "url": "https://www.rust-lang.org/",
                 "content": "A language empowering everyone to build reliable and efficient software.",
                 "score": 0.98, "raw_content": null},
                {"title": "The Rust Book", "url": "https://doc.rust-lang.org/book/",
                 "content": "An introductory book about Rust.", "score": 0.91, "raw_content": null}
            ],
            "response_time": 1.09,
            "request_id": "123e4567-e89b-12d3-a456-426614174111"
        }),
    );
    let toml = format!(
        "model = \"openai:gpt-test\"\n\n[tools.web_search]\nprovider = \"tavily\"\nendpoint = \"{}/search\"\n",
        api.url()
    );
    // Tavily's key is read from TAVILY_API_KEY when api_key_env is omitted.
    let (_dir, result) = search_run(
        &toml,
        &[("TAVILY_API_KEY", "tvly-test")],
        &["rust language"],
    )
    .await;
    assert_eq!(outputs(&result), vec![(false, json!(RUST_RESULTS))]);
    let calls = api.calls();
    assert_eq!(calls[0].method, "POST");
    assert_eq!(calls[0].path, "/search");
    assert_eq!(header(&calls[0], "authorization"), Some("Bearer tvly-test"));
    assert_eq!(
        calls[0].body,
        json!({"query": "rust language", "max_results": 10})
    );
}

#[tokio::test]
async fn http_errors_bad_json_and_a_missing_key_are_clear_tool_errors() {
    let api = FakeApi::start().await;
    api.respond("/brave", json!({"type": "ErrorResponse", "error": {"status": 401, "code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "The provided subscription token is invalid."}}));
    api.answer([401, 429]);
    let brave = format!(
        "model = \"openai:gpt-test\"\n\n[tools.web_search]\nprovider = \"brave\"\nendpoint = \"{}/brave\"\napi_key_env = \"TEST_BRAVE_KEY\"\n",
        api.url()
    );
    let (_dir, result) = search_run(&brave, &[("TEST_BRAVE_KEY", "wrong")], &["a", "b"]).await;
    let body = "{\"error\":{\"code\":\"SUBSCRIPTION_TOKEN_INVALID\",\"detail\":\"The provided subscription token is invalid.\",\"status\":401},\"type\":\"ErrorResponse\"}";
    assert_eq!(
        outputs(&result),
        vec![
            (
                true,
                json!(format!(
                    "WebSearch: brave answered 401 Unauthorized: {body}; check the API key"
                ))
            ),
            (
                true,
                json!(format!(
                    "WebSearch: brave answered 429 Too Many Requests: {body}; the API's rate limit was hit, try again later"
                ))
            ),
        ]
    );
    // The key variable unset: no request is made.
    let (_dir, result) = search_run(&brave, &[], &["a"]).await;
    assert_eq!(
        outputs(&result),
        vec![(
            true,
            json!(
                "WebSearch: the API key variable TEST_BRAVE_KEY is not set; set it to your Brave Search API key (or name another variable with [tools.web_search] api_key_env)"
            )
        )]
    );
    assert_eq!(api.calls().len(), 2);
    // An answer that is not the API's JSON (here the fake's default body).
    let tavily = format!(
        "model = \"openai:gpt-test\"\n\n[tools.web_search]\nprovider = \"tavily\"\nendpoint = \"{}/not-tavily\"\n",
        api.url()
    );
    let (_dir, result) = search_run(&tavily, &[("TAVILY_API_KEY", "k")], &["a"]).await;
    assert_eq!(
        outputs(&result),
        vec![(
            true,
            json!(format!(
                "WebSearch: tavily at {}/not-tavily answered with something that is not its search JSON (missing field `results` at line 1 column 27): {{\"id\":3,\"ok\":true,\"ts\":\"3\"}}",
                api.url()
            ))
        )]
    );
    // SearXNG refuses JSON unless the instance enables it: the error says so.
    api.answer([403]);
    let searxng = format!(
        "model = \"openai:gpt-test\"\n\n[tools.web_search]\nprovider = \"searxng\"\nendpoint = \"{}/searx\"\n",
        api.url()
    );
    let (_dir, result) = search_run(&searxng, &[], &["a"]).await;
    assert_eq!(
        outputs(&result),
        vec![(
            true,
            json!(
                "WebSearch: searxng answered 403 Forbidden: {\"id\":4,\"ok\":true,\"ts\":\"4\"}; enable the json format in the instance's settings (search.formats)"
            )
        )]
    );
}

const SEARCH_PY: &str = r#"import json, sys
request = json.load(sys.stdin)
if request["query"] == "fail":
    print("search engine down", file=sys.stderr)
    sys.exit(3)
if request["query"] == "garbage":
    print("not json")
    sys.exit(0)
hits = [{"title": "Result %d for %s" % (n, request["query"]), "url": "https://r%d.example/" % n,
         "snippet": ("needle-%d " % n) + "filler " * 400} for n in range(request["maxResults"])]
print(json.dumps({"results": hits}))
"#;

#[tokio::test]
async fn command_backend_small_results_inline_and_failures_as_errors() {
    let toml = "model = \"openai:gpt-test\"\n\n[tools.web_search]\nprovider = \"command\"\ncommand = [\"python3\", \"search.py\"]\nmax_results = 1\n";
    let dir = project(toml);
    write_files(dir.path(), &[("agent/search.py", SEARCH_PY)]);
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([
        ("WebSearch", json!({"query": "small"})),
        ("WebSearch", json!({"query": "fail"})),
        ("WebSearch", json!({"query": "garbage"})),
        ("WebSearch", json!({"query": "  "})),
    ]));
    mock.push(MockReply::text("Searched."));
    let output = run_json(&mock.openai_base_url(), dir.path(), "search").await;
    let result = result_of(&output);
    let filler = "filler ".repeat(400);
    assert_eq!(
        outputs(&result),
        vec![
            (
                false,
                json!(format!(
                    "Web results for \"small\":\n\n1. Result 0 for small\n   https://r0.example/\n   needle-0 {}\n",
                    filler.trim_end()
                ))
            ),
            (
                true,
                json!(
                    "WebSearch: the search command python3 failed (exit status: 3): search engine down"
                )
            ),
            (
                true,
                json!(
                    "WebSearch: the search command python3 printed something that is not a JSON list of {title, url, snippet} (expected ident at line 1 column 2): not json"
                )
            ),
            (
                true,
                json!("argument \"query\" is empty; say what to search for")
            ),
        ]
    );
}

#[tokio::test]
async fn large_results_spill_to_agent_tools_on_the_host_and_to_tmp_under_a_root() {
    let backend = "[tools.web_search]\nprovider = \"command\"\ncommand = [\"python3\", \"search.py\"]\nmax_results = 20\n";
    // Host default: the full output stays in the workspace's agent-tools/.
    let dir = project(&format!("model = \"openai:gpt-test\"\n\n{backend}"));
    write_files(dir.path(), &[("agent/search.py", SEARCH_PY)]);
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "WebSearch",
        json!({"query": "big"}),
    )]));
    mock.push(MockReply::text("Searched."));
    let result = result_of(&run_json(&mock.openai_base_url(), dir.path(), "search").await);
    let (is_error, shown) = outputs(&result).remove(0);
    let shown = shown.as_str().unwrap().to_string();
    assert!(!is_error, "{shown}");
    let spilled = dir
        .path()
        .join(".folio/state/sessions")
        .join(&result.session_id)
        .join("workspace/agent-tools");
    let files: Vec<_> = std::fs::read_dir(&spilled)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    let full = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        full.contains("needle-19 "),
        "the spill file holds every result"
    );
    assert!(shown.starts_with(&full[..4_000]), "the head stays inline");
    assert!(
        shown.contains(&format!(
            "the full output is in {}",
            files[0].canonicalize().unwrap().display()
        )) || shown.contains(&format!("the full output is in {}", files[0].display())),
        "{shown}"
    );

    // Under a root: the spill lands in the turn's /tmp, where Grep finds it.
    let dir = project(&format!(
        "model = \"openai:gpt-test\"\n\n[root]\n\"/notes\" = {{ temp = {{ \"/a.md\" = \"hi\" }} }}\n\n{backend}"
    ));
    write_files(dir.path(), &[("agent/search.py", SEARCH_PY)]);
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "WebSearch",
        json!({"query": "big"}),
    )]));
    mock.push(MockReply::tool_calls([(
        "Grep",
        json!({"pattern": "needle-19 ", "path": "/tmp", "outputMode": "files_with_matches"}),
    )]));
    mock.push(MockReply::text("Searched."));
    let result = result_of(&run_json(&mock.openai_base_url(), dir.path(), "search").await);
    let calls = tool_outputs(&result);
    let shown = calls[0].2.as_str().unwrap();
    let tmp_path = shown
        .split("the full output is in ")
        .nth(1)
        .and_then(|rest| rest.split(". Read it").next())
        .unwrap_or_else(|| panic!("no spill path in {shown}"));
    assert!(
        tmp_path.starts_with("/tmp/") && tmp_path.ends_with(".txt"),
        "{tmp_path}"
    );
    assert_eq!(calls[1], ("Grep".to_string(), false, json!(tmp_path)));
}
