-- The change sequence of the streams (store.StreamChangeStore): each
-- batch of the committer that writes stream rows gives them the next
-- number of a counter it reserves ahead in change_seq (so that numbers never go back after a
-- restart, even when the stream that had the last one is gone), and a
-- reader that checked every change below a mark records it in
-- checked_marks, to read only the streams changed since. Streams stored
-- before this migration have sequence 0: a reader with no mark checks
-- them all once.
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
