-- Webhook subscriptions (docs/subscriptions.md), their consumer instances
-- and the streams each consumer is subscribed to. Every deadline is a column;
-- due_at is the earliest armed one, indexed for the timer sweep.
CREATE TABLE subscriptions (
    id          TEXT    PRIMARY KEY,
    pattern     TEXT    NOT NULL,
    webhook     TEXT    NOT NULL,
    secret      TEXT    NOT NULL,
    description TEXT    NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL
);
CREATE INDEX subscriptions_pattern ON subscriptions (pattern);

CREATE TABLE consumers (
    id                TEXT    PRIMARY KEY,
    subscription_id   TEXT    NOT NULL,
    primary_stream    TEXT    NOT NULL,
    state             TEXT    NOT NULL,
    epoch             INTEGER NOT NULL DEFAULT 0,
    wake_id           TEXT    NOT NULL DEFAULT '',
    attempts          INTEGER NOT NULL DEFAULT 0,
    waking_deadline   INTEGER NOT NULL DEFAULT 0,
    next_retry_at     INTEGER NOT NULL DEFAULT 0,
    liveness_deadline INTEGER NOT NULL DEFAULT 0,
    failing_since     INTEGER NOT NULL DEFAULT 0,
    due_at            INTEGER NOT NULL DEFAULT 0,
    version           INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX consumers_subscription ON consumers (subscription_id);
CREATE INDEX consumers_primary ON consumers (primary_stream);
CREATE INDEX consumers_due ON consumers (due_at) WHERE due_at > 0;

CREATE TABLE consumer_streams (
    consumer_id TEXT    NOT NULL,
    path        TEXT    NOT NULL,
    acked       TEXT    NOT NULL,
    notified    TEXT    NOT NULL DEFAULT '',
    ord         INTEGER NOT NULL,
    PRIMARY KEY (consumer_id, path)
) WITHOUT ROWID;
CREATE INDEX consumer_streams_path ON consumer_streams (path);
