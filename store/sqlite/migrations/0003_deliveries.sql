-- Event delivery (docs/delivery.md): endpoints, per-(endpoint, stream)
-- cursors, deliveries (one per endpoint and event), their attempts, and
-- the ids of events published through the API. Times are unix ns, 0 =
-- none; list-valued configuration is JSON text.
CREATE TABLE endpoints (
    id                    TEXT    PRIMARY KEY,
    url                   TEXT    NOT NULL,
    event_types           TEXT    NOT NULL,
    streams               TEXT    NOT NULL,
    filter                BLOB,
    description           TEXT    NOT NULL DEFAULT '',
    tenant                TEXT    NOT NULL DEFAULT '',
    active                INTEGER NOT NULL,
    rate_limit            REAL    NOT NULL DEFAULT 0,
    max_in_flight         INTEGER NOT NULL DEFAULT 0,
    ordering              TEXT    NOT NULL,
    retry_schedule        TEXT    NOT NULL,
    headers               TEXT    NOT NULL,
    secret                TEXT    NOT NULL,
    previous_secret       TEXT    NOT NULL DEFAULT '',
    previous_secret_until INTEGER NOT NULL DEFAULT 0,
    consecutive_failures  INTEGER NOT NULL DEFAULT 0,
    last_success_at       INTEGER NOT NULL DEFAULT 0,
    last_failure_at       INTEGER NOT NULL DEFAULT 0,
    last_error            TEXT    NOT NULL DEFAULT '',
    disabled_at           INTEGER NOT NULL DEFAULT 0,
    disabled_reason       TEXT    NOT NULL DEFAULT '',
    created_at            INTEGER NOT NULL,
    updated_at            INTEGER NOT NULL,
    version               INTEGER NOT NULL DEFAULT 1,
    health_version        INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX endpoints_tenant ON endpoints (tenant, id);

CREATE TABLE delivery_cursors (
    endpoint_id TEXT    NOT NULL,
    stream      TEXT    NOT NULL,
    stream_id   INTEGER NOT NULL,
    position    INTEGER NOT NULL,
    PRIMARY KEY (stream, endpoint_id)
) WITHOUT ROWID;
CREATE INDEX delivery_cursors_endpoint ON delivery_cursors (endpoint_id);

-- A delivery's id is "dlv_" + seq: lookups by id are rowid lookups, and
-- no random key index slows the inserts.
CREATE TABLE deliveries (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint_id      TEXT    NOT NULL,
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
    UNIQUE (endpoint_id, event_id)
);
-- The claim: an endpoint's unfinished deliveries by due time.
CREATE INDEX deliveries_due ON deliveries (endpoint_id, next_attempt_at)
    WHERE status IN ('pending', 'failed');
-- The next lease to end (when the runner should look again).
CREATE INDEX deliveries_lease ON deliveries (endpoint_id, lease_until)
    WHERE status IN ('pending', 'failed');
-- ordering=stream: the earliest unfinished delivery of a stream.
CREATE INDEX deliveries_stream_order ON deliveries (endpoint_id, stream, position)
    WHERE status IN ('pending', 'failed');
CREATE INDEX deliveries_endpoint_seq ON deliveries (endpoint_id, seq);
CREATE INDEX deliveries_finished ON deliveries (finished_at) WHERE finished_at > 0;

CREATE TABLE delivery_attempts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_seq  INTEGER NOT NULL,
    at            INTEGER NOT NULL,
    status_code   INTEGER NOT NULL,
    response_body BLOB    NOT NULL,
    latency_ns    INTEGER NOT NULL,
    error         TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX delivery_attempts_delivery ON delivery_attempts (delivery_seq, id);

CREATE TABLE published_events (
    event_id   TEXT    PRIMARY KEY,
    stream     TEXT    NOT NULL,
    position   INTEGER NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX published_events_created ON published_events (created_at);
