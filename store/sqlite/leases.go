package sqlite

import "sync"

// leaseBook holds the delivery leases. One process owns the database (the
// lock file), so a lease only has to outlive its sender, not the process:
// leases live in memory, claiming writes nothing, and after a restart every
// unfinished delivery is claimable at once, as if every lease had ended.
//
// A lease is a token and an end. Tokens come from one counter, so a token
// names one claim of one delivery: an outcome is recorded only while its
// token is the delivery's current one.
type leaseBook struct {
	mu   sync.Mutex
	last int64                      // guarded by mu
	byEP map[string]map[int64]lease // endpoint → delivery seq → lease; guarded by mu
}

type lease struct {
	token int64
	until int64 // unix ns
}

func newLeaseBook() *leaseBook {
	return &leaseBook{byEP: make(map[string]map[int64]lease)}
}

// active returns how many of the endpoint's leases run past now, and the
// earliest end among them (0 when none). Leases that ended are forgotten:
// their deliveries are claimable again, and a late outcome for one is not
// recorded (the delivery is sent again).
func (lb *leaseBook) active(ep string, now int64) (n int, earliest int64) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	for seq, l := range lb.byEP[ep] {
		if l.until <= now {
			delete(lb.byEP[ep], seq)
			continue
		}
		n++
		if earliest == 0 || l.until < earliest {
			earliest = l.until
		}
	}
	return n, earliest
}

// take leases, in order, up to limit of the given deliveries that hold no
// running lease, and returns the seqs leased with their tokens.
func (lb *leaseBook) take(ep string, seqs []int64, limit int, until, now int64) map[int64]int64 {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	m := lb.endpoint(ep)
	out := make(map[int64]int64, min(limit, len(seqs)))
	for _, seq := range seqs {
		if len(out) == limit {
			break
		}
		if l, ok := m[seq]; ok && l.until > now {
			continue
		}
		lb.last++
		m[seq] = lease{token: lb.last, until: until}
		out[seq] = lb.last
	}
	return out
}

// add leases a delivery being inserted and returns the token.
func (lb *leaseBook) add(ep string, seq, until int64) int64 {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	lb.last++
	lb.endpoint(ep)[seq] = lease{token: lb.last, until: until}
	return lb.last
}

// endpoint returns the endpoint's leases, made when absent. lb.mu must be
// held.
func (lb *leaseBook) endpoint(ep string) map[int64]lease {
	m := lb.byEP[ep]
	if m == nil {
		m = make(map[int64]lease)
		lb.byEP[ep] = m
	}
	return m
}

// holds reports whether token is the delivery's current lease.
func (lb *leaseBook) holds(ep string, seq, token int64) bool {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	l, ok := lb.byEP[ep][seq]
	return ok && l.token == token
}

// get returns the delivery's lease, if it has one.
func (lb *leaseBook) get(ep string, seq int64) (lease, bool) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	l, ok := lb.byEP[ep][seq]
	return l, ok
}

// release ends a lease whose outcome was recorded, unless a newer claim
// holds the delivery now.
func (lb *leaseBook) release(ep string, seq, token int64) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if l, ok := lb.byEP[ep][seq]; ok && l.token == token {
		delete(lb.byEP[ep], seq)
	}
}

// drop ends the leases of a claim that failed.
func (lb *leaseBook) drop(ep string, taken map[int64]int64) {
	for seq, token := range taken {
		lb.release(ep, seq, token)
	}
}

// forget drops every lease of an endpoint (it was deleted).
func (lb *leaseBook) forget(ep string) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	delete(lb.byEP, ep)
}
