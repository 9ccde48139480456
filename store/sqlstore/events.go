package sqlstore

import (
	"context"
	"encoding/json"

	"github.com/heraldstreams/herald/store"
)

// eventColumns are the columns of published_events an EventRecord reads.
const eventColumns = `tenant, event_id, event_type, stream, position, created_at`

func scanEvent(r Row) (store.EventRecord, error) {
	var e store.EventRecord
	var at int64
	err := r.Scan(&e.Tenant, &e.ID, &e.Type, &e.Stream, &e.Position, &at)
	e.CreatedAt = FromNanos(at)
	return e, err
}

// eventPage is the statement of one page of the event log: the indexed
// filters (tenant, type, stream, time) and the place after which it
// starts, newest first. Each filter has an index that leads with it and
// goes on with (created_at, tenant, event_id), so the page is read in
// order from an index range; the place is compared on the columns that
// follow the fixed ones, so the range starts right there.
func eventPage(p *store.EventListParams, before *store.EventCursor, limit int) *query {
	q := &query{sql: `SELECT ` + eventColumns + ` FROM published_events WHERE 1 = 1`}
	if p.ByTenant {
		q.add(` AND tenant = `, p.Tenant)
	}
	if p.Type != "" {
		q.add(` AND event_type = `, p.Type)
	}
	if p.Stream != "" {
		q.add(` AND stream = `, p.Stream)
	}
	if !p.Since.IsZero() {
		q.add(` AND created_at >= `, Nanos(p.Since))
	}
	if !p.Until.IsZero() {
		q.add(` AND created_at < `, Nanos(p.Until))
	}
	if before != nil {
		if p.ByTenant {
			q.add(` AND (created_at, event_id) < (`, Nanos(before.CreatedAt))
			q.add(`, `, before.ID)
		} else {
			q.add(` AND (created_at, tenant, event_id) < (`, Nanos(before.CreatedAt))
			q.add(`, `, before.Tenant)
			q.add(`, `, before.ID)
		}
		q.sql += `)`
	}
	q.sql += ` ORDER BY created_at DESC, tenant DESC, event_id DESC`
	q.add(` LIMIT `, limit)
	return q
}

// EventList implements store.EventLogStore. The outcome is not indexed
// (it changes with every attempt): pages are read in order and filtered
// by it, at most params.Scan events per call.
func (s *Store) EventList(ctx context.Context, params *store.EventListParams) (*store.EventListResult, error) {
	res := &store.EventListResult{Events: []store.EventRecord{}}
	scan := max(params.Scan, params.Limit)
	before := params.Before
	err := s.b.Read(ctx, func(x Executor) error {
		for read := 0; read < scan; {
			batch := min(scan-read, max(params.Limit, 100))
			if params.Outcome == "" {
				batch = params.Limit + 1 - len(res.Events)
			}
			evs, err := collect(x, eventPage(params, before, batch), scanEvent)
			if err != nil {
				return err
			}
			if err := s.eventCounts(x, evs); err != nil {
				return err
			}
			read += len(evs)
			for i := range evs {
				if params.Outcome != "" && evs[i].Outcome() != params.Outcome {
					continue
				}
				if len(res.Events) == params.Limit {
					// One more than a page: the page ends at the last kept.
					last := res.Events[len(res.Events)-1]
					res.Next = &store.EventCursor{CreatedAt: last.CreatedAt, Tenant: last.Tenant, ID: last.ID}
					return nil
				}
				res.Events = append(res.Events, evs[i])
			}
			if len(evs) < batch {
				return nil // the end of the log
			}
			last := evs[len(evs)-1]
			before = &store.EventCursor{CreatedAt: last.CreatedAt, Tenant: last.Tenant, ID: last.ID}
		}
		// Scan events read without filling the page: the next starts after them.
		res.Next = before
		return nil
	})
	if err != nil {
		return nil, s.errorf("list events", err)
	}
	return res, nil
}

// eventCounts fills the delivery counts of evs, from the index of the
// deliveries by event.
func (s *Store) eventCounts(x Executor, evs []store.EventRecord) error {
	if len(evs) == 0 {
		return nil
	}
	pairs := make([][2]string, len(evs))
	at := make(map[store.EventKey]*store.EventRecord, len(evs))
	for i := range evs {
		pairs[i] = [2]string{evs[i].Tenant, evs[i].ID}
		evs[i].Deliveries = map[string]int{}
		at[evs[i].EventKey] = &evs[i]
	}
	pairsJSON, err := json.Marshal(pairs)
	if err != nil {
		return err
	}
	return x.Query(`SELECT d.event_tenant, d.event_id, d.status, count(*)
		FROM (`+s.d.TextPairs("$1")+`) AS k JOIN deliveries AS d ON d.event_tenant = k.a AND d.event_id = k.b
		GROUP BY d.event_tenant, d.event_id, d.status`, []any{string(pairsJSON)}, func(r Row) error {
		var key store.EventKey
		var status string
		var n int
		if err := r.Scan(&key.Tenant, &key.ID, &status, &n); err != nil {
			return err
		}
		if e := at[key]; e != nil {
			e.Deliveries[status] += n
		}
		return nil
	})
}

// EventGet implements store.EventLogStore.
func (s *Store) EventGet(ctx context.Context, key store.EventKey) (*store.EventRecord, error) {
	var out []store.EventRecord
	err := s.b.Read(ctx, func(x Executor) error {
		var err error
		out, err = collect(x, &query{sql: `SELECT ` + eventColumns + ` FROM published_events WHERE tenant = $1 AND event_id = $2`,
			args: []any{key.Tenant, key.ID}}, scanEvent)
		if err != nil {
			return err
		}
		return s.eventCounts(x, out)
	})
	if err != nil {
		return nil, s.errorf("read event", err)
	}
	if len(out) == 0 {
		return nil, store.ErrEventNotFound
	}
	return &out[0], nil
}

// EventDeliveries implements store.EventLogStore.
func (s *Store) EventDeliveries(ctx context.Context, key store.EventKey) ([]store.Delivery, error) {
	return list(ctx, s, &query{sql: `SELECT ` + DeliveryColumns + `, ` + LeaseColumns + ` FROM deliveries
		WHERE event_tenant = $1 AND event_id = $2 ORDER BY seq`, args: []any{key.Tenant, key.ID}}, "list an event's deliveries", s.scanListed)
}
