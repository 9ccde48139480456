-- A leased delivery falls due again when its lease ends: a claim moves
-- next_attempt_at to the lease end, so the due index alone finds what is
-- claimable (no scan past deliveries in flight) and when the next one
-- falls due. The lease index is no longer needed.
UPDATE deliveries SET next_attempt_at = lease_until
    WHERE status IN ('pending', 'failed') AND lease_until > next_attempt_at;
DROP INDEX deliveries_lease;
