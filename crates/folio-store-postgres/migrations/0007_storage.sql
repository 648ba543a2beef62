-- Schema version 7: storage entries (the host API's key-value storage), shared by every
-- server: one row per (scope, agent, owner, key) with a version for compare-and-set.
CREATE TABLE folio_storage (
    -- `session`, `agent` or `principal`.
    scope      text        NOT NULL CHECK (scope IN ('session', 'agent', 'principal')),
    agent      text        NOT NULL,
    -- The session id, the agent's name or the principal, by scope.
    owner      text        NOT NULL,
    -- Keys compare and list in byte order: the "C" collation.
    key        text        COLLATE "C" NOT NULL,
    value      jsonb       NOT NULL,
    -- 1 when written first (or over an expired entry), raised by every write.
    version    bigint      NOT NULL CHECK (version >= 1),
    updated_at timestamptz NOT NULL,
    -- An entry expired at a time reads as absent then; purged later.
    expires_at timestamptz,
    -- The key's bytes and the value's JSON text's as written (quotas, `folio store stats`).
    bytes      bigint      NOT NULL,
    PRIMARY KEY (scope, agent, owner, key)
);
-- A session's own entries, removed with it.
CREATE INDEX folio_storage_session ON folio_storage (owner) WHERE scope = 'session';
-- Purging expired entries.
CREATE INDEX folio_storage_expires ON folio_storage (expires_at) WHERE expires_at IS NOT NULL;
