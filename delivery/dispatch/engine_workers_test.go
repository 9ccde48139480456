package dispatch

import (
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
)

// matchers counts the goroutines of this package that wait in the match
// queue (the matchers of before, parked in Pop) or match a stream. Not
// parallel: it reads every goroutine of the process.
func matchers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	n := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "delivery/dispatch.(*Engine).match") {
			n++
		}
	}
	return n
}

// The engine holds no matcher goroutine while no stream waits to be
// matched: an event starts one, which ends once it is matched.
func TestEngineMatchersOnDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		synctest.Wait()
		if n := matchers(); n != 0 {
			t.Fatalf("%d matchers on an idle engine, want 0", n)
		}
		ep := r.endpoint(&CreateEndpointParams{Active: true})
		r.publish("order.created", "", `{"n":1}`)
		synctest.Wait()
		if n := len(r.deliveries(ep.ID)); n != 1 {
			t.Fatalf("%d deliveries, want 1", n)
		}
		if n, w := matchers(), r.e.queue.Workers(); n != 0 || w != 0 {
			t.Fatalf("%d matcher goroutines (%d counted) after the work, want 0", n, w)
		}
	})
}
