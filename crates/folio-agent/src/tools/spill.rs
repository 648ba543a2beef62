//! Large tool output: kept inline when small, otherwise spilled to a scratch file and replaced
//! by a short head plus where to read the rest (filesystem.md "/tmp scratch").

use uuid::Uuid;

use super::{ScratchMode, ToolContext, ToolError};

/// Output up to this many bytes stays inline.
pub(crate) const INLINE_LIMIT: usize = 30_000;
/// How much of a spilled output is still shown inline.
const HEAD_BYTES: usize = 4_000;
/// The host directory (under the workspace) that spill files are written to.
pub(crate) const SPILL_DIR: &str = "agent-tools";

/// Returns `text` unchanged when small; else spills it and returns its head and the path.
pub(crate) async fn spill_if_large(ctx: &ToolContext, text: String) -> Result<String, ToolError> {
    if text.len() <= INLINE_LIMIT {
        return Ok(text);
    }
    spill(ctx, text).await
}

/// Writes `text` to a scratch file (`agent-tools/{uuid}.txt` on the host default,
/// `/tmp/{uuid}.txt` under an authored root) and returns its head and where the rest is.
pub(crate) async fn spill(ctx: &ToolContext, text: String) -> Result<String, ToolError> {
    let uuid = Uuid::new_v4();
    let dir = ctx.workspace.join(SPILL_DIR);
    let host_path = dir.join(format!("{uuid}.txt"));
    let io_error = |err: std::io::Error| {
        ToolError(format!(
            "could not save large output to {}: {err}",
            host_path.display()
        ))
    };
    tokio::fs::create_dir_all(&ctx.workspace)
        .await
        .map_err(io_error)?;
    // Never through a link the model planted in the workspace (e.g. `agent-tools` → elsewhere).
    let (workspace, rel, bytes) = (
        ctx.workspace.clone(),
        format!("{SPILL_DIR}/{uuid}.txt"),
        text.clone().into_bytes(),
    );
    tokio::task::spawn_blocking(move || folio_fs::write_beneath(&workspace, &rel, &bytes))
        .await
        .map_err(|err| io_error(std::io::Error::other(err)))?
        .map_err(|err| io_error(std::io::Error::other(err)))?;
    let shown_path = match ctx.scratch {
        ScratchMode::Host => host_path.display().to_string(),
        ScratchMode::Rooted => {
            // Under an authored root the model never sees the host path: move the file to /tmp.
            let tmp_path = format!("/tmp/{uuid}.txt");
            ctx.fs.write(&tmp_path, &text).await?;
            tokio::fs::remove_file(&host_path).await.map_err(io_error)?;
            tmp_path
        }
    };
    let mut cut = HEAD_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    Ok(format!(
        "{}\n\n[output truncated: {} bytes in all; the full output is in {shown_path}. Read it with Read (offset/limit) or search it with Grep.]",
        &text[..cut],
        text.len()
    ))
}

/// Under an authored root, a host spill path the model still holds maps to its `/tmp` copy.
pub(crate) fn rewrite_spill_path(ctx: &ToolContext, path: &str) -> Option<String> {
    if ctx.scratch != ScratchMode::Rooted {
        return None;
    }
    let prefix = ctx.workspace.join(SPILL_DIR);
    let rest = path.strip_prefix(prefix.to_str()?)?.strip_prefix('/')?;
    (!rest.contains('/')).then(|| format!("/tmp/{rest}"))
}
