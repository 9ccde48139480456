//go:build brokers

// Package brokertest runs real brokers in process for tests: a NATS
// server with JetStream (the server's own Go module) and franz-go's kfake
// Kafka-protocol cluster, both on loopback, with readers of what they
// received. It and the tests that use it are built only with
// `-tags brokers` (scripts/test.sh passes it): the NATS server is a large
// module to compile, and `go test -short ./...` stays quick without it.
package brokertest

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/heraldstreams/herald/bus"
	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/webhook"
)

// NATS is a NATS server with JetStream on a loopback port, which keeps its
// port and its JetStream store across Restart.
type NATS struct {
	t    testing.TB
	opts server.Options
	mu   sync.Mutex
	srv  *server.Server // guarded by mu
}

// NATSOptions change the server's options (authentication, say).
type NATSOptions func(*server.Options)

// StartNATS starts a NATS server with JetStream; the test's end stops it.
func StartNATS(t testing.TB, change ...NATSOptions) *NATS {
	t.Helper()
	n := &NATS{t: t, opts: server.Options{Host: "127.0.0.1", Port: freePort(t), JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true, MaxPayload: 8 << 20}}
	for _, c := range change {
		c(&n.opts)
	}
	n.start()
	t.Cleanup(n.Stop)
	return n
}

func (n *NATS) start() {
	n.t.Helper()
	opts := n.opts
	srv, err := server.NewServer(&opts)
	if err != nil {
		n.t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		n.t.Fatal("brokertest: the NATS server did not start")
	}
	n.mu.Lock()
	n.srv = srv
	n.mu.Unlock()
}

// URL is the server's nats:// URL.
func (n *NATS) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(n.opts.Port) }

// Stop shuts the server down.
func (n *NATS) Stop() {
	n.mu.Lock()
	srv := n.srv
	n.srv = nil
	n.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// Restart starts the server again, on its port, with its store.
func (n *NATS) Restart() { n.start() }

// Conn connects a client of the test.
func (n *NATS) Conn(opts ...nats.Option) *nats.Conn {
	n.t.Helper()
	nc, err := nats.Connect(n.URL(), opts...)
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(nc.Close)
	return nc
}

// Stream creates a JetStream stream of the subjects, de-duplicating
// message ids within window.
func (n *NATS) Stream(name string, window time.Duration, subjects ...string) jetstream.Stream {
	n.t.Helper()
	js, err := jetstream.New(n.Conn())
	if err != nil {
		n.t.Fatal(err)
	}
	s, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: name, Subjects: subjects, Duplicates: window})
	if err != nil {
		n.t.Fatal(err)
	}
	return s
}

// StreamMessages reads every message of a JetStream stream, in order.
func StreamMessages(t testing.TB, s jetstream.Stream) []*jetstream.RawStreamMsg {
	t.Helper()
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(context.Background(), seq)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// Kafka is a kfake Kafka-protocol cluster on loopback. It is not a real
// broker: it speaks the protocol (produce, fetch, idempotent producers,
// SASL) and keeps records in memory.
type Kafka struct {
	t    testing.TB
	port int
	opts []kfake.Opt
	mu   sync.Mutex
	c    *kfake.Cluster // guarded by mu
	down atomic.Bool
}

// StartKafka starts a one-broker cluster with the topics (one partition
// each); the test's end stops it.
func StartKafka(t testing.TB, topics []string, opts ...kfake.Opt) *Kafka {
	t.Helper()
	k := &Kafka{t: t, port: freePort(t)}
	k.opts = append([]kfake.Opt{kfake.NumBrokers(1), kfake.Ports(k.port), kfake.SeedTopics(1, topics...)}, opts...)
	k.start()
	t.Cleanup(k.Stop)
	return k
}

func (k *Kafka) start() {
	k.t.Helper()
	c, err := kfake.NewCluster(k.opts...)
	if err != nil {
		k.t.Fatal(err)
	}
	k.mu.Lock()
	k.c = c
	k.mu.Unlock()
}

// Addr is the broker's host:port.
func (k *Kafka) Addr() string { return "127.0.0.1:" + strconv.Itoa(k.port) }

// Down makes the broker close every connection it is sent a request on,
// as a broker that is down, until Up; it keeps its records and topics
// (a kfake cluster started again would not: its topics get new ids).
func (k *Kafka) Down() {
	k.down.Store(true)
	k.mu.Lock()
	c := k.c
	k.mu.Unlock()
	c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		if !k.down.Load() {
			c.DropControl()
			return nil, nil, false
		}
		c.KeepControl()
		return nil, errors.New("brokertest: the broker is down"), true
	})
}

// Up ends Down.
func (k *Kafka) Up() { k.down.Store(false) }

// Stop stops the broker.
func (k *Kafka) Stop() {
	k.mu.Lock()
	c := k.c
	k.c = nil
	k.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// Records reads the records of a topic the running broker holds, in
// offset order.
func (k *Kafka) Records(topic string) []*kgo.Record {
	k.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addr()), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		k.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	end := k.endOffset(ctx, cl, topic)
	var out []*kgo.Record
	for int64(len(out)) < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			k.t.Fatalf("brokertest: read %d of the %d records of %s", len(out), end, topic)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// endOffset is the offset after the last record of the topic's one
// partition.
func (k *Kafka) endOffset(ctx context.Context, cl *kgo.Client, topic string) int64 {
	k.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, -1 // -1: the latest offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		k.t.Fatal(err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				k.t.Fatal(err)
			}
			return p.Offset
		}
	}
	k.t.Fatalf("brokertest: no offsets of %s", topic)
	return 0
}

// freePort finds a free loopback port.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}

// Loopback is the allow list of publishers under test: the brokers of
// this package listen on loopback.
var Loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// Publisher opens a publisher of a destination of type typ with open,
// dialing through a webhook sender that allows Loopback; the test's end
// closes it.
func Publisher(t testing.TB, open bus.Opener, typ, config string) bus.Publisher {
	t.Helper()
	d, err := delivery.ParseDestination(typ, []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	s := webhook.New(webhook.Config{AllowCIDRs: Loopback})
	t.Cleanup(s.Close)
	p, err := open(d, s.BrokerDialer(d.TLS()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// Message is an event of tenant acme with a fixed timestamp, its body
// {"id": id}.
func Message(id, typ, stream string) bus.Message {
	return bus.Message{EventFields: delivery.EventFields{ID: id, Type: typ, Tenant: "acme", Stream: stream},
		Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Body: []byte(`{"id":"` + id + `"}`)}
}
