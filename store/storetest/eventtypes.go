package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

func runEventTypes(t *testing.T, f Factory) {
	run(t, f, "EventTypeCRUD", testEventTypeCRUD)
	run(t, f, "EventTypeOrder", testEventTypeOrder)
}

func mustEventType(t *testing.T, s store.Store, et store.EventType) *store.EventType {
	t.Helper()
	out, err := s.EventTypeCreate(context.Background(), &store.EventTypeCreateParams{EventType: et, Now: t0})
	if err != nil {
		t.Fatalf("create event type %s: %v", et.Name, err)
	}
	return out
}

// testEventTypeCRUD round-trips an event type (with and without a
// schema) through create, get, list, a compare-and-set update, delete and
// a reopen.
func testEventTypeCRUD(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	schema := []byte(`{"type":"object","required":["total"]}`)
	got := mustEventType(t, s, store.EventType{Name: "order.paid", Description: "an order was paid", Schema: schema})
	if got.Version != 1 || !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0) {
		t.Fatalf("created = %+v", got)
	}
	_, err := s.EventTypeCreate(ctx, &store.EventTypeCreateParams{EventType: store.EventType{Name: "order.paid"}, Now: t0})
	expectErr(t, err, store.ErrEventTypeExists)
	mustEventType(t, s, store.EventType{Name: "order.shipped", Deprecated: true})

	read, err := s.EventTypeGet(ctx, "order.paid")
	if err != nil || read.Description != "an order was paid" || string(read.Schema) != string(schema) || read.Deprecated ||
		read.Version != 1 || !read.CreatedAt.Equal(t0) {
		t.Fatalf("get = %+v, %v", read, err)
	}
	plain, err := s.EventTypeGet(ctx, "order.shipped")
	if err != nil || plain.Schema != nil || !plain.Deprecated {
		t.Fatalf("get without schema = %+v, %v", plain, err)
	}
	_, err = s.EventTypeGet(ctx, "order.nope")
	expectErr(t, err, store.ErrEventTypeNotFound)

	read.Description, read.Schema, read.Deprecated = "paid", nil, true
	upd, err := s.EventTypeUpdate(ctx, &store.EventTypeUpdateParams{EventType: *read, ExpectVersion: 1, Now: t0.Add(time.Second)})
	if err != nil || upd.Version != 2 || upd.Description != "paid" || upd.Schema != nil || !upd.Deprecated ||
		!upd.CreatedAt.Equal(t0) || !upd.UpdatedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("update = %+v, %v", upd, err)
	}
	_, err = s.EventTypeUpdate(ctx, &store.EventTypeUpdateParams{EventType: *read, ExpectVersion: 1, Now: t0})
	expectErr(t, err, store.ErrEventTypeConflict)
	_, err = s.EventTypeUpdate(ctx, &store.EventTypeUpdateParams{EventType: store.EventType{Name: "order.nope"}, ExpectVersion: 1, Now: t0})
	expectErr(t, err, store.ErrEventTypeNotFound)

	if err := s.EventTypeDelete(ctx, "order.shipped"); err != nil {
		t.Fatal(err)
	}
	expectErr(t, s.EventTypeDelete(ctx, "order.shipped"), store.ErrEventTypeNotFound)

	s = f.Reopen(t, s)
	after, err := s.EventTypeGet(ctx, "order.paid")
	if err != nil || after.Version != 2 || after.Description != "paid" || !after.Deprecated {
		t.Fatalf("after reopen = %+v, %v", after, err)
	}
	all, err := s.EventTypeList(ctx, &store.EventTypeListParams{})
	if err != nil || len(all) != 1 {
		t.Fatalf("list after reopen = %+v, %v", all, err)
	}
}

// testEventTypeOrder lists in byte order and pages: the first name after
// a prefix such as "order." is one of its types when it has any (what the
// catalogue's pattern check relies on).
func testEventTypeOrder(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	for _, name := range []string{"order.paid", "Order.x", "order", "order.a.b", "order_x", "order-y", "orders.z", "a"} {
		mustEventType(t, s, store.EventType{Name: name})
	}
	names := func(p store.EventTypeListParams) string {
		t.Helper()
		ets, err := s.EventTypeList(ctx, &p)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(fieldOf(ets, func(et *store.EventType) string { return et.Name }))
	}
	if got, want := names(store.EventTypeListParams{}), "[Order.x a order order-y order.a.b order.paid order_x orders.z]"; got != want {
		t.Errorf("list = %s, want %s", got, want)
	}
	if got, want := names(store.EventTypeListParams{After: "order.", Limit: 1}), "[order.a.b]"; got != want {
		t.Errorf("first after order. = %s, want %s", got, want)
	}
	if got, want := names(store.EventTypeListParams{After: "order.paid", Limit: 2}), "[order_x orders.z]"; got != want {
		t.Errorf("page = %s, want %s", got, want)
	}
}
