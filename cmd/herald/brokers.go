package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/heraldstreams/herald/bus"
	"github.com/heraldstreams/herald/bus/kafkabus"
	"github.com/heraldstreams/herald/bus/natsbus"
	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/webhook"
)

// brokersConfig is the configuration of broker destinations
// (docs/delivery.md, Broker destinations): the installation's built-in
// ones, and whether tenants may configure their own.
type brokersConfig struct {
	KafkaBrokers     string
	KafkaTopicPrefix string
	KafkaTLS         bool
	NATSURL          string
	NATSJetStream    bool
	TenantBrokers    bool
}

func (c *brokersConfig) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.KafkaBrokers, "kafka-brokers", "",
		"comma-separated Kafka brokers (host:port) of a built-in destination that receives every event, on topic <prefix>.<event type>; their addresses pass the webhook address policy (--webhook-allow-cidrs for private ones)")
	fs.StringVar(&c.KafkaTopicPrefix, "kafka-topic-prefix", "herald", "prefix of the built-in Kafka destination's topics, before .<event type>")
	fs.BoolVar(&c.KafkaTLS, "kafka-tls", false, "the built-in Kafka destination connects with TLS (system roots); without it, only brokers in --webhook-allow-cidrs may be reached")
	fs.StringVar(&c.NATSURL, "nats-url", "",
		"comma-separated nats:// (or tls://) URLs of a built-in destination that receives every event, on subject herald.<event type>; their addresses pass the webhook address policy (--webhook-allow-cidrs for private ones)")
	fs.BoolVar(&c.NATSJetStream, "nats-jetstream", true,
		"the built-in NATS destination publishes to JetStream and waits for the stream's acknowledgement (a stream must store herald.>); false: core NATS")
	fs.BoolVar(&c.TenantBrokers, "delivery-tenant-brokers", false,
		"event delivery: let credentials of a tenant configure endpoints of type nats and kafka (off: only credentials without a tenant may)")
}

func (c *brokersConfig) problems() []string {
	var out []string
	if _, err := c.builtins(); err != nil {
		out = append(out, err.Error())
	}
	return out
}

// builtins are the built-in destinations the flags describe, each with a
// nil config when its flag is not set (so a destination whose flag was
// removed is removed).
func (c *brokersConfig) builtins() ([]dispatch.BuiltinParams, error) {
	kafka := dispatch.BuiltinParams{ID: dispatch.BuiltinKafkaID, Name: "built-in Kafka", Type: delivery.DestinationKafka}
	nats := dispatch.BuiltinParams{ID: dispatch.BuiltinNATSID, Name: "built-in NATS", Type: delivery.DestinationNATS}
	if brokers := splitList(c.KafkaBrokers); len(brokers) > 0 {
		prefix := c.KafkaTopicPrefix
		if prefix != "" {
			prefix += "."
		}
		kc := delivery.KafkaConfig{Brokers: brokers, Topic: "{type}", TopicPrefix: &prefix}
		if c.KafkaTLS {
			kc.TLS = &delivery.TLSConfig{}
		}
		raw, err := json.Marshal(kc)
		if err != nil {
			return nil, err
		}
		if _, err := delivery.ParseDestination(delivery.DestinationKafka, raw); err != nil {
			return nil, fmt.Errorf("--kafka-brokers, --kafka-topic-prefix: %w", err)
		}
		kafka.Config = raw
	}
	if servers := splitList(c.NATSURL); len(servers) > 0 {
		raw, err := json.Marshal(delivery.NATSConfig{Servers: servers, Subject: "herald.{type}", JetStream: c.NATSJetStream})
		if err != nil {
			return nil, err
		}
		if _, err := delivery.ParseDestination(delivery.DestinationNATS, raw); err != nil {
			return nil, fmt.Errorf("--nats-url: %w", err)
		}
		nats.Config = raw
	}
	return []dispatch.BuiltinParams{kafka, nats}, nil
}

// newBusPool returns the publishers of broker destinations, dialing
// through the webhook sender's address guard.
func newBusPool(sender *webhook.Sender) (*bus.Pool, error) {
	return bus.NewPool(bus.PoolConfig{Guard: sender, Openers: map[string]bus.Opener{
		delivery.DestinationNATS:  natsbus.Open,
		delivery.DestinationKafka: kafkabus.Open,
	}})
}

// ensureBuiltins makes the stored built-in destinations match the flags.
func ensureBuiltins(ctx context.Context, eng *dispatch.Engine, c *brokersConfig) error {
	bs, err := c.builtins()
	if err != nil {
		return err
	}
	for _, b := range bs {
		if err := eng.EnsureBuiltin(ctx, b); err != nil {
			return err
		}
	}
	return nil
}
