package sqlstore

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/claimrules"
)

// ClaimTx is the transaction a backend claims in (see Executor).
type ClaimTx = Executor

// Numbered rewrites the $N placeholders of a statement for SQLite: to
// plain ? when they come in order, each once ($1, $2, ...), else to ?N.
// (SQLite binds a numbered parameter by name, a string made at every
// execution; a plain one by position.) The shared statements hold no
// other '$'.
func Numbered(sql string) string {
	next, plain := 1, true
	for i := 0; i < len(sql); i++ {
		if sql[i] != '$' {
			continue
		}
		j := i + 1
		for j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
			j++
		}
		if n, err := strconv.Atoi(sql[i+1 : j]); err != nil || n != next {
			plain = false
			break
		}
		next++
	}
	if !plain {
		return strings.ReplaceAll(sql, "$", "?")
	}
	var b strings.Builder
	b.Grow(len(sql))
	for i := 0; i < len(sql); i++ {
		if sql[i] != '$' {
			b.WriteByte(sql[i])
			continue
		}
		b.WriteByte('?')
		for i+1 < len(sql) && sql[i+1] >= '0' && sql[i+1] <= '9' {
			i++
		}
	}
	return b.String()
}

// Claims is how a backend takes leases in its rows: its lock clause for
// the rows a claim selects ("FOR UPDATE OF d SKIP LOCKED" where the
// database has row locks, "" where one writer runs at a time), the owner
// it writes in lease_owner, and the source of lease tokens.
type Claims struct {
	IDs   *DeliveryIDs
	Owner string
	Lock  string
	// Token returns a lease token never returned before in the database.
	Token func(tx ClaimTx) (int64, error)
}

// LeaseColumns are a delivery's lease: until when, its token, and the
// replica that holds it (ScanLease reads them).
const LeaseColumns = `lease_until, lease_token, lease_owner`

// DeliveryLeaseColumns are DeliveryColumns followed by the body and the
// lease (ScanLeased reads them).
const DeliveryLeaseColumns = DeliveryColumns + `, body, ` + LeaseColumns

// ScanLeased scans a row of DeliveryLeaseColumns.
func (c *Claims) ScanLeased(row Row) (store.Delivery, error) {
	var body []byte
	d, err := ScanLease(c.IDs, row, &body)
	d.Body = body
	return d, err
}

// ScanLease scans a row of DeliveryColumns, the extra destinations given,
// then LeaseColumns.
func ScanLease(ids *DeliveryIDs, row Row, extra ...any) (store.Delivery, error) {
	var until, token int64
	var owner string
	d, err := ScanDelivery(ids, row, append(extra, &until, &token, &owner)...)
	d.LeaseUntil, d.LeaseToken, d.LeaseOwner = FromNanos(until), token, owner
	return d, err
}

// LeasedSQL selects the deliveries that hold a lease (running or not):
// the rows of the index of leases, deliveries_lease, which holds no other
// (a delivery waiting for a claim is in no index of leases, and writes
// none). Every statement that reads leases has these terms, so that the
// database reads that index.
const LeasedSQL = `lease_until > 0 AND status IN ('pending', 'failed')`

// RunningSQL counts an endpoint's running leases ($2 is now): its
// deliveries in flight, whichever handle sent them.
const RunningSQL = `SELECT count(*) FROM deliveries WHERE endpoint_id = $1 AND ` + LeasedSQL + ` AND lease_until > $2`

// claimSQL leases, in the rows, an endpoint's due deliveries that no
// running lease holds, earliest first: at most $6, and at most $7 (when
// above 0) less the endpoint's running leases, counted in the same
// statement. $3 is the lease's end, $4 its token, $5 the owner.
const claimSQL = `UPDATE deliveries SET lease_until = $3, lease_token = $4, lease_owner = $5
	WHERE seq IN (
		SELECT d.seq FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
		WHERE d.endpoint_id = $1 AND d.status IN ('pending', 'failed') AND d.next_attempt_at <= $2 AND d.lease_until <= $2
			AND e.active AND e.disabled_at = 0 AND (NOT e.verify OR e.verified_at > 0)
			AND (e.ordering <> 'stream' OR NOT EXISTS (
				SELECT 1 FROM deliveries p WHERE p.endpoint_id = d.endpoint_id AND p.stream = d.stream
					AND p.status IN ('pending', 'failed') AND p.position < d.position))
		ORDER BY d.next_attempt_at, d.seq
		LIMIT (SELECT CASE WHEN CAST($7 AS BIGINT) <= 0 THEN CAST($6 AS BIGINT)
				WHEN CAST($7 AS BIGINT) - count(*) <= 0 THEN 0
				WHEN CAST($6 AS BIGINT) < CAST($7 AS BIGINT) - count(*) THEN CAST($6 AS BIGINT)
				ELSE CAST($7 AS BIGINT) - count(*) END
			FROM deliveries WHERE endpoint_id = $1 AND ` + LeasedSQL + ` AND lease_until > $2)
		%LOCK%)
	RETURNING ` + DeliveryLeaseColumns

// NextDueSQL is the earliest time after now ($2) at which an unfinished
// delivery of an endpoint falls due or its lease ends.
//
// It is the earlier of two minimums, each read from its own index (the
// running leases' ends, and the future due times), so its cost does not
// grow with the endpoint's backlog; a leased delivery due later than its
// lease ends can only make the runner look once more, early.
const NextDueSQL = `SELECT min(t) FROM (
		SELECT min(lease_until) AS t FROM deliveries
			WHERE endpoint_id = $1 AND ` + LeasedSQL + ` AND lease_until > $2
		UNION ALL
		SELECT min(next_attempt_at) AS t FROM deliveries
			WHERE endpoint_id = $1 AND status IN ('pending', 'failed') AND next_attempt_at > $2
	) AS due`

// holdSQL counts an endpoint's due deliveries that no running lease
// holds ($2 is now), the earliest due time among them, and whether one
// of them was sent in a batch before.
const holdSQL = `SELECT count(*), coalesce(min(next_attempt_at), 0), coalesce(max(CASE WHEN batch_id <> '' THEN 1 ELSE 0 END), 0)
	FROM deliveries WHERE endpoint_id = $1 AND status IN ('pending', 'failed') AND next_attempt_at <= $2 AND lease_until <= $2`

// holdUntil returns when a claim held to let a batch fill may go (zero:
// it need not wait), as store.DeliveryClaimParams.Hold says.
func holdUntil(tx ClaimTx, params *store.DeliveryClaimParams, now int64) (int64, error) {
	if params.Hold <= 0 || params.Batch < 2 {
		return 0, nil
	}
	var due, earliest, batched int64
	if err := tx.QueryRow(holdSQL, params.EndpointID, now).Scan(&due, &earliest, &batched); err != nil {
		return 0, err
	}
	return claimrules.HoldUntil(params.Hold, params.Batch, due, earliest, batched > 0, now), nil
}

// bucketSQL takes (and, inserting a full one when absent, makes) an
// endpoint's rate bucket: the no-op update locks the row where rows
// lock, so the claims and leased inserts of one endpoint run one at a
// time across handles, and each counts the leases the one before took.
const bucketSQL = `INSERT INTO endpoint_buckets (endpoint_id, tokens, refilled_at) VALUES ($1, $2, $3)
	ON CONFLICT (endpoint_id) DO UPDATE SET endpoint_id = excluded.endpoint_id RETURNING tokens, refilled_at`

const bucketWriteSQL = `UPDATE endpoint_buckets SET tokens = $2, refilled_at = $3 WHERE endpoint_id = $1`

// takeBucket locks an endpoint's bucket and returns it refilled at now.
func takeBucket(tx ClaimTx, endpoint string, rate float64, now int64) (claimrules.Bucket, error) {
	var b claimrules.Bucket
	if err := tx.QueryRow(bucketSQL, endpoint, claimrules.Burst(rate), now).Scan(&b.Tokens, &b.At); err != nil {
		return b, err
	}
	return b.Refill(rate, now), nil
}

// Claim leases up to params.Limit due deliveries of an endpoint within
// its limits (store.DeliveryClaimParams): the endpoint's bucket row is
// locked first, then one statement claims and counts the running leases,
// and the bucket is written back, all in tx.
func (c *Claims) Claim(tx ClaimTx, params *store.DeliveryClaimParams) (*store.DeliveryClaimResult, error) {
	now := Nanos(params.Now)
	res := &store.DeliveryClaimResult{}
	b, err := takeBucket(tx, params.EndpointID, params.Rate, now)
	if err != nil {
		return nil, err
	}
	hold, err := holdUntil(tx, params, now)
	if err != nil {
		return nil, err
	}
	limits := claimrules.Limits(params.DeliveryLimits)
	n := limits.ClaimCount(params.Limit, b, hold > 0)
	if n > 0 {
		token, err := c.Token(tx)
		if err != nil {
			return nil, err
		}
		until := Nanos(params.Now.Add(params.Lease))
		sql := WithLock(claimSQL, c.Lock)
		err = tx.Query(sql, []any{params.EndpointID, now, until, token, c.Owner, n, limits.LeaseBound()}, func(r Row) error {
			d, err := c.ScanLeased(r)
			res.Deliveries = append(res.Deliveries, d)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	got := len(res.Deliveries)
	if params.Rate > 0 {
		b = b.Take(limits, got)
		if _, err := tx.Exec(bucketWriteSQL, params.EndpointID, b.Tokens, b.At); err != nil {
			return nil, err
		}
		if n < params.Limit && got == n && hold == 0 {
			res.RetryAt = params.Now.Add(b.Wait(params.Rate))
		}
	}
	if err := tx.QueryRow(RunningSQL, params.EndpointID, now).Scan(&res.InFlight); err != nil {
		return nil, err
	}
	res.InFlight = limits.InFlight(res.InFlight)
	var next *int64
	if err := tx.QueryRow(NextDueSQL, params.EndpointID, now).Scan(&next); err != nil {
		return nil, err
	}
	if hold > 0 && (next == nil || hold < *next) {
		next = &hold
	}
	if next != nil {
		res.NextDueAt = FromNanos(*next)
	}
	slices.SortFunc(res.Deliveries, func(a, b store.Delivery) int { return cmp.Compare(a.Seq, b.Seq) })
	return res, nil
}

// Grant decides how many of want fresh deliveries of an endpoint may be
// inserted leased within its limits, and takes their rate tokens: the
// same rule as Claim, for the deliveries a sender takes without a claim.
func (c *Claims) Grant(tx ClaimTx, endpoint string, limits store.DeliveryLimits, want int, now int64) (int, error) {
	l := claimrules.Limits(limits)
	b, err := takeBucket(tx, endpoint, l.Rate, now)
	if err != nil {
		return 0, err
	}
	var running int
	if l.MaxInFlight > 0 {
		if err := tx.QueryRow(RunningSQL, endpoint, now).Scan(&running); err != nil {
			return 0, err
		}
	}
	n := l.GrantCount(want, running, b)
	if l.Rate > 0 {
		b = b.Take(l, n)
		if _, err := tx.Exec(bucketWriteSQL, endpoint, b.Tokens, b.At); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// CompleteSQL records one attempt's outcome while its lease token ($9)
// is the delivery's current one, and ends the lease.
const CompleteSQL = `UPDATE deliveries SET status = $1, attempts = attempts + 1, round_attempts = round_attempts + 1,
	next_attempt_at = $2, last_status_code = $3, last_error = $4, updated_at = $5, finished_at = $6,
	lease_until = 0, lease_token = 0, lease_owner = '', batch_id = $10
	WHERE seq = $7 AND endpoint_id = $8 AND status IN ('pending', 'failed') AND lease_token = $9 AND lease_token <> 0`

// AttemptSQL inserts one attempt of a delivery.
const AttemptSQL = `INSERT INTO delivery_attempts (delivery_seq, at, status_code, response_body, latency_ns, error, batch_id)
	VALUES ($1, $2, $3, $4, $5, $6, $7)`

// CompleteArgs are the arguments of CompleteSQL and, after them, of
// AttemptSQL for one result.
func CompleteArgs(dr *store.DeliveryResult, seq int64, endpoint string, now int64) (complete, attempt []any) {
	finished := int64(0)
	if dr.Status == store.DeliveryDelivered || dr.Status == store.DeliveryExhausted {
		finished = now
	}
	a := dr.Attempt
	body := a.ResponseBody
	if body == nil {
		body = []byte{}
	}
	return []any{dr.Status, Nanos(dr.NextAttemptAt), a.StatusCode, a.Error, now, finished, seq, endpoint, dr.LeaseToken, a.BatchID},
		[]any{seq, Nanos(a.At), a.StatusCode, body, int64(a.Latency), a.Error, a.BatchID}
}

// ConsumerClaimSQL leases due consumer timers, of both kinds ($1 now,
// $2 the lease's end, $3 the owner, at most $4), earliest first; %LOCK%
// as in claimSQL. (SQLite's RETURNING takes no table names: the columns
// go bare.)
var ConsumerClaimSQL = `UPDATE consumers SET timer_until = $2, timer_owner = $3
	WHERE id IN (SELECT id FROM consumers WHERE due_at > 0 AND due_at <= $1 AND timer_until <= $1
		ORDER BY due_at, id LIMIT $4 %LOCK%)
	RETURNING ` + strings.ReplaceAll(ConsumerColumns, "c.", "")

// ConsumerNextDueSQL is the earliest timer after now ($1).
const ConsumerNextDueSQL = `SELECT min(due_at) FROM consumers WHERE due_at > $1`

// LeaseSQL takes or renews a named lease ($1) for an owner ($2) until $3
// when it is free at now ($4), and returns the holder.
const LeaseSQL = `INSERT INTO leases (name, owner, until) VALUES ($1, $2, $3)
	ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until
		WHERE leases.until <= $4 OR leases.owner = excluded.owner
	RETURNING owner`

// WithLock puts a backend's lock clause in a claim statement.
func WithLock(sql, lock string) string { return strings.Replace(sql, "%LOCK%", lock, 1) }

// sortDue orders claimed consumers by DueAt, then ID (RETURNING keeps no
// order).
func sortDue(cs []store.Consumer) {
	slices.SortFunc(cs, func(a, b store.Consumer) int {
		return cmp.Or(a.DueAt.Compare(b.DueAt), cmp.Compare(a.ID, b.ID))
	})
}

// Grants decides, for every endpoint with deliveries given to
// DeliveryEnqueue with a LeaseUntil, how many may be inserted leased
// (Grant, endpoint by endpoint in ID order, so handles take the buckets
// in one order), and returns a lease token for them (0 when none).
func (c *Claims) Grants(tx ClaimTx, params *store.DeliveryEnqueueParams) (map[string]int, int64, error) {
	want := make(map[string]int)
	for i := range params.Deliveries {
		if !params.Deliveries[i].LeaseUntil.IsZero() {
			want[params.Deliveries[i].EndpointID]++
		}
	}
	if len(want) == 0 {
		return want, 0, nil
	}
	now := Nanos(params.Now)
	for _, ep := range slices.Sorted(maps.Keys(want)) {
		n, err := c.Grant(tx, ep, params.Limits[ep], want[ep], now)
		if err != nil {
			return nil, 0, err
		}
		want[ep] = n
	}
	token, err := c.Token(tx)
	return want, token, err
}

// ClaimConsumers claims due consumer timers for owner (see
// store.SubscriptionStore.ConsumerClaimDue), lock ending the selection.
func ClaimConsumers(tx ClaimTx, params *store.ConsumerClaimDueParams, owner, lock string) (*store.ConsumerClaimDueResult, error) {
	limit := params.Limit
	if limit <= 0 {
		limit = 1000
	}
	now := Nanos(params.Now)
	res := &store.ConsumerClaimDueResult{}
	err := tx.Query(WithLock(ConsumerClaimSQL, lock), []any{now, Nanos(params.Now.Add(params.Lease)), owner, limit}, func(r Row) error {
		c, err := ScanConsumer(r)
		res.Consumers = append(res.Consumers, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	var next *int64
	if err := tx.QueryRow(ConsumerNextDueSQL, now).Scan(&next); err != nil {
		return nil, err
	}
	if next != nil {
		res.NextDueAt = FromNanos(*next)
	}
	sortDue(res.Consumers)
	return res, nil
}

// AcquireLease takes or renews a named lease for owner (see
// store.LeaseStore) and reports whether owner holds it.
func AcquireLease(tx ClaimTx, params *store.LeaseAcquireParams, owner string, noRows func(error) bool) (bool, error) {
	var holder string
	err := tx.QueryRow(LeaseSQL, params.Name, owner, Nanos(params.Now.Add(params.TTL)), Nanos(params.Now)).Scan(&holder)
	switch {
	case noRows(err):
		return false, nil // another holder's lease runs
	case err != nil:
		return false, err
	}
	return holder == owner, nil
}
