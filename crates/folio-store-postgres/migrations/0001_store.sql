-- Folio's PostgreSQL store, schema version 1: one row per session, per event, per running
-- turn's lease, per idempotent create and per claimed schedule slot.

CREATE TABLE folio_sessions (
    id         text        PRIMARY KEY,
    principal  text        NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    -- The session's metadata (the disk store's session.json).
    meta       jsonb       NOT NULL
);
-- Lists: a principal's sessions newest first (session ids sort by creation time).
CREATE INDEX folio_sessions_principal ON folio_sessions (principal, id DESC);
-- Retention: the sessions untouched the longest.
CREATE INDEX folio_sessions_updated ON folio_sessions (updated_at);

-- The event log: rows keyed (session_id, idx). The primary key is what makes a lost race for an
-- index fail instead of interleaving two writers' events. No foreign key: an append locks the
-- session row FOR KEY SHARE itself (which never waits on metadata updates), and deletes remove
-- events in small batches instead of one cascade.
CREATE TABLE folio_events (
    session_id text        NOT NULL,
    idx        bigint      NOT NULL CHECK (idx >= 0),
    kind       text        NOT NULL,
    turn_id    text,
    at         timestamptz NOT NULL,
    -- The event exactly as the wire and the disk log carry it (one JSON object).
    event      text        NOT NULL,
    PRIMARY KEY (session_id, idx)
);

-- Every append tells live streams on every server: payload `<session id>:<index>`.
CREATE FUNCTION folio_notify_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('folio_events', NEW.session_id || ':' || NEW.idx);
    RETURN NULL;
END
$$;
CREATE TRIGGER folio_events_notify AFTER INSERT ON folio_events
    FOR EACH ROW EXECUTE FUNCTION folio_notify_event();

-- Fencing tokens: strictly increasing across every lease ever granted.
CREATE SEQUENCE folio_lease_tokens;

-- The lease on a session's running turn. Its holder renews it; once expires_at has passed,
-- another server may take it over (and records the turn as failed).
CREATE TABLE folio_leases (
    session_id  text        PRIMARY KEY,
    owner       text        NOT NULL,
    token       bigint      NOT NULL,
    acquired_at timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);
CREATE INDEX folio_leases_expiry ON folio_leases (expires_at);

-- Creates made with an idempotency key: one session per (principal, key).
CREATE TABLE folio_create_keys (
    principal  text        NOT NULL,
    key        text        NOT NULL,
    session_id text        NOT NULL,
    digest     text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (principal, key)
);
CREATE INDEX folio_create_keys_session ON folio_create_keys (session_id);

-- Schedule firings: the first server to insert (schedule, slot) runs it.
CREATE TABLE folio_slot_claims (
    schedule   text        NOT NULL,
    slot       timestamptz NOT NULL,
    owner      text        NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (schedule, slot)
);
