-- Schema version 8: the copy into this database that `folio store copy` has not finished
-- (written before anything else, deleted once the copy is verified); a server refuses to start
-- while it is there. At most one row.
CREATE TABLE folio_copy_marker (
    one        boolean     PRIMARY KEY DEFAULT true CHECK (one),
    marker     text        NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now()
);
