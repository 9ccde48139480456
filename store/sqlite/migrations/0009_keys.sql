-- API keys: the hash of each key, never the key itself, with what it may
-- do. Times are unix ns, 0 = none; scopes and paths are JSON arrays.
CREATE TABLE api_keys (
    id          TEXT    PRIMARY KEY,
    hash        BLOB    NOT NULL,
    scopes      TEXT    NOT NULL,
    tenant      TEXT    NOT NULL DEFAULT '',
    paths       TEXT    NOT NULL,
    description TEXT    NOT NULL DEFAULT '',
    expires_at  INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX api_keys_tenant ON api_keys (tenant, id);
