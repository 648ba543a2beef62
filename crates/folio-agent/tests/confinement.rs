//! Sessions are confined (docs/filesystem.md): across every traversal form, every file tool and
//! every mount kind (a session workspace, a read-only and a writable `host_dir` mount under a
//! union), nothing outside is read, listed, written or deleted; reads refuse devices, FIFOs and
//! files over the cap without loading them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use folio_agent::tools::{
    FileTool, ScratchMode, TodoList, ToolContext, ToolError, ToolOutput, ToolRegistry,
};
use folio_fs::{FileSystem, READ_BYTE_CAP, host_dir, union_fs, workspace_fs};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The text planted outside every mount; no tool output may contain it.
const SECRET: &str = "bob-token-7f3a";

fn registry() -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for tool in FileTool::ALL {
        registry.register(Arc::new(tool)).unwrap();
    }
    registry
}

async fn call(fs: &Arc<dyn FileSystem>, workspace: &Path, tool: &str, input: Value) -> String {
    let ctx = ToolContext {
        fs: fs.clone(),
        workspace: workspace.to_path_buf(),
        scratch: ScratchMode::Host,
        cancel: CancellationToken::new(),
        todos: TodoList::default(),
        session_id: "ses_test".into(),
        call_id: "call_1".into(),
        dry_run: false,
        purpose: None,
        continuation_key: None,
        principal: "local".into(),
        peer_depth: 0,
        turn_id: None,
        host: None,
    };
    match registry().call(tool, input, &ctx).await {
        Ok(ToolOutput::Text(text)) => text,
        Ok(other) => format!("{other:?}"),
        Err(ToolError(message)) => message,
    }
}

/// A state root like `serve`'s: alice's workspace (with a `memory/` link), bob's trace and a
/// tokens file beside it, and links planted in the workspace that point out.
struct Layout {
    _dir: tempfile::TempDir,
    state: PathBuf,
    workspace: PathBuf,
    memory: PathBuf,
    mount: PathBuf,
}

fn layout() -> Layout {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().canonicalize().unwrap();
    let workspace = state.join("sessions/alice-1/workspace");
    let memory = state.join("memory");
    let mount = state.join("mounted");
    for d in [&workspace, &memory, &mount, &state.join("traces")] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(state.join("tokens.toml"), format!("bob = \"{SECRET}\"\n")).unwrap();
    std::fs::write(state.join("traces/bob-1.ndjson"), format!("{SECRET}\n")).unwrap();
    std::fs::write(workspace.join("mine.txt"), "alice's notes\n").unwrap();
    std::fs::write(mount.join("inside.txt"), "mounted\n").unwrap();
    std::fs::write(memory.join("kept.md"), "remembered\n").unwrap();
    std::os::unix::fs::symlink(&memory, workspace.join("memory")).unwrap();
    for base in [&workspace, &mount] {
        std::os::unix::fs::symlink(&state, base.join("up")).unwrap();
        std::os::unix::fs::symlink(state.join("tokens.toml"), base.join("tokens-link")).unwrap();
    }
    Layout {
        _dir: dir,
        state,
        workspace,
        memory,
        mount,
    }
}

/// Paths that try to leave the tree, relative to its root, for a tree whose root is `root`
/// on the host (`None`: the tree is rooted at `/`).
fn traversals(state: &Path, prefix: &str) -> Vec<String> {
    let s = state.display();
    let mut forms = vec![
        format!("{s}/tokens.toml"),
        format!("{s}/traces/bob-1.ndjson"),
        format!("{s}/traces"),
        format!("{s}"),
        "/etc/passwd".to_string(),
        "/proc/self/environ".to_string(),
    ];
    for rel in [
        "../../../tokens.toml",
        "../../../traces/bob-1.ndjson",
        "./../../../tokens.toml",
        "a/../../../../tokens.toml",
        "memory/../../../../tokens.toml",
        "up/tokens.toml",
        "up/traces/bob-1.ndjson",
        "up/traces",
        "tokens-link",
        "..",
        "../..",
    ] {
        forms.push(format!("{prefix}{rel}"));
    }
    forms
}

/// Every tool × traversal form on `fs`: no output carries the secret and nothing outside
/// changes.
async fn assert_confined(fs: Arc<dyn FileSystem>, cwd: &Path, layout: &Layout, prefix: &str) {
    for path in traversals(&layout.state, prefix) {
        let calls = [
            ("Read", json!({"path": path})),
            ("LS", json!({"path": path})),
            ("Grep", json!({"pattern": "bob", "path": path})),
            (
                "Grep",
                json!({"pattern": "bob-token", "path": path, "outputMode": "content"}),
            ),
            ("Glob", json!({"pattern": "**/*", "path": path})),
            ("Glob", json!({"pattern": format!("{path}/*")})),
            (
                "Glob",
                json!({"pattern": "../../../*.toml", "path": format!("{prefix}.")}),
            ),
            ("Glob", json!({"pattern": "../**/*", "path": prefix})),
            ("SemanticSearch", json!({"query": "bob", "path": path})),
            (
                "Write",
                json!({"path": format!("{path}/pwned"), "contents": "x"}),
            ),
            ("Write", json!({"path": path, "contents": "x"})),
            (
                "StrReplace",
                json!({"path": path, "oldText": SECRET, "newText": "x"}),
            ),
            ("Delete", json!({"path": path})),
        ];
        for (tool, input) in calls {
            let out = call(&fs, cwd, tool, input.clone()).await;
            // Neither contents nor names from outside (an error may echo the path asked).
            let named = input.to_string().contains("bob-1");
            assert!(
                !out.contains(SECRET) && (named || !out.contains("bob-1")),
                "{tool} {input}: {out}"
            );
        }
    }
    assert_eq!(
        std::fs::read_to_string(layout.state.join("tokens.toml")).unwrap(),
        format!("bob = \"{SECRET}\"\n")
    );
    assert!(layout.state.join("traces/bob-1.ndjson").exists());
    assert!(!layout.state.join("pwned").exists());
    assert!(!layout.state.join("traces/pwned").exists());
}

#[tokio::test]
async fn a_session_workspace_keeps_every_tool_inside() {
    let layout = layout();
    let fs = workspace_fs(
        &layout.workspace,
        std::slice::from_ref(&layout.memory),
        None,
    )
    .unwrap();
    assert_confined(fs.clone(), &layout.workspace, &layout, "").await;
    // What is inside still works, the memory/ link included.
    let ws = &layout.workspace;
    assert_eq!(
        call(&fs, ws, "Read", json!({"path": "mine.txt"})).await,
        "     1\talice's notes"
    );
    assert_eq!(
        call(&fs, ws, "Read", json!({"path": "memory/kept.md"})).await,
        "     1\tremembered"
    );
    let absolute = ws.join("mine.txt").display().to_string();
    assert_eq!(
        call(&fs, ws, "Read", json!({"path": absolute})).await,
        "     1\talice's notes"
    );
    call(
        &fs,
        ws,
        "Write",
        json!({"path": "memory/new.md", "contents": "n"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(layout.memory.join("new.md")).unwrap(),
        "n"
    );
    assert_eq!(
        call(&fs, ws, "Read", json!({"path": "/etc/passwd"})).await,
        "outside the session workspace: /etc/passwd (paths must stay in the workspace)"
    );
}

#[tokio::test]
async fn host_dir_mounts_keep_every_tool_inside() {
    let layout = layout();
    for read_only in [true, false] {
        let mount = host_dir(&layout.mount, read_only).unwrap();
        let fs = union_fs([("/m", mount)]);
        assert_confined(fs.clone(), Path::new("/"), &layout, "/m/").await;
        assert_eq!(
            call(
                &fs,
                Path::new("/"),
                "Read",
                json!({"path": "/m/inside.txt"})
            )
            .await,
            "     1\tmounted"
        );
    }
}

#[tokio::test]
async fn reads_refuse_devices_fifos_and_files_over_the_cap() {
    let layout = layout();
    let ws = &layout.workspace;
    let fifo = ws.join("pipe");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    std::os::unix::fs::symlink("/dev/zero", ws.join("zero")).unwrap();
    // A first line, then a sparse run of NULs past the cap (one long second line).
    std::fs::write(ws.join("big.log"), "first line\n").unwrap();
    let big = std::fs::OpenOptions::new()
        .write(true)
        .open(ws.join("big.log"))
        .unwrap();
    big.set_len(READ_BYTE_CAP + 1).unwrap();
    let confined = workspace_fs(ws, std::slice::from_ref(&layout.memory), None).unwrap();
    let unconfined = folio_fs::local_fs(ws);
    for fs in [confined, unconfined] {
        assert_eq!(
            call(&fs, ws, "Read", json!({"path": "pipe"})).await,
            format!(
                "not a regular file: {}/pipe (devices, FIFOs and sockets are not read)",
                ws.display()
            )
        );
        // Read streams: the page costs its lines, not the file.
        assert_eq!(
            call(&fs, ws, "Read", json!({"path": "big.log", "limit": 1})).await,
            "     1\tfirst line\n… 1 more lines; call Read with offset=2"
        );
        // Whole-file readers (StrReplace) refuse it without loading it.
        assert_eq!(
            call(
                &fs,
                ws,
                "StrReplace",
                json!({"path": "big.log", "oldText": "first", "newText": "1st"})
            )
            .await,
            format!(
                "too large to read: {}/big.log is over {READ_BYTE_CAP} bytes; use Grep, or Shell with head/sed",
                ws.display()
            )
        );
    }
    let host = folio_fs::local_fs(ws);
    assert_eq!(
        call(&host, ws, "Read", json!({"path": "/dev/zero"})).await,
        "not a regular file: /dev/zero (devices, FIFOs and sockets are not read)"
    );
}
