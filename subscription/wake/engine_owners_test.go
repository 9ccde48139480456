package wake

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/heraldstreams/herald/subscription"
)

// TestEngineSubscriptionOwners: a subscription is its creator's tenant's;
// a tenant's caller sees, lists and deletes only its own, another owner's
// answers as an absent one, and the id another owner holds cannot be
// taken or confirmed; the platform sees every owner's.
func TestEngineSubscriptionOwners(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, dir, &receiver{})
		defer r.close()
		ctx := context.Background()
		acme, globex := Caller{Tenant: "acme"}, Caller{Tenant: "globex"}
		r.createStream("/tenants/acme/x", "a")
		r.createStream("/tenants/globex/y", "g")
		for _, s := range []struct {
			caller      Caller
			id, pattern string
		}{{acme, "a1", "/tenants/acme/**"}, {globex, "g1", "/tenants/globex/**"}, {Platform, "p1", "/tenants/**"}} {
			res, err := r.eng.CreateSubscription(ctx, &CreateSubscriptionParams{Caller: s.caller, ID: s.id, Pattern: s.pattern, Webhook: hookURL})
			if err != nil || !res.Created {
				t.Fatalf("create %s: %+v, %v", s.id, res, err)
			}
			if stored, err := r.st.SubscriptionGet(ctx, s.id); err != nil || stored.Tenant != s.caller.Tenant {
				t.Fatalf("stored %s: %+v, %v", s.id, stored, err)
			}
		}

		ids := func(c Caller) string {
			list, err := r.eng.ListSubscriptions(ctx, c, AllPattern)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, s := range list {
				out = append(out, s.SubscriptionID)
			}
			return strings.Join(out, ",")
		}
		if got := ids(acme); got != "a1" {
			t.Errorf("acme lists %q", got)
		}
		if got := ids(Platform); got != "a1,g1,p1" {
			t.Errorf("the platform lists %q", got)
		}
		if list, err := r.eng.ListSubscriptions(ctx, acme, "/tenants/**"); err != nil || len(list) != 0 {
			t.Errorf("acme lists the platform's pattern: %+v, %v", list, err)
		}

		// Another owner's subscription answers exactly as an absent one.
		_, absent := r.eng.GetSubscription(ctx, acme, "nope")
		for _, id := range []string{"g1", "p1"} {
			_, err := r.eng.GetSubscription(ctx, acme, id)
			if !errors.Is(err, ErrSubscriptionNotFound) || err.Error() != strings.Replace(absent.Error(), `"nope"`, `"`+id+`"`, 1) {
				t.Errorf("acme gets %s: %v", id, err)
			}
			if err := r.eng.DeleteSubscription(ctx, acme, AllPattern, id); !errors.Is(err, ErrSubscriptionNotFound) {
				t.Errorf("acme deletes %s: %v", id, err)
			}
			if _, err := r.eng.GetSubscription(ctx, Platform, id); err != nil {
				t.Errorf("%s after acme's delete: %v", id, err)
			}
		}
		// Re-creating another owner's id, even with its exact
		// configuration, is a conflict that neither confirms nor changes it.
		for _, webhook := range []string{hookURL, "https://elsewhere.example/"} {
			_, err := r.eng.CreateSubscription(ctx, &CreateSubscriptionParams{Caller: acme, ID: "p1", Pattern: "/tenants/**", Webhook: webhook})
			if !errors.Is(err, ErrSubscriptionExists) {
				t.Errorf("acme re-creates p1 (webhook %s): %v", webhook, err)
			}
		}
		if stored, err := r.st.SubscriptionGet(ctx, "p1"); err != nil || stored.Tenant != "" || stored.Webhook != hookURL {
			t.Errorf("p1 after acme's re-create: %+v, %v", stored, err)
		}
		// A pattern outside the caller's paths is refused, nothing stored.
		narrow := Caller{Tenant: "acme", AllowsPattern: func(p string) bool { return strings.HasPrefix(p, "/tenants/acme/") }}
		_, err := r.eng.CreateSubscription(ctx, &CreateSubscriptionParams{Caller: narrow, ID: "wide", Pattern: "/tenants/*/x", Webhook: hookURL})
		if !errors.Is(err, ErrPatternForbidden) {
			t.Errorf("a pattern outside the caller's paths: %v", err)
		}
		if _, err := r.st.SubscriptionGet(ctx, "wide"); err == nil {
			t.Error("the refused subscription was stored")
		}

		// Consumers are their subscription's owner's.
		platformConsumer := subscription.ConsumerID("p1", "/tenants/acme/x")
		if _, err := r.eng.GetConsumer(ctx, acme, platformConsumer); !errors.Is(err, ErrConsumerNotFound) {
			t.Errorf("acme gets the platform's consumer: %v", err)
		}
		if _, err := r.eng.GetConsumer(ctx, Platform, platformConsumer); err != nil {
			t.Errorf("the platform gets its consumer: %v", err)
		}
		if _, err := r.eng.ListConsumers(ctx, acme, "p1", "", 0); !errors.Is(err, ErrSubscriptionNotFound) {
			t.Errorf("acme lists the platform's consumers: %v", err)
		}
		own := subscription.ConsumerID("a1", "/tenants/acme/x")
		if c, err := r.eng.GetConsumer(ctx, acme, own); err != nil || c.PrimaryStream != "/tenants/acme/x" {
			t.Errorf("acme gets its consumer: %+v, %v", c, err)
		}
		if list, err := r.eng.ListConsumers(ctx, acme, "a1", "", 0); err != nil || len(list.Data) != 1 {
			t.Errorf("acme lists its consumers: %+v, %v", list, err)
		}
		// A consumer naming a stream outside the caller's paths is absent.
		limited := Caller{Tenant: "acme", AllowsPath: func(p string) bool { return p == "/tenants/acme/other" }}
		if _, err := r.eng.GetConsumer(ctx, limited, own); !errors.Is(err, ErrConsumerNotFound) {
			t.Errorf("a caller limited elsewhere gets the consumer: %v", err)
		}
		if list, err := r.eng.ListConsumers(ctx, limited, "a1", "", 0); err != nil || len(list.Data) != 0 {
			t.Errorf("a caller limited elsewhere lists: %+v, %v", list, err)
		}

		if err := r.eng.DeleteSubscription(ctx, acme, AllPattern, "a1"); err != nil {
			t.Errorf("acme deletes its own: %v", err)
		}
	})
}

// TestEngineTenantConsumerSubscribesInItsNamespace: a consumer of a
// tenant's subscription subscribes only to its tenant's streams; a
// subscribe that names any other is refused with FORBIDDEN and changes
// nothing; the platform's consumers subscribe anywhere.
func TestEngineTenantConsumerSubscribesInItsNamespace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		r := newRig(t, dir, hook)
		defer r.close()
		ctx := context.Background()
		for _, s := range []struct {
			caller      Caller
			id, pattern string
		}{{Caller{Tenant: "acme"}, "a1", "/tenants/acme/*"}, {Platform, "p1", "/platform/*"}} {
			if _, err := r.eng.CreateSubscription(ctx, &CreateSubscriptionParams{Caller: s.caller, ID: s.id, Pattern: s.pattern, Webhook: hookURL}); err != nil {
				t.Fatal(err)
			}
		}
		r.createStream("/tenants/acme/x", "a")
		r.createStream("/platform/p", "p")
		r.createStream("/tenants/globex/secret", "g")
		synctest.Wait()
		tokens := map[string]subscription.WakePayload{}
		for _, w := range hook.wakes() {
			tokens[w.Payload.ConsumerID] = w.Payload
		}
		acmeID, platformID := subscription.ConsumerID("a1", "/tenants/acme/x"), subscription.ConsumerID("p1", "/platform/p")
		w := tokens[acmeID]
		before := r.consumer(acmeID)
		for _, paths := range [][]string{{"/tenants/globex/secret"}, {"/platform/p"}, {"/tenants/acme/y", "/tenants/globex/secret"}, {"/tenants/acmex/z"}} {
			r.wantCallbackError(acmeID, w.Token, body(subscription.CallbackRequest{Epoch: w.Epoch, WakeID: w.WakeID, Subscribe: paths}), subscription.CodeForbidden)
		}
		if c := r.consumer(acmeID); len(c.Streams) != 1 || c.Version != before.Version {
			t.Fatalf("the consumer after refused subscribes: %+v", c)
		}
		resp := r.mustCallback(acmeID, w.Token, body(subscription.CallbackRequest{Epoch: w.Epoch, WakeID: w.WakeID, Subscribe: []string{"/tenants/acme/y"}}))
		if len(resp.Streams) != 2 || resp.Streams[1].Path != "/tenants/acme/y" {
			t.Fatalf("subscribe in the namespace: %+v", resp)
		}
		p := tokens[platformID]
		resp = r.mustCallback(platformID, p.Token, body(subscription.CallbackRequest{Epoch: p.Epoch, WakeID: p.WakeID, Subscribe: []string{"/tenants/globex/secret"}}))
		if len(resp.Streams) != 2 {
			t.Fatalf("the platform's consumer subscribes anywhere: %+v", resp)
		}
	})
}
