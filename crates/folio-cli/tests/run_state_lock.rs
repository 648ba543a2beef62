//! One process owns a state root: `folio run` refuses a state root another process holds,
//! instead of recording that process's running turns as `server restarted`.

mod common;

use std::os::fd::AsRawFd;

use common::*;

#[tokio::test]
async fn a_state_root_in_use_is_refused_with_one_line() {
    let dir = project("model = \"openai:m\"\n");
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let held = std::fs::File::create(state.join(".lock")).unwrap();
    // SAFETY: an advisory lock on a file this test owns, released when it is dropped.
    assert_eq!(
        unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let output = folio("http://127.0.0.1:9")
        .args(["run", "--message", "hi", "--state-root"])
        .arg(&state)
        .arg("--dir")
        .arg(dir.path())
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("is in use by another folio process"),
        "{stderr}"
    );
    drop(held);
    assert!(
        std::fs::read_dir(state.join("sessions")).is_err(),
        "nothing was created"
    );
}
