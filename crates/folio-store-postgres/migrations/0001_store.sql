-- Folio's PostgreSQL store, schema version 1. One row per session, one row per event, one lease
-- row per running turn, one row per claimed schedule slot.

CREATE TABLE folio_sessions (
    id              text        PRIMARY KEY,
    principal       text        NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    -- The creator's Idempotency-Key: one session per (principal, key).
    idempotency_key text,
    -- The session's metadata document (the disk store's session.json).
    meta            jsonb       NOT NULL,
    UNIQUE (principal, idempotency_key)
);
CREATE INDEX folio_sessions_principal ON folio_sessions (principal, created_at DESC, id DESC);
CREATE INDEX folio_sessions_updated ON folio_sessions (updated_at);

-- The event log: rows keyed (session_id, idx). The primary key is what makes a lost race for an
-- index fail instead of interleaving two writers' events. No foreign key to folio_sessions:
-- appends take no lock on the session row, and deletes remove events in small batches.
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

-- The lease of a session's running turn. A row exists while a turn runs; its holder renews it;
-- one whose expires_at has passed may be taken over (the taker records the turn as failed).
CREATE TABLE folio_leases (
    session_id  text        PRIMARY KEY,
    owner       text        NOT NULL,
    turn_id     text,
    token       bigint      NOT NULL,
    acquired_at timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);
CREATE INDEX folio_leases_expiry ON folio_leases (expires_at);

-- Schedule firings: the first server to insert (schedule, slot) runs it.
CREATE TABLE folio_slot_claims (
    schedule   text        NOT NULL,
    slot       text        NOT NULL,
    owner      text        NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (schedule, slot)
);
