package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/jackc/pgx/v5"
)

// TestMigrationMakesExistingSubscriptionsThePlatforms: a subscription
// stored before migration 0003 (no owner column) becomes the platform's
// (tenant "") with every other column kept, and a tenant's view lists
// none of it.
func TestMigrationMakesExistingSubscriptionsThePlatforms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t)
	s := open(t, schema)
	sub := store.Subscription{ID: "old", Pattern: "/agents/**", Webhook: "https://example.com/h", Secret: "whsec_old", Description: "d"}
	if _, err := s.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{Subscription: sub, Now: time.Unix(5, 0)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Back to the schema before 0003, the row kept.
	conn, err := pgx.Connect(ctx, serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, `SET search_path TO `+pgx.Identifier{schema}.Sanitize()+`;
		ALTER TABLE subscriptions DROP COLUMN tenant;
		DELETE FROM schema_migrations WHERE version = '0003_subscription_tenant'`)
	if cerr := conn.Close(ctx); err != nil || cerr != nil {
		t.Fatalf("undo the migration: %v, %v", err, cerr)
	}

	s = open(t, schema)
	got, err := s.SubscriptionGet(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if got.Tenant != "" || got.Pattern != sub.Pattern || got.Webhook != sub.Webhook || got.Secret != sub.Secret || got.Description != sub.Description {
		t.Fatalf("subscription after the upgrade: %+v", got)
	}
	if list, err := s.SubscriptionList(ctx, &store.SubscriptionListParams{Tenant: "acme"}); err != nil || len(list) != 0 {
		t.Fatalf("a tenant's list after the upgrade: %+v, %v", list, err)
	}
}
