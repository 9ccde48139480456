-- Every handle's heartbeat, in the same shape as in the PostgreSQL
-- backend: its id (the owner written in the claims it holds) and its
-- last beat. One process owns the database, so no other handle is ever
-- reaped here; Open forgets the beats of the processes before.
CREATE TABLE replicas (
    id         TEXT    PRIMARY KEY,
    beat_at    INTEGER NOT NULL,
    started_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX deliveries_lease_owner ON deliveries (lease_owner) WHERE lease_owner <> '';
CREATE INDEX consumers_timer_owner ON consumers (timer_owner) WHERE timer_owner <> '';
