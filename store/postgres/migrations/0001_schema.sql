-- Herald's schema on PostgreSQL: the tables of the SQLite backend after
-- all its migrations, in the same shape (times are unix ns, 0 = none;
-- list-valued configuration is JSON text), so both backends share their
-- column lists and encodings. Text compares byte-wise (COLLATE "C"), as
-- in SQLite and Go, so every listing is in the same order. Secret values are sealed by package
-- internal/secretbox, bound to their table, row id and column.

-- Streams, their data chunks and idempotent producer state.
CREATE TABLE streams (
    id               BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    path             TEXT COLLATE "C"    NOT NULL UNIQUE,
    content_type     TEXT COLLATE "C"    NOT NULL,
    tail             BIGINT  NOT NULL,
    closed           BOOLEAN NOT NULL DEFAULT false,
    closed_by_id     TEXT COLLATE "C",
    closed_by_epoch  BIGINT,
    closed_by_seq    BIGINT,
    ttl_seconds      BIGINT  NOT NULL DEFAULT 0,
    expires_at       BIGINT  NOT NULL DEFAULT 0,
    accessed_at      BIGINT  NOT NULL,
    created_at       BIGINT  NOT NULL,
    fork_source_id   BIGINT  REFERENCES streams (id),
    fork_source_path TEXT COLLATE "C"    NOT NULL DEFAULT '',
    fork_position    BIGINT  NOT NULL DEFAULT 0,
    fork_offset      BIGINT  NOT NULL DEFAULT 0,
    fork_sub_offset  BIGINT  NOT NULL DEFAULT 0,
    last_seq         TEXT COLLATE "C"    NOT NULL DEFAULT '',
    soft_deleted     BOOLEAN NOT NULL DEFAULT false
);
CREATE INDEX streams_fork_source ON streams (fork_source_id) WHERE fork_source_id IS NOT NULL;
-- The expiry sweep: streams that can expire.
CREATE INDEX streams_expiring ON streams (id) WHERE expires_at > 0 OR ttl_seconds > 0;

-- One row per append: [start_pos, end_pos) of the stream's position space.
CREATE TABLE chunks (
    stream_id BIGINT NOT NULL,
    start_pos BIGINT NOT NULL,
    end_pos   BIGINT NOT NULL,
    data      BYTEA  NOT NULL,
    PRIMARY KEY (stream_id, end_pos)
);

CREATE TABLE producers (
    stream_id   BIGINT NOT NULL,
    producer_id TEXT COLLATE "C"   NOT NULL,
    epoch       BIGINT NOT NULL,
    last_seq    BIGINT NOT NULL,
    PRIMARY KEY (stream_id, producer_id)
);

-- Webhook subscriptions, their consumer instances (memberships as two JSON
-- arrays in membership order: paths, and [acked, notified] cursors) and
-- the index from a stream path to its consumers.
CREATE TABLE subscriptions (
    id          TEXT COLLATE "C"   PRIMARY KEY,
    pattern     TEXT COLLATE "C"   NOT NULL,
    webhook     TEXT COLLATE "C"   NOT NULL,
    secret      TEXT COLLATE "C"   NOT NULL,
    description TEXT COLLATE "C"   NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL
);
CREATE INDEX subscriptions_pattern ON subscriptions (pattern);

CREATE TABLE consumers (
    id                TEXT COLLATE "C"   PRIMARY KEY,
    subscription_id   TEXT COLLATE "C"   NOT NULL,
    incarnation       TEXT COLLATE "C"   NOT NULL DEFAULT '',
    primary_stream    TEXT COLLATE "C"   NOT NULL,
    state             TEXT COLLATE "C"   NOT NULL,
    epoch             BIGINT NOT NULL DEFAULT 0,
    wake_id           TEXT COLLATE "C"   NOT NULL DEFAULT '',
    attempts          BIGINT NOT NULL DEFAULT 0,
    waking_deadline   BIGINT NOT NULL DEFAULT 0,
    next_retry_at     BIGINT NOT NULL DEFAULT 0,
    liveness_deadline BIGINT NOT NULL DEFAULT 0,
    failing_since     BIGINT NOT NULL DEFAULT 0,
    due_at            BIGINT NOT NULL DEFAULT 0,
    version           BIGINT NOT NULL DEFAULT 1,
    paths             TEXT COLLATE "C"   NOT NULL DEFAULT '[]',
    cursors           TEXT COLLATE "C"   NOT NULL DEFAULT '[]'
);
CREATE INDEX consumers_subscription ON consumers (subscription_id);
CREATE INDEX consumers_primary ON consumers (primary_stream);
CREATE INDEX consumers_due ON consumers (due_at) WHERE due_at > 0;
CREATE INDEX consumers_state ON consumers (state);

CREATE TABLE consumer_paths (
    path        TEXT COLLATE "C" NOT NULL,
    consumer_id TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (path, consumer_id)
);

-- Event delivery: endpoints, per-(endpoint, stream) cursors, deliveries
-- (one per endpoint and event), their attempts, and the ids of events
-- published through the API.
CREATE TABLE endpoints (
    id                    TEXT COLLATE "C"             PRIMARY KEY,
    url                   TEXT COLLATE "C"             NOT NULL,
    event_types           TEXT COLLATE "C"             NOT NULL,
    streams               TEXT COLLATE "C"             NOT NULL,
    filter                BYTEA,
    description           TEXT COLLATE "C"             NOT NULL DEFAULT '',
    tenant                TEXT COLLATE "C"             NOT NULL DEFAULT '',
    active                BOOLEAN          NOT NULL,
    rate_limit            DOUBLE PRECISION NOT NULL DEFAULT 0,
    max_in_flight         BIGINT           NOT NULL DEFAULT 0,
    ordering              TEXT COLLATE "C"             NOT NULL,
    retry_schedule        TEXT COLLATE "C"             NOT NULL,
    headers               TEXT COLLATE "C"             NOT NULL,
    secret                TEXT COLLATE "C"             NOT NULL,
    previous_secret       TEXT COLLATE "C"             NOT NULL DEFAULT '',
    previous_secret_until BIGINT           NOT NULL DEFAULT 0,
    consecutive_failures  BIGINT           NOT NULL DEFAULT 0,
    last_success_at       BIGINT           NOT NULL DEFAULT 0,
    last_failure_at       BIGINT           NOT NULL DEFAULT 0,
    last_error            TEXT COLLATE "C"             NOT NULL DEFAULT '',
    disabled_at           BIGINT           NOT NULL DEFAULT 0,
    disabled_reason       TEXT COLLATE "C"             NOT NULL DEFAULT '',
    created_at            BIGINT           NOT NULL,
    updated_at            BIGINT           NOT NULL,
    version               BIGINT           NOT NULL DEFAULT 1,
    health_version        BIGINT           NOT NULL DEFAULT 1,
    -- The endpoint's name, wire profile, failure policy and attempt
    -- timeout ('' and 0: the installation's defaults), and its ownership
    -- verification (verified_at 0: pending while verify holds).
    name                  TEXT COLLATE "C" NOT NULL DEFAULT '',
    profile               TEXT COLLATE "C" NOT NULL DEFAULT '',
    failure_policy        TEXT COLLATE "C" NOT NULL DEFAULT '',
    timeout_ms            BIGINT           NOT NULL DEFAULT 0,
    verify                BOOLEAN          NOT NULL DEFAULT false,
    verified_at           BIGINT           NOT NULL DEFAULT 0,
    verification_hash     TEXT COLLATE "C" NOT NULL DEFAULT '',
    verification_sent_at  BIGINT           NOT NULL DEFAULT 0,
    verification_error    TEXT COLLATE "C" NOT NULL DEFAULT '',
    -- Batch delivery: events per POST (0: one, no batching) and how long
    -- a batch waits to fill.
    batch_max_events      BIGINT           NOT NULL DEFAULT 0,
    batch_max_wait_ms     BIGINT           NOT NULL DEFAULT 0
);
CREATE INDEX endpoints_tenant ON endpoints (tenant, id);

CREATE TABLE delivery_cursors (
    endpoint_id TEXT COLLATE "C"   NOT NULL,
    stream      TEXT COLLATE "C"   NOT NULL,
    stream_id   BIGINT NOT NULL,
    position    BIGINT NOT NULL,
    PRIMARY KEY (stream, endpoint_id)
);
CREATE INDEX delivery_cursors_endpoint ON delivery_cursors (endpoint_id);

-- A delivery's id is "dlv_" + seq. Leases live in the rows (every replica
-- claims from the same table): lease_until is when the lease ends,
-- lease_token names one claim (from delivery_lease_tokens), lease_owner
-- is the store handle that holds it.
CREATE TABLE deliveries (
    seq              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id      TEXT COLLATE "C"   NOT NULL,
    event_id         TEXT COLLATE "C"   NOT NULL,
    event_type       TEXT COLLATE "C"   NOT NULL,
    stream           TEXT COLLATE "C"   NOT NULL,
    position         BIGINT NOT NULL,
    body             BYTEA  NOT NULL,
    status           TEXT COLLATE "C"   NOT NULL,
    attempts         BIGINT NOT NULL DEFAULT 0,
    round_attempts   BIGINT NOT NULL DEFAULT 0,
    next_attempt_at  BIGINT NOT NULL,
    lease_until      BIGINT NOT NULL DEFAULT 0,
    lease_token      BIGINT NOT NULL DEFAULT 0,
    lease_owner      TEXT COLLATE "C"   NOT NULL DEFAULT '',
    last_status_code BIGINT NOT NULL DEFAULT 0,
    last_error       TEXT COLLATE "C"   NOT NULL DEFAULT '',
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    finished_at      BIGINT NOT NULL DEFAULT 0,
    -- The W3C traceparent of the match that made the delivery ('': not
    -- traced), so every attempt joins its trace.
    trace_parent     TEXT COLLATE "C"   NOT NULL DEFAULT '',
    -- The batch the delivery was last sent in ('': none), kept across
    -- retries so a retried batch keeps its id.
    batch_id         TEXT COLLATE "C"   NOT NULL DEFAULT '',
    UNIQUE (endpoint_id, event_id)
);
CREATE SEQUENCE delivery_lease_tokens;
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
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_seq  BIGINT NOT NULL,
    at            BIGINT NOT NULL,
    status_code   BIGINT NOT NULL,
    response_body BYTEA  NOT NULL,
    latency_ns    BIGINT NOT NULL,
    error         TEXT COLLATE "C"   NOT NULL DEFAULT '',
    batch_id      TEXT COLLATE "C"   NOT NULL DEFAULT ''
);
CREATE INDEX delivery_attempts_delivery ON delivery_attempts (delivery_seq, id);

CREATE TABLE published_events (
    event_id   TEXT COLLATE "C"   PRIMARY KEY,
    stream     TEXT COLLATE "C"   NOT NULL,
    position   BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX published_events_created ON published_events (created_at);

-- Replay jobs (docs/delivery.md, Replay): a replay's request and progress
-- (the engine's JSON), its counts and state, and the engine holding it
-- until lease_until. published_events also keeps the ids the matcher met
-- in appended events, first seen first.
CREATE TABLE replay_jobs (
    id          TEXT COLLATE "C"   PRIMARY KEY,
    endpoint_id TEXT COLLATE "C"   NOT NULL,
    tenant      TEXT COLLATE "C"   NOT NULL DEFAULT '',
    request     BYTEA   NOT NULL,
    state       TEXT COLLATE "C"   NOT NULL,
    queued      BIGINT  NOT NULL DEFAULT 0,
    total       BIGINT  NOT NULL DEFAULT 0,
    truncated   BOOLEAN NOT NULL DEFAULT false,
    error       TEXT COLLATE "C"   NOT NULL DEFAULT '',
    progress    BYTEA   NOT NULL,
    owner       TEXT COLLATE "C"   NOT NULL,
    lease_until BIGINT  NOT NULL,
    created_at  BIGINT  NOT NULL,
    updated_at  BIGINT  NOT NULL,
    finished_at BIGINT  NOT NULL DEFAULT 0
);
CREATE INDEX replay_jobs_endpoint ON replay_jobs (endpoint_id);
CREATE INDEX replay_jobs_running ON replay_jobs (lease_until) WHERE state = 'running';
CREATE INDEX replay_jobs_finished ON replay_jobs (finished_at) WHERE finished_at > 0;

-- Where the ids of events appended without one come from (see
-- store.EventIDSpan).
CREATE TABLE event_id_spans (
    stream_id BIGINT NOT NULL,
    start_pos BIGINT NOT NULL,
    end_pos   BIGINT NOT NULL,
    nonce     TEXT COLLATE "C"   NOT NULL,
    run       TEXT COLLATE "C"   NOT NULL,
    PRIMARY KEY (stream_id, start_pos)
);

-- API keys: the hash of each key, never the key itself.
CREATE TABLE api_keys (
    id          TEXT COLLATE "C"   PRIMARY KEY,
    hash        BYTEA  NOT NULL,
    scopes      TEXT COLLATE "C"   NOT NULL,
    tenant      TEXT COLLATE "C"   NOT NULL DEFAULT '',
    paths       TEXT COLLATE "C"   NOT NULL,
    description TEXT COLLATE "C"   NOT NULL DEFAULT '',
    expires_at  BIGINT NOT NULL DEFAULT 0,
    created_at  BIGINT NOT NULL
);
CREATE INDEX api_keys_tenant ON api_keys (tenant, id);

-- Secrets at rest: the callback token keys Herald makes for itself (the
-- signing key has the lowest ord), and the key-encryption key check
-- (secret_meta name 'kek_check').
CREATE TABLE token_keys (
    id         TEXT COLLATE "C"   PRIMARY KEY,
    secret     TEXT COLLATE "C"   NOT NULL,
    ord        BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE secret_meta (
    name  TEXT COLLATE "C" PRIMARY KEY,
    value TEXT COLLATE "C" NOT NULL
);

-- Event delivery: the key that seals a delivery's seq into its public id
-- (see codec.DeliveryIDs), made at the first start that finds none.
CREATE TABLE id_keys (
    name TEXT COLLATE "C" PRIMARY KEY,
    key  BYTEA NOT NULL
);

-- Event delivery: the event type catalogue. schema is the JSON Schema of
-- the events' data (NULL: none); version increases with every change.
-- Names compare in byte order ("C"): a prefix's types follow it.
CREATE TABLE event_types (
    name        TEXT COLLATE "C" PRIMARY KEY,
    description TEXT COLLATE "C" NOT NULL DEFAULT '',
    schema      BYTEA,
    deprecated  BOOLEAN          NOT NULL DEFAULT false,
    created_at  BIGINT           NOT NULL,
    updated_at  BIGINT           NOT NULL,
    version     BIGINT           NOT NULL DEFAULT 1
);
