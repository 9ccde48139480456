package sqlstore

// The row shape of the store: the column lists of its tables, how values
// are encoded in them (times as Unix nanoseconds, lists as JSON text) and
// the scanning of rows.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heraldstreams/herald/internal/jsontext"
	"github.com/heraldstreams/herald/store"
)

// Row is a row to scan: *sql.Row, *sql.Rows, pgx.Row and pgx.Rows are.
type Row interface {
	Scan(dest ...any) error
}

// Executor runs the statements of one transaction, or of a read, of a
// backend. Statements are written once, with $1-style placeholders; an
// executor whose driver wants another style rewrites them (see
// Numbered).
type Executor interface {
	// QueryRow runs a statement that returns at most one row.
	QueryRow(sql string, args ...any) Row
	// Query runs a statement and calls each for every row it returns.
	Query(sql string, args []any, each func(Row) error) error
	// Exec runs a statement and returns how many rows it changed.
	Exec(sql string, args ...any) (int64, error)
}

// Nanos converts a time to its column value, Unix nanoseconds (0 is
// "none").
func Nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromNanos converts a column value back (0 is the zero time).
func FromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// StreamColumns are the columns of a stream's metadata, in the order
// backends scan them.
const StreamColumns = `id, path, content_type, tail, closed, closed_by_id, closed_by_epoch, closed_by_seq,
	ttl_seconds, expires_at, accessed_at, created_at, fork_source_id, fork_source_path, fork_position,
	fork_offset, fork_sub_offset, last_seq, soft_deleted, changed_seq`

// SubscriptionColumns are the columns ScanSubscription reads.
const SubscriptionColumns = `id, pattern, webhook, secret, description, created_at, tenant`

// ScanSubscription scans a subscription row; its secret as stored.
func ScanSubscription(row Row) (store.Subscription, error) {
	var sub store.Subscription
	var created int64
	if err := row.Scan(&sub.ID, &sub.Pattern, &sub.Webhook, &sub.Secret, &sub.Description, &created, &sub.Tenant); err != nil {
		return sub, err
	}
	sub.CreatedAt = FromNanos(created)
	return sub, nil
}

// A consumer's memberships are stored as two JSON arrays in membership
// order: paths, and cursors of [acked, notified] offsets, with a third
// element for a reserved-API subscription's link: "g" (by its pattern),
// "e" (explicit) or "ge" (both).
type cursorJSON []string

// linkFlags is the third element of a cursor, "" for none.
func linkFlags(m *store.ConsumerStream) string {
	f := ""
	if m.Glob {
		f += "g"
	}
	if m.Explicit {
		f += "e"
	}
	return f
}

// EncodeMemberships returns the paths and cursors columns of memberships.
func EncodeMemberships(streams []store.ConsumerStream) (paths, cursors string) {
	p := jsontext.AppendArray(make([]byte, 0, 2+len(streams)*32), len(streams), func(dst []byte, i int) []byte {
		return jsontext.AppendString(dst, streams[i].Path)
	})
	c := jsontext.AppendArray(make([]byte, 0, 2+len(streams)*72), len(streams), func(dst []byte, i int) []byte {
		dst = append(dst, '[')
		dst = jsontext.AppendString(dst, streams[i].Acked)
		dst = append(dst, ',')
		dst = jsontext.AppendString(dst, streams[i].Notified)
		if f := linkFlags(&streams[i]); f != "" {
			dst = append(dst, ',')
			dst = jsontext.AppendString(dst, f)
		}
		return append(dst, ']')
	})
	return string(p), string(c)
}

// DecodeMemberships is the inverse of EncodeMemberships.
func DecodeMemberships(paths, cursors string) ([]store.ConsumerStream, error) {
	var p []string
	var c []cursorJSON
	if err := errors.Join(json.Unmarshal([]byte(paths), &p), json.Unmarshal([]byte(cursors), &c)); err != nil {
		return nil, fmt.Errorf("decode memberships: %w", err)
	}
	if len(p) != len(c) {
		return nil, fmt.Errorf("decode memberships: %d paths but %d cursors", len(p), len(c))
	}
	if len(p) == 0 {
		return nil, nil
	}
	out := make([]store.ConsumerStream, len(p))
	for i := range p {
		if n := len(c[i]); n < 2 || n > 3 {
			return nil, fmt.Errorf("decode memberships: a cursor of %d elements", n)
		}
		out[i] = store.ConsumerStream{Path: p[i], Acked: c[i][0], Notified: c[i][1]}
		if len(c[i]) == 3 {
			out[i].Glob = strings.Contains(c[i][2], "g")
			out[i].Explicit = strings.Contains(c[i][2], "e")
		}
	}
	return out, nil
}

// ConsumerColumns are the columns ScanConsumer reads, of consumers c.
const ConsumerColumns = `c.id, c.subscription_id, c.incarnation, c.primary_stream, c.state, c.epoch, c.wake_id, c.attempts,
	c.waking_deadline, c.next_retry_at, c.liveness_deadline, c.failing_since, c.due_at, c.version, c.paths, c.cursors,
	c.stalled_wakes, c.stalled_since, c.kind, c.tenant, c.config, c.config_hash, c.pattern, c.created_at, c.holder, c.wake_written`

// ScanConsumer scans a consumer row with its memberships.
func ScanConsumer(row Row) (store.Consumer, error) {
	var c store.Consumer
	var waking, retry, live, failing, due, stalled, created int64
	var written int
	var paths, cursors string
	if err := row.Scan(&c.ID, &c.SubscriptionID, &c.Incarnation, &c.PrimaryStream, &c.State, &c.Epoch, &c.WakeID, &c.Attempts,
		&waking, &retry, &live, &failing, &due, &c.Version, &paths, &cursors, &c.StalledWakes, &stalled,
		&c.Kind, &c.Tenant, &c.Config, &c.ConfigHash, &c.Pattern, &created, &c.Holder, &written); err != nil {
		return c, err
	}
	c.WakingDeadline, c.NextRetryAt, c.LivenessDeadline = FromNanos(waking), FromNanos(retry), FromNanos(live)
	c.FailingSince, c.DueAt, c.StalledSince = FromNanos(failing), FromNanos(due), FromNanos(stalled)
	c.CreatedAt, c.WakeWritten = FromNanos(created), written != 0
	var err error
	c.Streams, err = DecodeMemberships(paths, cursors)
	return c, err
}

// ConsumerValues are the values of a consumer's columns that change, in
// the order of an insert or update: state, epoch, wake_id, attempts,
// waking_deadline, next_retry_at, liveness_deadline, failing_since,
// due_at, paths, cursors, stalled_wakes, stalled_since, holder,
// wake_written.
func ConsumerValues(c *store.Consumer) []any { return AppendConsumerValues(make([]any, 0, 15), c) }

// AppendConsumerValues appends ConsumerValues(c) to dst.
func AppendConsumerValues(dst []any, c *store.Consumer) []any {
	paths, cursors := EncodeMemberships(c.Streams)
	written := 0
	if c.WakeWritten {
		written = 1
	}
	return append(dst, c.State, c.Epoch, c.WakeID, c.Attempts, Nanos(c.WakingDeadline), Nanos(c.NextRetryAt),
		Nanos(c.LivenessDeadline), Nanos(c.FailingSince), Nanos(c.DueAt), paths, cursors, c.StalledWakes, Nanos(c.StalledSince),
		c.Holder, written)
}

// DeliveryColumns are the columns ScanDelivery reads (body last, when
// asked for, is added by the caller).
const DeliveryColumns = `seq, endpoint_id, event_id, event_type, stream, position, status, attempts, round_attempts,
	next_attempt_at, last_status_code, last_error, created_at, updated_at, finished_at, trace_parent, batch_id, event_tenant`

// ScanDelivery scans a delivery row of DeliveryColumns, followed by the
// extra destinations (the body, lease columns) the query selects, and
// names it with ids.
func ScanDelivery(ids *DeliveryIDs, row Row, extra ...any) (store.Delivery, error) {
	var d store.Delivery
	var next, created, updated, finished int64
	dst := append([]any{&d.Seq, &d.EndpointID, &d.EventID, &d.EventType, &d.Stream, &d.Position, &d.Status, &d.Attempts,
		&d.RoundAttempts, &next, &d.LastStatusCode, &d.LastError, &created, &updated, &finished, &d.TraceParent, &d.BatchID,
		&d.EventTenant}, extra...)
	if err := row.Scan(dst...); err != nil {
		return d, err
	}
	d.ID = ids.ID(d.Seq)
	d.NextAttemptAt = FromNanos(next)
	d.CreatedAt, d.UpdatedAt, d.FinishedAt = FromNanos(created), FromNanos(updated), FromNanos(finished)
	return d, nil
}

// EndpointColumns are the columns ScanEndpoint reads.
const EndpointColumns = `id, url, event_types, streams, filter, description, tenant, active, rate_limit, max_in_flight,
	ordering, retry_schedule, headers, secret, previous_secret, previous_secret_until,
	consecutive_failures, last_success_at, last_failure_at, last_error, disabled_at, disabled_reason,
	created_at, updated_at, version, health_version,
	name, profile, failure_policy, timeout_ms, verify, verified_at, verification_hash, verification_sent_at, verification_error,
	batch_max_events, batch_max_wait_ms, type, destination`

// EndpointStatusSQL is an SQL expression, over an endpoints row, of its
// status as Endpoint.Status gives it: disabled, pending, active or paused.
const EndpointStatusSQL = `CASE WHEN disabled_at > 0 THEN 'disabled' WHEN verify AND verified_at = 0 THEN 'pending'
	WHEN active THEN 'active' ELSE 'paused' END`

// EndpointRow holds the encoded list-valued columns of an endpoint, and
// its secret columns as stored (sealed by the backend).
type EndpointRow struct {
	Types, Streams, Schedule, Headers string
	Secret, PreviousSecret            string
	// Destination is the broker config's JSON, sealed whole.
	Destination string
}

// EncodeEndpoint encodes the list-valued columns of an endpoint; the
// secret columns are left for the backend to seal.
func EncodeEndpoint(ep *store.Endpoint) (EndpointRow, error) {
	var r EndpointRow
	var err error
	enc := func(v any) string {
		if err != nil {
			return ""
		}
		var b []byte
		b, err = json.Marshal(v)
		return string(b)
	}
	sched := make([]int64, len(ep.RetrySchedule))
	for i, d := range ep.RetrySchedule {
		sched[i] = int64(d)
	}
	headers := ep.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	r.Types, r.Streams, r.Schedule, r.Headers = enc(ep.EventTypes), enc(ep.Streams), enc(sched), enc(headers)
	if err != nil {
		return r, fmt.Errorf("encode endpoint: %w", err)
	}
	return r, nil
}

// ScanEndpoint scans an endpoint row. The secret columns come back as
// stored: in ep.Secret and ep.PreviousSecret, and the headers' JSON in
// the row, for the backend to open before DecodeEndpoint.
func ScanEndpoint(row Row) (store.Endpoint, EndpointRow, error) {
	var ep store.Endpoint
	var r EndpointRow
	var prevUntil, lastOK, lastFail, disabled, created, updated, timeoutMS, verified, sent, batchWait int64
	v := &ep.Verification
	err := row.Scan(&ep.ID, &ep.URL, &r.Types, &r.Streams, &ep.Filter, &ep.Description, &ep.Tenant, &ep.Active,
		&ep.RateLimit, &ep.MaxInFlight, &ep.Ordering, &r.Schedule, &r.Headers, &ep.Secret, &ep.PreviousSecret, &prevUntil,
		&ep.Health.ConsecutiveFailures, &lastOK, &lastFail, &ep.Health.LastError, &disabled, &ep.Health.DisabledReason,
		&created, &updated, &ep.Version, &ep.HealthVersion,
		&ep.Name, &ep.Profile, &ep.FailurePolicy, &timeoutMS, &v.Required, &verified, &v.CodeHash, &sent, &v.Error,
		&ep.BatchMaxEvents, &batchWait, &ep.Type, &r.Destination)
	if err != nil {
		return ep, r, err
	}
	ep.Timeout = time.Duration(timeoutMS) * time.Millisecond
	ep.BatchMaxWait = time.Duration(batchWait) * time.Millisecond
	v.VerifiedAt = FromNanos(verified)
	v.SentAt = FromNanos(sent)
	ep.PreviousSecretUntil = FromNanos(prevUntil)
	ep.Health.LastSuccessAt = FromNanos(lastOK)
	ep.Health.LastFailureAt = FromNanos(lastFail)
	ep.Health.DisabledAt = FromNanos(disabled)
	ep.CreatedAt = FromNanos(created)
	ep.UpdatedAt = FromNanos(updated)
	return ep, r, nil
}

// DecodeEndpoint decodes the list-valued columns of a scanned endpoint
// (its headers opened).
func DecodeEndpoint(ep *store.Endpoint, r *EndpointRow) error {
	var sched []int64
	for _, f := range []struct {
		raw string
		dst any
	}{{r.Types, &ep.EventTypes}, {r.Streams, &ep.Streams}, {r.Schedule, &sched}, {r.Headers, &ep.Headers}} {
		if err := json.Unmarshal([]byte(f.raw), f.dst); err != nil {
			return fmt.Errorf("decode endpoint %s: %w", ep.ID, err)
		}
	}
	if len(ep.Headers) == 0 {
		ep.Headers = nil
	}
	for _, n := range sched {
		ep.RetrySchedule = append(ep.RetrySchedule, time.Duration(n))
	}
	return nil
}

// EventTypeColumns are the columns ScanEventType reads.
const EventTypeColumns = `name, description, schema, deprecated, created_at, updated_at, version`

// ScanEventType scans an event type row.
func ScanEventType(row Row) (store.EventType, error) {
	var et store.EventType
	var created, updated int64
	if err := row.Scan(&et.Name, &et.Description, &et.Schema, &et.Deprecated, &created, &updated, &et.Version); err != nil {
		return et, err
	}
	if len(et.Schema) == 0 {
		et.Schema = nil
	}
	et.CreatedAt, et.UpdatedAt = FromNanos(created), FromNanos(updated)
	return et, nil
}

// KeyColumns are the columns ScanKey reads.
const KeyColumns = `id, hash, scopes, tenant, paths, description, expires_at, created_at`

// ScanKey scans an API key row.
func ScanKey(row Row) (store.Key, error) {
	var k store.Key
	var scopes, paths string
	var expires, created int64
	if err := row.Scan(&k.ID, &k.Hash, &scopes, &k.Tenant, &paths, &k.Description, &expires, &created); err != nil {
		return k, err
	}
	if err := json.Unmarshal([]byte(scopes), &k.Scopes); err != nil {
		return k, fmt.Errorf("decode key %s scopes: %w", k.ID, err)
	}
	if err := json.Unmarshal([]byte(paths), &k.Paths); err != nil {
		return k, fmt.Errorf("decode key %s paths: %w", k.ID, err)
	}
	if len(k.Paths) == 0 {
		k.Paths = nil
	}
	k.ExpiresAt, k.CreatedAt = FromNanos(expires), FromNanos(created)
	return k, nil
}

// KeyValues returns the values of KeyColumns for a new key, in order.
func KeyValues(k *store.Key) ([]any, error) {
	scopes, err := json.Marshal(nonNil(k.Scopes))
	if err != nil {
		return nil, fmt.Errorf("encode key scopes: %w", err)
	}
	paths, err := json.Marshal(nonNil(k.Paths))
	if err != nil {
		return nil, fmt.Errorf("encode key paths: %w", err)
	}
	return []any{k.ID, k.Hash, string(scopes), k.Tenant, string(paths), k.Description, Nanos(k.ExpiresAt), Nanos(k.CreatedAt)}, nil
}

func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// SecretFunc seals or opens one secret of a table's row and column.
type SecretFunc func(value, table, row, column string) (string, error)

// SealEndpoint encodes an endpoint's list-valued columns and seals its
// secret columns (the headers' JSON among them) with seal.
func SealEndpoint(ep *store.Endpoint, seal SecretFunc) (EndpointRow, error) {
	r, err := EncodeEndpoint(ep)
	if err != nil {
		return r, err
	}
	if r.Headers, err = seal(r.Headers, "endpoints", ep.ID, "headers"); err != nil {
		return r, err
	}
	if r.Secret, err = seal(ep.Secret, "endpoints", ep.ID, "secret"); err != nil {
		return r, err
	}
	if r.PreviousSecret, err = seal(ep.PreviousSecret, "endpoints", ep.ID, "previous_secret"); err != nil {
		return r, err
	}
	r.Destination, err = seal(string(ep.Destination), "endpoints", ep.ID, "destination")
	return r, err
}

// OpenEndpoint scans an endpoint row, opens its secret columns with open
// and decodes it.
func OpenEndpoint(row Row, open SecretFunc) (store.Endpoint, error) {
	ep, r, err := ScanEndpoint(row)
	if err != nil {
		return ep, err
	}
	if ep.Secret, err = open(ep.Secret, "endpoints", ep.ID, "secret"); err != nil {
		return ep, err
	}
	if ep.PreviousSecret, err = open(ep.PreviousSecret, "endpoints", ep.ID, "previous_secret"); err != nil {
		return ep, err
	}
	if r.Headers, err = open(r.Headers, "endpoints", ep.ID, "headers"); err != nil {
		return ep, err
	}
	if r.Destination != "" {
		d, err := open(r.Destination, "endpoints", ep.ID, "destination")
		if err != nil {
			return ep, err
		}
		if d != "" {
			ep.Destination = []byte(d)
		}
	}
	return ep, DecodeEndpoint(&ep, &r)
}

// ReplayJobColumns are the columns ScanReplayJob reads.
const ReplayJobColumns = `id, endpoint_id, tenant, request, state, queued, total, truncated, error, progress, owner,
	lease_until, created_at, updated_at, finished_at`

// ScanReplayJob scans a replay job row.
func ScanReplayJob(row Row) (store.ReplayJob, error) {
	var j store.ReplayJob
	var lease, created, updated, finished int64
	if err := row.Scan(&j.ID, &j.EndpointID, &j.Tenant, &j.Request, &j.State, &j.Queued, &j.Total, &j.Truncated, &j.Error,
		&j.Progress, &j.Owner, &lease, &created, &updated, &finished); err != nil {
		return j, err
	}
	j.LeaseUntil, j.CreatedAt, j.UpdatedAt, j.FinishedAt = FromNanos(lease), FromNanos(created), FromNanos(updated), FromNanos(finished)
	return j, nil
}

// ReplayStepSQL is the update of a running job by its owner, its
// numbered placeholders (ReplayStepArgs in order) written with mark: "$"
// for Postgres, "?" for SQLite.
func ReplayStepSQL(mark string) string { return strings.ReplaceAll(replayStepSQL, "#", mark) }

const replayStepSQL = `UPDATE replay_jobs SET total = total + #1, queued = queued + #2,
	progress = CASE WHEN #11 THEN progress ELSE #3 END, lease_until = #4,
	state = #5, truncated = #6, error = #7, updated_at = CAST(#8 AS BIGINT),
	finished_at = CASE WHEN #5 = 'running' THEN 0 ELSE CAST(#8 AS BIGINT) END
	WHERE id = #9 AND owner = #10 AND state = 'running'`

// ReplayStepArgs are the arguments of ReplayStepSQL; queued is what the
// caller queued in the same transaction.
func ReplayStepArgs(s *store.ReplayJobStep, queued int, now time.Time) []any {
	return []any{s.AddTotal, s.AddQueued + queued, nonNilBytes(s.Progress), Nanos(s.LeaseUntil), s.State, s.Truncated, s.Error, Nanos(now), s.ID, s.Owner,
		len(s.Progress) == 0}
}

// ReplayJobInsertArgs are the values of a new job's columns id,
// endpoint_id, tenant, request, progress, owner, lease_until and
// created_at (also its updated_at).
func ReplayJobInsertArgs(j *store.ReplayJob) []any {
	return []any{j.ID, j.EndpointID, j.Tenant, nonNilBytes(j.Request), nonNilBytes(j.Progress), j.Owner, Nanos(j.LeaseUntil), Nanos(j.CreatedAt)}
}

// nonNilBytes is b, or an empty slice for a NOT NULL column.
func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// The statements on recorded event ids and stalled consumers, written once
// in PostgreSQL's placeholders; the SQLite backend takes them through
// Numbered.
const (
	// EventIDGet reads where an event id of a tenant was recorded:
	// (tenant, event_id) → stream, position.
	EventIDGet = `SELECT stream, position FROM published_events WHERE tenant = $1 AND event_id = $2`
	// EventIDInsert records an event id of a tenant:
	// (tenant, event_id, stream, position, created_at).
	EventIDInsert = `INSERT INTO published_events (tenant, event_id, stream, position, created_at, event_type) VALUES ($1, $2, $3, $4, $5, $6)`
	// EventIDInsertNew is EventIDInsert that leaves an id already
	// recorded in that tenant as it is.
	EventIDInsertNew = EventIDInsert + ` ON CONFLICT (tenant, event_id) DO NOTHING`
	// ConsumerCountStalled counts the consumers woken at least $1 times
	// without progress.
	ConsumerCountStalled = `SELECT count(*) FROM consumers WHERE stalled_wakes >= $1`
)
