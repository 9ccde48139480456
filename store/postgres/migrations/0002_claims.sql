-- An endpoint's rate limit is a token bucket in endpoint_buckets, whose
-- row also orders the claims of one endpoint across replicas. A due
-- consumer timer is leased in its row (timer_until, timer_owner), and a
-- job one replica runs at a time holds a named lease (leases).
CREATE TABLE endpoint_buckets (
    endpoint_id TEXT COLLATE "C" PRIMARY KEY,
    tokens      DOUBLE PRECISION NOT NULL,
    refilled_at BIGINT NOT NULL
);
ALTER TABLE consumers ADD COLUMN timer_until BIGINT NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN timer_owner TEXT COLLATE "C" NOT NULL DEFAULT '';
CREATE TABLE leases (
    name  TEXT COLLATE "C" PRIMARY KEY,
    owner TEXT COLLATE "C" NOT NULL,
    until BIGINT NOT NULL
);
