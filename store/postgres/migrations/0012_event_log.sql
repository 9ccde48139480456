-- The event log (store.EventLogStore): published_events keeps each
-- event's type, and is read newest first from an index per filter, each
-- going on with (created_at, tenant, event_id), the log's order; the
-- deliveries are read by event. An event recorded before keeps the type
-- of one of its deliveries, else none ('').
ALTER TABLE published_events ADD COLUMN event_type TEXT COLLATE "C" NOT NULL DEFAULT '';
CREATE INDEX deliveries_event ON deliveries (event_tenant, event_id);
UPDATE published_events p SET event_type = d.event_type
    FROM (SELECT DISTINCT ON (event_tenant, event_id) event_tenant, event_id, event_type FROM deliveries
          ORDER BY event_tenant, event_id, seq) d
    WHERE d.event_tenant = p.tenant AND d.event_id = p.event_id;
DROP INDEX published_events_created;
CREATE INDEX published_events_time ON published_events (created_at, tenant, event_id);
CREATE INDEX published_events_tenant_time ON published_events (tenant, created_at, event_id);
CREATE INDEX published_events_type_time ON published_events (event_type, created_at, tenant, event_id);
CREATE INDEX published_events_stream_time ON published_events (stream, created_at, tenant, event_id);
