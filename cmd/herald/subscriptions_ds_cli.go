package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/heraldstreams/herald/subscription"
)

// The reserved subscription API's commands (docs/reserved-subscriptions.md),
// in the subscriptions group:
//
//	herald subscriptions ds-create ID --type webhook|pull-wake [--pattern P] [--streams A,B] [--webhook URL] [--wake-stream W] [--lease-ttl-ms N]
//	herald subscriptions ds-get ID
//	herald subscriptions ds-rm ID
//	herald subscriptions ds-link ID STREAM...
//	herald subscriptions ds-unlink ID STREAM
//
// Every one takes --stream-root (the server's, default /); stream paths
// are relative to it.
const dsSubscriptionsUsage = `
The Durable Streams reserved subscription API (webhook and pull-wake), under
the server's --stream-root (give the same --stream-root here; paths are
relative to it):
  herald subscriptions ds-create ID --type webhook --pattern 'events/*' --webhook URL
  herald subscriptions ds-create ID --type pull-wake --streams a,b --wake-stream wake/pool [--lease-ttl-ms N]
  herald subscriptions ds-get ID
  herald subscriptions ds-rm ID
  herald subscriptions ds-link ID STREAM...
  herald subscriptions ds-unlink ID STREAM
  herald subscriptions ds-rotate-key        (a new webhook signing key; admin)
`

// dsAction is the action of a reserved-API subcommand, nil for another.
func dsAction(c *apiClient, sub string) (*action, bool) {
	if !strings.HasPrefix(sub, "ds-") {
		return nil, false
	}
	var root string
	c.fs.StringVar(&root, "stream-root", "/", "the server's --stream-root")
	base := func(id string) string {
		return strings.TrimSuffix(root, "/") + "/__ds/subscriptions/" + url.PathEscape(id)
	}
	show := func(ctx context.Context, id string) error {
		var v subscription.DSSubscriptionView
		if err := c.do(ctx, http.MethodGet, base(id), nil, &v); err != nil {
			return err
		}
		return c.show(v, func() error { return printDSSubscription(c, &v) })
	}
	switch sub {
	case "ds-create":
		var typ, pattern, streams, hook, wake, description string
		var lease int64
		c.fs.StringVar(&typ, "type", "", "webhook or pull-wake (required)")
		c.fs.StringVar(&pattern, "pattern", "", "glob over stream paths relative to the root (* one segment, ** any)")
		c.fs.StringVar(&streams, "streams", "", "comma-separated streams linked explicitly")
		c.fs.StringVar(&hook, "webhook", "", "the URL Herald POSTs wakes to (type webhook)")
		c.fs.StringVar(&wake, "wake-stream", "", "the stream the wake events go to (type pull-wake; create it first)")
		c.fs.Int64Var(&lease, "lease-ttl-ms", 0, "the lease, 1000 to 600000 ms (default 30000)")
		c.fs.StringVar(&description, "description", "", "what the subscription is for")
		return &action{args: "ID --type TYPE ...", min: 1, max: 1, run: func(ctx context.Context, args []string) error {
			body := map[string]any{"type": typ}
			set := func(k, v string) {
				if v != "" {
					body[k] = v
				}
			}
			set("pattern", pattern)
			set("wake_stream", wake)
			set("description", description)
			if streams != "" {
				body["streams"] = strings.Split(streams, ",")
			}
			if hook != "" {
				body["webhook"] = map[string]string{"url": hook}
			}
			if lease != 0 {
				body["lease_ttl_ms"] = lease
			}
			var v subscription.DSSubscriptionView
			if err := c.do(ctx, http.MethodPut, base(args[0]), body, &v); err != nil {
				return err
			}
			return c.show(v, func() error { return printDSSubscription(c, &v) })
		}}, true
	case "ds-get":
		return &action{args: "ID", min: 1, max: 1, run: func(ctx context.Context, args []string) error { return show(ctx, args[0]) }}, true
	case "ds-rm":
		return &action{args: "ID", min: 1, max: 1, run: func(ctx context.Context, args []string) error {
			if err := c.do(ctx, http.MethodDelete, base(args[0]), nil, nil); err != nil {
				return err
			}
			return c.done(nil, "deleted subscription %s", args[0])
		}}, true
	case "ds-link":
		return &action{args: "ID STREAM...", min: 2, max: 1 + subscription.DSMaxStreams, run: func(ctx context.Context, args []string) error {
			if err := c.do(ctx, http.MethodPost, base(args[0])+"/streams", map[string][]string{"streams": args[1:]}, nil); err != nil {
				return err
			}
			return show(ctx, args[0])
		}}, true
	case "ds-rotate-key":
		return &action{args: "", min: 0, max: 0, run: func(ctx context.Context, _ []string) error {
			var out struct {
				Kid  string            `json:"kid"`
				Keys []json.RawMessage `json:"keys"`
			}
			if err := c.do(ctx, http.MethodPost, "/_herald/v1/signing-keys/rotate", nil, &out); err != nil {
				return err
			}
			return c.show(out, func() error {
				_, err := fmt.Fprintf(c.stdout, "webhook signing key %s is active; %d keys are published\n", out.Kid, len(out.Keys))
				return err
			})
		}}, true
	case "ds-unlink":
		return &action{args: "ID STREAM", min: 2, max: 2, run: func(ctx context.Context, args []string) error {
			if err := c.do(ctx, http.MethodDelete, base(args[0])+"/streams/"+url.PathEscape(args[1]), nil, nil); err != nil {
				return err
			}
			return show(ctx, args[0])
		}}, true
	}
	return nil, false
}

// printDSSubscription prints a reserved-API subscription and its links.
func printDSSubscription(c *apiClient, v *subscription.DSSubscriptionView) error {
	delivery := ""
	switch {
	case v.Webhook != nil:
		delivery = "webhook " + v.Webhook.URL
		if v.Webhook.Signing != nil {
			delivery += " (signed by " + v.Webhook.Signing.Kid + ", keys at " + v.Webhook.Signing.JWKSURL + ")"
		}
	case v.WakeStream != nil:
		delivery = "pull-wake to " + *v.WakeStream
	}
	pattern := "-"
	if v.Pattern != nil {
		pattern = *v.Pattern
	}
	fmt.Fprintf(c.stdout, "subscription %s: %s\npattern: %s  lease: %d ms  status: %s  generation: %d\n\n",
		v.ID, delivery, pattern, v.LeaseTTLMs, v.Status, v.Generation)
	rows := make([][]string, 0, len(v.Streams))
	for _, s := range v.Streams {
		rows = append(rows, []string{s.Path, s.LinkType, s.AckedOffset})
	}
	return c.printTable([]string{"STREAM", "LINK", "ACKED"}, rows)
}
