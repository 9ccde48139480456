package glob

// Covers reports whether every path q matches is also matched by p: q
// asks for nothing outside p. Access control uses it to decide whether a
// credential limited to p may act on a pattern q (a subscription or an
// endpoint's streams), which may name streams that do not exist yet, so
// no list of paths can stand in for it.
//
// It is conservative: true is always right (no path matched by q escapes
// p); false may be answered for a pair where q is covered only because
// p's `**` takes a different number of segments for different paths of q.
// Every pair a reader would expect to be covered is: p covers itself,
// "/**" covers everything, "/a/**" covers "/a", "/a/*/b" and "/a/**/b",
// "/a/*" covers "/a/b".
//
// The cost is O(tokens(p) × tokens(q)) time and space, whatever the
// number of `**`.
func (p *Pattern) Covers(q *Pattern) bool {
	c := coverage{p: p.tokens, q: q.tokens, memo: make([]int8, (len(p.tokens)+1)*(len(q.tokens)+1))}
	return c.covers(0, 0)
}

// coverage decides whether p[i:] covers q[j:] for every i, j, each once.
type coverage struct {
	p, q []token
	// memo holds, per (i, j), 0 when not yet decided, 1 for covered and
	// -1 for not (known).
	memo []int8
}

func (c *coverage) covers(i, j int) bool {
	k := i*(len(c.q)+1) + j
	if c.memo[k] != 0 {
		return c.memo[k] > 0
	}
	ok := c.decide(i, j)
	c.memo[k] = -1
	if ok {
		c.memo[k] = 1
	}
	return ok
}

// decide is covers without the memo. Each case is exact except the
// marked one, where it may answer false for a covered pair.
func (c *coverage) decide(i, j int) bool {
	if j == len(c.q) {
		// q matches only the empty rest: p must too, which only `**`
		// tokens do.
		for _, t := range c.p[i:] {
			if t.kind != globstar {
				return false
			}
		}
		return true
	}
	if i == len(c.p) {
		// q still needs (or may take) a segment; p takes none.
		return false
	}
	pt, qt := c.p[i], c.q[j]
	switch pt.kind {
	case globstar:
		if qt.kind == globstar {
			// `**` X ⊆ `**` Y exactly when X ⊆ `**` Y.
			return c.covers(i, j+1)
		}
		// q's next segment is one literal or one non-empty segment:
		// either p's `**` ends here, or it takes that segment. Taking
		// one choice for all of q's paths is where false may be
		// conservative.
		return c.covers(i+1, j) || c.covers(i, j+1)
	case star:
		// `*` takes any one non-empty segment, so any literal or `*`;
		// never q's `**`, which may take no segment or an empty one.
		return qt.kind != globstar && c.covers(i+1, j+1)
	default:
		// A literal covers only the same literal.
		return qt.kind == literal && qt.lit == pt.lit && c.covers(i+1, j+1)
	}
}
