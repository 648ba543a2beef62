-- Schema version 4: channel deliveries, shared by every server: a provider's retry reaching
-- any server is a duplicate, a dead server's pending work is claimed by a live one, one
-- continuation key opens one session, one server follows a session, a reply is reported once.
CREATE TABLE folio_channel_deliveries (
    channel       text        NOT NULL,
    id            text        NOT NULL,
    -- Arrival order (kept when an id is received again after 24 h, as the disk store does).
    seq           bigserial   NOT NULL,
    received_at   timestamptz NOT NULL,
    route         text        NOT NULL,
    -- The first request's announced retry, and every announced retry since.
    retry         jsonb,
    retries       jsonb       NOT NULL DEFAULT '[]',
    -- What the channel decided to do (its work, or why nothing runs).
    decision      jsonb       NOT NULL,
    status        text        NOT NULL DEFAULT 'pending',
    session_id    text,
    message       text,
    duplicates    integer     NOT NULL DEFAULT 0,
    -- The server running its work while pending, until when.
    claimed_by    text,
    claimed_until timestamptz,
    PRIMARY KEY (channel, id)
);
CREATE INDEX folio_channel_deliveries_order ON folio_channel_deliveries (channel, seq);
CREATE INDEX folio_channel_deliveries_pending ON folio_channel_deliveries (channel, seq)
    WHERE status = 'pending';
-- Retention: the oldest first.
CREATE INDEX folio_channel_deliveries_received ON folio_channel_deliveries (received_at);

CREATE TABLE folio_channel_continuations (
    channel        text NOT NULL,
    key            text NOT NULL,
    session_id     text,
    -- A server opening the key's session, until when.
    reserved_by    text,
    reserved_until timestamptz,
    PRIMARY KEY (channel, key)
);

CREATE TABLE folio_channel_replies (
    channel    text        NOT NULL,
    session_id text        NOT NULL,
    turn_id    text        NOT NULL,
    failed     text,
    at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (channel, session_id, turn_id)
);

CREATE TABLE folio_channel_follows (
    channel      text        NOT NULL,
    session_id   text        NOT NULL,
    delivery_id  text        NOT NULL,
    context      jsonb       NOT NULL,
    queued_check bigint,
    generation   bigint      NOT NULL DEFAULT 0,
    owner        text        NOT NULL,
    until        timestamptz NOT NULL,
    PRIMARY KEY (channel, session_id)
);
