package wake

import (
	"testing"
	"testing/synctest"

	"github.com/heraldstreams/herald/internal/testenv"
)

// The engine holds no worker goroutine while no stream change waits: a
// change starts one, which ends once the change is processed. Not
// parallel: it counts the goroutines of the whole process.
func TestEngineWorkersOnDemand(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		r := newRig(t, dir, hook)
		defer r.close()
		synctest.Wait()
		if n := testenv.Goroutines("subscription/wake.(*Engine).work"); n != 0 {
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
		if n, w := testenv.Goroutines("subscription/wake.(*Engine).work"), r.eng.queue.Workers(); n != 0 || w != 0 {
			t.Fatalf("%d worker goroutines (%d counted) after the work, want 0", n, w)
		}
	})
}
