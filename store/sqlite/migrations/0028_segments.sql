-- Stream bytes move out of the database into the segment files of the
-- data directory (segments/<id>.seg): a chunk's row indexes them (its
-- segment and its offset in it) and keeps an empty data. The chunks
-- written before are moved into segments when the store opens.
ALTER TABLE chunks ADD COLUMN seg INTEGER; -- NULL: the bytes are still in data
ALTER TABLE chunks ADD COLUMN seg_off INTEGER NOT NULL DEFAULT 0;

-- One row per segment file: its committed size (bytes past it were
-- written for a batch that never committed, and are cut off at open) and
-- how many of its bytes belong to streams that still exist (0: the file
-- is deleted).
CREATE TABLE segments (
    id   INTEGER PRIMARY KEY,
    size INTEGER NOT NULL,
    live INTEGER NOT NULL
);

-- The chunks whose bytes are still in the database, which the store
-- moves into segments at open: found without reading every chunk, and
-- empty once they are moved (new chunks never enter it).
CREATE INDEX chunks_inline ON chunks (stream_id) WHERE seg IS NULL;
