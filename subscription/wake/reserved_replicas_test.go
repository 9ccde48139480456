package wake

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/internal/testhttp"
	"github.com/heraldstreams/herald/subscription"
)

// TestReservedReplicaFollowsInvalidations: a second engine on the same
// store (another replica) learns of a reserved-API subscription made,
// deleted, and of a signing key rotated, on the first from the store's
// invalidations, before any time passes: no timer lists the
// subscriptions. Knowing the pattern, it links a stream created later.
func TestReservedReplicaFollowsInvalidations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		r := newDSRig(t, dir, &testhttp.Receiver[subscription.DSWebhookBody]{})
		defer r.crash()
		other, err := NewEngine(EngineConfig{Store: r.st, Sender: testhttp.NewSender(&testhttp.Receiver[subscription.DSWebhookBody]{}),
			Keyring: r.keys, CallbackBaseURL: "https://herald.test", Reserved: ReservedConfig{Store: r.st, Root: "/v1/stream"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := other.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = other.Stop(context.Background()) }()
		b := other.Reserved()
		knows := func(id string) (known, pattern bool) {
			b.patternsMu.RLock()
			defer b.patternsMu.RUnlock()
			_, known = b.known[id]
			_, pattern = b.patterns[id]
			return known, pattern
		}

		start := time.Now()
		r.stream("/v1/stream/wake/pool", "application/json", "")
		r.create("pull-1", `{"type":"pull-wake","pattern":"events/**","wake_stream":"wake/pool","lease_ttl_ms":2000}`)
		synctest.Wait()
		if known, pattern := knows("pull-1"); !known || !pattern {
			t.Fatalf("the other replica does not know the new subscription (known %v, pattern %v)", known, pattern)
		}
		// The other replica alone links a stream created now.
		if err := r.engine.Stop(context.Background()); err != nil { // the first replica hears no stream changes any more
			t.Fatal(err)
		}
		r.stream("/v1/stream/events/x", "text/plain", "abc")
		synctest.Wait()
		if v := r.get("pull-1"); len(v.Streams) != 1 || v.Streams[0].Path != "events/x" {
			t.Fatalf("links = %+v, want events/x linked by the other replica", v.Streams)
		}

		kid, err := r.eng.RotateSigningKey(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := b.activeKey().Kid; got != kid {
			t.Fatalf("the other replica signs with %s, want the rotated key %s", got, kid)
		}

		if err := r.eng.Delete(context.Background(), Platform, "pull-1"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if known, pattern := knows("pull-1"); known || pattern {
			t.Fatal("the other replica still links streams to a deleted subscription")
		}
		if !time.Now().Equal(start) {
			t.Fatalf("%v passed: the replica waited for a timer", time.Since(start))
		}
	})
}
