-- When each stream that can expire does (Unix ns: its absolute expiry,
-- else a sliding TTL after its last access), indexed, so that the expiry
-- sweep reads the expired streams from the index instead of checking
-- every stream that can expire. The expression is the store's
-- (sqlstore.DeadlineSQL), written identically here so that the sweep's
-- query uses the index, which replaces the one of those streams' ids.
DROP INDEX streams_expiring;
CREATE INDEX streams_deadline ON streams ((CASE WHEN expires_at > 0 THEN CAST(expires_at AS numeric) WHEN ttl_seconds > 0 THEN CAST(accessed_at AS numeric) + CAST(ttl_seconds AS numeric) * 1000000000 END))
    WHERE NOT soft_deleted AND (expires_at > 0 OR ttl_seconds > 0);
