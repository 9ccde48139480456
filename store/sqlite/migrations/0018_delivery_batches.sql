-- Batch delivery: an endpoint's batch size (0: one event per POST) and
-- how long a batch waits to fill; the batch a delivery was last sent in
-- (kept across retries, so a retried batch keeps its id), and the batch
-- of each attempt.
ALTER TABLE endpoints ADD COLUMN batch_max_events INTEGER NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN batch_max_wait_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN batch_id TEXT NOT NULL DEFAULT '';
ALTER TABLE delivery_attempts ADD COLUMN batch_id TEXT NOT NULL DEFAULT '';
