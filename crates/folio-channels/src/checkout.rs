//! The working copy of a PR session: before each turn a GitHub delivery starts, the PR's head
//! (the delivery's head commit, else `refs/pull/<N>/head`) is fetched shallowly (`--depth 1`)
//! into a bare mirror of the repository that this server keeps under its state root
//! (`<state>/github/<installation or "token">/<owner>/<repo>.git`, reused by later sessions and
//! locked while in use, so concurrent sessions of one repository never corrupt it), then
//! written into the session's workspace under `repo/` (`git read-tree -u --reset` with an
//! index of the session's own, kept beside the mirror: files the new head deleted are removed,
//! files the agent added stay). `repo/` holds the files only: its git directory is the
//! server's, never the workspace's, so nothing the agent writes there is run by the server's
//! `git`.
//!
//! The clone URL is the payload's `repository.clone_url`; the channel's token (or the App's
//! installation token) reaches `git` as an `http.extraHeader` in its environment, never in a
//! URL, a file or a log. A checkout that fails leaves the turn running with `pr/diff.patch`
//! and writes why into `pr/checkout-error.txt` (and the server log).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use folio_session::{LogBuffer, PrepareWorkspace};

/// The folder of the workspace that holds the checkout.
pub(crate) const CHECKOUT_DIR: &str = "repo";
/// Where a failed checkout says why.
pub(crate) const CHECKOUT_ERROR: &str = "pr/checkout-error.txt";
/// How long one fetch from the provider may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(300);
/// How long one local `git` step may take.
const LOCAL_TIMEOUT: Duration = Duration::from_secs(120);

/// Why the PR's head was not checked out.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CheckoutError {
    /// `owner/repo` is not two plain path segments.
    #[error("the repository name {0:?} is not owner/repo")]
    BadRepo(String),
    /// The clone URL is not an `https://` (or `http://`) URL.
    #[error("the clone URL {0:?} is not an https:// or http:// URL")]
    CloneUrl(String),
    /// The cache or the workspace could not be written.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// `git` could not be started (not installed?).
    #[error("git {step}: cannot run git ({source}); install git on the server")]
    Spawn {
        /// The git subcommand.
        step: String,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// A `git` step exited with an error.
    #[error("git {step} failed: {stderr}")]
    Git {
        /// The git subcommand.
        step: String,
        /// Its last lines of standard error.
        stderr: String,
    },
    /// A `git` step ran past its time.
    #[error("git {step} did not finish within {secs} s")]
    Timeout {
        /// The git subcommand.
        step: String,
        /// The limit.
        secs: u64,
    },
}

/// What to check out for one wake: a [`PrepareWorkspace`] the session runs before its turn.
pub(crate) struct Checkout {
    /// This server's cache of GitHub repositories (`<state>/github`).
    pub(crate) cache: PathBuf,
    /// The installation the token belongs to (`None`: the channel's token).
    pub(crate) installation: Option<u64>,
    /// `owner/repo`.
    pub(crate) repo: String,
    /// The PR number.
    pub(crate) number: u64,
    /// The head commit, when the delivery names it.
    pub(crate) head_sha: Option<String>,
    /// `repository.clone_url` of the payload.
    pub(crate) clone_url: String,
    /// The token sent as HTTP Basic `x-access-token:<token>` (`None`: anonymous).
    pub(crate) token: Option<String>,
    /// The channel id (for the log).
    pub(crate) channel: String,
    /// The server's log.
    pub(crate) logs: LogBuffer,
}

impl PrepareWorkspace for Checkout {
    fn prepare<'a>(
        &'a self,
        session: &'a str,
        workspace: &'a Path,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            let note = workspace.join(CHECKOUT_ERROR);
            match self.check_out(session, workspace).await {
                Ok(sha) => {
                    let _ = tokio::fs::remove_file(&note).await;
                    self.logs.about(session).info(format!(
                        "channel {}: {}#{} at {sha} checked out in {CHECKOUT_DIR}/",
                        self.channel, self.repo, self.number
                    ));
                }
                Err(err) => {
                    let text = format!(
                        "The pull request's head was not checked out in {CHECKOUT_DIR}/: {err}\nThe diff is in pr/diff.patch.\n"
                    );
                    let written = match note.parent() {
                        Some(dir) => tokio::fs::create_dir_all(dir).await,
                        None => Ok(()),
                    };
                    if let Err(write) = written.and(std::fs::write(&note, text)) {
                        self.logs.about(session).warn(format!(
                            "channel {}: {CHECKOUT_ERROR} not written: {write}",
                            self.channel
                        ));
                    }
                    self.logs.about(session).warn(format!(
                        "channel {}: {}#{} not checked out: {err}",
                        self.channel, self.repo, self.number
                    ));
                }
            }
        })
    }
}

impl Checkout {
    /// The shared [`folio_session::WorkspacePrep`] of this checkout.
    pub(crate) fn into_prep(self) -> folio_session::WorkspacePrep {
        folio_session::WorkspacePrep(Arc::new(self))
    }

    /// Fetches the head into the mirror (unless there) and writes it into `repo/`; the commit.
    async fn check_out(&self, session: &str, workspace: &Path) -> Result<String, CheckoutError> {
        let (owner, name) = split_repo(&self.repo)?;
        // The token goes with the fetch: never to another transport (`file://`, `ext::`, ssh).
        if !(self.clone_url.starts_with("https://") || self.clone_url.starts_with("http://")) {
            return Err(CheckoutError::CloneUrl(self.clone_url.clone()));
        }
        let owner_dir = self
            .cache
            .join(
                self.installation
                    .map_or("token".to_string(), |i| i.to_string()),
            )
            .join(owner);
        let mirror = owner_dir.join(format!("{name}.git"));
        let io = |what: String| move |source| CheckoutError::Io { what, source };
        tokio::fs::create_dir_all(&owner_dir)
            .await
            .map_err(io(format!("cannot create {}", owner_dir.display())))?;
        let _lock = lock(owner_dir.join(format!("{name}.lock"))).await?;
        if !mirror.join("HEAD").exists() {
            let _ = tokio::fs::remove_dir_all(&mirror).await;
            git(
                None,
                &["init", "--quiet", "--bare"],
                Some(&mirror),
                LOCAL_TIMEOUT,
            )
            .await?;
        }
        let mirror_arg = mirror.as_os_str().to_string_lossy().into_owned();
        let at = |args: &[&str]| {
            let mut all = vec!["--git-dir", mirror_arg.as_str()];
            all.extend_from_slice(args);
            all.into_iter().map(String::from).collect::<Vec<_>>()
        };
        let local_ref = format!("refs/folio/pull/{}", self.number);
        let have = match &self.head_sha {
            Some(sha) => {
                let probe = format!("{sha}^{{commit}}");
                git_args(None, &at(&["cat-file", "-e", &probe]), LOCAL_TIMEOUT)
                    .await
                    .is_ok()
            }
            None => false,
        };
        if !have {
            let source = match &self.head_sha {
                Some(sha) => sha.clone(),
                None => format!("refs/pull/{}/head", self.number),
            };
            let refspec = format!("+{source}:{local_ref}");
            let header = self.token.as_ref().map(|token| {
                let basic = base64::engine::general_purpose::STANDARD
                    .encode(format!("x-access-token:{token}"));
                format!("Authorization: Basic {basic}")
            });
            git_args(
                header.as_deref(),
                &at(&[
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    "--depth",
                    "1",
                    &self.clone_url,
                    &refspec,
                ]),
                FETCH_TIMEOUT,
            )
            .await?;
        } else if let Some(sha) = &self.head_sha {
            git_args(None, &at(&["update-ref", &local_ref, sha]), LOCAL_TIMEOUT).await?;
        }
        let sha = git_args(None, &at(&["rev-parse", &local_ref]), LOCAL_TIMEOUT)
            .await?
            .trim()
            .to_string();
        let tree = workspace.join(CHECKOUT_DIR);
        tokio::fs::create_dir_all(&tree)
            .await
            .map_err(io(format!("cannot create {}", tree.display())))?;
        let index_dir = self.cache.join("sessions");
        tokio::fs::create_dir_all(&index_dir)
            .await
            .map_err(io(format!("cannot create {}", index_dir.display())))?;
        let index = index_dir.join(format!("{session}.index"));
        let tree_arg = tree.as_os_str().to_string_lossy().into_owned();
        let mut command = git_command(None);
        command.env("GIT_INDEX_FILE", &index).args(at(&[
            "--work-tree",
            &tree_arg,
            "read-tree",
            "-u",
            "--reset",
            &sha,
        ]));
        run(command, "read-tree", LOCAL_TIMEOUT).await?;
        Ok(sha)
    }
}

/// `owner/repo` as two plain path segments.
fn split_repo(repo: &str) -> Result<(&str, &str), CheckoutError> {
    let plain = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    match repo.split_once('/') {
        Some((owner, name)) if plain(owner) && plain(name) => Ok((owner, name)),
        _ => Err(CheckoutError::BadRepo(repo.to_string())),
    }
}

/// Takes the mirror's lock file (blocking in a worker thread): held until dropped.
async fn lock(path: PathBuf) -> Result<std::fs::File, CheckoutError> {
    let what = format!("cannot lock {}", path.display());
    let locked = tokio::task::spawn_blocking(move || {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        file.lock()?;
        Ok(file)
    })
    .await
    .unwrap_or_else(|join| Err(std::io::Error::other(join.to_string())));
    locked.map_err(|source| CheckoutError::Io { what, source })
}

/// `git` with no prompt, no credential helper, and `extra_header` (an `http.extraHeader`)
/// passed in the environment, not on the command line.
fn git_command(extra_header: Option<&str>) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("git");
    command
        .env("GIT_TERMINAL_PROMPT", "0")
        .args(["-c", "credential.helper=", "-c", "core.hooksPath=/dev/null"])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    if let Some(header) = extra_header {
        command
            .env("GIT_CONFIG_COUNT", "1")
            .env("GIT_CONFIG_KEY_0", "http.extraHeader")
            .env("GIT_CONFIG_VALUE_0", header);
    }
    command
}

/// Runs `git args… [dir]`.
async fn git(
    header: Option<&str>,
    args: &[&str],
    dir: Option<&Path>,
    timeout: Duration,
) -> Result<String, CheckoutError> {
    let mut command = git_command(header);
    command.args(args);
    if let Some(dir) = dir {
        command.arg(dir);
    }
    run(command, args.first().copied().unwrap_or("git"), timeout).await
}

/// Runs `git args…`; its standard output.
async fn git_args(
    header: Option<&str>,
    args: &[String],
    timeout: Duration,
) -> Result<String, CheckoutError> {
    let mut command = git_command(header);
    command.args(args);
    let step = args
        .iter()
        .find(|a| !a.starts_with('-') && !a.contains('/'))
        .cloned()
        .unwrap_or_else(|| "git".into());
    run(command, &step, timeout).await
}

/// Runs `command` (the git step `step`) within `timeout`.
async fn run(
    mut command: tokio::process::Command,
    step: &str,
    timeout: Duration,
) -> Result<String, CheckoutError> {
    let output = tokio::time::timeout(timeout, command.output())
        .await
        .map_err(|_| CheckoutError::Timeout {
            step: step.to_string(),
            secs: timeout.as_secs(),
        })?
        .map_err(|source| CheckoutError::Spawn {
            step: step.to_string(),
            source,
        })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
    let stderr = tail.into_iter().rev().collect::<Vec<_>>().join(" / ");
    Err(CheckoutError::Git {
        step: step.to_string(),
        stderr: if stderr.is_empty() {
            format!("exit {}", output.status)
        } else {
            stderr
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_names_are_two_plain_segments() {
        assert_eq!(split_repo("octo/hello.rs").unwrap(), ("octo", "hello.rs"));
        for bad in ["octo", "../x", "octo/..", "a/b/c", "a/ b", "/x"] {
            assert!(split_repo(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn the_token_goes_to_http_clone_urls_only() {
        let dir = tempfile::tempdir().unwrap();
        let checkout = Checkout {
            cache: dir.path().join("cache"),
            installation: None,
            repo: "octo/hello".into(),
            number: 1,
            head_sha: None,
            clone_url: "file:///srv/git/hello.git".into(),
            token: Some("ghp_x".into()),
            channel: "gh".into(),
            logs: LogBuffer::new(),
        };
        let workspace = dir.path().join("workspace");
        checkout.prepare("ses_1", &workspace).await;
        let note = std::fs::read_to_string(workspace.join(CHECKOUT_ERROR)).unwrap();
        assert_eq!(
            note,
            "The pull request's head was not checked out in repo/: the clone URL \"file:///srv/git/hello.git\" is not an https:// or http:// URL\nThe diff is in pr/diff.patch.\n"
        );
        assert!(!dir.path().join("cache").exists());
    }

    /// Runs `git args…` in `dir`; its output.
    fn run_git(dir: &Path, args: &[&str]) -> String {
        let output = std::process::Command::new("git")
            .args(["-c", "user.name=T", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}: {output:?}");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn concurrent_sessions_of_one_repository_share_the_mirror_safely() {
        let dir = tempfile::tempdir().unwrap();
        let bare = dir.path().join("repos/octo/hello.git");
        std::fs::create_dir_all(&bare).unwrap();
        run_git(&bare, &["init", "--quiet", "--bare"]);
        run_git(&bare, &["config", "uploadpack.allowAnySHA1InWant", "true"]);
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        run_git(&work, &["init", "--quiet"]);
        let mut shas = Vec::new();
        for n in 0..4 {
            std::fs::write(work.join("file.txt"), format!("version {n}")).unwrap();
            run_git(&work, &["add", "."]);
            run_git(&work, &["commit", "--quiet", "-m", "v"]);
            shas.push(run_git(&work, &["rev-parse", "HEAD"]));
            let push = format!("HEAD:refs/heads/v{n}");
            run_git(&work, &["push", "--quiet", bare.to_str().unwrap(), &push]);
        }
        let api = folio_test_support::FakeApi::start().await;
        api.serve_git(&dir.path().join("repos"), Some("tok"));
        let checkouts = shas.iter().enumerate().map(|(n, sha)| {
            let checkout = Checkout {
                cache: dir.path().join("cache"),
                installation: Some(9),
                repo: "octo/hello".into(),
                number: n as u64,
                head_sha: Some(sha.clone()),
                clone_url: format!("{}/git/octo/hello.git", api.url()),
                token: Some("tok".into()),
                channel: "gh".into(),
                logs: LogBuffer::new(),
            };
            let workspace = dir.path().join(format!("ws{n}"));
            async move {
                checkout.prepare(&format!("ses_{n}"), &workspace).await;
                workspace
            }
        });
        let workspaces = futures::future::join_all(checkouts).await;
        for (n, workspace) in workspaces.iter().enumerate() {
            assert!(
                !workspace.join(CHECKOUT_ERROR).exists(),
                "{n}: {:?}",
                std::fs::read_to_string(workspace.join(CHECKOUT_ERROR))
            );
            assert_eq!(
                std::fs::read_to_string(workspace.join("repo/file.txt")).unwrap(),
                format!("version {n}")
            );
        }
        // One mirror, per installation and repository, that git finds sound.
        let mirror = dir.path().join("cache/9/octo/hello.git");
        run_git(&mirror, &["fsck", "--no-progress"]);
    }

    #[test]
    fn the_token_travels_in_the_environment_not_the_arguments() {
        let command = git_command(Some("Authorization: Basic eA=="));
        let std = command.as_std();
        let args: Vec<_> = std
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(args.iter().all(|a| !a.contains("Basic")), "{args:?}");
        let envs: Vec<_> = std
            .get_envs()
            .filter_map(|(k, v)| {
                Some((
                    k.to_string_lossy().into_owned(),
                    v?.to_string_lossy().into_owned(),
                ))
            })
            .collect();
        assert!(envs.contains(&(
            "GIT_CONFIG_VALUE_0".into(),
            "Authorization: Basic eA==".into()
        )));
    }
}
