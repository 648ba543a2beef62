//! `folio store copy --from STORE --to STORE`: copies a session store (a state root on disk or
//! a PostgreSQL database) into another, resumably, then compares the two
//! ([`folio_store::copy`]); and the check by which `folio serve` refuses a store a copy is
//! still writing.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use folio_store::SessionStore;
use folio_store::copy::{CopyCounts, VerifyCounts};
use folio_store_disk::{DiskStore, StateRoot};
use folio_store_postgres::{PgOptions, PgStore};
use serde::Serialize;

/// Which stores, and what to do.
#[derive(Debug, clap::Args)]
pub(crate) struct CopyArgs {
    /// The store to copy: a state root (the folder `folio serve` keeps an agent's sessions in,
    /// `<project>/.folio/state` by default) or postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE.
    #[arg(long)]
    from: String,
    /// Where to copy it: a state root (created when missing) or a PostgreSQL URL (migrated
    /// first). A copy that stopped half way is continued by the same command.
    #[arg(long)]
    to: String,
    /// Only compare the two stores (nothing is written); exit 1 at the first difference.
    #[arg(long)]
    verify_only: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

/// One end of a copy.
struct Store {
    /// How messages name it (a path, or `host:port/database` without credentials).
    name: String,
    store: Arc<dyn SessionStore>,
    /// The state root, for a disk store (workspaces are copied between two of them).
    root: Option<StateRoot>,
}

/// Whether `spec` names a PostgreSQL store.
fn is_postgres(spec: &str) -> bool {
    spec.starts_with("postgres://") || spec.starts_with("postgresql://")
}

/// Opens `spec`; `source`: the store copied from, which must exist.
async fn open(spec: &str, source: bool) -> anyhow::Result<Store> {
    if is_postgres(spec) {
        let store = PgStore::open(spec, PgOptions::default()).await.with_context(|| {
            format!("cannot open the PostgreSQL store {spec:?} (`folio store check --store URL` says more)")
        })?;
        return Ok(Store {
            name: store.location(),
            store: Arc::new(store),
            root: None,
        });
    }
    let path = PathBuf::from(spec);
    if source && !path.join("sessions").is_dir() && !path.join("traces").is_dir() {
        bail!(
            "{spec}: not a state root (no sessions/ or traces/ folder in it): name the folder `folio serve` keeps the agent's sessions in (<project>/.folio/state, or <state-root>/<slug> when it serves several agents)"
        );
    }
    let root = StateRoot::new(&path);
    let store = DiskStore::open(root.clone())
        .with_context(|| format!("cannot open the state root {spec}"))?;
    Ok(Store {
        name: path.display().to_string(),
        store: Arc::new(store),
        root: Some(root),
    })
}

/// What `--json` prints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    from: String,
    to: String,
    /// What was written (absent with `--verify-only`).
    #[serde(skip_serializing_if = "Option::is_none")]
    copied: Option<CopyCounts>,
    /// Session workspace files copied (between two state roots).
    #[serde(skip_serializing_if = "Option::is_none")]
    workspace_files: Option<u64>,
    verified: VerifyCounts,
    seconds: f64,
}

/// Runs `folio store copy`.
pub(crate) async fn copy(args: CopyArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    if args.from == args.to
        || (!is_postgres(&args.from)
            && !is_postgres(&args.to)
            && same_dir(Path::new(&args.from), Path::new(&args.to)))
    {
        bail!("--from and --to name the same store: copy into another state root or database");
    }
    let from = open(&args.from, true).await?;
    let to = open(&args.to, false).await?;
    if let Some(marker) = from.store.copy_marker().await? {
        bail!(
            "{} is itself the destination of a copy that has not finished ({marker}): finish that copy first",
            from.name
        );
    }
    let progress = |what: &'static str, done: u64| {
        let sessions = matches!(what, "sessions" | "sessions verified");
        if !sessions || done.is_multiple_of(1000) {
            eprintln!("folio: {what}: {done}");
        }
    };
    let (copied, workspace_files) = if args.verify_only {
        (None, None)
    } else {
        let marker = format!(
            "folio store copy --from {} --to {}, started {}",
            from.name,
            to.name,
            chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        );
        to.store.set_copy_marker(Some(&marker)).await?;
        eprintln!("folio: copying {} into {}", from.name, to.name);
        let copied = folio_store::copy::copy(&*from.store, &*to.store, &progress).await?;
        let files = match (&from.root, &to.root) {
            (Some(source), Some(destination)) => Some(copy_workspaces(source, destination)?),
            _ => None,
        };
        (Some(copied), files)
    };
    eprintln!("folio: comparing {} with {}", from.name, to.name);
    let verified = folio_store::copy::verify(&*from.store, &*to.store, &progress).await?;
    if !args.verify_only {
        to.store.set_copy_marker(None).await?;
    }
    from.store.close().await;
    to.store.close().await;
    let summary = Summary {
        from: from.name,
        to: to.name,
        copied,
        workspace_files,
        verified,
        seconds: started.elapsed().as_secs_f64(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print_summary(&summary);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_summary(summary: &Summary) {
    let verified = &summary.verified;
    match &summary.copied {
        Some(copied) => println!(
            "copied {} into {} in {:.1} s: {} sessions ({} already there), {} events, {} reminders, {} artifacts, {} create keys, {} storage entries, {} deliveries{}; verified identical",
            summary.from,
            summary.to,
            summary.seconds,
            copied.sessions,
            copied.sessions_skipped,
            copied.events,
            copied.reminders,
            copied.artifacts,
            copied.create_keys,
            copied.storage_entries,
            copied.deliveries,
            summary
                .workspace_files
                .map(|files| format!(", {files} workspace files"))
                .unwrap_or_default(),
        ),
        None => println!(
            "{} and {} hold the same {} sessions, {} events, {} reminders, {} artifacts, {} create keys, {} storage entries and {} deliveries ({:.1} s)",
            summary.from,
            summary.to,
            verified.sessions,
            verified.events,
            verified.reminders,
            verified.artifacts,
            verified.create_keys,
            verified.storage_entries,
            verified.deliveries,
            summary.seconds
        ),
    }
}

/// Whether two paths name the same folder (both may not exist yet).
fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Copies what each session keeps beside its metadata in its folder (its workspace,
/// `peers.json`) and the agent's `memory/` from one state root into another; how many files.
/// Symbolic links are recreated, pointing into the destination where they pointed into the
/// source state root (a workspace's `memory` link).
fn copy_workspaces(from: &StateRoot, to: &StateRoot) -> anyhow::Result<u64> {
    let absolute = |root: &StateRoot| {
        std::path::absolute(root.path())
            .with_context(|| format!("cannot resolve {}", root.path().display()))
    };
    let roots = (absolute(from)?, absolute(to)?);
    let mut files = 0;
    let sessions = match std::fs::read_dir(from.sessions_dir()) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(err) => {
            return Err(err).context(format!("cannot read {}", from.sessions_dir().display()));
        }
    };
    for session in sessions {
        let session =
            session.with_context(|| format!("cannot read {}", from.sessions_dir().display()))?;
        let id = session.file_name();
        let Some(id) = id.to_str().filter(|id| folio_store::valid_session_id(id)) else {
            continue;
        };
        if !to.meta_path(id).exists() {
            continue;
        }
        for entry in std::fs::read_dir(session.path())
            .with_context(|| format!("cannot read {}", session.path().display()))?
        {
            let entry =
                entry.with_context(|| format!("cannot read {}", session.path().display()))?;
            let name = entry.file_name();
            if name == "session.json" || name.to_string_lossy().ends_with(".tmp") {
                continue;
            }
            files += copy_tree(&entry.path(), &to.session_dir(id).join(&name), &roots)?;
        }
    }
    if from.memory_dir().exists() {
        files += copy_tree(&from.memory_dir(), &to.memory_dir(), &roots)?;
    }
    Ok(files)
}

/// Copies the file, link or folder at `from` to `to` (replacing files there); how many files.
/// A link into the source state root (`roots.0`) points into the destination's (`roots.1`).
fn copy_tree(from: &Path, to: &Path, roots: &(PathBuf, PathBuf)) -> anyhow::Result<u64> {
    let kind = std::fs::symlink_metadata(from)
        .with_context(|| format!("cannot read {}", from.display()))?
        .file_type();
    if kind.is_symlink() {
        let target =
            std::fs::read_link(from).with_context(|| format!("cannot read {}", from.display()))?;
        let target = match target.strip_prefix(&roots.0) {
            Ok(inside) => roots.1.join(inside),
            Err(_) => target,
        };
        match std::fs::remove_file(to) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                return Err(err).context(format!("cannot replace {}", to.display()));
            }
            _ => {}
        }
        std::os::unix::fs::symlink(&target, to)
            .with_context(|| format!("cannot create the link {}", to.display()))?;
        return Ok(1);
    }
    if kind.is_dir() {
        std::fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
        let mut files = 0;
        for entry in
            std::fs::read_dir(from).with_context(|| format!("cannot read {}", from.display()))?
        {
            let entry = entry.with_context(|| format!("cannot read {}", from.display()))?;
            files += copy_tree(&entry.path(), &to.join(entry.file_name()), roots)?;
        }
        return Ok(files);
    }
    std::fs::copy(from, to)
        .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
    Ok(1)
}

/// Refuses to serve a store that an unfinished `folio store copy` writes into: `marker` is
/// what the copy recorded there.
pub(crate) fn refuse_unfinished_copy(store: &str, marker: Option<String>) -> anyhow::Result<()> {
    match marker {
        Some(marker) => bail!(
            "{store} is the destination of a `folio store copy` that is still running or was interrupted ({marker}): run that `folio store copy` again to finish and verify it, then start the server"
        ),
        None => Ok(()),
    }
}
