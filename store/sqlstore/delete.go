package sqlstore

import "fmt"

// StreamDeleter is how a backend holds its streams (S) for DeleteStream.
type StreamDeleter[S any] interface {
	// Forks counts the streams forked from s.
	Forks(s S) (int, error)
	// SoftDeleted reports whether s is soft-deleted.
	SoftDeleted(s S) bool
	// SoftDelete marks s soft-deleted and announces its deletion.
	SoftDelete(s S) error
	// Remove deletes s and its data (DeleteStreamSQL), and announces its
	// deletion unless it was soft-deleted before.
	Remove(s S) error
	// Source returns the stream s was forked from, ok false when s is
	// not a fork or its source is gone.
	Source(s S) (src S, ok bool, err error)
}

// DeleteStream deletes stream s by the rule of forks: a stream that
// forks still reference is soft-deleted (its data stays for them);
// otherwise it is removed, and then so is every soft-deleted source it
// was the last reference of. gone reports whether s itself was removed.
func DeleteStream[S any, D StreamDeleter[S]](d D, s S) (gone bool, err error) {
	for first := true; ; first = false {
		forks, err := d.Forks(s)
		if err != nil {
			return false, fmt.Errorf("count forks: %w", err)
		}
		if forks > 0 {
			if !d.SoftDeleted(s) {
				if err := d.SoftDelete(s); err != nil {
					return false, err
				}
			}
			return gone, nil
		}
		if err := d.Remove(s); err != nil {
			return false, err
		}
		gone = gone || first
		// Cascade to a soft-deleted source that no fork needs any more.
		src, ok, err := d.Source(s)
		if err != nil {
			return false, err
		}
		if !ok || !d.SoftDeleted(src) {
			return gone, nil
		}
		s = src
	}
}
