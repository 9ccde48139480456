-- A consumer's memberships move into its own row, as two JSON arrays in
-- membership order: paths (the streams) and cursors (the acked and
-- notified offsets in each). A wake changes only cursors, so it writes
-- one row instead of one row per stream. consumer_paths is what remains
-- of consumer_streams: the index from a stream to its consumers, written
-- only when memberships change.
ALTER TABLE consumers ADD COLUMN paths TEXT NOT NULL DEFAULT '[]';
ALTER TABLE consumers ADD COLUMN cursors TEXT NOT NULL DEFAULT '[]';
UPDATE consumers SET
    paths = (SELECT json_group_array(path) FROM
        (SELECT path FROM consumer_streams m WHERE m.consumer_id = consumers.id ORDER BY ord)),
    cursors = (SELECT json_group_array(json_array(acked, notified)) FROM
        (SELECT acked, notified FROM consumer_streams m WHERE m.consumer_id = consumers.id ORDER BY ord))
WHERE id IN (SELECT consumer_id FROM consumer_streams);
CREATE TABLE consumer_paths (
    path        TEXT NOT NULL,
    consumer_id TEXT NOT NULL,
    PRIMARY KEY (path, consumer_id)
) WITHOUT ROWID;
INSERT INTO consumer_paths (path, consumer_id) SELECT path, consumer_id FROM consumer_streams;
DROP TABLE consumer_streams;
