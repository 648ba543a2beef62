-- Schema version 5: the MCP OAuth credentials of each principal's client of each MCP
-- connection, shared by every server: a person authorizes once, through any server.
CREATE TABLE folio_mcp_credentials (
    principal   text        NOT NULL,
    connection  text        NOT NULL,
    -- rmcp's stored credentials (client id, token response, granted scopes) as the client wrote
    -- them: secrets, readable by whoever can read this table.
    credentials jsonb       NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (principal, connection)
);
