-- A consumer's incarnation: a random id set when the consumer is created,
-- which its callback tokens carry, so that a token dies with its consumer
-- even when a consumer with the same id is created later. Consumers
-- stored before this migration keep '' and accept the tokens issued
-- before it, which carry none.
ALTER TABLE consumers ADD COLUMN incarnation TEXT NOT NULL DEFAULT '';
