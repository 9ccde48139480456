-- Every replica's heartbeat: its id (the owner written in the claims it
-- holds) and its last beat. A replica whose beat is too old has its
-- claims ended by another (store.ReplicaStore), found by the indexes on
-- the holder columns below.
CREATE TABLE replicas (
    id         TEXT COLLATE "C" PRIMARY KEY,
    beat_at    BIGINT NOT NULL,
    started_at BIGINT NOT NULL
);
CREATE INDEX deliveries_lease_owner ON deliveries (lease_owner) WHERE lease_owner <> '';
CREATE INDEX consumers_timer_owner ON consumers (timer_owner) WHERE timer_owner <> '';
