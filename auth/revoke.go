package auth

import (
	"context"
	"errors"
	"time"

	"github.com/heraldstreams/herald/store"
)

// Revocation of requests in progress. A credential is checked when a
// request arrives; a live read (long-poll, SSE) then lasts long after.
// Watch ties such a request to its credential: it ends when the key is
// deleted, on this replica or another (the store's change feed, which
// Follow applies), or when the credential's expiry passes.

// recentRevocations is how many revoked key ids an Authenticator
// remembers, for a request checked just before its key's revocation was
// applied that starts watching just after.
const recentRevocations = 1024

// DefaultFollowRetry is how long Follow waits before reading again after
// a failed read.
const DefaultFollowRetry = time.Second

// watch is one request watching its key.
type watch struct {
	cancel context.CancelCauseFunc
}

// Watch returns a context derived from ctx that ends when p's credential
// stops working: with cause ErrInvalidKey when its stored key is deleted
// (revoked), ErrKeyExpired when its expiry passes. A live read selects on
// it. Call stop when the request ends. A credential that never expires
// and cannot be revoked (the admin key, access control off) gets ctx's
// own end only.
func (a *Authenticator) Watch(ctx context.Context, p *Principal) (watched context.Context, stop func()) {
	var cancels []func()
	if !p.ExpiresAt.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, p.ExpiresAt, ErrKeyExpired)
		cancels = append(cancels, cancel)
	}
	if p.Kind == KindKey && !a.off {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		w := &watch{cancel: cancel}
		a.wmu.Lock()
		if _, gone := a.revoked[p.ID]; gone {
			cancel(ErrInvalidKey)
		} else {
			if a.watches[p.ID] == nil {
				a.watches[p.ID] = make(map[*watch]struct{})
			}
			a.watches[p.ID][w] = struct{}{}
		}
		a.wmu.Unlock()
		cancels = append(cancels, func() {
			a.wmu.Lock()
			if ws := a.watches[p.ID]; ws != nil {
				delete(ws, w)
				if len(ws) == 0 {
					delete(a.watches, p.ID)
				}
			}
			a.wmu.Unlock()
			cancel(context.Canceled)
		})
	}
	return ctx, func() {
		for _, c := range cancels {
			c()
		}
	}
}

// Revoked returns the credential failure that ended a context from
// Watch (ErrInvalidKey, ErrKeyExpired), nil when it has not ended or
// ended for another reason (the client left).
func Revoked(ctx context.Context) *Error {
	var ae *Error
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &ae) {
		return ae
	}
	return nil
}

// Follow applies the store's invalidations of API keys (store.CacheKey)
// until ctx ends: the verified-key cache forgets a key created or deleted
// by any replica, and the requests watching a deleted key end. Run it
// for the Authenticator's lifetime on the feed of the store its keys are
// in: without it, a key deleted elsewhere works here until its cache
// entry is CacheTTL old, and a revoked key's live reads last their full
// length.
func (a *Authenticator) Follow(ctx context.Context, feed *store.InvalidationFeed) {
	feed.Apply(ctx, &store.CacheLoader{
		Kind:    store.CacheKey,
		Load:    a.reload,
		LoadAll: a.reloadAll,
		Retry:   DefaultFollowRetry,
		Log:     a.log,
	})
}

// reload forgets a cached key and reads it again: if it is gone, the
// requests watching it end, and one that starts watching right after (it
// was checked just before) ends at once. Keys change seldom: one read
// each is cheap.
func (a *Authenticator) reload(ctx context.Context, id string) error {
	a.Invalidate(id)
	return a.checkRevoked(ctx, id)
}

// reloadAll forgets every cached key and reads every watched one again.
func (a *Authenticator) reloadAll(ctx context.Context) error {
	a.mu.Lock()
	a.gen.Add(1)
	clear(a.cache)
	a.mu.Unlock()
	a.wmu.Lock()
	ids := make([]string, 0, len(a.watches))
	for id := range a.watches {
		ids = append(ids, id)
	}
	a.wmu.Unlock()
	for _, id := range ids {
		if err := a.checkRevoked(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// checkRevoked reads key id; when it no longer exists, it is recorded as
// revoked and its watchers end (a create is announced too: only the read
// tells the two apart).
func (a *Authenticator) checkRevoked(ctx context.Context, id string) error {
	if a.keys == nil {
		return nil
	}
	_, err := a.keys.KeyGet(ctx, &store.KeyGetParams{ID: id})
	if errors.Is(err, store.ErrKeyNotFound) {
		a.revoke(id)
		return nil
	}
	return err
}

// revoke ends every request watching key id and remembers it.
func (a *Authenticator) revoke(id string) {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if _, ok := a.revoked[id]; !ok {
		if len(a.revokedOrder) >= recentRevocations {
			delete(a.revoked, a.revokedOrder[0])
			a.revokedOrder = a.revokedOrder[1:]
		}
		a.revoked[id] = struct{}{}
		a.revokedOrder = append(a.revokedOrder, id)
	}
	for w := range a.watches[id] {
		w.cancel(ErrInvalidKey)
	}
	delete(a.watches, id)
}
