package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestExampleConsumerWithAccessControl runs the example consumer against a
// Herald with access control on, once with the admin key given with -key
// and once with a key that may only read the subscription's streams,
// given in HERALD_KEY: both read what was appended and ack it, so the
// consumer ends IDLE with its offset at the stream's tail.
func TestExampleConsumerWithAccessControl(t *testing.T) {
	t.Parallel()
	k := startKeyed(t, t.TempDir(), "--webhook-allow-cidrs", "127.0.0.0/8")
	var scoped struct{ Key string }
	if resp, out := k.call(tenantAdminKey, "POST", "/_herald/v1/keys",
		`{"scopes":["streams:read"],"paths":["/agents/**"],"description":"example consumer"}`, &scoped); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create the read key: %d %s", resp.StatusCode, out)
	}

	for _, tc := range []struct {
		name, sub, pattern, stream string
		args, env                  []string
	}{
		{name: "admin key with -key", sub: "admin", pattern: "/jobs/*", stream: "/jobs/task-1", args: []string{"-key", tenantAdminKey}},
		{name: "read-only key in HERALD_KEY", sub: "reader", pattern: "/agents/*", stream: "/agents/task-1", env: []string{"HERALD_KEY=" + scoped.Key}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hookAddr := freeAddr(t)
			var sub struct {
				Secret string `json:"webhook_secret"`
			}
			if resp, out := k.call(tenantAdminKey, "PUT", tc.pattern+"?subscription="+tc.sub,
				`{"webhook": "http://`+hookAddr+`/webhook"}`, &sub); resp.StatusCode != http.StatusCreated {
				t.Fatalf("create subscription: %d %s", resp.StatusCode, out)
			}
			stream := tc.stream

			lines := startExampleConsumer(t, tc.env, append([]string{"-listen", hookAddr, "-secret", sub.Secret}, tc.args...)...)

			resp, _ := k.call(tenantAdminKey, "PUT", stream, "", nil)
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("create stream: %d", resp.StatusCode)
			}
			resp, raw := do(t, "POST", k.base+stream, map[string]string{"Authorization": "Bearer " + tenantAdminKey, "Content-Type": "application/json"}, `{"step":1}`)
			if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
				t.Fatalf("append: %d %s", resp.StatusCode, raw)
			}
			tail := resp.Header.Get("Stream-Next-Offset")
			for {
				l := lines.next(t, "msg=batch", 10*time.Second)
				if strings.Contains(l, "next_offset="+tail) {
					if !strings.Contains(l, `{\"step\":1}`) {
						t.Fatalf("batch: %s", l)
					}
					break
				}
			}

			// Herald has the ack: the consumer is IDLE at the tail.
			id := "/_herald/v1/consumers/" + tc.sub + ":" + url.QueryEscape(stream)
			deadline := time.Now().Add(10 * time.Second)
			for {
				var c struct {
					State   string `json:"state"`
					Streams []struct {
						Path, Acked string
					} `json:"streams"`
				}
				resp, raw := k.call(tenantAdminKey, "GET", id, "", &c)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("GET %s: %d %s", id, resp.StatusCode, raw)
				}
				if c.State == "IDLE" && len(c.Streams) == 1 && c.Streams[0].Acked == tail {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the consumer did not ack %s: %s\n%s", tail, raw, k.logs)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
