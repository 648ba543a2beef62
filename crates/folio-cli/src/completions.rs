//! `folio completions SHELL` and `folio man`: shell completion scripts and roff man pages,
//! both generated from the same clap definitions as `--help`, so they cannot drift from it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Command;
use clap_complete::Shell;

/// Arguments of `folio completions`.
#[derive(Debug, clap::Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for: bash, zsh, fish, powershell or elvish.
    #[arg(value_enum)]
    shell: Shell,
}

/// Arguments of `folio man`.
#[derive(Debug, clap::Args)]
pub(crate) struct ManArgs {
    /// Write `folio.1` and one `folio-<command>.1` page per command into this folder (created
    /// if missing) instead of printing `folio.1` on stdout.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// Prints the completion script of `args.shell` for the CLI `root`.
pub(crate) fn completions(mut root: Command, args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let name = root.get_name().to_string();
    clap_complete::generate(args.shell, &mut root, name, &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

/// Prints `folio.1`, or writes every page of `root` into `--out`.
pub(crate) fn man(root: Command, args: ManArgs) -> anyhow::Result<ExitCode> {
    match args.out {
        None => clap_mangen::Man::new(root).render(&mut std::io::stdout())?,
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let written = write_pages(&root, root.get_name(), &dir)?;
            eprintln!("wrote {written} man pages to {}", dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the page of `command` as `<name>.1` into `dir`, then its subcommands' pages as
/// `<name>-<sub>.1`; returns how many pages it wrote.
fn write_pages(command: &Command, name: &str, dir: &Path) -> anyhow::Result<usize> {
    let page = dir.join(format!("{name}.1"));
    let mut out = Vec::new();
    clap_mangen::Man::new(command.clone())
        .title(name)
        .render(&mut out)?;
    std::fs::write(&page, out).with_context(|| format!("cannot write {}", page.display()))?;
    let mut written = 1;
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        written += write_pages(sub, &format!("{name}-{}", sub.get_name()), dir)?;
    }
    Ok(written)
}
