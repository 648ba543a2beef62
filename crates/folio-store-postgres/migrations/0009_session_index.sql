-- Schema version 8: the session index's filters (GET /v1/sessions, quotas, variants, recovery):
-- sessions by status (per principal and overall) and by the metadata fields lists filter on,
-- each newest first, so a filtered page reads its rows, not the table.
CREATE INDEX folio_sessions_status ON folio_sessions ((meta->>'status'), id DESC);
CREATE INDEX folio_sessions_principal_status
    ON folio_sessions (principal, (meta->>'status'), id DESC);
CREATE INDEX folio_sessions_channel ON folio_sessions ((meta->>'channel'), id DESC);
CREATE INDEX folio_sessions_variant ON folio_sessions ((meta->>'variant'), id DESC)
    WHERE meta->>'variant' IS NOT NULL;
CREATE INDEX folio_sessions_purpose ON folio_sessions ((meta->>'purpose'), id DESC)
    WHERE meta->>'purpose' IS NOT NULL;
CREATE INDEX folio_sessions_continuation ON folio_sessions ((meta->>'continuationKey'), id DESC)
    WHERE meta->>'continuationKey' IS NOT NULL;
