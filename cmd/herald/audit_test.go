package main

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/auth"
)

// TestAuditTrail: every change through Herald's API is logged with the
// key that made it, its tenant, the route and the outcome, refused ones
// included; reads are not; refused credentials are counted by code.
func TestAuditTrail(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	m := newMatrixLogging(t, logs)
	key := m.key(t, []auth.Scope{auth.ScopeEndpointsWrite, auth.ScopeEndpointsRead}, "acme")
	keyID := strings.Split(key, "_")[1]
	hdr := map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}

	status, body := m.call(t, "POST", "/_herald/v1/endpoints", hdr, `{"url":"`+m.receiver.URL+`"}`)
	if status != http.StatusCreated {
		t.Fatalf("create endpoint: %d %s", status, body)
	}
	if status, body = m.call(t, "POST", "/_herald/v1/endpoints", hdr, `{"url":"ftp://nowhere"}`); status != http.StatusBadRequest {
		t.Fatalf("create a bad endpoint: %d %s", status, body)
	}
	if status, body = m.call(t, "GET", "/_herald/v1/endpoints", hdr, ""); status != http.StatusOK {
		t.Fatalf("list endpoints: %d %s", status, body)
	}

	var audits []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "msg=audit") && strings.Contains(line, "principal="+keyID) {
			audits = append(audits, line)
		}
	}
	if len(audits) != 2 {
		t.Fatalf("%d audit records of key %s, want 2 (the two creates, not the list):\n%s", len(audits), keyID, strings.Join(audits, "\n"))
	}
	for i, want := range []string{"status=201", "status=400"} {
		for _, part := range []string{"kind=key", "tenant=acme", `route="POST /_herald/v1/endpoints"`, want} {
			if !strings.Contains(audits[i], part) {
				t.Errorf("audit record %q lacks %s", audits[i], part)
			}
		}
	}
	if strings.Contains(logs.String(), key) {
		t.Error("the log holds the key itself")
	}

	before := authFailures(t, m, "UNAUTHENTICATED")
	m.call(t, "GET", "/_herald/v1/endpoints", nil, "")
	m.call(t, "GET", "/_herald/v1/endpoints", nil, "")
	if after := authFailures(t, m, "UNAUTHENTICATED"); after != before+2 {
		t.Fatalf("herald_auth_failures_total{code=UNAUTHENTICATED} went from %d to %d, want +2", before, after)
	}
	beforeInvalid := authFailures(t, m, "INVALID_KEY")
	m.call(t, "GET", "/_herald/v1/endpoints", map[string]string{"Authorization": "Bearer hk_nope_nope"}, "")
	if after := authFailures(t, m, "INVALID_KEY"); after != beforeInvalid+1 {
		t.Fatalf("herald_auth_failures_total{code=INVALID_KEY} went from %d to %d, want +1", beforeInvalid, after)
	}
}

// authFailures reads one series of herald_auth_failures_total.
func authFailures(t *testing.T, m *matrix, code string) int {
	t.Helper()
	status, body := m.call(t, "GET", "/_herald/metrics", map[string]string{"Authorization": "Bearer " + testAdminKey}, "")
	if status != http.StatusOK {
		t.Fatalf("metrics: %d", status)
	}
	match := regexp.MustCompile(`(?m)^herald_auth_failures_total\{code="` + code + `"\} (\d+)$`).FindStringSubmatch(body)
	if match == nil {
		return 0
	}
	n, err := strconv.Atoi(match[1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}
