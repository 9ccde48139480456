package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/subscription/wake"
)

const subscriptionsUsage = `Manage the webhook subscriptions of a running Herald.

Usage:
  herald subscriptions ls [PATTERN]                       (default /**: all)
  herald subscriptions get PATTERN ID                     (PATTERN /** finds any)
  herald subscriptions create PATTERN ID --webhook URL [--description TEXT]
  herald subscriptions rm PATTERN ID

create prints the webhook secret, which Herald shows only then.
` + dsSubscriptionsUsage + `
` + commonFlagsUsage

const consumersUsage = `Show the consumers of a running Herald's subscriptions: their state,
epoch, the offsets of their streams and their next deadline.

Usage:
  herald consumers ls SUBSCRIPTION_ID
  herald consumers get CONSUMER_ID     (SUBSCRIPTION_ID:/stream/path, or URL-encoded as in wakes)

` + commonFlagsUsage

func runSubscriptions(ctx context.Context, args []string, cio clientIO) error {
	return runGroup(ctx, commandGroup{name: "subscriptions", usage: subscriptionsUsage, action: subscriptionsAction}, args, cio)
}

func runConsumers(ctx context.Context, args []string, cio clientIO) error {
	return runGroup(ctx, commandGroup{name: "consumers", usage: consumersUsage, action: consumersAction}, args, cio)
}

// subscriptionPath is the URL path and query of one subscription.
func subscriptionPath(pattern, id string) (string, error) {
	p, err := streamPath(pattern)
	if err != nil {
		return "", err
	}
	return p + "?subscription=" + url.QueryEscape(id), nil
}

func subscriptionsAction(c *apiClient, sub string) (*action, bool) {
	switch sub {
	case "ls":
		return &action{args: "[PATTERN]", min: 0, max: 1, run: func(ctx context.Context, args []string) error {
			pattern := wake.AllPattern
			if len(args) == 1 {
				pattern = args[0]
			}
			p, err := streamPath(pattern)
			if err != nil {
				return err
			}
			var l subscription.SubscriptionList
			if err := c.do(ctx, http.MethodGet, p+"?subscriptions", nil, &l); err != nil {
				return err
			}
			if l.Subscriptions == nil {
				l.Subscriptions = []subscription.Subscription{}
			}
			return c.show(l.Subscriptions, func() error { return printSubscriptions(c, l.Subscriptions) })
		}}, true
	case "get", "rm":
		return &action{args: "PATTERN ID", min: 2, max: 2, run: func(ctx context.Context, args []string) error {
			p, err := subscriptionPath(args[0], args[1])
			if err != nil {
				return err
			}
			if sub == "rm" {
				if err := c.do(ctx, http.MethodDelete, p, nil, nil); err != nil {
					return err
				}
				return c.done(nil, "deleted subscription %s and its consumers", args[1])
			}
			var raw json.RawMessage
			if err := c.do(ctx, http.MethodGet, p, nil, &raw); err != nil {
				return err
			}
			return c.show(raw, func() error { return c.printObject(raw) })
		}}, true
	case "create":
		var webhook, description string
		c.fs.StringVar(&webhook, "webhook", "", "the URL Herald POSTs wakes to (required)")
		c.fs.StringVar(&description, "description", "", "what the subscription is for")
		return &action{args: "PATTERN ID --webhook URL [--description TEXT]", min: 2, max: 2, run: func(ctx context.Context, args []string) error {
			if webhook == "" {
				return fmt.Errorf("%w: --webhook is required", errUsage)
			}
			p, err := subscriptionPath(args[0], args[1])
			if err != nil {
				return err
			}
			var s subscription.Subscription
			body := subscription.CreateRequest{Webhook: webhook, Description: description}
			if err := c.do(ctx, http.MethodPut, p, body, &s); err != nil {
				return webhookHint(err)
			}
			return c.show(s, func() error {
				if s.WebhookSecret == "" {
					fmt.Fprintf(c.stdout, "subscription %s exists already, with the same configuration (its secret is shown only at creation)\n\n", s.SubscriptionID)
				} else {
					fmt.Fprintf(c.stdout, "webhook secret: %s\n(shown only now: the consumer verifies wakes with it)\n\n", s.WebhookSecret)
				}
				return printSubscriptions(c, []subscription.Subscription{s})
			})
		}}, true
	}
	return dsAction(c, sub)
}

// webhookHint adds what to do to Herald's refusal of a webhook URL whose
// address is loopback or private: a receiver on this machine, or on a
// private network, needs Herald started with its range allowed. Other
// refusals (a name that does not resolve, a scheme other than https) say
// all there is in Herald's message, and get no hint.
func webhookHint(err error) error {
	if hasCode(err, "URL_REFUSED") && allowListFixes.MatchString(err.Error()) {
		return fmt.Errorf("%w\nhint: Herald refuses loopback and private webhook URLs unless it was started with --webhook-allow-cidrs 127.0.0.0/8 (or the range of the receiver)", err)
	}
	return err
}

// allowListFixes matches the refusal reasons (webhook.Reason, which
// Herald's message names in parentheses) that --webhook-allow-cidrs lifts.
var allowListFixes = regexp.MustCompile(`\((loopback|private|link_local|shared_address)\)`)

func printSubscriptions(c *apiClient, subs []subscription.Subscription) error {
	rows := make([][]string, 0, len(subs))
	for _, s := range subs {
		rows = append(rows, []string{s.SubscriptionID, s.Pattern, s.Webhook, s.Description})
	}
	return c.printTable([]string{"ID", "PATTERN", "WEBHOOK", "DESCRIPTION"}, rows)
}

func consumersAction(c *apiClient, sub string) (*action, bool) {
	switch sub {
	case "ls":
		return &action{args: "SUBSCRIPTION_ID", min: 1, max: 1, run: func(ctx context.Context, args []string) error {
			all, err := list[subscription.ConsumerInfo](ctx, c, idPath("/_herald/v1/subscriptions", args[0])+"/consumers", url.Values{}, 0)
			if err != nil {
				return err
			}
			return c.show(all, func() error {
				rows := make([][]string, 0, len(all))
				for _, ci := range all {
					rows = append(rows, []string{ci.ConsumerID, string(ci.State), strconv.FormatInt(ci.Epoch, 10), consumerOffsets(&ci), timeOrNone(ci.NextDeadline), stuckOrNo(&ci)})
				}
				return c.printTable([]string{"CONSUMER", "STATE", "EPOCH", "OFFSETS", "NEXT DEADLINE", "STUCK"}, rows)
			})
		}}, true
	case "get":
		return &action{args: "CONSUMER_ID", min: 1, max: 1, run: func(ctx context.Context, args []string) error {
			id, err := consumerIDArg(args[0])
			if err != nil {
				return err
			}
			var ci subscription.ConsumerInfo
			if err := c.do(ctx, http.MethodGet, "/_herald/v1/consumers/"+id, nil, &ci); err != nil {
				return err
			}
			return c.show(ci, func() error {
				if err := c.printFields([][2]string{
					{"consumer", ci.ConsumerID},
					{"subscription", ci.SubscriptionID},
					{"primary stream", ci.PrimaryStream},
					{"state", string(ci.State)},
					{"epoch", strconv.FormatInt(ci.Epoch, 10)},
					{"wake", ci.WakeID},
					{"attempts", strconv.Itoa(ci.Attempts)},
					{"next deadline", timeOrNone(ci.NextDeadline)},
					{"failing since", timeOrNone(ci.FailingSince)},
					{"stuck", stuckOrNo(&ci)},
				}); err != nil {
					return err
				}
				fmt.Fprintln(c.stdout)
				rows := make([][]string, 0, len(ci.Streams))
				for _, s := range ci.Streams {
					rows = append(rows, []string{s.Path, s.Acked, s.Notified})
				}
				return c.printTable([]string{"STREAM", "ACKED", "NOTIFIED"}, rows)
			})
		}}, true
	}
	return nil, false
}

// consumerIDArg is a consumer id given on the command line as the one
// URL path segment Herald's API takes: "example:/agents/task-2" is
// encoded as wakes show it ("example:%2Fagents%2Ftask-2"); an id already
// in that form is kept.
func consumerIDArg(id string) (string, error) {
	sub, path, ok := strings.Cut(id, ":")
	if !ok || sub == "" || path == "" {
		return "", fmt.Errorf("%w: a consumer id is SUBSCRIPTION_ID:STREAM_PATH, such as example:/agents/task-2: %q", errUsage, id)
	}
	if strings.HasPrefix(path, "/") {
		return subscription.ConsumerID(sub, path), nil
	}
	if strings.ContainsAny(path, "/?#") {
		return "", fmt.Errorf("%w: a consumer id's stream path starts with / (or is URL-encoded, %%2F for /): %q", errUsage, id)
	}
	return id, nil
}

// consumerOffsets is "path=acked" for each stream of a consumer.
func consumerOffsets(ci *subscription.ConsumerInfo) string {
	parts := make([]string, 0, len(ci.Streams))
	for _, s := range ci.Streams {
		parts = append(parts, s.Path+"="+s.Acked)
	}
	return strings.Join(parts, " ")
}

// stuckOrNo is why a consumer is stuck, or "no".
func stuckOrNo(ci *subscription.ConsumerInfo) string {
	if ci.Stuck && ci.StuckReason != nil {
		return *ci.StuckReason
	}
	return "no"
}

// timeOrNone formats a time that may be unset.
func timeOrNone(t *time.Time) string {
	if t == nil {
		return "none"
	}
	return t.Format(time.RFC3339)
}
