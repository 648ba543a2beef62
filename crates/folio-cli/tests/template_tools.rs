//! The templates' authored tools that reach outside the workspace (git remotes, the GitHub API,
//! OSV), run the way Folio runs an authored tool — the manifest's command in `agent/tools/`,
//! `{input, context}` on stdin, `FOLIO_WORKSPACE` in the environment — against a local git
//! remote and a recording fake API. (The tools that only read the workspace run in the
//! templates' evals, `tests/eval_templates.rs`.)

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use base64::Engine;
use common::folio_bin;
use folio_test_support::FakeApi;
use serde_json::{Value, json};

/// Scaffolds `template` with `folio init` under `parent`; the project's folder.
fn init(parent: &Path, template: &str) -> PathBuf {
    let dir = parent.join(template);
    let output = std::process::Command::new(folio_bin())
        .args(["init", "--template", template])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    dir
}

/// Runs authored tool `tool` of `project` as Folio does, in an environment holding only `PATH`,
/// `HOME` (the project's parent, so no user git config applies) and `env`.
async fn call(
    project: &Path,
    tool: &str,
    workspace: &Path,
    input: Value,
    env: &[(&str, &str)],
) -> Output {
    let tools = project.join("agent/tools");
    let manifest = std::fs::read_to_string(tools.join(format!("{tool}.toml"))).unwrap();
    let command: Vec<String> = manifest
        .lines()
        .find_map(|line| line.strip_prefix("command = "))
        .map(|list| serde_json::from_str(list).unwrap())
        .unwrap_or_else(|| panic!("{tool}.toml has no command"));
    let mut child = tokio::process::Command::new(&command[0]);
    child
        .args(&command[1..])
        .current_dir(&tools)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", project.parent().unwrap())
        .env("FOLIO_WORKSPACE", workspace)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = child.spawn().unwrap();
    let stdin = json!({"input": input, "context": {"purpose": "test"}}).to_string();
    tokio::io::AsyncWriteExt::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes())
        .await
        .unwrap();
    child.wait_with_output().await.unwrap()
}

/// The tool's result, asserting it succeeded.
fn result(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The tool's error text, asserting it failed.
fn failure(output: &Output) -> String {
    assert!(!output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs git with a committer identity; its stdout, trimmed.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// A bare repository at `root/origin.git` whose branch `branch` holds `files`.
fn origin(root: &Path, branch: &str, files: &[(&str, &str)]) -> PathBuf {
    let seed = root.join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    git(&seed, &["init", "--quiet", "--initial-branch", branch]);
    for (path, contents) in files {
        std::fs::write(seed.join(path), contents).unwrap();
    }
    git(&seed, &["add", "-A"]);
    git(&seed, &["commit", "--quiet", "-m", "seed"]);
    let bare = root.join("origin.git");
    let output = std::process::Command::new("git")
        .args(["clone", "--quiet", "--bare"])
        .arg(&seed)
        .arg(&bare)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    bare
}

#[tokio::test]
async fn autofixer_checks_out_the_pr_branch_and_pushes_the_fix() {
    let root = tempfile::tempdir().unwrap();
    let project = init(root.path(), "pr-autofixer");
    let origin = origin(
        root.path(),
        "fix-add",
        &[("calc.py", "def add(a, b):\n    return a - b\n")],
    );
    let head = git(&origin, &["rev-parse", "fix-add"]);
    let github = FakeApi::start().await;
    github.respond(
        "/repos/acme/calc/pulls/7",
        json!({"head": {"ref": "fix-add", "sha": head, "repo": {"clone_url": format!("file://{}", origin.display())}}}),
    );
    let workspace = root.path().join("workspace");
    std::fs::create_dir_all(workspace.join("pr")).unwrap();
    std::fs::write(
        workspace.join("pr/meta.json"),
        json!({"repository": "acme/calc", "number": 7, "headSha": head}).to_string(),
    )
    .unwrap();
    let url = github.url();
    let env = [
        ("GITHUB_TOKEN", "test-token"),
        ("GITHUB_API_URL", url.as_str()),
    ];

    let output = call(&project, "checkout_pr", &workspace, json!({}), &env).await;
    assert_eq!(
        result(&output),
        json!({"repo": "repo/", "branch": "fix-add", "sha": head})
    );
    let calls = github.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        (calls[0].method.as_str(), calls[0].path.as_str()),
        ("GET", "/repos/acme/calc/pulls/7")
    );
    assert_eq!(calls[0].headers["authorization"], "Bearer test-token");
    let repo = workspace.join("repo");
    let config = std::fs::read_to_string(repo.join(".git/config")).unwrap();
    assert!(
        !config.contains("test-token") && !config.contains("Basic"),
        "{config}"
    );
    let again = call(&project, "checkout_pr", &workspace, json!({}), &env).await;
    assert!(failure(&again).contains("repo/ already exists"));

    let nothing = call(
        &project,
        "push_fix",
        &workspace,
        json!({"message": "Fix add"}),
        &env,
    )
    .await;
    assert!(failure(&nothing).contains("nothing to push"));
    std::fs::write(repo.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    let output = call(
        &project,
        "push_fix",
        &workspace,
        json!({"message": "Fix add: return the sum"}),
        &env,
    )
    .await;
    let pushed = result(&output);
    assert_eq!(pushed["branch"], "fix-add");
    assert_eq!(
        git(&origin, &["log", "-1", "--format=%H %an %s", "fix-add"]),
        format!(
            "{} folio-autofixer Fix add: return the sum",
            pushed["pushed"].as_str().unwrap()
        )
    );
    assert_eq!(
        git(&origin, &["show", "fix-add:calc.py"]),
        "def add(a, b):\n    return a + b"
    );

    let unset = call(
        &project,
        "checkout_pr",
        &root.path().join("elsewhere"),
        json!({}),
        &[],
    )
    .await;
    assert!(failure(&unset).contains("GITHUB_TOKEN is not set"));
}

#[tokio::test]
async fn owners_fetches_codeowners_from_the_base_branch_and_requests_reviewers() {
    let root = tempfile::tempdir().unwrap();
    let project = init(root.path(), "agentic-owners");
    let workspace = root.path().join("workspace");
    std::fs::create_dir_all(workspace.join("pr")).unwrap();
    std::fs::write(
        workspace.join("pr/diff.patch"),
        "--- a/db/migrations/0001.sql\n+++ b/db/migrations/0001.sql\n@@ -1 +1 @@\n-a\n+b\n--- /dev/null\n+++ b/src/new.rs\n@@ -0,0 +1 @@\n+fn main() {}\n",
    )
    .unwrap();
    std::fs::write(
        workspace.join("pr/meta.json"),
        json!({"repository": "acme/shop", "number": 42, "base": "main"}).to_string(),
    )
    .unwrap();
    let github = FakeApi::start().await;
    let codeowners = "* @acme/platform\n/db/migrations/ @dana @acme/data\n";
    github.respond(
        "/repos/acme/shop/contents/.github/CODEOWNERS",
        json!({"content": base64::engine::general_purpose::STANDARD.encode(codeowners)}),
    );
    github.answer([404]);
    let url = github.url();
    let env = [
        ("GITHUB_TOKEN", "test-token"),
        ("GITHUB_API_URL", url.as_str()),
    ];

    let output = call(&project, "owners_for", &workspace, json!({}), &env).await;
    assert_eq!(
        result(&output),
        json!({"codeowners": ".github/CODEOWNERS", "files": [
            {"file": "db/migrations/0001.sql", "owners": ["@dana", "@acme/data"], "pattern": "/db/migrations/", "line": 2},
            {"file": "src/new.rs", "owners": ["@acme/platform"], "pattern": "*", "line": 1},
        ]})
    );
    let paths: Vec<String> = github.calls().into_iter().map(|c| c.path).collect();
    assert_eq!(
        paths,
        [
            "/repos/acme/shop/contents/CODEOWNERS?ref=main",
            "/repos/acme/shop/contents/.github/CODEOWNERS?ref=main"
        ]
    );

    let input = json!({"owners": ["@dana", "@acme/data"], "reason": "edits an existing migration"});
    let output = call(
        &project,
        "request_reviewers",
        &workspace,
        input.clone(),
        &env,
    )
    .await;
    assert_eq!(
        result(&output),
        json!({"requested": ["@dana", "@acme/data"], "reason": "edits an existing migration"})
    );
    let request = github.calls().pop().unwrap();
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/repos/acme/shop/pulls/42/requested_reviewers")
    );
    assert_eq!(
        request.body,
        json!({"reviewers": ["dana"], "team_reviewers": ["data"]})
    );
    github.answer([422]);
    let refused = call(&project, "request_reviewers", &workspace, input, &env).await;
    assert!(failure(&refused).contains("GitHub refused the request: HTTP 422"));
}

#[tokio::test]
async fn osv_lookup_reports_each_advisory_with_its_fixed_versions() {
    let root = tempfile::tempdir().unwrap();
    let project = init(root.path(), "security-help");
    let osv = FakeApi::start().await;
    osv.respond(
        "/v1/query",
        json!({"vulns": [{
            "id": "GHSA-xxxx-yyyy-zzzz",
            "summary": "Remote code execution in load()",
            "affected": [{"ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "5.4"}]}]}],
        }]}),
    );
    let url = osv.url();
    let input = json!({"ecosystem": "PyPI", "name": "pyyaml", "version": "5.3"});
    let output = call(
        &project,
        "osv_lookup",
        root.path(),
        input,
        &[("OSV_API_URL", url.as_str())],
    )
    .await;
    assert_eq!(
        result(&output),
        json!({"package": "PyPI/pyyaml@5.3", "advisories": [
            {"id": "GHSA-xxxx-yyyy-zzzz", "summary": "Remote code execution in load()", "fixed": ["5.4"]},
        ]})
    );
    let query = osv.calls().pop().unwrap();
    assert_eq!(
        (query.method.as_str(), query.path.as_str()),
        ("POST", "/v1/query")
    );
    assert_eq!(
        query.body,
        json!({"version": "5.3", "package": {"name": "pyyaml", "ecosystem": "PyPI"}})
    );
}

#[tokio::test]
async fn code_wiki_sync_clones_then_pulls_the_repository() {
    let root = tempfile::tempdir().unwrap();
    let project = init(root.path(), "code-wiki");
    let origin = origin(
        root.path(),
        "main",
        &[("app.py", "def main():\n    pass\n")],
    );
    let workspace = root.path().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let url = format!("file://{}", origin.display());
    let env = [("CODE_WIKI_REPO", url.as_str())];

    let output = call(&project, "sync_repo", &workspace, json!({}), &env).await;
    let first = git(&origin, &["rev-parse", "main"]);
    assert_eq!(result(&output), json!({"repo": "repo/", "cloned": first}));
    assert!(workspace.join("repo/app.py").is_file());

    let seed = root.path().join("seed");
    std::fs::write(seed.join("billing.py"), "TAX_RATE = 0.2\n").unwrap();
    git(&seed, &["add", "-A"]);
    git(&seed, &["commit", "--quiet", "-m", "billing"]);
    git(
        &seed,
        &["push", "--quiet", origin.to_str().unwrap(), "main"],
    );
    let output = call(&project, "sync_repo", &workspace, json!({}), &env).await;
    let second = git(&origin, &["rev-parse", "main"]);
    assert_ne!(first, second);
    assert_eq!(result(&output), json!({"repo": "repo/", "pulled": second}));

    let output = call(
        &project,
        "code_outline",
        &workspace,
        json!({"path": "repo"}),
        &[],
    )
    .await;
    assert_eq!(
        result(&output),
        json!({"files": [
            {"file": "repo/app.py", "lines": 2, "definitions": [{"name": "main", "line": 1}]},
            {"file": "repo/billing.py", "lines": 1, "definitions": [{"name": "TAX_RATE", "line": 1}]},
        ]})
    );

    let unset = call(&project, "sync_repo", &workspace, json!({}), &[]).await;
    assert!(failure(&unset).contains("CODE_WIKI_REPO is not set"));
}
