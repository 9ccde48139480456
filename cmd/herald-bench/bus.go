package main

// The bus workload: Herald's broker publishers (package bus, the code
// that publishes a broker endpoint's deliveries) against a NATS server
// with JetStream or a Kafka cluster.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldstreams/herald/bus"
	"github.com/heraldstreams/herald/bus/kafkabus"
	"github.com/heraldstreams/herald/bus/natsbus"
	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/webhook"
)

// runBus measures publish → acknowledgement: closed-loop throughput with
// -c publishers of -batch events each (-rate 0), or the latency of each
// event at an open-loop -rate events/s, for -d.
func runBus(ctx context.Context, args []string, out *output) error {
	fs := flag.NewFlagSet("bus", flag.ContinueOnError)
	broker := fs.String("broker", "nats", "nats (JetStream) or kafka")
	addr := fs.String("addr", "", "the broker: a nats:// URL or a Kafka host:port; empty starts one in process (a NATS server with JetStream, or franz-go's kfake cluster) when herald-bench is built with -tags brokers")
	conc := fs.Int("c", 8, "publishers at once (throughput)")
	batch := fs.Int("batch", 100, "events per publish (throughput)")
	rate := fs.Int("rate", 0, "events a second, open loop, for latency (0: throughput, closed loop)")
	dur := fs.Duration("d", 10*time.Second, "how long to publish")
	size := fs.Int("size", 256, "bytes of each event's body")
	if err := fs.Parse(args); err != nil {
		return err
	}
	target, stop, err := busTarget(*broker, *addr)
	if err != nil {
		return err
	}
	defer stop()
	d, err := delivery.ParseDestination(*broker, target)
	if err != nil {
		return err
	}
	guard := webhook.New(webhook.Config{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}})
	defer guard.Close()
	open := natsbus.Open
	if *broker == delivery.DestinationKafka {
		open = kafkabus.Open
	}
	pub, err := open(d, guard.BrokerDialer(d.TLS()))
	if err != nil {
		return err
	}
	defer pub.Close()
	body := []byte(`{"id":"x","type":"bench.event","data":"` + strings.Repeat("x", max(*size-40, 0)) + `"}`)
	// Warm up: connect and learn the topic's leader.
	if err := pub.Publish(ctx, busMessages(body, "warm", 1)); err != nil {
		return fmt.Errorf("warm-up publish: %w", err)
	}
	if *rate > 0 {
		return busLatency(ctx, out, pub, body, *broker, *rate, *dur)
	}
	return busThroughput(ctx, out, pub, body, *broker, *conc, *batch, *dur)
}

// busMessages are n events of one stream, ids prefix-0 … prefix-(n-1).
func busMessages(body []byte, prefix string, n int) []bus.Message {
	msgs := make([]bus.Message, n)
	now := time.Now()
	for i := range msgs {
		msgs[i] = bus.Message{EventFields: delivery.EventFields{ID: fmt.Sprintf("%s-%d", prefix, i), Type: "bench.event", Stream: "/bench"},
			Timestamp: now, Body: body}
	}
	return msgs
}

func busThroughput(ctx context.Context, out *output, pub bus.Publisher, body []byte, broker string, conc, batch int, dur time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var sent, failed atomic.Int64
	var lat latencies
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for w := range conc {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				msgs := busMessages(body, fmt.Sprintf("w%d-%d", w, i), batch)
				t := time.Now()
				err := pub.Publish(context.WithoutCancel(ctx), msgs)
				ms := float64(time.Since(t).Microseconds()) / 1000
				if err != nil {
					failed.Add(int64(batch))
					continue
				}
				sent.Add(int64(batch))
				mu.Lock()
				lat = append(lat, ms)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	s := lat.summary()
	rate := float64(sent.Load()) / secs
	return out.emit(result{"test": "bus", "broker": broker, "c": conc, "batch": batch, "events": sent.Load(), "failed": failed.Load(),
		"events_per_s": rate, "publish_p50": s.p50, "publish_p99": s.p99, "secs": secs},
		fmt.Sprintf("bus %s: c=%d, batch %d: %.0f events/s acknowledged, a publish of a batch p50 %.2f ms, p99 %.2f ms; %d failed",
			broker, conc, batch, rate, s.p50, s.p99, failed.Load()))
}

// busLatency publishes rate events a second, a millisecond's worth at a
// time, and times each publish from its start to the acknowledgement of
// all its events.
func busLatency(ctx context.Context, out *output, pub bus.Publisher, body []byte, broker string, rate int, dur time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var lat latencies
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failed atomic.Int64
	start := time.Now()
	due := 0
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			wg.Wait()
			secs := time.Since(start).Seconds()
			s := lat.summary()
			return out.emit(result{"test": "bus", "broker": broker, "rate": rate, "events": s.n, "failed": failed.Load(),
				"ack_p50": s.p50, "ack_p90": s.p90, "ack_p99": s.p99, "ack_max": s.max, "secs": secs},
				fmt.Sprintf("bus %s at %d events/s: publish → acknowledgement p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms over %d events; %d failed",
					broker, rate, s.p50, s.p90, s.p99, s.max, s.n, failed.Load()))
		case <-tick.C:
		}
		// The events due by now, so the rate holds when a tick is late.
		want := int(time.Since(start).Seconds()*float64(rate)) - due
		if want <= 0 {
			continue
		}
		due += want
		msgs := busMessages(body, fmt.Sprintf("t%d", i), want)
		wg.Go(func() {
			t := time.Now()
			err := pub.Publish(context.WithoutCancel(ctx), msgs)
			ms := float64(time.Since(t).Microseconds()) / 1000
			if err != nil {
				failed.Add(int64(len(msgs)))
				return
			}
			mu.Lock()
			for range msgs {
				lat = append(lat, ms)
			}
			mu.Unlock()
		})
	}
}

// busTarget returns the destination config of the broker at addr, or of
// one started in process (stop ends it).
func busTarget(broker, addr string) (json.RawMessage, func(), error) {
	stop := func() {}
	switch broker {
	case delivery.DestinationNATS:
		if addr == "" {
			var err error
			if addr, stop, err = startNATS(); err != nil {
				return nil, nil, err
			}
		}
		if err := benchStream(addr); err != nil {
			stop()
			return nil, nil, err
		}
		raw, err := json.Marshal(delivery.NATSConfig{Servers: []string{addr}, Subject: "herald.{type}", JetStream: true})
		return raw, stop, err
	case delivery.DestinationKafka:
		if addr == "" {
			var err error
			if addr, stop, err = startKafka(); err != nil {
				return nil, nil, err
			}
		}
		raw, err := json.Marshal(delivery.KafkaConfig{Brokers: []string{addr}})
		return raw, stop, err
	}
	return nil, nil, fmt.Errorf("-broker %q: use nats or kafka", broker)
}

// benchStream makes sure a JetStream stream stores the subjects published
// to (herald.>), made with a de-duplication window of two minutes.
func benchStream(url string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "HERALD_BENCH", Subjects: []string{"herald.>"}, Duplicates: 2 * time.Minute})
	return err
}
