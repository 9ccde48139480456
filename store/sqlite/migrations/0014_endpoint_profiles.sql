-- Event delivery: an endpoint's name, wire profile, failure policy and
-- attempt timeout ('' and 0 take the installation's defaults), and its
-- ownership verification: verify says the endpoint must be verified
-- before it receives deliveries, verified_at when it was (0: pending),
-- verification_hash the SHA-256 (hex) of the code of the last challenge
-- sent, with when it was sent and why it failed.
ALTER TABLE endpoints ADD COLUMN name                 TEXT    NOT NULL DEFAULT '';
ALTER TABLE endpoints ADD COLUMN profile              TEXT    NOT NULL DEFAULT '';
ALTER TABLE endpoints ADD COLUMN failure_policy       TEXT    NOT NULL DEFAULT '';
ALTER TABLE endpoints ADD COLUMN timeout_ms           INTEGER NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN verify               INTEGER NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN verified_at          INTEGER NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN verification_hash    TEXT    NOT NULL DEFAULT '';
ALTER TABLE endpoints ADD COLUMN verification_sent_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN verification_error   TEXT    NOT NULL DEFAULT '';
