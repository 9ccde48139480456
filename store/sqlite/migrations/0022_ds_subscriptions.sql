-- The Durable Streams protocol's reserved subscription API: one row per
-- subscription (its normalized configuration and hash, its delivery state
-- as JSON, its earliest deadline in due_at, the timer claim in
-- timer_until/timer_owner, and a version for compare-and-set) and one row
-- per linked stream with its cursor. ds_signing_keys holds the Ed25519
-- keys that sign their webhooks, the seed sealed like every secret; the
-- active key has retired_at 0.
CREATE TABLE ds_subscriptions (
    id          TEXT    PRIMARY KEY,
    tenant      TEXT    NOT NULL DEFAULT '',
    incarnation TEXT    NOT NULL,
    config      TEXT    NOT NULL,
    config_hash TEXT    NOT NULL,
    pattern     TEXT    NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    state       TEXT    NOT NULL,
    due_at      INTEGER NOT NULL DEFAULT 0,
    timer_until INTEGER NOT NULL DEFAULT 0,
    timer_owner TEXT    NOT NULL DEFAULT '',
    version     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX ds_subscriptions_due ON ds_subscriptions (due_at) WHERE due_at > 0;

CREATE TABLE ds_links (
    subscription_id TEXT    NOT NULL,
    path            TEXT    NOT NULL,
    glob            INTEGER NOT NULL,
    explicit        INTEGER NOT NULL,
    acked           TEXT    NOT NULL,
    notified        TEXT    NOT NULL,
    PRIMARY KEY (subscription_id, path)
) WITHOUT ROWID;
CREATE INDEX ds_links_path ON ds_links (path);

CREATE TABLE ds_signing_keys (
    id         TEXT    PRIMARY KEY,
    secret     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    retired_at INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
