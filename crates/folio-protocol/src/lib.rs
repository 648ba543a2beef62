//! Wire types shared by the Folio server, CLI, evals and clients.
//!
//! Fields are camelCase on the wire; tagged unions carry an explicit `type` tag.
