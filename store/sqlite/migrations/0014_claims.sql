-- Leases live in the rows, in the same shape as in the PostgreSQL
-- backend: a delivery's lease (lease_until, lease_token, lease_owner), a
-- consumer timer's (timer_until, timer_owner), and named leases of jobs
-- (leases). Tokens come from lease_tokens. An endpoint's rate limit is a
-- token bucket in endpoint_buckets. Open ends every lease a previous
-- process left: the lock on the data directory proves it is gone.
ALTER TABLE deliveries ADD COLUMN lease_owner TEXT NOT NULL DEFAULT '';
-- The running leases of an endpoint (its deliveries in flight), and the
-- next one to end.
CREATE INDEX deliveries_lease ON deliveries (endpoint_id, lease_until)
    WHERE status IN ('pending', 'failed');
CREATE TABLE lease_tokens (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    last INTEGER NOT NULL
);
INSERT INTO lease_tokens (id, last) VALUES (1, 0);
CREATE TABLE endpoint_buckets (
    endpoint_id TEXT    PRIMARY KEY,
    tokens      REAL    NOT NULL,
    refilled_at INTEGER NOT NULL
) WITHOUT ROWID;
ALTER TABLE consumers ADD COLUMN timer_until INTEGER NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN timer_owner TEXT NOT NULL DEFAULT '';
CREATE TABLE leases (
    name  TEXT    PRIMARY KEY,
    owner TEXT    NOT NULL,
    until INTEGER NOT NULL
) WITHOUT ROWID;
