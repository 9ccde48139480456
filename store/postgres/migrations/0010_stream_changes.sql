-- The change sequence of the streams (store.StreamChangeStore): a stream
-- row written by a transaction takes the transaction's id, which every
-- replica shares and which never goes back; the mark is the oldest
-- transaction still running. A reader that checked every change below a
-- mark records it in checked_marks, to read only the streams changed
-- since. Streams stored before this migration have sequence 0: a reader
-- with no mark checks them all once.
ALTER TABLE streams ADD COLUMN changed_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE streams ALTER COLUMN changed_seq SET DEFAULT (CAST(CAST(pg_current_xact_id() AS text) AS bigint));
CREATE INDEX streams_changed ON streams (changed_seq);
CREATE TABLE checked_marks (
    name TEXT COLLATE "C" PRIMARY KEY,
    mark BIGINT NOT NULL
);
