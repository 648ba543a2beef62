//! Agent discovery, the tool registry and the turn loop.
