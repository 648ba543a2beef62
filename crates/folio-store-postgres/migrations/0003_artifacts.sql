-- Schema version 3: the agent's artifact records (one database serves one agent), upserted by
-- (kind, key), shared by every server.
CREATE TABLE folio_artifacts (
    id         text        PRIMARY KEY,
    kind       text        NOT NULL,
    key        text        NOT NULL,
    updated_at timestamptz NOT NULL,
    -- The record as `GET /v1/artifacts` shows it (one JSON object).
    record     jsonb       NOT NULL,
    -- Its contents, when it has any.
    content    bytea,
    UNIQUE (kind, key)
);
-- Lists and eviction: the most recently updated first.
CREATE INDEX folio_artifacts_updated ON folio_artifacts (updated_at DESC, id DESC);
