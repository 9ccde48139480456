-- Event ids are unique per tenant ('' the platform): published_events is
-- keyed by (tenant, event_id), so the same id published by two tenants
-- is two events. An id recorded before takes the tenant of the message
-- it names (its string "tenant" field) while the stream still holds that
-- message, else none.
CREATE TABLE published_events_by_tenant (
    tenant     TEXT    NOT NULL,
    event_id   TEXT    NOT NULL,
    stream     TEXT    NOT NULL,
    position   INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, event_id)
) WITHOUT ROWID;

INSERT INTO published_events_by_tenant (tenant, event_id, stream, position, created_at)
SELECT coalesce((
        SELECT CASE WHEN json_valid(m.msg) THEN
            CASE WHEN json_type(m.msg, '$.tenant') = 'text' THEN json_extract(m.msg, '$.tenant') END END
        FROM (
            SELECT CASE WHEN instr(r.rest, X'0A') > 0 THEN CAST(substr(r.rest, 1, instr(r.rest, X'0A') - 1) AS TEXT) END AS msg
            FROM (
                SELECT substr(c.data, p.position - c.start_pos + 1) AS rest
                FROM streams s JOIN chunks c ON c.stream_id = s.id
                WHERE s.path = p.stream AND s.soft_deleted = 0 AND c.start_pos <= p.position AND p.position < c.end_pos
            ) r
        ) m
    ), ''), p.event_id, p.stream, p.position, p.created_at
FROM published_events p;

DROP TABLE published_events;
ALTER TABLE published_events_by_tenant RENAME TO published_events;
CREATE INDEX published_events_created ON published_events (created_at);

-- A delivery names its event by (event_tenant, event_id): an endpoint
-- that receives several tenants' events gets each tenant's event of an
-- id. The table is rebuilt for its new unique key, keeping every row,
-- its seq (a delivery's public id) and the seq sequence, so no id is
-- ever given twice. An existing delivery takes the tenant its event id
-- was recorded in above, else its endpoint's.
CREATE TABLE deliveries_by_tenant (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint_id      TEXT    NOT NULL,
    event_tenant     TEXT    NOT NULL DEFAULT '',
    event_id         TEXT    NOT NULL,
    event_type       TEXT    NOT NULL,
    stream           TEXT    NOT NULL,
    position         INTEGER NOT NULL,
    body             BLOB    NOT NULL,
    status           TEXT    NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    round_attempts   INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER NOT NULL,
    lease_until      INTEGER NOT NULL DEFAULT 0,
    lease_token      INTEGER NOT NULL DEFAULT 0,
    last_status_code INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT    NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    finished_at      INTEGER NOT NULL DEFAULT 0,
    lease_owner      TEXT    NOT NULL DEFAULT '',
    trace_parent     TEXT    NOT NULL DEFAULT '',
    batch_id         TEXT    NOT NULL DEFAULT '',
    UNIQUE (endpoint_id, event_tenant, event_id)
);
INSERT INTO deliveries_by_tenant (seq, endpoint_id, event_tenant, event_id, event_type, stream, position, body, status,
    attempts, round_attempts, next_attempt_at, lease_until, lease_token, last_status_code, last_error,
    created_at, updated_at, finished_at, lease_owner, trace_parent, batch_id)
SELECT d.seq, d.endpoint_id, coalesce(
        (SELECT p.tenant FROM published_events p WHERE p.event_id = d.event_id AND p.stream = d.stream AND p.position = d.position),
        (SELECT e.tenant FROM endpoints e WHERE e.id = d.endpoint_id), ''), d.event_id, d.event_type,
    d.stream, d.position, d.body, d.status, d.attempts, d.round_attempts, d.next_attempt_at, d.lease_until, d.lease_token,
    d.last_status_code, d.last_error, d.created_at, d.updated_at, d.finished_at, d.lease_owner, d.trace_parent, d.batch_id
FROM deliveries d;
DELETE FROM sqlite_sequence WHERE name = 'deliveries_by_tenant';
INSERT INTO sqlite_sequence (name, seq) SELECT 'deliveries_by_tenant', seq FROM sqlite_sequence WHERE name = 'deliveries';
DROP TABLE deliveries;
ALTER TABLE deliveries_by_tenant RENAME TO deliveries;
-- The indexes of deliveries, as before.
CREATE INDEX deliveries_due ON deliveries (endpoint_id, next_attempt_at)
    WHERE status IN ('pending', 'failed');
CREATE INDEX deliveries_lease ON deliveries (endpoint_id, lease_until)
    WHERE status IN ('pending', 'failed');
CREATE INDEX deliveries_stream_order ON deliveries (endpoint_id, stream, position)
    WHERE status IN ('pending', 'failed');
CREATE INDEX deliveries_endpoint_seq ON deliveries (endpoint_id, seq);
CREATE INDEX deliveries_finished ON deliveries (finished_at) WHERE finished_at > 0;
