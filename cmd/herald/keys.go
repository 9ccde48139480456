package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const keysUsage = `Manage API keys of a running Herald (needs an admin key).

Usage:
  herald keys create --scope SCOPE [--scope SCOPE ...] [--tenant T] [--path PATTERN ...]
                     [--expires-in DURATION | --expires-at RFC3339] [--description TEXT]
  herald keys ls [--tenant T]
  herald keys get ID
  herald keys rm ID

A key never outlives the key that makes it: without --expires-in or
--expires-at it expires with its creator (never, for the admin key), and
an expiry after its creator's is refused.

Every subcommand takes --url (HERALD_URL, default http://127.0.0.1:4437),
--key (HERALD_KEY, the admin key: required) and --output table|json.
Scopes: streams:read streams:write subscriptions:read subscriptions:write
endpoints:read endpoints:write events:publish deliveries:read
deliveries:write admin.
`

func runKeys(ctx context.Context, args []string, cio clientIO) error {
	return runGroup(ctx, commandGroup{name: "keys", usage: keysUsage, needKey: true, action: keysAction}, args, cio)
}

func keysAction(c *apiClient, sub string) (*action, bool) {
	fs := c.fs
	switch sub {
	case "create":
		var (
			scopes, paths              listFlag
			tenant, description, expAt string
			expIn                      time.Duration
		)
		fs.Var(&scopes, "scope", "a scope the key grants (repeat for more)")
		fs.Var(&paths, "path", "a stream path pattern the key is limited to (repeat for more)")
		fs.StringVar(&tenant, "tenant", "", "tenant the key is limited to")
		fs.StringVar(&description, "description", "", "what the key is for")
		fs.DurationVar(&expIn, "expires-in", 0, "the key expires after this long (e.g. 720h)")
		fs.StringVar(&expAt, "expires-at", "", "the key expires at this RFC 3339 time")
		return &action{run: func(ctx context.Context, _ []string) error {
			if expIn != 0 && expAt != "" {
				return fmt.Errorf("%w: give --expires-in or --expires-at, not both", errUsage)
			}
			body := map[string]any{"scopes": []string(scopes)}
			if tenant != "" {
				body["tenant"] = tenant
			}
			if len(paths) > 0 {
				body["paths"] = []string(paths)
			}
			if description != "" {
				body["description"] = description
			}
			switch {
			case expIn > 0:
				body["expires_at"] = time.Now().Add(expIn).UTC().Format(time.RFC3339)
			case expIn < 0:
				return fmt.Errorf("%w: --expires-in must be positive", errUsage)
			case expAt != "":
				body["expires_at"] = expAt // the server checks it
			}
			var k keyOut
			if err := c.do(ctx, http.MethodPost, "/_herald/v1/keys", body, &k); err != nil {
				return err
			}
			return c.show(k, func() error {
				fmt.Fprintf(c.stdout, "key: %s\n(shown only now: store it in a secret manager)\n\n", k.Key)
				return printKeys(c, []keyOut{k})
			})
		}}, true
	case "ls":
		var tenant string
		fs.StringVar(&tenant, "tenant", "", "only keys of this tenant")
		return &action{run: func(ctx context.Context, _ []string) error {
			q := url.Values{}
			if tenant != "" {
				q.Set("tenant", tenant)
			}
			all, err := list[keyOut](ctx, c, "/_herald/v1/keys", q, 0)
			if err != nil {
				return err
			}
			return c.show(all, func() error { return printKeys(c, all) })
		}}, true
	case "get":
		return &action{args: "ID", min: 1, max: 1, run: func(ctx context.Context, args []string) error {
			var raw json.RawMessage
			if err := c.do(ctx, http.MethodGet, idPath("/_herald/v1/keys", args[0]), nil, &raw); err != nil {
				return err
			}
			return c.show(raw, func() error { return c.printObject(raw) })
		}}, true
	case "rm":
		return &action{args: "ID", min: 1, max: 1, run: func(ctx context.Context, args []string) error {
			if err := c.do(ctx, http.MethodDelete, idPath("/_herald/v1/keys", args[0]), nil, nil); err != nil {
				return err
			}
			return c.done(nil, "revoked %s", args[0])
		}}, true
	}
	return nil, false
}

// keyOut is a key as the API returns it.
type keyOut struct {
	ID          string   `json:"id"`
	Key         string   `json:"key,omitempty"`
	Scopes      []string `json:"scopes"`
	Tenant      string   `json:"tenant,omitempty"`
	Paths       []string `json:"paths"`
	Description string   `json:"description,omitempty"`
	ExpiresAt   *string  `json:"expires_at"`
	CreatedAt   string   `json:"created_at"`
}

// printKeys writes keys as a table; never their secrets.
func printKeys(c *apiClient, keys []keyOut) error {
	rows := make([][]string, 0, len(keys))
	for _, k := range keys {
		paths := strings.Join(k.Paths, ",")
		if paths == "" {
			paths = "*"
		}
		rows = append(rows, []string{k.ID, strings.Join(k.Scopes, ","), k.Tenant, paths, strOr(k.ExpiresAt, "never"), k.CreatedAt, k.Description})
	}
	return c.printTable([]string{"ID", "SCOPES", "TENANT", "PATHS", "EXPIRES", "CREATED", "DESCRIPTION"}, rows)
}
