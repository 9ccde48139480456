-- Streams, their data chunks and idempotent producer state.
CREATE TABLE streams (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    path             TEXT    NOT NULL UNIQUE,
    content_type     TEXT    NOT NULL,
    tail             INTEGER NOT NULL,
    closed           INTEGER NOT NULL DEFAULT 0,
    closed_by_id     TEXT,
    closed_by_epoch  INTEGER,
    closed_by_seq    INTEGER,
    ttl_seconds      INTEGER NOT NULL DEFAULT 0,
    expires_at       INTEGER NOT NULL DEFAULT 0, -- unix ns, 0 = none
    accessed_at      INTEGER NOT NULL,           -- unix ns
    created_at       INTEGER NOT NULL,           -- unix ns
    fork_source_id   INTEGER REFERENCES streams (id),
    fork_source_path TEXT    NOT NULL DEFAULT '',
    fork_position    INTEGER NOT NULL DEFAULT 0,
    fork_offset      INTEGER NOT NULL DEFAULT 0,
    fork_sub_offset  INTEGER NOT NULL DEFAULT 0,
    last_seq         TEXT    NOT NULL DEFAULT '',
    soft_deleted     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX streams_fork_source ON streams (fork_source_id) WHERE fork_source_id IS NOT NULL;

-- One row per append (per stored chunk): [start_pos, end_pos) of the
-- stream's position space. Chunks of a stream are contiguous from its fork
-- position (0 when not a fork).
CREATE TABLE chunks (
    stream_id INTEGER NOT NULL,
    start_pos INTEGER NOT NULL,
    end_pos   INTEGER NOT NULL,
    data      BLOB    NOT NULL
);
CREATE UNIQUE INDEX chunks_stream_end ON chunks (stream_id, end_pos);

CREATE TABLE producers (
    stream_id   INTEGER NOT NULL,
    producer_id TEXT    NOT NULL,
    epoch       INTEGER NOT NULL,
    last_seq    INTEGER NOT NULL,
    PRIMARY KEY (stream_id, producer_id)
) WITHOUT ROWID;
