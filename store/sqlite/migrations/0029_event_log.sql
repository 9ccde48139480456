-- The event log (store.EventLogStore): published_events keeps each
-- event's type, and is read newest first from an index per filter, each
-- going on with (created_at, tenant, event_id), the log's order; the
-- deliveries are read by event. An event recorded before keeps the type
-- of one of its deliveries, else none ('').
ALTER TABLE published_events ADD COLUMN event_type TEXT NOT NULL DEFAULT '';
CREATE INDEX deliveries_event ON deliveries (event_tenant, event_id);
UPDATE published_events SET event_type = coalesce((SELECT d.event_type FROM deliveries d
    WHERE d.event_tenant = published_events.tenant AND d.event_id = published_events.event_id LIMIT 1), '');
DROP INDEX published_events_created;
CREATE INDEX published_events_time ON published_events (created_at, tenant, event_id);
CREATE INDEX published_events_tenant_time ON published_events (tenant, created_at, event_id);
CREATE INDEX published_events_type_time ON published_events (event_type, created_at, tenant, event_id);
CREATE INDEX published_events_stream_time ON published_events (stream, created_at, tenant, event_id);
