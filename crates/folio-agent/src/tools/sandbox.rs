//! The `Shell` sandbox (`[local] sandbox = true`, project-format.md): Linux Landlock confines the
//! whole process tree of a command. It may write only in the session workspace (with its
//! `memory/` link target) and a scratch directory of its own (`TMPDIR`); it may read and run
//! the system directories plus what `[local] sandbox_read` lists, and nothing else (no home
//! directories, no other session, no server state, no `/proc`, whose `environ` files would leak
//! the server's keys); TCP `bind`/`connect` are refused unless `[local] sandbox_network = true`.
//!
//! The ruleset is built in the parent (it opens the allowed directories) and applied in the child
//! between `fork` and `exec` (`pre_exec`), where only two async-signal-safe system calls run:
//! `prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self`. Every rule is a hard requirement:
//! on a kernel that cannot enforce all of it (no Landlock, or an ABI older than v4 while the
//! network is off) `Shell` refuses to run with a one-line error, never silently unconfined.
//!
//! **Default:** the sandbox is what `[local] sandbox` says; it is not switched on implicitly,
//! because commands that need the toolchains under a home directory would break without a word.
//! `folio serve` keeps several principals apart in the file tools by itself; a deployment that
//! lets several principals use `Shell` should set `sandbox = true` (the README says so).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, path_beneath_rules,
};

/// The Landlock ABI every filesystem rule is written for (v3 adds `truncate`).
const FS_ABI: ABI = ABI::V3;
/// The Landlock ABI that restricts TCP `bind` and `connect`.
const NET_ABI: ABI = ABI::V4;

/// Directories every sandboxed command may read and execute from.
const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt", "/dev",
];
/// Device files a command may write to.
const DEVICES_WRITE: &[&str] = &["/dev/null", "/dev/zero", "/dev/tty", "/dev/full"];

/// What a sandboxed `Shell` may reach beyond the workspace (from `[local]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// Extra host paths the command may read (`[local] sandbox_read`).
    pub read: Vec<PathBuf>,
    /// Whether TCP `bind`/`connect` stay allowed (`[local] sandbox_network`).
    pub network: bool,
}

/// Why a command cannot run sandboxed.
#[derive(Debug, thiserror::Error)]
#[error(
    "Shell is sandboxed ([local] sandbox = true) but this kernel cannot enforce it ({0}); the command was not run"
)]
pub struct SandboxError(String);

/// A ruleset ready to be applied in a child process.
#[derive(Debug)]
pub(crate) struct Prepared {
    fd: OwnedFd,
}

impl SandboxPolicy {
    /// Builds the ruleset for a command in `workspace` writing temporary files in `scratch`.
    pub(crate) fn prepare(
        &self,
        workspace: &Path,
        scratch: &Path,
    ) -> Result<Prepared, SandboxError> {
        let fail = |err: &dyn std::fmt::Display| SandboxError(err.to_string());
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(FS_ABI))
            .map_err(|e| fail(&e))?;
        if !self.network {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(NET_ABI))
                .map_err(|e| fail(&e))?;
        }
        let mut created = ruleset.create().map_err(|e| fail(&e))?;
        // Links (the workspace's memory/) are granted at their targets: Landlock checks the
        // resolved file.
        let mut writable: Vec<PathBuf> = vec![workspace.to_path_buf(), scratch.to_path_buf()];
        if let Ok(memory) = std::fs::canonicalize(workspace.join("memory")) {
            writable.push(memory);
        }
        // Best effort for optional system paths (a missing /lib32 is fine); the workspace and
        // scratch must exist, which the caller guarantees.
        let existing = |paths: Vec<PathBuf>| -> Vec<PathBuf> {
            paths.into_iter().filter(|p| p.exists()).collect()
        };
        let readable = existing(
            SYSTEM_READ
                .iter()
                .map(PathBuf::from)
                .chain(self.read.iter().cloned())
                .collect(),
        );
        created = created
            .add_rules(path_beneath_rules(readable, AccessFs::from_read(FS_ABI)))
            .map_err(|e| fail(&e))?
            .add_rules(path_beneath_rules(
                existing(DEVICES_WRITE.iter().map(PathBuf::from).collect()),
                AccessFs::from_all(FS_ABI),
            ))
            .map_err(|e| fail(&e))?
            .add_rules(path_beneath_rules(writable, AccessFs::from_all(FS_ABI)))
            .map_err(|e| fail(&e))?;
        let fd: Option<OwnedFd> = created.into();
        let fd = fd.ok_or_else(|| SandboxError("Landlock is not available".into()))?;
        Ok(Prepared { fd })
    }
}

impl Prepared {
    /// Makes `command` apply the ruleset to itself between `fork` and `exec`.
    pub(crate) fn apply_to(self, command: &mut tokio::process::Command) {
        let fd = self.fd;
        // SAFETY: the closure runs in the forked child before exec and makes only two
        // async-signal-safe system calls on a descriptor the parent keeps open until the
        // command is spawned (the closure owns it).
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `script` sandboxed in `workspace`; `None` when the kernel has no Landlock v4.
    async fn run(policy: &SandboxPolicy, workspace: &Path, script: &str) -> Option<(bool, String)> {
        let scratch = tempfile::tempdir().unwrap();
        let prepared = policy.prepare(workspace, scratch.path()).ok()?;
        let mut command = tokio::process::Command::new("bash");
        command.arg("-c").arg(script).current_dir(workspace);
        prepared.apply_to(&mut command);
        let out = command.output().await.unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        Some((out.status.success(), text))
    }

    #[tokio::test]
    async fn writes_stay_in_the_workspace_and_reads_in_allowed_places() {
        let workspace = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s3cret").unwrap();
        let policy = SandboxPolicy::default();
        let Some((ok, _)) = run(&policy, workspace.path(), "echo hi > inside.txt").await else {
            eprintln!("skipped: this kernel has no Landlock ABI v4");
            return;
        };
        assert!(ok);
        assert_eq!(
            std::fs::read_to_string(workspace.path().join("inside.txt")).unwrap(),
            "hi\n"
        );
        let o = outside.path().display();
        for script in [
            format!("echo x > {o}/new"),
            format!("cat {o}/secret"),
            format!("ls {o}"),
            "cat /proc/self/environ".to_string(),
        ] {
            let (ok, text) = run(&policy, workspace.path(), &script).await.unwrap();
            assert!(!ok && !text.contains("s3cret"), "{script}: {text}");
        }
        assert!(!outside.path().join("new").exists());
        // Listed reads are allowed.
        let reading = SandboxPolicy {
            read: vec![outside.path().to_path_buf()],
            network: false,
        };
        let (ok, text) = run(&reading, workspace.path(), &format!("cat {o}/secret"))
            .await
            .unwrap();
        assert!(ok && text.contains("s3cret"), "{text}");
    }

    #[tokio::test]
    async fn tcp_is_refused_unless_allowed() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let workspace = tempfile::tempdir().unwrap();
        let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
        let Some((ok, text)) = run(&SandboxPolicy::default(), workspace.path(), &script).await
        else {
            eprintln!("skipped: this kernel has no Landlock ABI v4");
            return;
        };
        assert!(!ok && !text.contains("connected"), "{text}");
        let open = SandboxPolicy {
            read: Vec::new(),
            network: true,
        };
        let (ok, text) = run(&open, workspace.path(), &script).await.unwrap();
        assert!(ok && text.contains("connected"), "{text}");
    }
}
