package deliveryapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/store"
)

// Custom header values often are credentials of the receiver (an API key,
// a bearer token) that whoever configured them meant for its host only,
// and the API never shows them. A PATCH that moves an endpoint to another
// origin must not carry them there: whoever may change the URL may not
// thereby read the values. So a change of origin drops every stored
// header value the same request does not set again.

// dropHeadersOnNewOrigin removes from next (the merged configuration's
// headers) the stored headers of cur that the PATCH body patch does not
// set again with a value (the mask does not count) when nextURL is of
// another origin than cur's URL, and returns their names, sorted.
// A broker endpoint's origin is its type and its servers (or brokers).
func dropHeadersOnNewOrigin(cur *store.Endpoint, next *delivery.EndpointConfig, patch map[string]json.RawMessage) []string {
	if len(cur.Headers) == 0 || sameDestination(cur, next) {
		return nil
	}
	set := map[string]bool{}
	var given map[string]string
	if raw, ok := patch["headers"]; ok && json.Unmarshal(raw, &given) == nil {
		for name, v := range given {
			if v != MaskedHeaderValue {
				set[http.CanonicalHeaderKey(name)] = true
			}
		}
	}
	var dropped []string
	for name := range next.Headers {
		canon := http.CanonicalHeaderKey(name)
		if _, stored := cur.Headers[canon]; stored && !set[canon] { // stored names are canonical
			delete(next.Headers, name)
			dropped = append(dropped, canon)
		}
	}
	slices.Sort(dropped)
	return dropped
}

// sameDestination reports whether next sends where cur does: a URL of
// the same origin, or a broker of the same type at the same addresses.
func sameDestination(cur *store.Endpoint, next *delivery.EndpointConfig) bool {
	curBroker, nextBroker := delivery.IsBroker(cur.Type), delivery.IsBroker(next.Type)
	if !curBroker && !nextBroker {
		return sameOrigin(cur.URL, next.URL)
	}
	if cur.Type != next.Type {
		return false
	}
	a, errA := delivery.ParseDestination(cur.Type, cur.Destination)
	b, errB := delivery.ParseDestination(next.Type, next.Config)
	return errA == nil && errB == nil && slices.Equal(a.Addresses(), b.Addresses())
}

// sameOrigin reports whether two endpoint URLs share scheme, host and
// port (the default port of the scheme when none is written). A URL that
// does not parse is of no origin: never the same.
func sameOrigin(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Hostname(), ub.Hostname()) && port(ua) == port(ub)
}

// port is u's port, or its scheme's default.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

// maskedConfig is a broker endpoint's config as the API shows it, its
// credentials masked; null for a webhook.
func maskedConfig(ep *store.Endpoint) json.RawMessage {
	if !delivery.IsBroker(ep.Type) {
		return json.RawMessage("null")
	}
	d, err := delivery.ParseDestination(ep.Type, ep.Destination)
	if err != nil {
		return json.RawMessage("null")
	}
	return d.Masked()
}
