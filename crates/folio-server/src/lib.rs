//! Sessions, admission, the event log and the HTTP API.
