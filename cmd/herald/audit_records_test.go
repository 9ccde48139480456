package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/auth"
)

// TestAuditRecordsNameWhatChanged: stream creation and deletion,
// subscription creation and deletion, and key creation and deletion each
// leave an audit record naming who (principal, kind, tenant), from where
// (client), the route and the object (the new key's id, scopes, tenant,
// paths and expiry, never its secret); refused requests leave one with
// the key id when the credential names one, the client address and the
// refusal's code.
func TestAuditRecordsNameWhatChanged(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	m := newMatrixLogging(t, logs)
	admin := map[string]string{"Authorization": "Bearer " + testAdminKey, "Content-Type": "application/json"}
	call := func(method, path, body string, want int) string {
		t.Helper()
		status, out := m.call(t, method, path, admin, body)
		if status != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, status, out, want)
		}
		return out
	}
	call("PUT", "/audited/s", "", http.StatusCreated)
	call("DELETE", "/audited/s", "", http.StatusNoContent)
	call("PUT", "/audited/*?subscription=sub-1", `{"webhook":"`+m.receiver.URL+`/hook"}`, http.StatusCreated)
	call("DELETE", "/audited/*?subscription=sub-1", "", http.StatusNoContent)
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	out := call("POST", "/_herald/v1/keys", `{"scopes":["streams:read","streams:write"],"tenant":"acme","paths":["/tenants/acme/audited/**"],"expires_at":"`+expires.Format(time.RFC3339)+`"}`, http.StatusCreated)
	secret := jsonField(t, out, "key")
	keyID := jsonField(t, out, "id")
	call("DELETE", "/_herald/v1/keys/"+keyID, "", http.StatusNoContent)
	reader := m.key(t, []auth.Scope{auth.ScopeStreamsRead}, "")
	readerID := strings.Split(reader, "_")[1]
	if status, _ := m.call(t, "PUT", "/audited/t", map[string]string{"Authorization": "Bearer " + reader}, ""); status != http.StatusForbidden {
		t.Fatalf("a read-only key created a stream: %d", status)
	}
	if status, _ := m.call(t, "GET", "/audited/t", map[string]string{"Authorization": "Bearer " + secret}, ""); status != http.StatusUnauthorized {
		t.Fatalf("a deleted key read a stream: %d", status)
	}
	if status, _ := m.call(t, "GET", "/_herald/v1/endpoints", nil, ""); status != http.StatusUnauthorized {
		t.Fatalf("no key: %d", status)
	}

	records := auditRecords(logs.String())
	find := func(want map[string]string) map[string]string {
		t.Helper()
		for _, r := range records {
			match := true
			for k, v := range want {
				if r[k] != v {
					match = false
					break
				}
			}
			if match {
				return r
			}
		}
		t.Fatalf("no audit record with %v among:\n%v", want, records)
		return nil
	}
	byAdmin := map[string]string{"principal": "admin", "kind": "admin_key", "tenant": ""}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, want := range []map[string]string{
		with(byAdmin, "route", "PUT /{stream}", "path", "/audited/s", "status", "201"),
		with(byAdmin, "route", "DELETE /{stream}", "path", "/audited/s", "status", "204"),
		with(byAdmin, "route", "PUT /{pattern}?subscription={id}", "subscription.id", "sub-1", "subscription.pattern", "/audited/*", "status", "201"),
		with(byAdmin, "route", "DELETE /{pattern}?subscription={id}", "subscription.id", "sub-1", "status", "204"),
		with(byAdmin, "route", "POST /_herald/v1/keys", "status", "201", "key.id", keyID, "key.tenant", "acme",
			"key.scopes", "streams:read streams:write", "key.paths", "/tenants/acme/audited/**", "key.expires_at", expires.Format(time.RFC3339)),
		with(byAdmin, "route", "DELETE /_herald/v1/keys/{id}", "status", "204", "key.id", keyID, "key.tenant", "acme"),
		{"outcome": "refused", "principal": readerID, "method": "PUT", "path": "/audited/t", "status": "403", "code": "FORBIDDEN"},
		{"outcome": "refused", "principal": keyID, "method": "GET", "path": "/audited/t", "status": "401", "code": "INVALID_KEY"},
		{"outcome": "refused", "principal": "", "method": "GET", "path": "/_herald/v1/endpoints", "status": "401", "code": "UNAUTHENTICATED"},
	} {
		r := find(want)
		if !strings.HasPrefix(r["client"], "127.0.0.1:") {
			t.Errorf("record %v: client = %q, want the client's address", want, r["client"])
		}
	}
	// The key's secret is all after "hk_<id>_": base64url, which may hold
	// "_" itself.
	if strings.Contains(logs.String(), secret) || strings.Contains(logs.String(), strings.SplitN(secret, "_", 3)[2]) {
		t.Error("the log holds a key's secret")
	}
}

// auditRecords parses the audit records of a text log: one map of
// attribute to value per record.
func auditRecords(log string) []map[string]string {
	var out []map[string]string
	for line := range strings.SplitSeq(log, "\n") {
		rec := logfmt(line)
		if rec["msg"] == "audit" {
			out = append(out, rec)
		}
	}
	return out
}

// logfmt parses a line of slog's text handler: key=value pairs, values
// quoted when they hold spaces or quotes.
func logfmt(line string) map[string]string {
	rec := map[string]string{}
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimLeft(line, " ") {
		key, rest, ok := strings.Cut(line, "=")
		if !ok {
			break
		}
		var value string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				break
			}
			value, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else {
			value, rest, _ = strings.Cut(rest, " ")
		}
		rec[key] = value
		line = rest
	}
	return rec
}

// jsonField returns a string member of a JSON object.
func jsonField(t *testing.T, body, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	s, ok := m[name].(string)
	if !ok {
		t.Fatalf("%s has no string %q", body, name)
	}
	return s
}
