//! The caller of a request, as the auth layer established it (read by the HTTP handlers and by
//! `/v1/mcp`).

/// The authenticated principal of a request (a request extension).
#[derive(Debug, Clone)]
pub(crate) struct Principal(pub(crate) String);
