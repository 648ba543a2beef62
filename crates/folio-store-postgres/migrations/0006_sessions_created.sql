-- Schema version 6: sessions by creation time, for finding the creates a server stopped
-- before acknowledging (recent sessions whose log is still empty).
CREATE INDEX folio_sessions_created ON folio_sessions (created_at);
