package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"
)

// The client commands (keys, streams, subscriptions, consumers,
// endpoints, events, deliveries, listen) talk to a running Herald. They
// share the flags --url, --key and --output, the request code and the
// printing code below.

// defaultHeraldURL is where a Herald started with its defaults listens.
const defaultHeraldURL = "http://127.0.0.1:4437"

// apiRequestTimeout bounds one request of a client command; live reads
// (tail, listen) are bounded by the command's context instead.
const apiRequestTimeout = 30 * time.Second

// maxAnswerBytes bounds the answer a client command reads into memory.
const maxAnswerBytes = 64 << 20

// commonFlagsUsage is the line every client command's usage ends with.
const commonFlagsUsage = `Every subcommand takes --url (HERALD_URL, default ` + defaultHeraldURL + `),
--key (HERALD_KEY, sent as Authorization: Bearer) and --output table|json.
`

// apiClient is what every client command shares: where Herald is, the
// credential, the output format, and the command's streams.
type apiClient struct {
	url, key, output string
	stdin            io.Reader
	stdout, stderr   io.Writer
	http             *http.Client
	fs               *flag.FlagSet
}

// clientIO are the standard streams and environment of a client command.
type clientIO struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	env            func(string) (string, bool)
}

// action is one subcommand: its positional arguments and what it does.
type action struct {
	args     string // the positional arguments, for messages: "PATH [DATA | -]"
	min, max int    // how many positional arguments it takes
	run      func(ctx context.Context, args []string) error
}

// commandGroup is a client command with subcommands (herald streams ...).
type commandGroup struct {
	name  string
	usage string
	// needKey: the command cannot work without a credential.
	needKey bool
	// action declares the subcommand's flags on c.fs and returns it, or
	// false for an unknown subcommand.
	action func(c *apiClient, sub string) (*action, bool)
}

// isHelp reports whether an argument asks for usage.
func isHelp(arg string) bool {
	return arg == "help" || arg == "--help" || arg == "-help" || arg == "-h"
}

// runGroup parses a group's subcommand and its flags, and runs it.
func runGroup(ctx context.Context, g commandGroup, args []string, cio clientIO) error {
	if len(args) == 0 {
		fmt.Fprint(cio.stderr, g.usage)
		return fmt.Errorf("%w: no %s subcommand given", errUsage, g.name)
	}
	if isHelp(args[0]) {
		fmt.Fprint(cio.stdout, g.usage)
		return nil
	}
	sub, args := args[0], args[1:]
	c := newAPIClient("herald "+g.name+" "+sub, cio)
	a, ok := g.action(c, sub)
	if !ok {
		fmt.Fprint(cio.stderr, g.usage)
		return fmt.Errorf("%w: unknown %s subcommand %q", errUsage, g.name, sub)
	}
	pos, err := c.parse(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if g.needKey && c.key == "" {
		return fmt.Errorf("%w: a key is needed: --key or HERALD_KEY", errUsage)
	}
	if len(pos) < a.min || len(pos) > a.max {
		return fmt.Errorf("%w: herald %s %s %s", errUsage, g.name, sub, a.args)
	}
	return a.run(ctx, pos)
}

// newAPIClient declares the shared flags, with their defaults from the
// environment.
func newAPIClient(name string, cio clientIO) *apiClient {
	c := &apiClient{stdin: cio.stdin, stdout: cio.stdout, stderr: cio.stderr, http: &http.Client{}}
	c.fs = flag.NewFlagSet(name, flag.ContinueOnError)
	c.fs.SetOutput(cio.stderr)
	base, _ := cio.env("HERALD_URL")
	if base == "" {
		base = defaultHeraldURL
	}
	key, _ := cio.env("HERALD_KEY")
	c.fs.StringVar(&c.url, "url", base, "base URL of Herald (HERALD_URL)")
	c.fs.StringVar(&c.key, "key", key, "API key (HERALD_KEY)")
	c.fs.StringVar(&c.output, "output", "table", "output format: table or json")
	return c
}

// parse parses flags given before, between and after the positional
// arguments (everything after "--" is positional), checks the shared
// flags, and returns the positional arguments.
func (c *apiClient) parse(args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(c.fs, args, c.stdout, c.stderr); err != nil {
			return nil, err
		}
		rest := c.fs.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	if c.output != "table" && c.output != "json" {
		return nil, fmt.Errorf("%w: --output must be table or json", errUsage)
	}
	if u, err := url.ParseRequestURI(c.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: --url must be an http:// or https:// URL", errUsage)
	}
	c.url = strings.TrimSuffix(c.url, "/")
	return pos, nil
}

// apiError is an error answer of Herald: its status, code and message,
// and what to do about it on the command line.
type apiError struct {
	Status  string
	Code    string
	Message string
	Field   string
	Hint    string
}

func (e *apiError) Error() string {
	var s string
	switch {
	case e.Code == "":
		s = e.Status
	case e.Field != "":
		s = fmt.Sprintf("%s %s (field %s): %s", e.Status, e.Code, e.Field, e.Message)
	default:
		s = fmt.Sprintf("%s %s: %s", e.Status, e.Code, e.Message)
	}
	if e.Hint != "" {
		s += "\nhint: " + e.Hint
	}
	return s
}

// unauthorized fills in a 401 answer for the command line: Herald's
// message speaks of the Authorization header, which the user of a
// command sets with --key or HERALD_KEY.
func (c *apiClient) unauthorized(ae *apiError) {
	if c.key == "" {
		ae.Message = "this command needs an API key"
		ae.Hint = "give one with --key KEY or the environment variable HERALD_KEY"
		return
	}
	ae.Hint = "check the key given with --key or HERALD_KEY"
}

// unreachable is the error of a request that never reached Herald: no
// server listens at --url, or its host does not resolve.
func (c *apiClient) unreachable(err error) error {
	var op *net.OpError
	var dns *net.DNSError
	if (errors.As(err, &op) && op.Op == "dial") || errors.As(err, &dns) {
		return fmt.Errorf("cannot reach Herald at %s (is it running? --url / HERALD_URL)", c.url)
	}
	return err
}

// hasCode reports whether err is an answer of Herald with one of codes
// (compared without case: the stream and subscription routes use upper
// case, the delivery API lower case).
func hasCode(err error, codes ...string) bool {
	var ae *apiError
	if !errors.As(err, &ae) {
		return false
	}
	for _, code := range codes {
		if strings.EqualFold(ae.Code, code) {
			return true
		}
	}
	return false
}

// send sends one request to path (which may carry a query) with the
// credential; a 2xx answer is returned for the caller to read and
// close, any other becomes an *apiError.
func (c *apiClient) send(ctx context.Context, method, path string, hdr http.Header, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.unreachable(err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return resp, nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, fmt.Errorf("%s: reading the answer: %w", resp.Status, err)
	}
	ae := &apiError{Status: resp.Status}
	var e struct {
		Error struct{ Code, Message, Field string } `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil {
		ae.Code, ae.Message, ae.Field = e.Error.Code, e.Error.Message, e.Error.Field
	}
	if resp.StatusCode == http.StatusUnauthorized {
		c.unauthorized(ae)
	}
	return nil, ae
}

// do sends one JSON request (no body when body is nil) and decodes a 2xx
// answer into out (when out is not nil).
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, apiRequestTimeout)
	defer cancel()
	var rd io.Reader
	hdr := http.Header{}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
		hdr.Set("Content-Type", "application/json")
	}
	resp, err := c.send(ctx, method, path, hdr, rd)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("the answer is not the expected JSON: %w", err)
	}
	return nil
}

// page is one page of a list of Herald's API.
type page[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"next_cursor"`
}

// list reads a paged list from path with query q, following next_cursor
// until the end or until max items (0: no bound).
func list[T any](ctx context.Context, c *apiClient, path string, q url.Values, max int) ([]T, error) {
	all := []T{}
	for {
		u := path
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
		var p page[T]
		if err := c.do(ctx, http.MethodGet, u, nil, &p); err != nil {
			return nil, err
		}
		all = append(all, p.Data...)
		if max > 0 && len(all) >= max {
			return all[:max], nil
		}
		if p.NextCursor == nil {
			return all, nil
		}
		q.Set("cursor", *p.NextCursor)
	}
}

// printJSON writes v as indented JSON.
func (c *apiClient) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printTable writes rows under a header, in aligned columns; an empty
// cell shows as "-".
func (c *apiClient) printTable(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, v := range r {
			cells[i] = orDash(v)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// printFields writes one resource as "name: value" lines.
func (c *apiClient) printFields(fields [][2]string) error {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 1, ' ', 0)
	for _, f := range fields {
		fmt.Fprintf(tw, "%s:\t%s\n", f[0], orDash(f[1]))
	}
	return tw.Flush()
}

// show prints v as JSON, or its table form.
func (c *apiClient) show(v any, table func() error) error {
	if c.output == "json" {
		return c.printJSON(v)
	}
	return table()
}

// done prints a one-line outcome in table form; nothing in JSON form
// unless v is not nil.
func (c *apiClient) done(v any, format string, a ...any) error {
	if c.output == "json" {
		if v == nil {
			return nil
		}
		return c.printJSON(v)
	}
	_, err := fmt.Fprintf(c.stdout, format+"\n", a...)
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// strOr returns *p, or def when p is nil.
func strOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

// idPath is an id escaped as one path segment.
func idPath(prefix, id string) string { return prefix + "/" + url.PathEscape(id) }

// streamPath checks a stream path or pattern given on the command line.
func streamPath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%w: a stream path starts with /: %q", errUsage, p)
	}
	if strings.ContainsAny(p, "?#") {
		return "", fmt.Errorf("%w: a stream path has no ? or #: %q", errUsage, p)
	}
	return p, nil
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// setFlags returns the names of the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}
