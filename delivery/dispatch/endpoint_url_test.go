package dispatch

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/webhook"
)

// policyCheck checks URLs with a sender policy, without DNS.
func policyCheck(allow ...string) func(context.Context, string) error {
	var p webhook.Policy
	for _, a := range allow {
		p.AllowCIDRs = append(p.AllowCIDRs, netip.MustParsePrefix(a))
	}
	return func(_ context.Context, raw string) error {
		_, err := p.CheckURL(raw)
		return err
	}
}

func TestValidateEndpointURLRefusalKeepsTheReason(t *testing.T) {
	t.Parallel()
	validate := func(url string, allow ...string) (*delivery.EndpointConfig, error) {
		return delivery.ValidateEndpoint(context.Background(), &delivery.ValidateEndpointParams{
			Config: &delivery.EndpointConfig{URL: url}, CheckURL: urlCheck(policyCheck(allow...)), CompileStream: compileStream,
		})
	}
	_, err := validate("https://127.0.0.1/in")
	var re *webhook.RefusedError
	if !errors.As(err, &re) || re.Reason != webhook.ReasonLoopback {
		t.Fatalf("error %v does not carry the loopback refusal", err)
	}
	var ve *delivery.ValidationError
	if !errors.As(err, &ve) || ve.Code != delivery.CodeURLRefused || ve.Field != "url" {
		t.Fatalf("error %v is not a URL_REFUSED validation error on url", err)
	}
	if !errors.Is(err, delivery.ErrInvalid) || !errors.Is(err, webhook.ErrURLRefused) {
		t.Fatal("URL refusal does not match both ErrInvalid and webhook.ErrURLRefused")
	}
	// With the development allow list, http to loopback is fine.
	got, err := validate("http://127.0.0.1:8080/in", "127.0.0.0/8")
	if err != nil || got.URL != "http://127.0.0.1:8080/in" {
		t.Fatalf("allowed loopback: %v", err)
	}
}

// The rules' default bound on timeout_ms is the sender's default timeout.
func TestDefaultMaxTimeoutIsTheSendersTimeout(t *testing.T) {
	t.Parallel()
	if delivery.DefaultMaxTimeout != webhook.DefaultTimeout {
		t.Fatalf("delivery.DefaultMaxTimeout %v, webhook.DefaultTimeout %v", delivery.DefaultMaxTimeout, webhook.DefaultTimeout)
	}
}
