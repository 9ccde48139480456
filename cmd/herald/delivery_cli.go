package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const endpointsUsage = `Manage the endpoints a running Herald delivers events to.

Usage:
  herald endpoints ls [--tenant T]
  herald endpoints get ID
  herald endpoints create --webhook URL [--event-type TYPE ...] [--stream PATTERN ...] [--tenant T] [--description TEXT]
  herald endpoints create --type nats|kafka --config JSON [--event-type TYPE ...] [--stream PATTERN ...] [--tenant T] [--description TEXT]
  herald endpoints update ID [--webhook URL | --type TYPE --config JSON] [--event-type TYPE ...] [--stream PATTERN ...] [--description TEXT]
  herald endpoints pause ID          (deliveries wait until resume)
  herald endpoints resume ID         (also re-enables an endpoint the breaker disabled)
  herald endpoints rotate-secret ID  (the old secret keeps signing for the overlap)
  herald endpoints test ID           (sends a signed herald.test event now)
  herald endpoints rm ID

--webhook is the endpoint's URL (--url is Herald's, as in every command).
--type nats or kafka publishes to a message broker instead, described by
--config (its JSON object, or - to read it from standard input, which keeps
its credentials off the command line).
create and rotate-secret print the signing secret, which Herald shows only then.

` + commonFlagsUsage

const eventsUsage = `Publish events to a running Herald.

Usage:
  herald events publish --type TYPE --data JSON [--stream PATH] [--id ID] [--tenant T]

--data - reads the JSON from standard input.

` + commonFlagsUsage

// replayOut is a replay job as the API shows it.
type replayOut struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Queued    int    `json:"queued"`
	Total     int    `json:"total"`
	Truncated bool   `json:"truncated"`
	Error     string `json:"error"`
}

// replayPoll is how often replay reads a running job's progress.
const replayPoll = 500 * time.Millisecond

const deliveriesUsage = `Inspect, retry and replay the deliveries of a running Herald.

Usage:
  herald deliveries ls --endpoint ID [--status pending|failed|delivered|exhausted]
                       [--event-type TYPE] [--since RFC3339] [--until RFC3339] [--limit N]
  herald deliveries get ID        (the payload and every attempt)
  herald deliveries retry ID      (pending now, with a fresh schedule)
  herald deliveries replay --endpoint ID (--since RFC3339 | --offset OFFSET | --status exhausted|failed)
                           [--until RFC3339] [--stream PATH] [--no-wait]

replay starts a replay job: past events matched again (--since, --until,
--offset, --stream), or the deliveries of a status made pending again
(--status, with --since and --until bounding when they were created). It
prints the job's progress (queued/total) until it is done, unless
--no-wait; with --output json it prints the finished job.

` + commonFlagsUsage

func runEndpoints(ctx context.Context, args []string, cio clientIO) error {
	return runGroup(ctx, commandGroup{name: "endpoints", usage: endpointsUsage, action: endpointsAction}, args, cio)
}

func runEvents(ctx context.Context, args []string, cio clientIO) error {
	return runGroup(ctx, commandGroup{name: "events", usage: eventsUsage, action: eventsAction}, args, cio)
}

func runDeliveries(ctx context.Context, args []string, cio clientIO) error {
	return runGroup(ctx, commandGroup{name: "deliveries", usage: deliveriesUsage, action: deliveriesAction}, args, cio)
}

const (
	endpointsPath  = "/_herald/v1/endpoints"
	deliveriesPath = "/_herald/v1/deliveries"
	replaysPath    = "/_herald/v1/replays"
)

// endpointOut is what the table form shows of an endpoint; the JSON form
// shows Herald's answer whole.
type endpointOut struct {
	ID                  string   `json:"id"`
	Type                string   `json:"type"`
	URL                 string   `json:"url"`
	EventTypes          []string `json:"event_types"`
	Streams             []string `json:"streams"`
	Tenant              string   `json:"tenant"`
	Description         string   `json:"description"`
	Status              string   `json:"status"`
	Secret              string   `json:"secret"`
	ConsecutiveFailures int      `json:"consecutive_failures"`
	LastSuccessAt       *string  `json:"last_success_at"`
	LastFailureAt       *string  `json:"last_failure_at"`
	DisabledReason      string   `json:"disabled_reason"`
}

// deliveryOut is what the table form shows of a delivery.
type deliveryOut struct {
	ID             string  `json:"id"`
	EventID        string  `json:"event_id"`
	EventType      string  `json:"event_type"`
	Stream         string  `json:"stream"`
	Status         string  `json:"status"`
	AttemptCount   int     `json:"attempt_count"`
	NextAttemptAt  *string `json:"next_attempt_at"`
	LastStatusCode int     `json:"last_status_code"`
	LastError      string  `json:"last_error"`
	CreatedAt      *string `json:"created_at"`
	Attempts       []struct {
		At           *string `json:"at"`
		StatusCode   int     `json:"status_code"`
		Latency      string  `json:"latency"`
		Error        string  `json:"error"`
		ResponseBody string  `json:"response_body"`
	} `json:"attempts"`
	Payload json.RawMessage `json:"payload"`
}

// fetch sends a JSON request and returns the answer as it came (for the
// JSON form) and decoded into out (for the table form).
func (c *apiClient) fetch(ctx context.Context, method, path string, body, out any) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := c.do(ctx, method, path, body, &raw); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("the answer is not the expected JSON: %w", err)
	}
	return raw, nil
}

// fetchList reads a paged list as it came and decoded into T.
func fetchList[T any](ctx context.Context, c *apiClient, path string, q url.Values, max int) ([]json.RawMessage, []T, error) {
	raws, err := list[json.RawMessage](ctx, c, path, q, max)
	if err != nil {
		return nil, nil, err
	}
	out := make([]T, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			return nil, nil, fmt.Errorf("the answer is not the expected JSON: %w", err)
		}
	}
	return raws, out, nil
}

func printEndpoints(c *apiClient, eps []endpointOut) error {
	rows := make([][]string, 0, len(eps))
	for _, e := range eps {
		where := e.URL
		if where == "" {
			where = e.Type // a broker endpoint: get shows its config
		}
		rows = append(rows, []string{e.ID, e.Status, where, strings.Join(e.EventTypes, ","), strings.Join(e.Streams, ","), e.Tenant, e.Description})
	}
	return c.printTable([]string{"ID", "STATUS", "URL", "EVENT TYPES", "STREAMS", "TENANT", "DESCRIPTION"}, rows)
}

// endpointFields declares the flags of an endpoint's settings and
// returns the body they make: only the flags given.
func endpointFields(c *apiClient) func() (map[string]any, error) {
	var (
		u, tenant, description, typ, config string
		eventTypes, streams                 listFlag
	)
	c.fs.StringVar(&u, "webhook", "", "the URL events are POSTed to")
	c.fs.StringVar(&typ, "type", "", "the destination type: webhook (the default), nats or kafka")
	c.fs.StringVar(&config, "config", "", "a nats or kafka endpoint's config, JSON (- reads standard input)")
	c.fs.Var(&eventTypes, "event-type", "an event type (*, prefix.* or exact) it receives (repeat for more)")
	c.fs.Var(&streams, "stream", "a stream pattern it sources events from (repeat for more)")
	c.fs.StringVar(&description, "description", "", "what the endpoint is for")
	c.fs.StringVar(&tenant, "tenant", "", "tenant whose events it receives")
	return func() (map[string]any, error) {
		set := setFlags(c.fs)
		body := map[string]any{}
		for name, v := range map[string]any{"webhook": u, "description": description, "tenant": tenant, "type": typ} {
			if set[name] {
				body[strings.Replace(name, "webhook", "url", 1)] = v
			}
		}
		if set["config"] {
			raw, err := jsonArg(c, "--config", config)
			if err != nil {
				return nil, err
			}
			body["config"] = raw
		}
		if set["event-type"] {
			body["event_types"] = []string(eventTypes)
		}
		if set["stream"] {
			body["streams"] = []string(streams)
		}
		return body, nil
	}
}

// jsonArg is a flag's JSON value, read from standard input when it is -.
func jsonArg(c *apiClient, flag, value string) (json.RawMessage, error) {
	raw := []byte(value)
	if value == "-" {
		b, err := io.ReadAll(c.stdin)
		if err != nil {
			return nil, fmt.Errorf("reading standard input: %w", err)
		}
		raw = b
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%w: %s is not JSON", errUsage, flag)
	}
	return raw, nil
}

func endpointsAction(c *apiClient, sub string) (*action, bool) {
	// show prints an endpoint answer, every field; the secret (create,
	// rotate-secret) is shown once, above them.
	show := func(raw json.RawMessage, ep endpointOut) error {
		return c.show(raw, func() error {
			if ep.Secret != "" {
				fmt.Fprintf(c.stdout, "signing secret: %s\n(shown only now: the receiver verifies deliveries with it)\n\n", ep.Secret)
			}
			return c.printObject(raw, "secret")
		})
	}
	one := func(method, suffix string, body any) *action {
		return &action{args: "ID", min: 1, max: 1, run: func(ctx context.Context, args []string) error {
			var ep endpointOut
			raw, err := c.fetch(ctx, method, idPath(endpointsPath, args[0])+suffix, body, &ep)
			if err != nil {
				return err
			}
			return show(raw, ep)
		}}
	}
	switch sub {
	case "ls":
		var tenant string
		c.fs.StringVar(&tenant, "tenant", "", "only endpoints of this tenant")
		return &action{run: func(ctx context.Context, _ []string) error {
			q := url.Values{}
			if tenant != "" {
				q.Set("tenant", tenant)
			}
			raws, eps, err := fetchList[endpointOut](ctx, c, endpointsPath, q, 0)
			if err != nil {
				return err
			}
			return c.show(raws, func() error { return printEndpoints(c, eps) })
		}}, true
	case "get":
		return one(http.MethodGet, "", nil), true
	case "pause":
		return one(http.MethodPatch, "", map[string]any{"active": false}), true
	case "resume":
		return one(http.MethodPatch, "", map[string]any{"active": true}), true
	case "rotate-secret":
		return one(http.MethodPost, "/rotate-secret", nil), true
	case "create":
		body := endpointFields(c)
		return &action{args: "--webhook URL | --type nats|kafka --config JSON", run: func(ctx context.Context, _ []string) error {
			b, err := body()
			if err != nil {
				return err
			}
			if (b["url"] == nil || b["url"] == "") && b["config"] == nil {
				return fmt.Errorf("%w: --webhook is required (or --type nats|kafka with --config)", errUsage)
			}
			var ep endpointOut
			raw, err := c.fetch(ctx, http.MethodPost, endpointsPath, b, &ep)
			if err != nil {
				return webhookHint(err)
			}
			return show(raw, ep)
		}}, true
	case "update":
		body := endpointFields(c)
		return &action{args: "ID [--webhook URL | --type TYPE --config JSON] [--event-type TYPE ...] [--stream PATTERN ...] [--description TEXT]", min: 1, max: 1,
			run: func(ctx context.Context, args []string) error {
				b, err := body()
				if err != nil {
					return err
				}
				if len(b) == 0 {
					return fmt.Errorf("%w: give at least one setting to change", errUsage)
				}
				var ep endpointOut
				raw, err := c.fetch(ctx, http.MethodPatch, idPath(endpointsPath, args[0]), b, &ep)
				if err != nil {
					return webhookHint(err)
				}
				return show(raw, ep)
			}}, true
	case "test":
		return &action{args: "ID", min: 1, max: 1, run: func(ctx context.Context, args []string) error {
			var res struct {
				OK         bool   `json:"ok"`
				StatusCode int    `json:"status_code"`
				Latency    string `json:"latency"`
				Error      string `json:"error"`
				Event      struct {
					ID string `json:"id"`
				} `json:"event"`
			}
			raw, err := c.fetch(ctx, http.MethodPost, idPath(endpointsPath, args[0])+"/test", nil, &res)
			if err != nil {
				return err
			}
			return c.show(raw, func() error {
				outcome := "failed"
				if res.OK {
					outcome = "delivered"
				}
				return c.printFields([][2]string{
					{"test event", res.Event.ID}, {"outcome", outcome}, {"status", strconv.Itoa(res.StatusCode)},
					{"latency", res.Latency}, {"error", res.Error},
				})
			})
		}}, true
	case "rm":
		return &action{args: "ID", min: 1, max: 1, run: func(ctx context.Context, args []string) error {
			if err := c.do(ctx, http.MethodDelete, idPath(endpointsPath, args[0]), nil, nil); err != nil {
				return err
			}
			return c.done(nil, "deleted endpoint %s", args[0])
		}}, true
	}
	return nil, false
}

func eventsAction(c *apiClient, sub string) (*action, bool) {
	if sub != "publish" {
		return nil, false
	}
	var typ, data, stream, id, tenant string
	c.fs.StringVar(&typ, "type", "", "the event's type (required)")
	c.fs.StringVar(&data, "data", "", "the event's data, JSON (required; - reads standard input)")
	c.fs.StringVar(&stream, "stream", "", "the stream it is appended to (Herald's default stream when not given)")
	c.fs.StringVar(&id, "id", "", "the event's id (Herald makes one when not given; an id is accepted once)")
	c.fs.StringVar(&tenant, "tenant", "", "the tenant whose endpoints receive it")
	return &action{args: "--type TYPE --data JSON", run: func(ctx context.Context, _ []string) error {
		if typ == "" || data == "" {
			return fmt.Errorf("%w: --type and --data are required", errUsage)
		}
		raw, err := jsonArg(c, "--data", data)
		if err != nil {
			return err
		}
		body := map[string]any{"type": typ, "data": json.RawMessage(raw)}
		for k, v := range map[string]string{"stream": stream, "id": id, "tenant": tenant} {
			if v != "" {
				body[k] = v
			}
		}
		var res struct {
			Event struct {
				ID string `json:"id"`
			} `json:"event"`
			Stream    string `json:"stream"`
			Offset    string `json:"offset"`
			Duplicate bool   `json:"duplicate"`
		}
		out, err := c.fetch(ctx, http.MethodPost, "/_herald/v1/events", body, &res)
		if err != nil {
			return err
		}
		if res.Duplicate {
			return c.done(out, "event %s was published before: not again", res.Event.ID)
		}
		return c.done(out, "published %s to %s at offset %s", res.Event.ID, res.Stream, res.Offset)
	}}, true
}

func printDeliveries(c *apiClient, ds []deliveryOut) error {
	rows := make([][]string, 0, len(ds))
	for _, d := range ds {
		last := ""
		if d.LastStatusCode != 0 {
			last = strconv.Itoa(d.LastStatusCode)
		}
		if d.LastError != "" {
			last = strings.TrimSpace(last + " " + d.LastError)
		}
		rows = append(rows, []string{d.ID, d.Status, d.EventID, d.EventType, d.Stream, strconv.Itoa(d.AttemptCount), last, strOr(d.NextAttemptAt, ""), strOr(d.CreatedAt, "")})
	}
	return c.printTable([]string{"ID", "STATUS", "EVENT", "TYPE", "STREAM", "ATTEMPTS", "LAST", "NEXT ATTEMPT", "CREATED"}, rows)
}

func deliveriesAction(c *apiClient, sub string) (*action, bool) {
	var endpoint string
	switch sub {
	case "ls":
		var status, eventType, since, until string
		limit := 50
		c.fs.StringVar(&endpoint, "endpoint", "", "the endpoint whose deliveries to list (required)")
		c.fs.StringVar(&status, "status", "", "only deliveries in this status: pending, failed, delivered or exhausted")
		c.fs.StringVar(&eventType, "event-type", "", "only deliveries of this event type")
		c.fs.StringVar(&since, "since", "", "only deliveries created at or after this RFC 3339 time")
		c.fs.StringVar(&until, "until", "", "only deliveries created before this RFC 3339 time")
		c.fs.IntVar(&limit, "limit", limit, "most deliveries to show, newest first")
		return &action{args: "--endpoint ID", run: func(ctx context.Context, _ []string) error {
			if endpoint == "" {
				return fmt.Errorf("%w: --endpoint is required", errUsage)
			}
			if limit < 1 {
				return fmt.Errorf("%w: --limit must be at least 1", errUsage)
			}
			q := url.Values{"limit": {strconv.Itoa(min(limit, 1000))}}
			for k, v := range map[string]string{"status": status, "event_type": eventType, "since": since, "until": until} {
				if v != "" {
					q.Set(k, v)
				}
			}
			raws, ds, err := fetchList[deliveryOut](ctx, c, idPath(endpointsPath, endpoint)+"/deliveries", q, limit)
			if err != nil {
				return err
			}
			return c.show(raws, func() error { return printDeliveries(c, ds) })
		}}, true
	case "get":
		return &action{args: "ID", min: 1, max: 1, run: func(ctx context.Context, args []string) error {
			var d deliveryOut
			raw, err := c.fetch(ctx, http.MethodGet, idPath(deliveriesPath, args[0]), nil, &d)
			if err != nil {
				return err
			}
			return c.show(raw, func() error {
				if err := c.printObject(raw, "attempts", "payload"); err != nil {
					return err
				}
				fmt.Fprintln(c.stdout, "\nattempts:")
				rows := make([][]string, 0, len(d.Attempts))
				for i, a := range d.Attempts {
					status := ""
					if a.StatusCode != 0 {
						status = strconv.Itoa(a.StatusCode)
					}
					rows = append(rows, []string{strconv.Itoa(i + 1), strOr(a.At, ""), status, a.Latency, a.Error})
				}
				if err := c.printTable([]string{"#", "AT", "STATUS", "LATENCY", "ERROR"}, rows); err != nil {
					return err
				}
				if len(d.Payload) > 0 {
					fmt.Fprintln(c.stdout, "\npayload:")
					return c.printMessage(d.Payload)
				}
				return nil
			})
		}}, true
	case "retry":
		return &action{args: "ID", min: 1, max: 1, run: func(ctx context.Context, args []string) error {
			var d deliveryOut
			raw, err := c.fetch(ctx, http.MethodPost, idPath(deliveriesPath, args[0])+"/retry", nil, &d)
			if err != nil {
				return err
			}
			return c.done(raw, "delivery %s is %s, to be sent at %s", d.ID, d.Status, strOr(d.NextAttemptAt, "once a sender is free"))
		}}, true
	case "replay":
		var since, until, offset, stream, status string
		var noWait bool
		c.fs.StringVar(&endpoint, "endpoint", "", "the endpoint to replay to (required)")
		c.fs.StringVar(&since, "since", "", "replay events since this RFC 3339 time")
		c.fs.StringVar(&until, "until", "", "replay events before this RFC 3339 time")
		c.fs.StringVar(&offset, "offset", "", "replay events from this offset (-1: the start)")
		c.fs.StringVar(&stream, "stream", "", "replay only this stream (default: every stream the endpoint sources from)")
		c.fs.StringVar(&status, "status", "", "requeue the deliveries of this status instead: exhausted or failed")
		c.fs.BoolVar(&noWait, "no-wait", false, "print the job as started, without waiting for it to finish")
		return &action{args: "--endpoint ID (--since RFC3339 | --offset OFFSET | --status STATUS)", run: func(ctx context.Context, _ []string) error {
			if endpoint == "" || (since == "" && offset == "" && status == "") {
				return fmt.Errorf("%w: --endpoint and one of --since, --offset and --status are required", errUsage)
			}
			body := map[string]string{}
			for k, v := range map[string]string{"since": since, "until": until, "offset": offset, "stream": stream, "status": status} {
				if v != "" {
					body[k] = v
				}
			}
			var job replayOut
			raw, err := c.fetch(ctx, http.MethodPost, idPath(endpointsPath, endpoint)+"/replay", body, &job)
			if err != nil {
				return err
			}
			for !noWait && job.State == "running" {
				if c.output != "json" {
					if _, err := fmt.Fprintf(c.stdout, "replay %s: %d/%d queued\n", job.ID, job.Queued, job.Total); err != nil {
						return err
					}
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(replayPoll):
				}
				if raw, err = c.fetch(ctx, http.MethodGet, idPath(replaysPath, job.ID), nil, &job); err != nil {
					return err
				}
			}
			more := ""
			if job.Truncated {
				more = " (the most one replay covers: replay again from the last one for the rest)"
			}
			if job.State == "failed" {
				return fmt.Errorf("replay %s failed after queueing %d of %d: %s", job.ID, job.Queued, job.Total, job.Error)
			}
			return c.done(raw, "replay %s %s: queued %d deliveries of %d events to %s%s", job.ID, job.State, job.Queued, job.Total, endpoint, more)
		}}, true
	}
	return nil, false
}
