package e2e

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// apiError checks that an answer is a 4xx JSON error with a code and a
// message in the user's terms (no Go type or package name), and returns
// the code.
func apiError(t *testing.T, what string, resp *http.Response, body string, status int) string {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("%s: status %d, want %d: %s", what, resp.StatusCode, status, body)
		return ""
	}
	var e struct {
		Error struct{ Code, Message, Field string }
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Errorf("%s: not a JSON error with a code and a message: %s", what, body)
		return ""
	}
	for _, goish := range []string{"delivery.", "endpointRequest", "EndpointConfig", "replayRequest", "testRequest", "Go ", "struct",
		"[]", "map[", "int64", "float64", "json:", "unmarshal", "RawMessage"} {
		if strings.Contains(e.Error.Message, goish) {
			t.Errorf("%s: the message speaks Go (%q): %s", what, goish, e.Error.Message)
		}
	}
	return e.Error.Code
}

// Bad input to /_herald/v1 is a 4xx JSON error in plain words, never a
// half-done change: secrets and custom headers with control characters,
// bodies of the wrong shape or size, and list cursors that no list gave.
func TestDeliveryAPIRefusesBadInput(t *testing.T) {
	t.Parallel()
	_, srv := newEventReceiver(t)
	s := startHerald(t, t.TempDir(), deliveryFlags...)
	hook := srv.URL + "/hooks"
	json := map[string]string{"Content-Type": "application/json"}
	send := func(method, path, body string) (*http.Response, string) {
		t.Helper()
		return do(t, method, s.base+"/_herald/v1"+path, json, body)
	}

	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	for _, secret := range []string{"whsec_" + key[:20] + "\r\n" + key[20:], "whsec_" + key + "\n", "whsec_" + key[:8] + "\r" + key[8:]} {
		body := `{"url":"` + hook + `","secret":` + quote(secret) + `}`
		resp, out := send("POST", "/endpoints", body)
		if code := apiError(t, "secret "+quote(secret), resp, out, http.StatusBadRequest); code != "" && code != "INVALID_SECRET" {
			t.Errorf("secret %q: code %s, want invalid_secret", secret, code)
		}
	}
	for _, headers := range []string{`{"X-A\r\nInjected":"v"}`, `{"X-A":"v\r\nInjected: 1"}`, `{"X-A":"v\n"}`, `{"X-A\n":"v"}`} {
		resp, out := send("POST", "/endpoints", `{"url":"`+hook+`","headers":`+headers+`}`)
		if code := apiError(t, "headers "+headers, resp, out, http.StatusBadRequest); code != "" && code != "INVALID_HEADER" {
			t.Errorf("headers %s: code %s, want invalid_header", headers, code)
		}
	}

	bad := []struct{ name, body, code string }{
		{"empty body", "", "INVALID_JSON"},
		{"blank body", "  \n", "INVALID_JSON"},
		{"not an object", `[1,2]`, "INVALID_JSON"},
		{"a string", `"x"`, "INVALID_JSON"},
		{"url of the wrong type", `{"url":5}`, "INVALID_JSON"},
		{"event_types of the wrong type", `{"url":"` + hook + `","event_types":"a.b"}`, "INVALID_JSON"},
		{"event_types of numbers", `{"url":"` + hook + `","event_types":[1]}`, "INVALID_JSON"},
		{"max_in_flight as a string", `{"url":"` + hook + `","max_in_flight":"8"}`, "INVALID_JSON"},
		{"max_in_flight fractional", `{"url":"` + hook + `","max_in_flight":1.5}`, "INVALID_JSON"},
		{"max_in_flight huge", `{"url":"` + hook + `","max_in_flight":1e30}`, "INVALID_JSON"},
		{"rate_limit as a string", `{"url":"` + hook + `","rate_limit":"fast"}`, "INVALID_JSON"},
		{"active as a string", `{"url":"` + hook + `","active":"yes"}`, "INVALID_JSON"},
		{"headers of numbers", `{"url":"` + hook + `","headers":{"X-A":1}}`, "INVALID_JSON"},
		{"headers as an array", `{"url":"` + hook + `","headers":["X-A"]}`, "INVALID_JSON"},
		{"retry_schedule as a number", `{"url":"` + hook + `","retry_schedule":5}`, ""},
		{"unknown field", `{"url":"` + hook + `","colour":"red"}`, "UNKNOWN_FIELD"},
		{"trailing data", `{"url":"` + hook + `"} {"url":"` + hook + `"}`, "INVALID_JSON"},
		{"trailing garbage", `{"url":"` + hook + `"}xyz`, "INVALID_JSON"},
		{"cut short", `{"url":"` + hook, "INVALID_JSON"},
	}
	for _, c := range bad {
		resp, out := send("POST", "/endpoints", c.body)
		if code := apiError(t, "create: "+c.name, resp, out, http.StatusBadRequest); c.code != "" && code != "" && code != c.code {
			t.Errorf("create: %s: code %s, want %s", c.name, code, c.code)
		}
	}
	huge := `{"url":"` + hook + `","description":"` + strings.Repeat("x", 2<<20) + `"}`
	resp, out := send("POST", "/endpoints", huge)
	apiError(t, "create: a 2 MiB body", resp, out, http.StatusRequestEntityTooLarge)

	// Nothing above created an endpoint.
	resp, out = send("GET", "/endpoints", "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(out, `"data":[]`) {
		t.Fatalf("endpoints after refused creates: %d %s", resp.StatusCode, out)
	}

	id, _ := createEndpoint(t, s.base, `{"url":"`+hook+`","description":"kept"}`)
	for _, c := range []struct{ name, body string }{
		{"a good field with a bad one", `{"description":"changed","max_in_flight":"8"}`},
		{"a good field with an unknown one", `{"description":"changed","colour":"red"}`},
		{"a header with a line break", `{"description":"changed","headers":{"X-A":"v\r\nInjected: 1"}}`},
		{"trailing garbage", `{"description":"changed"}xyz`},
		{"empty body", ``},
		{"not an object", `["description"]`},
	} {
		resp, out := send("PATCH", "/endpoints/"+id, c.body)
		apiError(t, "patch: "+c.name, resp, out, http.StatusBadRequest)
	}
	resp, out = send("PATCH", "/endpoints/"+id, huge)
	apiError(t, "patch: a 2 MiB body", resp, out, http.StatusRequestEntityTooLarge)
	resp, out = send("GET", "/endpoints/"+id, "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(out, `"description":"kept"`) || strings.Contains(out, "Injected") {
		t.Fatalf("the endpoint after refused patches: %d %s", resp.StatusCode, out)
	}

	for _, c := range []struct{ name, path, body string }{
		{"replay: since of the wrong type", "/endpoints/" + id + "/replay", `{"since":5}`},
		{"replay: not an object", "/endpoints/" + id + "/replay", `[]`},
		{"replay: trailing garbage", "/endpoints/" + id + "/replay", `{"offset":"-1"}]`},
		{"replay: unknown field", "/endpoints/" + id + "/replay", `{"offset":"-1","from":"x"}`},
		{"replay: empty body", "/endpoints/" + id + "/replay", ``},
		{"test: not an object", "/endpoints/" + id + "/test", `"x"`},
		{"test: trailing garbage", "/endpoints/" + id + "/test", `{"data":1}}`},
		{"test: unknown field", "/endpoints/" + id + "/test", `{"payload":1}`},
		{"events: type of the wrong type", "/events", `{"type":5}`},
		{"events: stream of the wrong type", "/events", `{"type":"a.b","stream":5}`},
		{"events: not an object", "/events", `[{"type":"a.b"}]`},
		{"events: trailing garbage", "/events", `{"type":"a.b"}xyz`},
		{"events: empty body", "/events", ``},
	} {
		resp, out := send("POST", c.path, c.body)
		apiError(t, c.name, resp, out, http.StatusBadRequest)
	}

	for _, c := range []string{"junk", "ep_", "ep_zz", "%00", "' OR 1=1"} {
		resp, out := do(t, "GET", s.base+"/_herald/v1/endpoints?cursor="+urlQuery(c), nil, "")
		if code := apiError(t, "endpoints cursor "+quote(c), resp, out, http.StatusBadRequest); code != "" && code != "INVALID_PARAMETER" {
			t.Errorf("endpoints cursor %q: code %s", c, code)
		}
		resp, out = do(t, "GET", s.base+"/_herald/v1/endpoints/"+id+"/deliveries?cursor="+urlQuery(c), nil, "")
		if code := apiError(t, "deliveries cursor "+quote(c), resp, out, http.StatusBadRequest); code != "" && code != "INVALID_PARAMETER" {
			t.Errorf("deliveries cursor %q: code %s", c, code)
		}
	}
	// A cursor a list gave is accepted.
	createEndpoint(t, s.base, `{"url":"`+hook+`"}`)
	resp, out = send("GET", "/endpoints?limit=1", "")
	var page struct {
		NextCursor string `json:"next_cursor"`
	}
	if err := jsonUnmarshal(out, &page); err != nil || resp.StatusCode != http.StatusOK || page.NextCursor == "" {
		t.Fatalf("first page: %d %s", resp.StatusCode, out)
	}
	if resp, out := send("GET", "/endpoints?limit=1&cursor="+page.NextCursor, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("next page: %d %s", resp.StatusCode, out)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func urlQuery(s string) string {
	r := strings.NewReplacer("%", "%25", " ", "%20", "'", "%27", "=", "%3D")
	return r.Replace(s)
}
