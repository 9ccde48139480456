package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// streamRequest sends one protocol request to m with the admin key and
// returns the answer's status and headers.
func streamRequest(t *testing.T, m *matrix, method, path, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, m.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAdminKey)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func TestProducerCloseConflicts(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	producer := func(id, seq string) map[string]string {
		return map[string]string{"Stream-Closed": "true", "Producer-Id": id, "Producer-Epoch": "0", "Producer-Seq": seq}
	}
	if status, _, body := streamRequest(t, m, "PUT", "/proto/closed", "", map[string]string{"Content-Type": "text/plain"}); status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	if status, h, body := streamRequest(t, m, "POST", "/proto/closed", "", producer("p1", "0")); status != http.StatusNoContent || h.Get("Stream-Closed") != "true" {
		t.Fatalf("p1 closes: %d %v %s", status, h, body)
	}
	// The retry of the closing request: 204, echoing what Herald accepted.
	status, h, _ := streamRequest(t, m, "POST", "/proto/closed", "", producer("p1", "0"))
	if status != http.StatusNoContent || h.Get("Stream-Closed") != "true" || h.Get("Producer-Epoch") != "0" || h.Get("Producer-Seq") != "0" {
		t.Fatalf("retry of p1's close: %d %v", status, h)
	}
	// Another producer, or p1 with another sequence number: 409 with
	// Stream-Closed, and no Producer-Seq Herald never accepted.
	for _, hdr := range []map[string]string{producer("p2", "0"), producer("p1", "1")} {
		status, h, body := streamRequest(t, m, "POST", "/proto/closed", "", hdr)
		if status != http.StatusConflict || h.Get("Stream-Closed") != "true" || h.Get("Producer-Seq") != "" || !strings.Contains(body, "STREAM_CLOSED") {
			t.Errorf("close by %s seq %s after p1 closed: %d %v %s", hdr["Producer-Id"], hdr["Producer-Seq"], status, h, body)
		}
	}
	// A close without producer headers stays harmless.
	if status, h, _ := streamRequest(t, m, "POST", "/proto/closed", "", map[string]string{"Stream-Closed": "true"}); status != http.StatusNoContent || h.Get("Stream-Closed") != "true" {
		t.Fatalf("plain close again: %d %v", status, h)
	}
}

func TestContentTypeReturnedAsCreated(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	const ct = "text/plain; charset=utf-8"
	status, h, body := streamRequest(t, m, "PUT", "/proto/text", "hello", map[string]string{"Content-Type": ct})
	if status != http.StatusCreated || h.Get("Content-Type") != ct {
		t.Fatalf("create: %d %v %s", status, h, body)
	}
	// Appends match by media type, parameters or not.
	for _, appendType := range []string{"text/plain", ct, "TEXT/PLAIN; charset=UTF-8"} {
		if status, _, body := streamRequest(t, m, "POST", "/proto/text", " more", map[string]string{"Content-Type": appendType}); status != http.StatusNoContent {
			t.Errorf("append as %q: %d %s", appendType, status, body)
		}
	}
	if status, _, body := streamRequest(t, m, "POST", "/proto/text", "x", map[string]string{"Content-Type": "text/csv; charset=utf-8"}); status != http.StatusConflict ||
		!strings.Contains(body, "CONTENT_TYPE_MISMATCH") {
		t.Errorf("append as text/csv: %d %s", status, body)
	}
	for _, method := range []string{"HEAD", "GET"} {
		if status, h, _ := streamRequest(t, m, method, "/proto/text", "", nil); status != http.StatusOK || h.Get("Content-Type") != ct {
			t.Errorf("%s: %d Content-Type %q, want %q", method, status, h.Get("Content-Type"), ct)
		}
	}
	// Creating it again is idempotent by media type too.
	if status, h, body := streamRequest(t, m, "PUT", "/proto/text", "", map[string]string{"Content-Type": "text/plain"}); status != http.StatusOK || h.Get("Content-Type") != ct {
		t.Errorf("create again as text/plain: %d %v %s", status, h, body)
	}
}

func TestSequenceConflictsSaySo(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	streamRequest(t, m, "PUT", "/proto/seq", "", map[string]string{"Content-Type": "text/plain"})
	if status, _, body := streamRequest(t, m, "POST", "/proto/seq", "a", map[string]string{"Content-Type": "text/plain", "Stream-Seq": "2"}); status != http.StatusNoContent {
		t.Fatalf("first append: %d %s", status, body)
	}
	status, _, body := streamRequest(t, m, "POST", "/proto/seq", "b", map[string]string{"Content-Type": "text/plain", "Stream-Seq": "1"})
	if status != http.StatusConflict || !strings.Contains(body, "SEQUENCE_CONFLICT") || !strings.Contains(body, "sequence conflict") {
		t.Errorf("Stream-Seq regression: %d %s", status, body)
	}
	status, _, body = streamRequest(t, m, "POST", "/proto/seq", "c", map[string]string{"Content-Type": "text/plain",
		"Producer-Id": "p", "Producer-Epoch": "0", "Producer-Seq": "3"})
	if status != http.StatusConflict || !strings.Contains(body, "PRODUCER_SEQ_GAP") || !strings.Contains(body, "sequence conflict") {
		t.Errorf("producer sequence gap: %d %s", status, body)
	}
}
