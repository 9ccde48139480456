-- The wake cycles a consumer started since its acks last advanced, and
-- when the first of them began (0: none): what shows a consumer that is
-- woken again and again without making progress. Consumers stored before
-- this migration start at 0.
ALTER TABLE consumers ADD COLUMN stalled_wakes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN stalled_since BIGINT NOT NULL DEFAULT 0;
