package deliveryapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/bus"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/webhook"
)

// brokerRig is a rig whose engine has broker destinations behind the
// real address guard, which allows no private range.
func brokerRig(t *testing.T) *rig {
	sender := webhook.New(webhook.Config{})
	t.Cleanup(sender.Close)
	pool, err := bus.NewPool(bus.PoolConfig{Guard: sender})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return newRig(t, func(c *dispatch.EngineConfig) { c.Destinations = pool })
}

type brokerView struct {
	ID     string         `json:"id"`
	Type   string         `json:"type"`
	URL    string         `json:"url"`
	Config map[string]any `json:"config"`
	Error  struct {
		Code, Field string
	} `json:"error"`
}

// A broker endpoint is created with its type and config, shown with its
// credentials masked in every answer, keeps them when a PATCH sends the
// mask back, and drops them (refusing the mask) when its servers move.
func TestBrokerEndpointCredentialsAreNeverShown(t *testing.T) {
	t.Parallel()
	r := brokerRig(t)
	var v brokerView
	if code := r.call("POST", "/_herald/v1/endpoints", `{"type":"nats","config":{"servers":["tls://93.184.216.34:4222"],"jetstream":true,"user":"herald","password":"s3cret"}}`, &v); code != 201 {
		t.Fatalf("create: %d %+v", code, v)
	}
	if v.Type != "nats" || v.URL != "" || v.Config["password"] != "***" || v.Config["user"] != "herald" || v.Config["subject"] != "herald.{type}" {
		t.Fatalf("created = %+v", v)
	}
	for _, path := range []string{"/_herald/v1/endpoints/" + v.ID, "/_herald/v1/endpoints"} {
		var raw map[string]any
		r.call("GET", path, "", &raw)
		if s := strings.Join(strings.Fields(toJSON(t, raw)), ""); strings.Contains(s, "s3cret") || !strings.Contains(s, `"password":"***"`) {
			t.Fatalf("GET %s shows %s", path, s)
		}
	}
	// The config sent back as read, with a new subject: the password is
	// kept.
	var p brokerView
	if code := r.call("PATCH", "/_herald/v1/endpoints/"+v.ID, `{"config":{"servers":["tls://93.184.216.34:4222"],"jetstream":true,"user":"herald","password":"***","subject":"x.{type}"}}`, &p); code != 200 {
		t.Fatalf("patch: %d %+v", code, p)
	}
	ep, err := r.st.EndpointGet(t.Context(), v.ID)
	if err != nil || !strings.Contains(string(ep.Destination), `"password":"s3cret"`) || !strings.Contains(string(ep.Destination), `"subject":"x.{type}"`) {
		t.Fatalf("stored = %s, %v", ep.Destination, err)
	}
	// Other servers with the mask: refused, nothing changes.
	if code := r.call("PATCH", "/_herald/v1/endpoints/"+v.ID, `{"config":{"servers":["tls://93.184.216.35:4222"],"user":"herald","password":"***"}}`, &p); code != 400 ||
		p.Error.Code != "INVALID_DESTINATION" || p.Error.Field != "config.password" {
		t.Fatalf("patch to other servers with the mask: %d %+v", code, p)
	}
}

// A broker address in a refused range is URL_REFUSED, as a webhook URL
// would be; an unknown type or a bad config is INVALID_DESTINATION, and
// verification is for webhooks.
func TestBrokerEndpointValidation(t *testing.T) {
	t.Parallel()
	r := brokerRig(t)
	for _, c := range []struct{ body, code, field string }{
		{`{"type":"kafka","config":{"brokers":["127.0.0.1:9092"]}}`, "URL_REFUSED", "config.brokers"},
		{`{"type":"nats","config":{"servers":["nats://10.1.2.3:4222"]}}`, "URL_REFUSED", "config.servers"},
		{`{"type":"nats","config":{"servers":["nats://93.184.216.34:4222"]}}`, "URL_REFUSED", "config.servers"}, // plaintext to a public address
		{`{"type":"smtp","config":{}}`, "INVALID_DESTINATION", "type"},
		{`{"type":"kafka"}`, "INVALID_DESTINATION", "config"},
		{`{"type":"kafka","url":"https://x.example","config":{"brokers":["93.184.216.34:9093"],"tls":{}}}`, "INVALID_DESTINATION", "url"},
		{`{"type":"kafka","verify":true,"config":{"brokers":["93.184.216.34:9093"],"tls":{}}}`, "INVALID_DESTINATION", "verify"},
	} {
		var v brokerView
		if code := r.call("POST", "/_herald/v1/endpoints", c.body, &v); code != 400 || v.Error.Code != c.code || v.Error.Field != c.field {
			t.Errorf("%s: %d %+v, want %s on %s", c.body, code, v.Error, c.code, c.field)
		}
	}
	eps := r.call("GET", "/_herald/v1/endpoints", "", nil)
	if n, _ := r.st.EndpointCount(t.Context()); n["active"] != 0 || eps != 200 {
		t.Fatalf("refused endpoints were stored: %v", n)
	}
}

// A PATCH that changes the type alone drops what the old type had: a
// webhook made a Kafka endpoint loses its URL, and back.
func TestPatchChangesTheDestinationType(t *testing.T) {
	t.Parallel()
	r := brokerRig(t)
	var v brokerView
	if code := r.call("POST", "/_herald/v1/endpoints", `{"url":"`+hookURL+`"}`, &v); code != 201 {
		t.Fatalf("create: %d %+v", code, v)
	}
	if code := r.call("PATCH", "/_herald/v1/endpoints/"+v.ID, `{"type":"kafka","config":{"brokers":["93.184.216.34:9093"],"tls":{}}}`, &v); code != 200 ||
		v.Type != "kafka" || v.URL != "" || v.Config["topic_prefix"] != "herald." {
		t.Fatalf("to kafka: %d %+v", code, v)
	}
	if code := r.call("PATCH", "/_herald/v1/endpoints/"+v.ID, `{"type":"webhook","url":"`+hookURL+`"}`, &v); code != 200 || v.Type != "webhook" || v.Config != nil {
		t.Fatalf("back to a webhook: %d %+v", code, v)
	}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
