-- Schema version 2: reminders (one-off wakes of a chat session), shared by every server: any
-- server delivers a due one (the session's lease and the message's idempotency key make the
-- delivery run once).
CREATE TABLE folio_reminders (
    id         text        PRIMARY KEY,
    session_id text        NOT NULL,
    at         timestamptz NOT NULL,
    -- The reminder as the HTTP API shows it (one JSON object).
    reminder   jsonb       NOT NULL
);
-- A session's reminders; retention keeps a session that has one.
CREATE INDEX folio_reminders_session ON folio_reminders (session_id);
-- The delivery loops: the earliest first.
CREATE INDEX folio_reminders_at ON folio_reminders (at, id);
