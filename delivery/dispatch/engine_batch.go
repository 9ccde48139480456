package dispatch

import (
	"bytes"
	"encoding/json"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/store"
)

// Batch delivery: an endpoint with a batch configuration receives up to
// batch.max_events due deliveries in one POST, whose body is
// {"batch_id": "bat_...", "events": [<each delivery's body>]} signed as
// one body under the batch id. A batch is sent, retried and recorded as
// a unit: one attempt per delivery, all with the batch's outcome.

// BatchEventType is the event type header of a batch's POST, for the
// profiles that send one.
const BatchEventType = "herald.batch"

// batchIDPrefix starts the id of every batch.
const batchIDPrefix = "bat_"

// batchSize is how many deliveries one POST of the endpoint carries: 1
// without batching.
func batchSize(le *liveEndpoint) int {
	if le.ep.BatchMaxEvents < delivery.MinBatchEvents {
		return 1
	}
	return le.ep.BatchMaxEvents
}

// sendGroup is the deliveries one POST carries; batchID is "" for a
// single delivery sent the usual way.
type sendGroup struct {
	ds      []store.Delivery
	batchID string
}

// batches groups claimed deliveries (in claim order) into at most slots
// POSTs of at most size deliveries. Deliveries sent in a batch before go
// together again under its id, so a retried batch keeps its id; the
// others fill new batches in order. When the groups would need more than
// slots POSTs (a batch claimed in parts), every delivery goes into new
// batches. Without batching, each delivery is its own group.
func (e *Engine) batches(ds []store.Delivery, size, slots int) ([]sendGroup, error) {
	if size <= 1 {
		out := make([]sendGroup, len(ds))
		for i, d := range ds {
			out[i] = sendGroup{ds: []store.Delivery{d}}
		}
		return out, nil
	}
	var out []sendGroup
	byID := make(map[string]int)
	var fresh []store.Delivery
	for _, d := range ds {
		i, ok := byID[d.BatchID]
		switch {
		case d.BatchID == "":
			fresh = append(fresh, d)
		case ok && len(out[i].ds) < size:
			out[i].ds = append(out[i].ds, d)
		default:
			byID[d.BatchID] = len(out)
			out = append(out, sendGroup{ds: []store.Delivery{d}, batchID: d.BatchID})
		}
	}
	if len(out)+(len(fresh)+size-1)/size > slots {
		out, fresh = nil, ds
	}
	for start := 0; start < len(fresh); start += size {
		id, err := e.newID(batchIDPrefix)
		if err != nil {
			return nil, err
		}
		out = append(out, sendGroup{ds: fresh[start:min(start+size, len(fresh))], batchID: id})
	}
	return out, nil
}

// batchBody is the body of a batch's POST: its id and each delivery's
// body (its event in the endpoint's profile), in order.
func batchBody(g sendGroup) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"batch_id":`)
	id, err := json.Marshal(g.batchID)
	if err != nil {
		return nil, err
	}
	buf.Write(id)
	buf.WriteString(`,"events":[`)
	for i, d := range g.ds {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(d.Body)
	}
	buf.WriteString("]}")
	return buf.Bytes(), nil
}
