package protocol

import "testing"

func TestETag(t *testing.T) {
	t.Parallel()
	if got := ETag(7, 0, 42, false); got != `"7:0:42"` {
		t.Errorf("ETag = %s", got)
	}
	if got := ETag(7, 42, 42, true); got != `"7:42:42:c"` {
		t.Errorf("closed ETag = %s", got)
	}
}

func TestETagMatches(t *testing.T) {
	t.Parallel()
	tag := ETag(7, 0, 42, false)
	for _, h := range []string{tag, "*", `W/"7:0:42"`, `"x", "7:0:42"`, "7:0:42"} {
		if !ETagMatches(h, tag) {
			t.Errorf("ETagMatches(%s) = false", h)
		}
	}
	for _, h := range []string{"", `"wrong-etag"`, `"7:0:42:c"`, `"7:0:4"`} {
		if ETagMatches(h, tag) {
			t.Errorf("ETagMatches(%s) = true", h)
		}
	}
}
