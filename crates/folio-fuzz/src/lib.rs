//! The bodies of Folio's fuzz targets, one `fn(&[u8])` per parser that reads outside input:
//! agent-folder manifests (TOML) and frontmatter (YAML), the NDJSON event log read at recovery,
//! paths, channel webhooks (signatures and bodies), HTTP request bodies, MCP messages and
//! provider responses (SSE and JSON).
//!
//! Each target feeds its input to the parser's real entry point and panics only where the
//! parser would: a panic (or an invariant broken) is a finding. The libFuzzer harnesses in
//! `fuzz/` call these functions; this crate's test runs them over the seed and regression
//! corpora and 1,500 mutations of each target's seeds, so every `cargo test` re-checks them.

mod event_log;
mod http_body;
mod manifest;
mod mcp;
mod path;
mod sse;
mod webhook;

pub use event_log::event_log;
pub use http_body::http_body;
pub use manifest::{frontmatter, manifest};
pub use mcp::mcp_message;
pub use path::path;
pub use sse::sse;
pub use webhook::webhook;

/// A fuzz target: takes any bytes, panics only on a finding.
pub type Target = fn(&[u8]);

/// Every target by name, as `fuzz/fuzz_targets/<name>.rs` and the corpus folders name it.
pub const TARGETS: &[(&str, Target)] = &[
    ("manifest", manifest),
    ("frontmatter", frontmatter),
    ("event_log", event_log),
    ("path", path),
    ("webhook", webhook),
    ("http_body", http_body),
    ("mcp_message", mcp_message),
    ("sse", sse),
];

/// Splits `data` into its first byte (a selector, `0` when empty) and the rest.
fn selector(data: &[u8]) -> (u8, &[u8]) {
    match data.split_first() {
        Some((first, rest)) => (*first, rest),
        None => (0, data),
    }
}
