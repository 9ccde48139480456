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
ALTER TABLE consumers ADD COLUMN kind TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE consumers ADD COLUMN tenant TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE consumers ADD COLUMN config TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE consumers ADD COLUMN config_hash TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE consumers ADD COLUMN pattern TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE consumers ADD COLUMN created_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE consumers ADD COLUMN holder TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE consumers ADD COLUMN wake_written INTEGER NOT NULL DEFAULT 0;
CREATE INDEX consumers_kind ON consumers (kind);

INSERT INTO consumers (id, kind, subscription_id, incarnation, primary_stream, tenant, config, config_hash, pattern, created_at,
    state, epoch, wake_id, attempts, waking_deadline, next_retry_at, liveness_deadline, failing_since, due_at,
    holder, wake_written, timer_until, timer_owner, version, paths, cursors)
SELECT '__ds/' || d.id, 'reserved', '__ds/' || d.id, d.incarnation, '', d.tenant, d.config, d.config_hash, d.pattern, d.created_at,
    upper(d.st->>'Phase'), coalesce((d.st->>'Generation')::bigint, 0), coalesce(d.st->>'WakeID', ''),
    coalesce((d.st->>'Attempts')::bigint, 0),
    CASE WHEN d.sending THEN d.next_at ELSE 0 END, CASE WHEN d.sending THEN 0 ELSE d.next_at END, d.lease_until,
    CASE WHEN coalesce((d.st->>'Failed')::boolean, false) THEN d.created_at ELSE 0 END, d.due_at,
    coalesce(d.st->>'Holder', ''), CASE WHEN coalesce((d.st->>'WakeWritten')::boolean, false) THEN 1 ELSE 0 END,
    d.timer_until, d.timer_owner, d.version,
    coalesce((SELECT json_agg(l.path ORDER BY l.path)::text FROM ds_links l WHERE l.subscription_id = d.id), '[]'),
    coalesce((SELECT json_agg(json_build_array(l.acked, l.notified,
            CASE WHEN l.glob <> 0 AND l.explicit <> 0 THEN 'ge' WHEN l.glob <> 0 THEN 'g' ELSE 'e' END) ORDER BY l.path)::text
        FROM ds_links l WHERE l.subscription_id = d.id), '[]')
FROM (SELECT s.*, s.state::jsonb AS st,
        coalesce((s.state::jsonb->>'Sending')::boolean, false) AS sending,
        CASE WHEN coalesce(s.state::jsonb->>'NextAttemptAt', '0001-01-01') LIKE '0001-01-01%' THEN 0
            ELSE (extract(epoch FROM (s.state::jsonb->>'NextAttemptAt')::timestamptz) * 1000000000)::bigint END AS next_at,
        CASE WHEN coalesce(s.state::jsonb->>'LeaseUntil', '0001-01-01') LIKE '0001-01-01%' THEN 0
            ELSE (extract(epoch FROM (s.state::jsonb->>'LeaseUntil')::timestamptz) * 1000000000)::bigint END AS lease_until
    FROM ds_subscriptions s) d;
INSERT INTO consumer_paths (path, consumer_id) SELECT path, '__ds/' || subscription_id FROM ds_links;

DROP TABLE ds_links;
DROP TABLE ds_subscriptions;
