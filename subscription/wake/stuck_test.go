package wake

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store/sqlite"
	"github.com/heraldstreams/herald/subscription"
)

// TestEngineShowsAStuckConsumer runs the engine on the embedded store
// with the fake clock of a synctest bubble: a consumer that claims every
// wake and says done a second later without acking (its reads fail) is
// woken again at once each time; after StuckWakes wakes the consumer API
// shows it stuck with the reason, and the stuck gauge counts it, until
// an ack clears both.
func TestEngineShowsAStuckConsumer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir, TouchFlushInterval: time.Hour, CheckpointInterval: time.Hour, RelaxedInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		hook := &receiver{}
		reg := prometheus.NewRegistry()
		keys := rigKeyring(t)
		eng, err := NewEngine(EngineConfig{Store: st, Sender: newSender(hook), Keyring: keys,
			CallbackBaseURL: "https://herald.test", ExclusiveStore: true, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		if err := eng.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		r := &rig{t: t, dir: dir, st: st, hook: hook, keys: keys, eng: eng}
		defer r.close()
		stuckGauge := func() string {
			t.Helper()
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() == "herald_subscription_consumers_stuck" && len(mf.GetMetric()) == 1 {
					return fmt.Sprint(mf.GetMetric()[0].GetGauge().GetValue())
				}
			}
			t.Fatal("no herald_subscription_consumers_stuck sample")
			return ""
		}

		r.subscribe("sub", "/agents/*")
		r.createStream("/agents/a", "abc")
		id := subscription.ConsumerID("sub", "/agents/a")
		first := time.Now()
		for i := 1; i <= subscription.StuckWakes; i++ {
			synctest.Wait()
			w := hook.wakes()
			if len(w) != i {
				t.Fatalf("%d wakes, want %d", len(w), i)
			}
			info, err := eng.GetConsumer(context.Background(), Platform, id)
			if err != nil {
				t.Fatal(err)
			}
			if i < subscription.StuckWakes && (info.Stuck || info.StuckReason != nil) {
				t.Fatalf("stuck after %d wakes: %+v", i, info)
			}
			if i < subscription.StuckWakes && stuckGauge() != "0" {
				t.Fatalf("gauge after %d wakes = %s", i, stuckGauge())
			}
			if i == subscription.StuckWakes {
				break
			}
			// The consumer fails to read, waits its one-second backoff
			// (fake time) and says done without acking.
			time.Sleep(time.Second)
			p := w[i-1].Payload
			r.mustCallback(id, p.Token, fmt.Sprintf(`{"epoch":%d,"wake_id":%q,"done":true}`, p.Epoch, p.WakeID))
		}
		time.Sleep(time.Second)
		info, err := eng.GetConsumer(context.Background(), Platform, id)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("woken 10 times in %d s without an ack", int(time.Since(first)/time.Second))
		if !info.Stuck || info.StuckReason == nil || *info.StuckReason != want {
			t.Fatalf("after %d wakes: stuck %v reason %v, want %q", subscription.StuckWakes, info.Stuck, info.StuckReason, want)
		}
		list, err := eng.ListConsumers(context.Background(), Platform, "sub", "", 0)
		if err != nil || len(list.Data) != 1 || !list.Data[0].Stuck {
			t.Fatalf("list: %+v, %v", list, err)
		}
		if g := stuckGauge(); g != "1" {
			t.Fatalf("stuck gauge = %s, want 1", g)
		}

		// It reads and acks at last: no longer stuck.
		w := hook.wakes()
		p := w[len(w)-1].Payload
		r.mustCallback(id, p.Token, fmt.Sprintf(`{"epoch":%d,"wake_id":%q,"acks":[{"path":"/agents/a","offset":%q}],"done":true}`,
			p.Epoch, p.WakeID, protocol.FormatOffset(3)))
		synctest.Wait()
		info, err = eng.GetConsumer(context.Background(), Platform, id)
		if err != nil {
			t.Fatal(err)
		}
		if info.Stuck || info.StuckReason != nil || info.State != subscription.StateIdle {
			t.Fatalf("after an ack: %+v", info)
		}
		if g := stuckGauge(); g != "0" {
			t.Fatalf("stuck gauge after the ack = %s, want 0", g)
		}
	})
}
