-- The index of leases holds the deliveries that hold one, not every
-- unfinished delivery: a delivery waiting for a claim writes no entry,
-- and a claim and an outcome each write one entry fewer. It also serves
-- the statements on a replica's leases (releasing its own, ending a dead
-- one's), which read it instead of the whole table: the index on the
-- lease's holder, which no statement read, goes.
DROP INDEX deliveries_lease_owner;
DROP INDEX deliveries_lease;
CREATE INDEX deliveries_lease ON deliveries (endpoint_id, lease_until)
    WHERE lease_until > 0 AND status IN ('pending', 'failed');
