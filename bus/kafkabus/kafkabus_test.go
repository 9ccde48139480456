//go:build brokers

package kafkabus

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/heraldstreams/herald/bus"
	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/internal/brokertest"
)

func open(t *testing.T, config string) bus.Publisher {
	return brokertest.Publisher(t, Open, delivery.DestinationKafka, config)
}

var msg = brokertest.Message

func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestProduceKeysAndHeaders(t *testing.T) {
	t.Parallel()
	k := brokertest.StartKafka(t, []string{"herald.order.paid", "herald.order.shipped"})
	p := open(t, `{"brokers":["`+k.Addr()+`"]}`)
	if err := p.Publish(withTimeout(t, 10*time.Second), []bus.Message{msg("e1", "order.paid", "/orders/eu"), msg("e2", "order.shipped", "/orders/eu"),
		msg("e3", "order.paid", "/orders/us")}); err != nil {
		t.Fatal(err)
	}
	paid := k.Records("herald.order.paid")
	if len(paid) != 2 {
		t.Fatalf("%d records of herald.order.paid, want 2", len(paid))
	}
	r := paid[0]
	h := map[string]string{}
	for _, kv := range r.Headers {
		h[kv.Key] = string(kv.Value)
	}
	if string(r.Key) != "/orders/eu" || string(r.Value) != `{"id":"e1"}` || h[bus.HeaderEventID] != "e1" || h[bus.HeaderEventType] != "order.paid" ||
		h[bus.HeaderTenant] != "acme" || h[bus.HeaderTimestamp] != "2026-01-02T03:04:05Z" || h["Content-Type"] != "application/json" {
		t.Fatalf("record = key %q value %s headers %v", r.Key, r.Value, h)
	}
	if string(paid[1].Key) != "/orders/us" {
		t.Fatalf("second record key %q", paid[1].Key)
	}
	if n := len(k.Records("herald.order.shipped")); n != 1 {
		t.Fatalf("%d records of herald.order.shipped", n)
	}
}

func TestSASL(t *testing.T) {
	t.Parallel()
	for _, mech := range []string{delivery.SASLPlain, delivery.SASLScramSHA256, delivery.SASLScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			t.Parallel()
			k := brokertest.StartKafka(t, []string{"herald.a.b"}, kfake.EnableSASL(), kfake.Superuser(mech, "herald", "s3cret"))
			ok := open(t, `{"brokers":["`+k.Addr()+`"],"sasl":{"mechanism":"`+mech+`","username":"herald","password":"s3cret"}}`)
			if err := ok.Publish(withTimeout(t, 10*time.Second), []bus.Message{msg("e1", "a.b", "/s")}); err != nil {
				t.Fatal(err)
			}
			bad := open(t, `{"brokers":["`+k.Addr()+`"],"sasl":{"mechanism":"`+mech+`","username":"herald","password":"wrong"}}`)
			if err := bad.Publish(withTimeout(t, 2*time.Second), []bus.Message{msg("e2", "a.b", "/s")}); err == nil {
				t.Fatal("a wrong password was accepted")
			}
		})
	}
}

// TestBrokerDownThenBack: records produced while the broker is down fail
// within the attempt's time; once it is back the same producer succeeds,
// in order.
func TestBrokerDownThenBack(t *testing.T) {
	t.Parallel()
	k := brokertest.StartKafka(t, []string{"herald.a.b"})
	p := open(t, `{"brokers":["`+k.Addr()+`"]}`)
	if err := p.Publish(withTimeout(t, 10*time.Second), []bus.Message{msg("e1", "a.b", "/s")}); err != nil {
		t.Fatal(err)
	}
	if n := len(k.Records("herald.a.b")); n != 1 {
		t.Fatalf("%d records before the outage", n)
	}
	k.Down()
	if err := p.Publish(withTimeout(t, time.Second), []bus.Message{msg("e2", "a.b", "/s")}); err == nil {
		t.Fatal("a produce to a stopped broker succeeded")
	}
	k.Up()
	var err error
	for range 20 {
		if err = p.Publish(withTimeout(t, 5*time.Second), []bus.Message{msg("e2", "a.b", "/s"), msg("e3", "a.b", "/s")}); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("no produce succeeded after the restart: %v", err)
	}
	var ids []string
	for _, r := range k.Records("herald.a.b") {
		for _, h := range r.Headers {
			if h.Key == bus.HeaderEventID {
				ids = append(ids, string(h.Value))
			}
		}
	}
	if fmt.Sprint(ids) != "[e1 e2 e3]" {
		t.Fatalf("the broker holds %v, want [e1 e2 e3]", ids)
	}
}

func TestUnknownTopicFails(t *testing.T) {
	t.Parallel()
	k := brokertest.StartKafka(t, []string{"herald.a.b"})
	p := open(t, `{"brokers":["`+k.Addr()+`"]}`)
	if err := p.Publish(withTimeout(t, 2*time.Second), []bus.Message{msg("e1", "no.such", "/s")}); err == nil {
		t.Fatal("a produce to a topic the broker does not have succeeded")
	}
}
