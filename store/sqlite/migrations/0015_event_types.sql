-- Event delivery: the event type catalogue. schema is the JSON Schema of
-- the events' data (NULL: none); times are unix ns; version increases
-- with every change.
CREATE TABLE event_types (
    name        TEXT    PRIMARY KEY,
    description TEXT    NOT NULL DEFAULT '',
    schema      BLOB,
    deprecated  INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    version     INTEGER NOT NULL DEFAULT 1
) WITHOUT ROWID;
