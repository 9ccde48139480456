-- Event delivery: the W3C traceparent of the match that made a delivery
-- ('' when it was not traced), so every attempt, retries included, joins
-- the trace of the publish or append.
ALTER TABLE deliveries ADD COLUMN trace_parent TEXT NOT NULL DEFAULT '';
