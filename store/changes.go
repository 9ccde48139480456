package store

import "context"

// StreamChangeStore numbers the changes of the streams, so that a reader
// that recorded how far it had checked them reads only the streams changed
// since (StreamListParams.ChangedFrom), not every stream: the delivery
// engine's reconciliation at start.
type StreamChangeStore interface {
	// StreamChangeMark returns a mark of the streams' changes: a change
	// (a create, an append, a close, a delete mark) not committed when it
	// returns gets a sequence at or above it. A change committed before
	// may be above it too (it is then listed again, never missed).
	StreamChangeMark(ctx context.Context) (int64, error)
	// CheckedMark returns the mark recorded under name by
	// CheckedMarkAdvance, 0 when none was.
	CheckedMark(ctx context.Context, name string) (int64, error)
	// CheckedMarkAdvance records mark under name, unless a later one is
	// recorded: the recorder says that it checked every change below it.
	// Losing it costs only checking again (it may be committed without
	// waiting for the disk).
	CheckedMarkAdvance(ctx context.Context, name string, mark int64) error
}
