package wake

import (
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
)

// engineWorkers counts the goroutines of this package waiting for a
// stream change in the queue (the workers of before, parked in Pop) or
// working on one. Not parallel: it reads every goroutine of the process.
func engineWorkers() int {
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
		if strings.Contains(g, "subscription/wake.(*Engine).work") {
			n++
		}
	}
	return n
}

// The engine holds no worker goroutine while no stream change waits: a
// change starts one, which ends once the change is processed.
func TestEngineWorkersOnDemand(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		r := newRig(t, dir, hook)
		defer r.close()
		synctest.Wait()
		if n := engineWorkers(); n != 0 {
			t.Fatalf("%d workers on an idle engine, want 0", n)
		}
		r.subscribe("sub", "/agents/*")
		r.createStream("/agents/a", "abc")
		synctest.Wait()
		r.appendData("/agents/a", "de")
		synctest.Wait()
		if n := len(hook.wakes()); n != 1 {
			t.Fatalf("%d wakes, want 1", n)
		}
		if n, w := engineWorkers(), r.eng.queue.Workers(); n != 0 || w != 0 {
			t.Fatalf("%d worker goroutines (%d counted) after the work, want 0", n, w)
		}
	})
}
