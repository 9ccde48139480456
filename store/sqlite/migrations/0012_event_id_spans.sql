-- Event delivery: where the ids of events appended without one come from
-- (see store.EventIDSpan). Each span of a stream's positions
-- [start_pos, end_pos) has a random nonce; only the process run that
-- created it extends it. The streams that exist now get a span of an
-- empty nonce over what they hold, so the events already in them keep the
-- ids they were delivered with.
CREATE TABLE event_id_spans (
    stream_id INTEGER NOT NULL,
    start_pos INTEGER NOT NULL,
    end_pos   INTEGER NOT NULL,
    nonce     TEXT    NOT NULL,
    run       TEXT    NOT NULL,
    PRIMARY KEY (stream_id, start_pos)
) WITHOUT ROWID;
INSERT INTO event_id_spans (stream_id, start_pos, end_pos, nonce, run)
    SELECT id, 0, tail, '', '' FROM streams WHERE tail > 0;
