-- Schema version 10: appends no longer notify once per row from a trigger. The store's write
-- statement (a durable point, or a group of them: src/group.rs) sends one `folio_events`
-- notification itself, whose payload lists `<session id>:<last index>` per session, one a line
-- (split into several notifications only past PostgreSQL's 8000-byte payload limit).
-- PostgreSQL serializes the commits of notifying transactions, so fewer, larger notifying
-- commits are what lets appends scale past ~2,500/s. `folio store copy` (import) writes
-- without notifying: no server runs on a store being copied into.
DROP TRIGGER folio_events_notify ON folio_events;
DROP FUNCTION folio_notify_event();
