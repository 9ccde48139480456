-- Replay jobs (docs/delivery.md, Replay): a replay's request and progress
-- (the engine's JSON), its counts and state, and the engine holding it
-- until lease_until. Times are unix ns, 0 = none. published_events also
-- keeps the ids the matcher met in appended events, first seen first.
CREATE TABLE replay_jobs (
    id          TEXT    PRIMARY KEY,
    endpoint_id TEXT    NOT NULL,
    tenant      TEXT    NOT NULL DEFAULT '',
    request     BLOB    NOT NULL,
    state       TEXT    NOT NULL,
    queued      INTEGER NOT NULL DEFAULT 0,
    total       INTEGER NOT NULL DEFAULT 0,
    truncated   INTEGER NOT NULL DEFAULT 0,
    error       TEXT    NOT NULL DEFAULT '',
    progress    BLOB    NOT NULL,
    owner       TEXT    NOT NULL,
    lease_until INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    finished_at INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX replay_jobs_endpoint ON replay_jobs (endpoint_id);
CREATE INDEX replay_jobs_running ON replay_jobs (lease_until) WHERE state = 'running';
CREATE INDEX replay_jobs_finished ON replay_jobs (finished_at) WHERE finished_at > 0;
