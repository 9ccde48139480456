//go:build brokers

package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldstreams/herald/bus"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/internal/brokertest"
)

// The built-in NATS destination of --nats-url receives every published
// event on JetStream, with no endpoint registered; the built-in Kafka
// destination of --kafka-brokers too, on <prefix>.<type>.
func TestBuiltinDestinationsReceiveEveryEvent(t *testing.T) {
	t.Parallel()
	n := brokertest.StartNATS(t)
	stream := n.Stream("HERALD", time.Minute, "herald.>")
	k := brokertest.StartKafka(t, []string{"acme.order.paid"})
	m := brokerHerald(t, "--nats-url", n.URL(), "--kafka-brokers", k.Addr(), "--kafka-topic-prefix", "acme")
	var list struct {
		Data []struct{ ID, Type string }
	}
	m.admin(t, "GET", "/_herald/v1/endpoints", "", http.StatusOK, &list)
	if len(list.Data) != 2 || list.Data[0].ID != dispatch.BuiltinKafkaID || list.Data[1].Type != "nats" {
		t.Fatalf("endpoints = %+v", list.Data)
	}
	m.admin(t, "POST", "/_herald/v1/events", `{"type":"order.paid","id":"evt-1","data":{"total":5}}`, http.StatusAccepted, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(15 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Subject() != "herald.order.paid" || msg.Headers().Get("Nats-Msg-Id") != "evt-1" || !strings.Contains(string(msg.Data()), `"total":5`) {
		t.Fatalf("JetStream got %s %v %s", msg.Subject(), msg.Headers(), msg.Data())
	}
	// Kafka: wait until the built-in destination's delivery is delivered.
	waitDelivered(t, m, dispatch.BuiltinKafkaID)
	recs := k.Records("acme.order.paid")
	if len(recs) != 1 || string(recs[0].Key) != "/events" {
		t.Fatalf("Kafka holds %d records", len(recs))
	}
	var id string
	for _, h := range recs[0].Headers {
		if h.Key == bus.HeaderEventID {
			id = string(h.Value)
		}
	}
	if id != "evt-1" {
		t.Fatalf("record of event %q", id)
	}
}

// waitDelivered waits until the endpoint's deliveries are all delivered.
func waitDelivered(t *testing.T, m *matrix, endpoint string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for {
		var page struct{ Data []struct{ Status string } }
		m.admin(t, "GET", "/_herald/v1/endpoints/"+endpoint+"/deliveries", "", http.StatusOK, &page)
		if len(page.Data) > 0 && page.Data[0].Status == "delivered" {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("deliveries of %s: %+v", endpoint, page.Data)
		}
	}
}
