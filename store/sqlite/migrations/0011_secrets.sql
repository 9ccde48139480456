-- Secrets at rest. token_keys are the callback token keys Herald makes
-- for itself when none are configured (the signing key has the lowest
-- ord); secret_meta holds the key-encryption key check (name 'kek_check'),
-- a known value sealed like every secret, opened at start to tell a wrong
-- key-encryption key. Secret values are sealed by package
-- internal/secretbox, bound to their table, row id and column.
CREATE TABLE token_keys (
    id         TEXT    PRIMARY KEY,
    secret     TEXT    NOT NULL,
    ord        INTEGER NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE secret_meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
