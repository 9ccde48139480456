-- Event ids are unique per tenant ('' the platform): published_events is
-- keyed by (tenant, event_id), so the same id published by two tenants
-- is two events. An id recorded before takes the tenant of the message
-- it names (its string "tenant" field) while the stream still holds that
-- message, else none; a message that does not read as JSON names none.
ALTER TABLE published_events ADD COLUMN tenant TEXT COLLATE "C" NOT NULL DEFAULT '';

DO $$
DECLARE
    r   record;
    doc jsonb;
BEGIN
    FOR r IN
        SELECT p.event_id, substring(c.data FROM (p.position - c.start_pos + 1)::int) AS rest
        FROM published_events p
        JOIN streams s ON s.path = p.stream AND NOT s.soft_deleted
        JOIN chunks c ON c.stream_id = s.id AND c.start_pos <= p.position AND p.position < c.end_pos
    LOOP
        CONTINUE WHEN position('\x0a'::bytea IN r.rest) = 0;
        BEGIN
            doc := convert_from(substring(r.rest FROM 1 FOR position('\x0a'::bytea IN r.rest) - 1), 'UTF8')::jsonb;
        EXCEPTION WHEN others THEN
            CONTINUE;
        END;
        IF jsonb_typeof(doc) = 'object' AND jsonb_typeof(doc -> 'tenant') = 'string' THEN
            UPDATE published_events SET tenant = doc ->> 'tenant' WHERE event_id = r.event_id;
        END IF;
    END LOOP;
END
$$;

ALTER TABLE published_events DROP CONSTRAINT published_events_pkey;
ALTER TABLE published_events ADD PRIMARY KEY (tenant, event_id);

-- A delivery names its event by (event_tenant, event_id): an endpoint
-- that receives several tenants' events gets each tenant's event of an
-- id. An existing delivery takes the tenant its event id was recorded in
-- above, else its endpoint's.
ALTER TABLE deliveries ADD COLUMN event_tenant TEXT COLLATE "C" NOT NULL DEFAULT '';
UPDATE deliveries d SET event_tenant = e.tenant FROM endpoints e WHERE e.id = d.endpoint_id AND e.tenant <> '';
UPDATE deliveries d SET event_tenant = p.tenant FROM published_events p
    WHERE p.event_id = d.event_id AND p.stream = d.stream AND p.position = d.position;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_endpoint_id_event_id_key;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_endpoint_id_event_tenant_event_id_key UNIQUE (endpoint_id, event_tenant, event_id);
