package dispatch

import (
	"context"
	"testing"
)

// A reconciliation waits for the matches of the streams it queued that
// began after it queued them: one already running may have read the
// stream before the change it found. A failed match fails it.
func TestCheckSetCountsMatchesBegunAfterAdd(t *testing.T) {
	t.Parallel()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	c := newCheckSet()
	c.reset()
	early := c.begin("/a") // running before the reconciliation queued it
	c.add("/a")
	c.end("/a", early, true)
	if c.wait(done) {
		t.Fatal("a match begun before the add counted")
	}
	late := c.begin("/a")
	c.end("/a", late, true)
	if !c.wait(context.Background()) {
		t.Fatal("the match begun after the add did not count")
	}
	c.add("/b")
	c.end("/b", c.begin("/b"), false)
	if c.wait(context.Background()) {
		t.Fatal("a reconciliation with a failed match succeeded")
	}
	c.reset()
	if !c.wait(context.Background()) {
		t.Fatal("a new reconciliation kept the last one's failure")
	}
}
