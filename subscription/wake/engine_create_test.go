package wake

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
)

// createHookStore is a memStore that runs afterCommit once it has stored
// a subscription, before the engine learns of the result.
type createHookStore struct {
	*memStore
	afterCommit func()
}

func (s *createHookStore) SubscriptionCreate(ctx context.Context, p *store.SubscriptionCreateParams) (*store.SubscriptionCreateResult, error) {
	res, err := s.memStore.SubscriptionCreate(ctx, p)
	if err == nil && s.afterCommit != nil {
		s.afterCommit()
	}
	return res, err
}

// TestEngineCreateSubscriptionWindow: a stream created after the store
// committed a new subscription, whose creation a worker processed before
// the engine cached the subscription, still gets its consumer and wakes;
// a stream that existed before gets an IDLE consumer at its tail and no
// wake (docs/subscriptions.md, Consumers).
func TestEngineCreateSubscriptionWindow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		st := &createHookStore{memStore: newMemStore()}
		st.appendData("/agents/old", 3)
		eng := startEngine(t, st, hook, rigKeyring(t), 0, true)
		defer eng.Stop(context.Background())
		synctest.Wait()
		st.afterCommit = func() {
			st.appendData("/agents/new", 5)
			synctest.Wait() // a worker has processed /agents/new without the subscription
		}
		if _, err := eng.CreateSubscription(context.Background(), &CreateSubscriptionParams{ID: "sub", Pattern: "/agents/*", Webhook: hookURL}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()

		w := hook.wakes()
		if len(w) != 1 || w[0].Payload.PrimaryStream != "/agents/new" || w[0].Payload.Streams[0].Offset != subscription.OffsetStart {
			t.Fatalf("wakes = %+v, want one for /agents/new from the start", w)
		}
		old, err := st.ConsumerGet(context.Background(), subscription.ConsumerID("sub", "/agents/old"))
		if err != nil || old.State != "IDLE" || old.Streams[0].Acked != protocol.FormatOffset(3) {
			t.Fatalf("consumer of /agents/old = %+v, %v", old, err)
		}
	})
}
