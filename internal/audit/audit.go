// Package audit lets the handler of an audited request add what it did to
// the request's audit record: the id, scopes and tenant of a key it made,
// the subscription it deleted. The server that audits the request
// (httpapi) opens the record before the handler runs and logs it after;
// handlers of requests that are not audited add to nothing.
package audit

import (
	"context"
	"log/slog"
	"sync"
)

// Record collects the attributes handlers add to one request's audit
// record. It is safe for concurrent use.
type Record struct {
	mu    sync.Mutex
	attrs []slog.Attr
}

type recordKey struct{}

// NewContext returns ctx carrying a new, empty record.
func NewContext(ctx context.Context) (context.Context, *Record) {
	rec := &Record{}
	return context.WithValue(ctx, recordKey{}, rec), rec
}

// Add adds attrs to the audit record of the request ctx belongs to; it
// does nothing when the request is not audited. Never add a secret.
func Add(ctx context.Context, attrs ...slog.Attr) {
	rec, ok := ctx.Value(recordKey{}).(*Record)
	if !ok {
		return
	}
	rec.mu.Lock()
	rec.attrs = append(rec.attrs, attrs...)
	rec.mu.Unlock()
}

// Attrs returns what was added so far.
func (r *Record) Attrs() []slog.Attr {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]slog.Attr(nil), r.attrs...)
}
