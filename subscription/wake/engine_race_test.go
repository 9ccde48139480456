package wake

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/subscription"
)

// TestEngineNoLostWakeUnderRaces runs closed loops like the load
// generator's: every wake is answered {"done": true} while the next event
// is appended concurrently, so appends race with the synchronous done.
// When everything settles, every consumer must be IDLE with every event
// acked: a wake lost in any interleaving leaves one with pending work.
func TestEngineNoLostWakeUnderRaces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		const streams, rounds = 40, 15
		hook := &receiver{}
		r := newRig(t, dir, hook)
		defer r.close()
		r.subscribe("sub", "/loops/*")
		for i := range streams {
			r.createStream(fmt.Sprintf("/loops/s%d", i), "")
		}
		synctest.Wait()
		var mu sync.Mutex
		appended := map[string]int{}
		var wg sync.WaitGroup
		hook.setReply(func(p subscription.WakePayload, _ *http.Request) (int, string) {
			mu.Lock()
			n := appended[p.PrimaryStream]
			more := n < rounds
			if more {
				appended[p.PrimaryStream] = n + 1
			}
			mu.Unlock()
			if more {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r.appendData(p.PrimaryStream, "event")
				}()
			}
			return http.StatusOK, `{"done": true}`
		})
		for i := range streams {
			r.appendData(fmt.Sprintf("/loops/s%d", i), "first")
		}
		synctest.Wait()
		wg.Wait()
		// Let any armed timer fire: a wake recovered by a retry would show as
		// more than one attempt.
		time.Sleep(time.Minute)
		synctest.Wait()
		for i := range streams {
			path := fmt.Sprintf("/loops/s%d", i)
			c := r.consumer(subscription.ConsumerID("sub", path))
			tail := protocol.FormatOffset(int64(len("first") + rounds*len("event")))
			if c.State != "IDLE" || c.Streams[0].Acked != tail || c.Attempts != 1 {
				t.Errorf("%s: %s acked %s attempts %d, want IDLE acked %s after one attempt", path, c.State, c.Streams[0].Acked, c.Attempts, tail)
			}
		}
	})
}
