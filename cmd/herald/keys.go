package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"
)

const keysUsage = `Manage API keys of a running Herald (needs an admin key).

Usage:
  herald keys create --scope SCOPE [--scope SCOPE ...] [--tenant T] [--path PATTERN ...]
                     [--expires-in DURATION | --expires-at RFC3339] [--description TEXT]
  herald keys ls [--tenant T]
  herald keys get ID
  herald keys rm ID

Every subcommand takes --url (HERALD_URL, default http://127.0.0.1:4437),
--key (HERALD_KEY, the admin key) and --output table|json.
Scopes: streams:read streams:write subscriptions:read subscriptions:write
endpoints:read endpoints:write events:publish deliveries:read
deliveries:write admin.
`

// keysClientTimeout bounds one request of the keys command.
const keysClientTimeout = 30 * time.Second

// keysCommand is what every keys subcommand shares.
type keysCommand struct {
	url, key, output string
	stdout           io.Writer
	client           *http.Client
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) (string, bool)) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		if len(args) == 0 {
			fmt.Fprint(stderr, keysUsage)
			return fmt.Errorf("%w: no keys subcommand given", errUsage)
		}
		fmt.Fprint(stdout, keysUsage)
		return nil
	}
	sub, args := args[0], args[1:]
	c := &keysCommand{stdout: stdout, client: &http.Client{Timeout: keysClientTimeout}}
	fs := flag.NewFlagSet("herald keys "+sub, flag.ContinueOnError)
	c.url, _ = env("HERALD_URL")
	if c.url == "" {
		c.url = "http://127.0.0.1:4437"
	}
	c.key, _ = env("HERALD_KEY")
	fs.StringVar(&c.url, "url", c.url, "base URL of Herald (HERALD_URL)")
	fs.StringVar(&c.key, "key", c.key, "admin key (HERALD_KEY)")
	fs.StringVar(&c.output, "output", "table", "output format: table or json")
	var (
		scopes, paths              listFlag
		tenant, description, expAt string
		expIn                      time.Duration
	)
	switch sub {
	case "create":
		fs.Var(&scopes, "scope", "a scope the key grants (repeat for more)")
		fs.Var(&paths, "path", "a stream path pattern the key is limited to (repeat for more)")
		fs.StringVar(&tenant, "tenant", "", "tenant the key is limited to")
		fs.StringVar(&description, "description", "", "what the key is for")
		fs.DurationVar(&expIn, "expires-in", 0, "the key expires after this long (e.g. 720h)")
		fs.StringVar(&expAt, "expires-at", "", "the key expires at this RFC 3339 time")
	case "ls":
		fs.StringVar(&tenant, "tenant", "", "only keys of this tenant")
	case "get", "rm":
	default:
		fmt.Fprint(stderr, keysUsage)
		return fmt.Errorf("%w: unknown keys subcommand %q", errUsage, sub)
	}
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if c.output != "table" && c.output != "json" {
		return fmt.Errorf("%w: --output must be table or json", errUsage)
	}
	if c.key == "" {
		return fmt.Errorf("%w: an admin key is needed: --key or HERALD_KEY", errUsage)
	}
	if _, err := url.ParseRequestURI(c.url); err != nil || !strings.HasPrefix(c.url, "http") {
		return fmt.Errorf("%w: --url must be an http:// or https:// URL", errUsage)
	}
	c.url = strings.TrimSuffix(c.url, "/")
	wantArgs := map[string]int{"create": 0, "ls": 0, "get": 1, "rm": 1}[sub]
	if fs.NArg() != wantArgs {
		return fmt.Errorf("%w: herald keys %s takes %d argument(s), got %d", errUsage, sub, wantArgs, fs.NArg())
	}
	switch sub {
	case "create":
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
		return c.create(ctx, body)
	case "ls":
		return c.list(ctx, tenant)
	case "get":
		var k keyOut
		if err := c.do(ctx, http.MethodGet, "/_herald/v1/keys/"+url.PathEscape(fs.Arg(0)), nil, &k); err != nil {
			return err
		}
		return c.print([]keyOut{k}, k)
	default: // rm
		if err := c.do(ctx, http.MethodDelete, "/_herald/v1/keys/"+url.PathEscape(fs.Arg(0)), nil, nil); err != nil {
			return err
		}
		if c.output == "table" {
			fmt.Fprintf(c.stdout, "revoked %s\n", fs.Arg(0))
		}
		return nil
	}
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

func (c *keysCommand) create(ctx context.Context, body map[string]any) error {
	var k keyOut
	if err := c.do(ctx, http.MethodPost, "/_herald/v1/keys", body, &k); err != nil {
		return err
	}
	if c.output == "json" {
		return c.print(nil, k)
	}
	fmt.Fprintf(c.stdout, "key: %s\n(shown only now: store it in a secret manager)\n\n", k.Key)
	return c.print([]keyOut{k}, nil)
}

func (c *keysCommand) list(ctx context.Context, tenant string) error {
	var all []keyOut
	cursor := ""
	for {
		q := url.Values{}
		if tenant != "" {
			q.Set("tenant", tenant)
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Data       []keyOut `json:"data"`
			NextCursor *string  `json:"next_cursor"`
		}
		path := "/_herald/v1/keys"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		if err := c.do(ctx, http.MethodGet, path, nil, &page); err != nil {
			return err
		}
		all = append(all, page.Data...)
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if all == nil {
		all = []keyOut{}
	}
	return c.print(all, all)
}

// print writes rows as a table, or asJSON as JSON.
func (c *keysCommand) print(rows []keyOut, asJSON any) error {
	if c.output == "json" {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(asJSON)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSCOPES\tTENANT\tPATHS\tEXPIRES\tCREATED\tDESCRIPTION")
	for _, k := range rows {
		exp := "never"
		if k.ExpiresAt != nil {
			exp = *k.ExpiresAt
		}
		paths := strings.Join(k.Paths, ",")
		if paths == "" {
			paths = "*"
		}
		tenant := k.Tenant
		if tenant == "" {
			tenant = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, strings.Join(k.Scopes, ","), tenant, paths, exp, k.CreatedAt, k.Description)
	}
	return tw.Flush()
}

// do sends one request and decodes a 2xx answer into out; an error
// answer becomes an error with its code and message.
func (c *keysCommand) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("keys: reading the answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var e struct {
			Error struct{ Code, Message, Field string } `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error.Code != "" {
			if e.Error.Field != "" {
				return fmt.Errorf("keys: %s %s (field %s): %s", resp.Status, e.Error.Code, e.Error.Field, e.Error.Message)
			}
			return fmt.Errorf("keys: %s %s: %s", resp.Status, e.Error.Code, e.Error.Message)
		}
		return fmt.Errorf("keys: %s", resp.Status)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("keys: the answer is not the expected JSON: %w", err)
	}
	return nil
}
