package deliveryapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/delivery/internal/deliverytest"
	"github.com/heraldstreams/herald/internal/testhttp"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/webhook"
)

// echoChallenges answers ownership challenges (the request carries the
// verification header) with {"challenge": <code>} and passes every other
// request to next.
func echoChallenges(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if code := req.Header.Get(delivery.HeaderVerification); code != "" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"challenge":%q}`, code)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// challengeCodes returns the codes of the challenges the receiver got.
func challengeCodes(rc *deliverytest.Receiver) []string {
	var out []string
	for _, q := range rc.Requests() {
		if c := q.Header.Get(delivery.HeaderVerification); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// eventsGot counts the requests that were not challenges.
func eventsGot(rc *deliverytest.Receiver) int {
	n := 0
	for _, q := range rc.Requests() {
		if q.Header.Get(delivery.HeaderVerification) == "" {
			n++
		}
	}
	return n
}

// An endpoint under verification whose challenge is not answered is
// stored pending and receives nothing (events published meanwhile are
// not matched); the code the challenge carried, given to POST .../verify,
// verifies it (a wrong code does not); a URL change makes it pending
// again and challenges the new URL; POST .../verify re-runs the challenge,
// and once answered the endpoint receives events again. A change that
// keeps the URL keeps it verified.
func TestEndpointVerificationLifecycle(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		var ep endpointJSON
		if code := r.call("POST", "/_herald/v1/endpoints", `{"url":"`+hookURL+`","verify":true,"name":"orders"}`, &ep); code != 201 {
			t.Fatalf("create: %d", code)
		}
		if ep.Status != store.EndpointPending || !ep.Verify || ep.VerifiedAt != nil || ep.VerificationError == "" || ep.Name != "orders" {
			t.Fatalf("unanswered challenge: %+v", ep)
		}
		codes := challengeCodes(r.rc)
		if len(codes) != 1 || !strings.HasPrefix(codes[0], "hvc_") {
			t.Fatalf("challenges sent: %v", codes)
		}
		r.publish("a.b", "", `{"i":1}`)
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := eventsGot(r.rc); n != 0 || len(r.deliveries(ep.ID)) != 0 {
			t.Fatalf("a pending endpoint got %d events, %d deliveries", n, len(r.deliveries(ep.ID)))
		}

		var e apiErr
		if code := r.call("POST", "/_herald/v1/endpoints/"+ep.ID+"/verify", `{"verification_code":"hvc_000000000000000000000000"}`, &e); code != 422 || e.Error.Code != "VERIFICATION_FAILED" {
			t.Fatalf("wrong code: %d %+v", code, e)
		}
		if code := r.call("POST", "/_herald/v1/endpoints/"+ep.ID+"/verify", `{"verification_code":"`+codes[0]+`"}`, &ep); code != 200 || ep.Status != store.EndpointActive || ep.VerifiedAt == nil {
			t.Fatalf("right code: %d %+v", code, ep)
		}
		r.publish("a.b", "", `{"i":2}`)
		synctest.Wait()
		if n := eventsGot(r.rc); n != 1 {
			t.Fatalf("verified endpoint got %d events, want 1", n)
		}
		// A code is good once.
		if code := r.call("POST", "/_herald/v1/endpoints/"+ep.ID+"/verify", `{"verification_code":"`+codes[0]+`"}`, &e); code != 422 {
			t.Fatalf("code reused: %d", code)
		}

		// Keeping the URL keeps the verification.
		if code := r.call("PATCH", "/_herald/v1/endpoints/"+ep.ID, `{"description":"x"}`, &ep); code != 200 || ep.Status != store.EndpointActive {
			t.Fatalf("patch description: %d %+v", code, ep)
		}
		// A new URL is pending until verified.
		if code := r.call("PATCH", "/_herald/v1/endpoints/"+ep.ID, `{"url":"http://127.0.0.2:9/hook"}`, &ep); code != 200 || ep.Status != store.EndpointPending {
			t.Fatalf("patch url: %d %+v", code, ep)
		}
		if codes := challengeCodes(r.rc); len(codes) != 2 {
			t.Fatalf("the new URL was not challenged: %v", codes)
		}
		r.publish("a.b", "", `{"i":3}`)
		synctest.Wait()
		if n := eventsGot(r.rc); n != 1 {
			t.Fatalf("pending again, got %d events, want still 1", n)
		}

		r.sender.Client.Transport = testhttp.Transport{Handler: echoChallenges(r.rc)}
		var again endpointJSON
		if code := r.call("POST", "/_herald/v1/endpoints/"+ep.ID+"/verify", ``, &again); code != 200 || again.Status != store.EndpointActive || again.VerificationError != "" {
			t.Fatalf("re-run challenge: %d %+v", code, again)
		}
		r.publish("a.b", "", `{"i":4}`)
		synctest.Wait()
		if n := eventsGot(r.rc); n != 2 {
			t.Fatalf("after verification got %d events, want 2 (the one published while pending is not matched)", n)
		}

		// An endpoint that answers its challenge on create is active at once.
		var ok endpointJSON
		if code := r.call("POST", "/_herald/v1/endpoints", `{"url":"`+hookURL+`","verify":true}`, &ok); code != 201 || ok.Status != store.EndpointActive || ok.VerifiedAt == nil {
			t.Fatalf("answered challenge: %d %+v", code, ok)
		}
	})
}

// With RequireVerification every new endpoint is challenged, whatever
// its "verify" says.
func TestEndpointVerificationRequired(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, func(c *dispatch.EngineConfig) { c.RequireVerification = true })
		ep := r.endpoint(&dispatch.CreateEndpointParams{Active: true})
		if ep.Status() != store.EndpointPending || len(challengeCodes(r.rc)) != 1 {
			t.Fatalf("status %s, challenges %v", ep.Status(), challengeCodes(r.rc))
		}
	})
}

// A breaker-disabled endpoint stays disabled through a PATCH that does
// not say "active": true (its failures are kept), and is re-enabled by
// one that does.
func TestPatchKeepsBreakerDisabled(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, func(c *dispatch.EngineConfig) {
			c.BreakerThreshold = 2
			c.RetrySchedule = delivery.Schedule{0, time.Second, time.Second, time.Second}
		})
		ep := r.endpoint(&dispatch.CreateEndpointParams{Active: true})
		r.rc.SetRespond(func(int, delivery.Event) (int, map[string]string) { return http.StatusBadGateway, nil })
		r.publish("a.b", "", `{}`)
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		var v endpointJSON
		r.call("GET", "/_herald/v1/endpoints/"+ep.ID, "", &v)
		if v.Status != store.EndpointDisabled {
			t.Fatalf("status %s, want disabled", v.Status)
		}
		for _, patch := range []string{`{"description":"still broken"}`, `{"active":false}`, `{"name":"n","rate_limit":5}`} {
			if code := r.call("PATCH", "/_herald/v1/endpoints/"+ep.ID, patch, &v); code != 200 || v.Status != store.EndpointDisabled || v.ConsecutiveFailures != 2 || v.DisabledAt == nil {
				t.Fatalf("PATCH %s: %d, status %s, failures %d", patch, code, v.Status, v.ConsecutiveFailures)
			}
		}
		r.rc.SetRespond(nil)
		if code := r.call("PATCH", "/_herald/v1/endpoints/"+ep.ID, `{"active":true}`, &v); code != 200 || v.Status != store.EndpointActive || v.ConsecutiveFailures != 0 {
			t.Fatalf(`PATCH {"active":true}: %d, status %s, failures %d`, code, v.Status, v.ConsecutiveFailures)
		}
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		if ds := r.deliveries(ep.ID); len(ds) != 1 || ds[0].Status != store.DeliveryDelivered {
			t.Fatalf("after re-enabling: %+v", ds)
		}
	})
}

// timeout_ms is bounded by the installation's timeout and is the timeout
// of the endpoint's attempts; name, profile and failure_policy show the
// defaults when unset and can be patched.
func TestEndpointTimeoutAndFields(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var rec *timeoutRecorder
		r := newRig(t, func(c *dispatch.EngineConfig) {
			c.Timeout = 10 * time.Second
			rec = &timeoutRecorder{Sender: c.Sender}
			c.Sender = rec
		})
		var e apiErr
		for body, code := range map[string]string{
			`{"url":"` + hookURL + `","timeout_ms":10001}`:                                         "INVALID_TIMEOUT",
			`{"url":"` + hookURL + `","timeout_ms":-1}`:                                            "INVALID_TIMEOUT",
			`{"url":"` + hookURL + `","profile":"nope"}`:                                           "INVALID_PROFILE",
			`{"url":"` + hookURL + `","failure_policy":"never"}`:                                   "INVALID_FAILURE_POLICY",
			`{"url":"` + hookURL + `","name":"a\u0000b"}`:                                          "INVALID_NAME",
			`{"url":"` + hookURL + `","headers":{"X-Ruche-Signature":"x"},"profile":"x-ruche-v1"}`: "INVALID_HEADER",
		} {
			if got := r.call("POST", "/_herald/v1/endpoints", body, &e); got != 400 || e.Error.Code != code {
				t.Errorf("%s: %d %+v, want 400 %s", body, got, e.Error, code)
			}
		}
		var ep endpointJSON
		if code := r.call("POST", "/_herald/v1/endpoints", `{"url":"`+hookURL+`","timeout_ms":1500}`, &ep); code != 201 {
			t.Fatalf("create: %d", code)
		}
		if ep.TimeoutMS != 1500 || ep.Profile != delivery.ProfileStandardWebhooks || ep.FailurePolicy != delivery.FailurePolicyStandard || ep.Name != "" {
			t.Fatalf("created %+v", ep)
		}
		r.publish("a.b", "", `{}`)
		synctest.Wait()
		if got := rec.last(); got != 1500*time.Millisecond {
			t.Fatalf("attempt timeout %s, want 1.5s", got)
		}
		if code := r.call("PATCH", "/_herald/v1/endpoints/"+ep.ID, `{"timeout_ms":null,"name":"orders","profile":"x-agentidp-sha256","failure_policy":"retry_all"}`, &ep); code != 200 {
			t.Fatalf("patch: %d", code)
		}
		if ep.TimeoutMS != 10000 || ep.Name != "orders" || ep.Profile != delivery.ProfileXAgentIdPSHA256 || ep.FailurePolicy != delivery.FailurePolicyRetryAll {
			t.Fatalf("patched %+v", ep)
		}
		r.publish("a.b", "", `{}`)
		synctest.Wait()
		if got := rec.last(); got != 10*time.Second {
			t.Fatalf("attempt timeout %s, want the installation's 10s", got)
		}
	})
}

// timeoutRecorder is a Sender that records the timeout of each request.
type timeoutRecorder struct {
	dispatch.Sender
	mu       sync.Mutex
	timeouts []time.Duration
}

func (s *timeoutRecorder) Send(ctx context.Context, req *webhook.Request) (*webhook.Response, error) {
	s.mu.Lock()
	s.timeouts = append(s.timeouts, req.Timeout)
	s.mu.Unlock()
	return s.Sender.Send(ctx, req)
}

func (s *timeoutRecorder) last() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.timeouts) == 0 {
		return 0
	}
	return s.timeouts[len(s.timeouts)-1]
}
