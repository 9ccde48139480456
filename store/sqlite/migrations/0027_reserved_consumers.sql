-- One durable model for both subscription models: a subscription of the
-- reserved API becomes one consumer row of kind 'reserved' (id and
-- subscription id '__ds/' + its id, no primary stream), its linked
-- streams the consumer's memberships (a cursor's third element says how
-- the stream is linked: 'g' by the pattern, 'e' explicitly, 'ge' both),
-- its delivery state the consumer's columns (phase as state, generation
-- as epoch, the lease's end as liveness_deadline, an attempt's deadline
-- as waking_deadline, a retry or an owed wake event as next_retry_at, a
-- failed attempt as failing_since), and what it has beyond a query-string
-- consumer in columns of its own. Its timer is then claimed, and ended
-- for a dead replica, as every consumer's is.
ALTER TABLE consumers ADD COLUMN kind TEXT NOT NULL DEFAULT '';
ALTER TABLE consumers ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE consumers ADD COLUMN config TEXT NOT NULL DEFAULT '';
ALTER TABLE consumers ADD COLUMN config_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE consumers ADD COLUMN pattern TEXT NOT NULL DEFAULT '';
ALTER TABLE consumers ADD COLUMN created_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN holder TEXT NOT NULL DEFAULT '';
ALTER TABLE consumers ADD COLUMN wake_written INTEGER NOT NULL DEFAULT 0;
CREATE INDEX consumers_kind ON consumers (kind);

-- A time of the stored JSON state as Unix nanoseconds (to the
-- millisecond), 0 for Go's zero time.
CREATE TEMP VIEW ds_moved AS SELECT d.*,
    json_extract(d.state, '$.Sending') AS sending,
    CASE WHEN json_extract(d.state, '$.NextAttemptAt') LIKE '0001-01-01%' THEN 0
        ELSE CAST(round((julianday(json_extract(d.state, '$.NextAttemptAt')) - 2440587.5) * 86400000) AS INTEGER) * 1000000 END AS next_at,
    CASE WHEN json_extract(d.state, '$.LeaseUntil') LIKE '0001-01-01%' THEN 0
        ELSE CAST(round((julianday(json_extract(d.state, '$.LeaseUntil')) - 2440587.5) * 86400000) AS INTEGER) * 1000000 END AS lease_until
    FROM ds_subscriptions d;

INSERT INTO consumers (id, kind, subscription_id, incarnation, primary_stream, tenant, config, config_hash, pattern, created_at,
    state, epoch, wake_id, attempts, waking_deadline, next_retry_at, liveness_deadline, failing_since, due_at,
    holder, wake_written, timer_until, timer_owner, version, paths, cursors)
SELECT '__ds/' || d.id, 'reserved', '__ds/' || d.id, d.incarnation, '', d.tenant, d.config, d.config_hash, d.pattern, d.created_at,
    upper(json_extract(d.state, '$.Phase')), coalesce(json_extract(d.state, '$.Generation'), 0),
    coalesce(json_extract(d.state, '$.WakeID'), ''), coalesce(json_extract(d.state, '$.Attempts'), 0),
    CASE WHEN d.sending THEN d.next_at ELSE 0 END, CASE WHEN d.sending THEN 0 ELSE d.next_at END, d.lease_until,
    CASE WHEN json_extract(d.state, '$.Failed') THEN d.created_at ELSE 0 END, d.due_at,
    coalesce(json_extract(d.state, '$.Holder'), ''), CASE WHEN json_extract(d.state, '$.WakeWritten') THEN 1 ELSE 0 END,
    d.timer_until, d.timer_owner, d.version,
    coalesce((SELECT json_group_array(path) FROM
        (SELECT path FROM ds_links l WHERE l.subscription_id = d.id ORDER BY path)), '[]'),
    coalesce((SELECT json_group_array(json_array(acked, notified,
            CASE WHEN glob <> 0 AND explicit <> 0 THEN 'ge' WHEN glob <> 0 THEN 'g' ELSE 'e' END)) FROM
        (SELECT acked, notified, glob, explicit FROM ds_links l WHERE l.subscription_id = d.id ORDER BY path)), '[]')
FROM ds_moved d;
INSERT INTO consumer_paths (path, consumer_id) SELECT path, '__ds/' || subscription_id FROM ds_links;

DROP VIEW ds_moved;
DROP TABLE ds_links;
DROP TABLE ds_subscriptions;
