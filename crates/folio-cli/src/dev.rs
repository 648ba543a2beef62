//! `folio dev`: `serve --dev` that reloads an agent when its files change; turns in flight
//! finish on the definition they started with.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use folio_agent::StateLayout;
use notify::{RecursiveMode, Watcher};

use crate::serve::{ServeArgs, load_agent, runtime, start};

/// How long changes settle before a reload.
const DEBOUNCE: Duration = Duration::from_millis(300);

/// Runs `folio dev` until SIGINT/SIGTERM.
pub(crate) fn dev(args: ServeArgs) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        let server = start(&args).await?;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<PathBuf>();
        let mut watchers = Vec::new();
        for project in &server.projects {
            let dir = project.dir.clone();
            let tx = tx.clone();
            let mut watcher =
                notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                    if let Ok(event) = event
                        && !event.paths.iter().all(|p| {
                            p.components()
                                .any(|c| c.as_os_str() == StateLayout::PROJECT_DIR)
                        })
                    {
                        let _ = tx.send(dir.clone());
                    }
                })
                .context("cannot watch the agent files")?;
            for name in ["agent", "bot", "folio.toml"] {
                let path = project.dir.join(name);
                if path.exists() {
                    watcher
                        .watch(&path, RecursiveMode::Recursive)
                        .with_context(|| format!("cannot watch {}", path.display()))?;
                }
            }
            watchers.push(watcher);
        }
        let unconfined = args.unconfined_files;
        let managers: Vec<_> = server
            .projects
            .iter()
            .map(|p| {
                (
                    p.dir.clone(),
                    p.slug.clone(),
                    p.manager.clone(),
                    p.state.clone(),
                    p.scheduler.clone(),
                    p.model.clone(),
                    p.mcp_redirect_uri.clone(),
                )
            })
            .collect();
        let peers = server.peers.clone();
        tokio::spawn(async move {
            while let Some(dir) = rx.recv().await {
                tokio::time::sleep(DEBOUNCE).await;
                while rx.try_recv().is_ok() {}
                for (project, slug, manager, state, scheduler, model, redirect) in &managers {
                    if *project != dir {
                        continue;
                    }
                    let loaded = load_agent(
                        project,
                        model,
                        state,
                        unconfined,
                        Some(&peers),
                        Some(redirect),
                        manager.shared_backends(),
                    );
                    match loaded.await {
                        Ok((agent, _)) => {
                            let schedules = agent.definition.schedules.clone();
                            manager.set_agent(Arc::new(agent));
                            match scheduler.reload(&schedules).await {
                                Ok(()) => eprintln!("folio dev: reloaded {slug}"),
                                Err(err) => eprintln!(
                                    "folio dev: {slug} reloaded, but its schedules were not: {err}"
                                ),
                            }
                        }
                        Err(err) => eprintln!("folio dev: {slug} not reloaded: {err:#}"),
                    }
                }
            }
        });
        let code = server.run(None).await;
        drop(watchers);
        code
    })
}
