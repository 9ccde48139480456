-- The change sequence of the streams (store.StreamChangeStore): the
-- committer gives the stream rows it writes its current number, which
-- moves on when a mark is taken and is reserved ahead in change_seq (so
-- that no number below a mark handed out is given after a restart, even
-- when the stream that had the last one is gone); a reader that checked
-- every change below a mark records it in checked_marks, to read only
-- the streams changed since. Streams stored before this migration have
-- sequence 0: a reader with no mark checks them all once.
ALTER TABLE streams ADD COLUMN changed_seq INTEGER NOT NULL DEFAULT 0;
CREATE INDEX streams_changed ON streams (changed_seq);
CREATE TABLE change_seq (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    reserved INTEGER NOT NULL
);
CREATE TABLE checked_marks (
    name TEXT PRIMARY KEY,
    mark INTEGER NOT NULL
);
