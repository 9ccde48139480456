package storetest

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

// The rows of the reserved API's subscriptions as the schema kept them
// before they became consumer rows (ds_subscriptions and ds_links), which
// both backends' migration tests write and check after the upgrade.
var (
	// dsLease and dsNext are the stored webhook wake's lease end and
	// attempt deadline (to the millisecond, as the old state kept them).
	dsLease = time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	dsNext  = dsLease.Add(30*time.Second + 500*time.Millisecond)
)

// ReservedRowsBefore are the statements that write, in the schema before
// the fold, a webhook subscription in flight (failing, its attempt's
// deadline due) and an idle pull-wake one.
func ReservedRowsBefore() []string {
	return []string{
		`INSERT INTO ds_subscriptions (id, tenant, incarnation, config, config_hash, pattern, created_at, state, due_at, version) VALUES
			('hook', 'acme', 'inc1', '{"type":"webhook"}', 'h1', '/ev/*', 5, '{"Phase":"waking","Generation":4,"WakeID":"w_1","Holder":"",` +
			`"LeaseUntil":"2026-01-02T03:04:05.678Z","Attempts":2,"Sending":true,"NextAttemptAt":"2026-01-02T03:04:36.178Z","Failed":true,"WakeWritten":false}', ` +
			strconv.FormatInt(dsNext.UnixNano(), 10) + `, 9),
			('pull', '', 'inc2', '{"type":"pull-wake"}', 'h2', '', 6, '{"Phase":"idle","Generation":1,"WakeID":"w_0","Holder":"",` +
			`"LeaseUntil":"0001-01-01T00:00:00Z","Attempts":0,"Sending":false,"NextAttemptAt":"0001-01-01T00:00:00Z","Failed":false,"WakeWritten":true}', 0, 3)`,
		`INSERT INTO ds_links (subscription_id, path, glob, explicit, acked, notified) VALUES
			('hook', '/ev/b', 1, 0, 'b1', 'b2'), ('hook', '/ev/a', 1, 1, 'a1', ''), ('pull', '/x', 0, 1, '-1', '')`,
	}
}

// CheckReservedRowsMoved checks, after the upgrade, the subscriptions of
// ReservedRowsBefore: each is a consumer row of kind reserved with its
// state in the consumer's columns and its links as memberships, found by
// stream and claimed as every consumer's timer.
func CheckReservedRowsMoved(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	hook, err := s.ConsumerGet(ctx, "__ds/hook")
	if err != nil {
		t.Fatal(err)
	}
	wantLinks := []store.ConsumerStream{{Path: "/ev/a", Acked: "a1", Glob: true, Explicit: true}, {Path: "/ev/b", Acked: "b1", Notified: "b2", Glob: true}}
	if hook.Kind != store.ConsumerReserved || hook.SubscriptionID != "__ds/hook" || hook.Tenant != "acme" || hook.Incarnation != "inc1" ||
		hook.ConfigHash != "h1" || hook.Pattern != "/ev/*" || hook.CreatedAt.UnixNano() != 5 || hook.State != "WAKING" || hook.Epoch != 4 ||
		hook.WakeID != "w_1" || hook.Attempts != 2 || !hook.LivenessDeadline.Equal(dsLease) || !hook.WakingDeadline.Equal(dsNext) ||
		!hook.NextRetryAt.IsZero() || hook.FailingSince.IsZero() || !hook.DueAt.Equal(dsNext) || hook.Version != 9 || hook.WakeWritten ||
		!slices.Equal(hook.Streams, wantLinks) {
		t.Fatalf("the webhook subscription after the upgrade: %+v", hook)
	}
	pull, err := s.ConsumerGet(ctx, "__ds/pull")
	if err != nil {
		t.Fatal(err)
	}
	if pull.State != "IDLE" || pull.Epoch != 1 || !pull.WakeWritten || !pull.LivenessDeadline.IsZero() || !pull.WakingDeadline.IsZero() ||
		!pull.FailingSince.IsZero() || !pull.DueAt.IsZero() || !slices.Equal(pull.Streams, []store.ConsumerStream{{Path: "/x", Acked: "-1", Explicit: true}}) {
		t.Fatalf("the pull-wake subscription after the upgrade: %+v", pull)
	}
	if list, err := s.DSSubscriptionList(ctx); err != nil || len(list) != 2 {
		t.Fatalf("reserved-API subscriptions after the upgrade: %+v, %v", list, err)
	}
	linking, err := s.ConsumerListByStream(ctx, &store.ConsumerListByStreamParams{Path: "/ev/b"})
	if err != nil || len(linking) != 1 || linking[0].ID != "__ds/hook" {
		t.Fatalf("subscriptions linking /ev/b: %+v, %v", linking, err)
	}
	due, err := s.ConsumerClaimDue(ctx, &store.ConsumerClaimDueParams{Now: dsNext, Lease: time.Minute})
	if err != nil || len(due.Consumers) != 1 || due.Consumers[0].ID != "__ds/hook" {
		t.Fatalf("due reserved-API timers: %+v, %v", due, err)
	}
}
