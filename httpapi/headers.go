package httpapi

// Protocol header names in canonical form, so handlers index
// http.Header maps directly.
const (
	hdrContentType      = "Content-Type"
	hdrNextOffset       = "Stream-Next-Offset"
	hdrUpToDate         = "Stream-Up-To-Date"
	hdrStreamClosed     = "Stream-Closed"
	hdrCursor           = "Stream-Cursor"
	hdrStreamSeq        = "Stream-Seq"
	hdrTTL              = "Stream-Ttl"
	hdrExpiresAt        = "Stream-Expires-At"
	hdrForkedFrom       = "Stream-Forked-From"
	hdrForkOffset       = "Stream-Fork-Offset"
	hdrForkSubOffset    = "Stream-Fork-Sub-Offset"
	hdrSSEEncoding      = "Stream-Sse-Data-Encoding"
	hdrProducerID       = "Producer-Id"
	hdrProducerEpoch    = "Producer-Epoch"
	hdrProducerSeq      = "Producer-Seq"
	hdrProducerExpected = "Producer-Expected-Seq"
	hdrProducerReceived = "Producer-Received-Seq"
	hdrIfNoneMatch      = "If-None-Match"
	hdrCacheControl     = "Cache-Control"
)

// Shared header values (see server.go: net/http never modifies them).
var (
	valTrue        = []string{"true"}
	valJSON        = []string{"application/json"}
	valNoStore     = []string{"no-store"}
	valNoCache     = []string{"no-cache"}
	valEventStream = []string{"text/event-stream"}
	valBase64      = []string{"base64"}
	valNo          = []string{"no"}
	valRetryAfter  = []string{"1"}
)

// header returns the first value of a canonical header key and whether the
// header is present at all.
func header(h map[string][]string, key string) (string, bool) {
	v, ok := h[key]
	if !ok || len(v) == 0 {
		return "", ok
	}
	return v[0], true
}
