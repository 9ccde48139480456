package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseDestinationDefaults(t *testing.T) {
	t.Parallel()
	d, err := ParseDestination(DestinationNATS, []byte(`{"servers":["nats://n.example","tls://[::1]:4333"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.NATS.Subject != DefaultNATSSubject || !d.TLS() || strings.Join(d.Addresses(), ",") != "n.example:4222,[::1]:4333" {
		t.Fatalf("nats = %+v, tls %v, addresses %v", d.NATS, d.TLS(), d.Addresses())
	}
	k, err := ParseDestination(DestinationKafka, []byte(`{"brokers":["k.example:9092"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if k.Kafka.Topic != DefaultKafkaTopic || *k.Kafka.TopicPrefix != DefaultKafkaTopicPrefix || k.Kafka.Key != KafkaKeyStream || k.TLS() {
		t.Fatalf("kafka = %+v", k.Kafka)
	}
	raw, err := k.JSON()
	if err != nil || string(raw) != `{"brokers":["k.example:9092"],"topic":"{type}","topic_prefix":"herald.","key":"stream"}` {
		t.Fatalf("kafka JSON = %s, %v", raw, err)
	}
}

func TestParseDestinationRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ typ, config, field string }{
		{"smtp", `{}`, "type"},
		{DestinationNATS, ``, "config"},
		{DestinationNATS, `{"servers":[]}`, "config.servers"},
		{DestinationNATS, `{"servers":["http://n.example"]}`, "config.servers[0]"},
		{DestinationNATS, `{"servers":["nats://u:p@n.example"]}`, "config.servers[0]"},
		{DestinationNATS, `{"servers":["nats://n.example"],"subject":"a.*"}`, "config.subject"},
		{DestinationNATS, `{"servers":["nats://n.example"],"subject":"a.{nope}"}`, "config.subject"},
		{DestinationNATS, `{"servers":["nats://n.example"],"user":"u"}`, "config.user"},
		{DestinationNATS, `{"servers":["nats://n.example"],"token":"t","user":"u","password":"p"}`, "config"},
		{DestinationNATS, `{"servers":["nats://n.example"],"nkey_seed":"UA"}`, "config.nkey_seed"},
		{DestinationNATS, `{"servers":["nats://n.example"],"creds":"x"}`, "config.creds"},
		{DestinationNATS, `{"servers":["nats://n.example"],"surprise":1}`, "config"},
		{DestinationKafka, `{"brokers":["k.example"]}`, "config.brokers[0]"},
		{DestinationKafka, `{"brokers":["k.example:0"]}`, "config.brokers[0]"},
		{DestinationKafka, `{"brokers":["k.example:9092"],"topic":"a/b"}`, "config.topic"},
		{DestinationKafka, `{"brokers":["k.example:9092"],"topic_prefix":"a b"}`, "config.topic_prefix"},
		{DestinationKafka, `{"brokers":["k.example:9092"],"key":"data"}`, "config.key"},
		{DestinationKafka, `{"brokers":["k.example:9092"],"sasl":{"mechanism":"GSSAPI","username":"u","password":"p"}}`, "config.sasl.mechanism"},
		{DestinationKafka, `{"brokers":["k.example:9092"],"sasl":{"mechanism":"PLAIN","username":"u"}}`, "config.sasl"},
		{DestinationKafka, `{"brokers":["k.example:9092"],"tls":{"ca":"not pem"}}`, "config.tls.ca"},
	} {
		_, err := ParseDestination(c.typ, []byte(c.config))
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Code != CodeInvalidDestination || ve.Field != c.field {
			t.Errorf("%s %s: %v, want %s on %s", c.typ, c.config, err, CodeInvalidDestination, c.field)
		}
	}
}

func TestSubjectTopicAndKey(t *testing.T) {
	t.Parallel()
	f := EventFields{ID: "e1", Type: "order.paid", Tenant: "acme.eu", Stream: "/orders/eu west"}
	n := &NATSConfig{Subject: "x.{tenant}.{stream}.{type}"}
	if got := n.SubjectOf(f); got != "x.acme_eu.orders.eu_west.order.paid" {
		t.Fatalf("subject = %q", got)
	}
	if got := n.SubjectOf(EventFields{Type: "a", Stream: "/s"}); got != "x._.s.a" {
		t.Fatalf("subject without a tenant = %q", got)
	}
	prefix := "p-"
	k := &KafkaConfig{Topic: "{tenant}.{type}", TopicPrefix: &prefix, Key: KafkaKeyTenant}
	if got := k.TopicOf(f); got != "p-acme_eu.order.paid" {
		t.Fatalf("topic = %q", got)
	}
	if string(k.KeyOf(f)) != "acme.eu" {
		t.Fatalf("key = %q", k.KeyOf(f))
	}
	k.Key = KafkaKeyStream
	if string(k.KeyOf(f)) != "/orders/eu west" {
		t.Fatalf("stream key = %q", k.KeyOf(f))
	}
	long := &KafkaConfig{Topic: strings.Repeat("a", 200) + ".{type}", TopicPrefix: &prefix}
	if got := long.TopicOf(EventFields{Type: strings.Repeat("b", 100)}); len(got) != MaxKafkaTopicLen {
		t.Fatalf("topic of %d bytes", len(got))
	}
}

func TestMaskedAndKeepMasked(t *testing.T) {
	t.Parallel()
	cur, err := ParseDestination(DestinationKafka, []byte(`{"brokers":["k.example:9092"],"sasl":{"mechanism":"PLAIN","username":"u","password":"s3cret"}}`))
	if err != nil {
		t.Fatal(err)
	}
	masked := cur.Masked()
	if strings.Contains(string(masked), "s3cret") || !strings.Contains(string(masked), `"password":"***"`) {
		t.Fatalf("masked = %s", masked)
	}
	// Sent back as read: the stored password is kept.
	next, err := ParseDestination(DestinationKafka, masked)
	if err != nil {
		t.Fatal(err)
	}
	if err := KeepMasked(cur, next); err != nil || next.Kafka.SASL.Password != "s3cret" {
		t.Fatalf("keep = %v, password %q", err, next.Kafka.SASL.Password)
	}
	// Sent back with other brokers: the credential does not follow.
	var moved map[string]any
	if err := json.Unmarshal(masked, &moved); err != nil {
		t.Fatal(err)
	}
	moved["brokers"] = []string{"evil.example:9092"}
	b, _ := json.Marshal(moved)
	other, err := ParseDestination(DestinationKafka, b)
	if err != nil {
		t.Fatal(err)
	}
	var ve *ValidationError
	if err := KeepMasked(cur, other); !errors.As(err, &ve) || ve.Field != "config.sasl.password" {
		t.Fatalf("keep with other brokers = %v", err)
	}
	n, err := ParseDestination(DestinationNATS, []byte(`{"servers":["nats://n.example"],"token":"t0k"}`))
	if err != nil {
		t.Fatal(err)
	}
	if m := string(n.Masked()); strings.Contains(m, "t0k") || !strings.Contains(m, `"token":"***"`) {
		t.Fatalf("nats masked = %s", m)
	}
	if err := KeepMasked(nil, must(t, DestinationNATS, `{"servers":["nats://n.example"],"token":"***"}`)); err == nil {
		t.Fatal("a masked token with nothing stored was kept")
	}
}

func must(t *testing.T, typ, config string) *Destination {
	t.Helper()
	d, err := ParseDestination(typ, []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestValidateEndpointOfABroker(t *testing.T) {
	t.Parallel()
	var checked []string
	p := &ValidateEndpointParams{
		CheckURL: func(context.Context, string) error { t.Fatal("a broker endpoint's URL was checked"); return nil },
		CheckAddresses: func(_ context.Context, d *Destination) error {
			checked = d.Addresses()
			return nil
		},
		CompileStream: compilePrefixGlob,
	}
	p.Config = &EndpointConfig{Type: DestinationKafka, Config: json.RawMessage(`{"brokers":["k.example:9092"]}`)}
	out, err := ValidateEndpoint(t.Context(), p)
	if err != nil || out.Type != DestinationKafka || !strings.Contains(string(out.Config), `"key":"stream"`) || len(checked) != 1 {
		t.Fatalf("out = %+v, %v, checked %v", out, err, checked)
	}
	p.Config = &EndpointConfig{Type: DestinationKafka, URL: "https://x.example", Config: json.RawMessage(`{"brokers":["k.example:9092"]}`)}
	var ve *ValidationError
	if _, err := ValidateEndpoint(t.Context(), p); !errors.As(err, &ve) || ve.Field != "url" {
		t.Fatalf("a broker endpoint with a url = %v", err)
	}
	p.CheckURL = func(context.Context, string) error { return nil }
	p.Config = &EndpointConfig{URL: "https://x.example", Config: json.RawMessage(`{"brokers":["k.example:9092"]}`)}
	if _, err := ValidateEndpoint(t.Context(), p); !errors.As(err, &ve) || ve.Field != "config" {
		t.Fatalf("a webhook with a config = %v", err)
	}
	p.Config = &EndpointConfig{URL: "https://x.example"}
	if out, err := ValidateEndpoint(t.Context(), p); err != nil || out.Type != DestinationWebhook {
		t.Fatalf("a webhook = %+v, %v", out, err)
	}
}
