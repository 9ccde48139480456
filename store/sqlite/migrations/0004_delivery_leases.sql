-- Delivery leases are held in memory by the one process that owns the
-- database (after a restart every unfinished delivery is claimable at
-- once), so the index on lease_until is gone; the lease_until and
-- lease_token columns are no longer written.
DROP INDEX deliveries_lease;
