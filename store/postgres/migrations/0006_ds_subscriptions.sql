-- The Durable Streams protocol's reserved subscription API: one row per
-- subscription (its normalized configuration and hash, its delivery state
-- as JSON, its earliest deadline in due_at, the timer claim in
-- timer_until/timer_owner, and a version for compare-and-set) and one row
-- per linked stream with its cursor. ds_signing_keys holds the Ed25519
-- keys that sign their webhooks, the seed sealed like every secret; the
-- active key has retired_at 0.
CREATE TABLE ds_subscriptions (
    id          TEXT COLLATE "C" PRIMARY KEY,
    tenant      TEXT COLLATE "C" NOT NULL DEFAULT '',
    incarnation TEXT COLLATE "C" NOT NULL,
    config      TEXT COLLATE "C" NOT NULL,
    config_hash TEXT COLLATE "C" NOT NULL,
    pattern     TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    state       TEXT COLLATE "C" NOT NULL,
    due_at      BIGINT NOT NULL DEFAULT 0,
    timer_until BIGINT NOT NULL DEFAULT 0,
    timer_owner TEXT COLLATE "C" NOT NULL DEFAULT '',
    version     BIGINT NOT NULL
);
CREATE INDEX ds_subscriptions_due ON ds_subscriptions (due_at) WHERE due_at > 0;

CREATE TABLE ds_links (
    subscription_id TEXT COLLATE "C" NOT NULL,
    path            TEXT COLLATE "C" NOT NULL,
    glob            INTEGER NOT NULL,
    explicit        INTEGER NOT NULL,
    acked           TEXT COLLATE "C" NOT NULL,
    notified        TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (subscription_id, path)
);
CREATE INDEX ds_links_path ON ds_links (path);

CREATE TABLE ds_signing_keys (
    id         TEXT COLLATE "C" PRIMARY KEY,
    secret     TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,
    retired_at BIGINT NOT NULL DEFAULT 0
);
