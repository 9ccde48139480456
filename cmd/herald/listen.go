package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heraldstreams/herald/client"
	"github.com/heraldstreams/herald/subscription"
)

const listenUsage = `Receive events or wakes from a running Herald on this machine, and print
each with whether its signature verified.

Usage:
  herald listen [--event-type TYPE ...] [--stream PATTERN ...] [--tenant T] [--port N]
  herald listen --pattern PATTERN [--port N]

Without --pattern, listen registers a temporary endpoint that receives the
events of the given types (default: all) and prints each delivery. With
--pattern, it registers a temporary subscription to the streams that match
and prints each wake, answering {"done": true} (which acknowledges the
streams it names). The receiver listens on 127.0.0.1 (--port 0: any free
port). On interrupt (Ctrl-C) the endpoint or subscription is removed.

Herald refuses loopback webhook URLs unless it was started with
--webhook-allow-cidrs 127.0.0.0/8.

` + commonFlagsUsage

// listenCleanupTimeout bounds removing the temporary endpoint or
// subscription after an interrupt.
const listenCleanupTimeout = 10 * time.Second

// maxListenBody bounds a request body the receiver reads.
const maxListenBody = 16 << 20

// receiver is listen's HTTP handler: it verifies and prints each request.
type receiver struct {
	c     *apiClient
	wakes bool // subscription wakes; else event deliveries
	// ready is closed once secret is known (the registration's answer
	// may come after the first request).
	ready  chan struct{}
	stop   chan struct{}
	secret string
	outMu  sync.Mutex
}

func runListen(ctx context.Context, args []string, cio clientIO) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(cio.stdout, listenUsage)
		return nil
	}
	c := newAPIClient("herald listen", cio)
	var (
		pattern, tenant     string
		eventTypes, streams listFlag
		port                int
	)
	c.fs.StringVar(&pattern, "pattern", "", "receive wakes of a subscription to the streams that match this pattern")
	c.fs.Var(&eventTypes, "event-type", "receive events of this type (*, prefix.* or exact; repeat for more)")
	c.fs.Var(&streams, "stream", "receive events of the streams that match this pattern (repeat for more)")
	c.fs.StringVar(&tenant, "tenant", "", "receive the events of this tenant")
	c.fs.IntVar(&port, "port", 0, "port of the receiver on 127.0.0.1 (0: any free port)")
	pos, err := c.parse(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	switch {
	case len(pos) != 0:
		return fmt.Errorf("%w: herald listen takes no arguments", errUsage)
	case pattern != "" && (len(eventTypes) > 0 || len(streams) > 0 || tenant != ""):
		return fmt.Errorf("%w: --pattern (wakes) goes alone; --event-type, --stream and --tenant are for events", errUsage)
	case port < 0 || port > 65535:
		return fmt.Errorf("%w: --port must be from 0 to 65535", errUsage)
	}
	if pattern != "" {
		if _, err := streamPath(pattern); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	rcv := &receiver{c: c, wakes: pattern != "", ready: make(chan struct{}), stop: make(chan struct{})}
	srv := &http.Server{Handler: rcv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	// shutdown stops the receiver and waits for it, unless it stopped
	// already.
	shutdown := func(running bool) error {
		close(rcv.stop)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listenCleanupTimeout)
		defer cancel()
		err := srv.Shutdown(sctx)
		if running {
			if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
				err = errors.Join(err, serr)
			}
		}
		return err
	}

	webhookURL := "http://" + ln.Addr().String() + "/"
	remove, err := rcv.register(ctx, webhookURL, pattern, tenant, eventTypes, streams)
	if err != nil {
		return errors.Join(webhookHint(err), shutdown(true))
	}
	fmt.Fprintln(c.stderr, "press Ctrl-C to stop and remove it")
	var serveErr error
	running := true
	select {
	case <-ctx.Done():
	case serveErr = <-served:
		running = false
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listenCleanupTimeout)
	defer cancel()
	rmErr := remove(rctx)
	if rmErr == nil {
		fmt.Fprintln(c.stderr, "removed it")
	}
	return errors.Join(serveErr, rmErr, shutdown(running))
}

// register creates the temporary subscription or endpoint that delivers
// to webhookURL, and returns what removes it.
func (rc *receiver) register(ctx context.Context, webhookURL, pattern, tenant string, eventTypes, streams []string) (func(context.Context) error, error) {
	c := rc.c
	if rc.wakes {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		id := "herald-listen-" + hex.EncodeToString(b[:])
		p, err := subscriptionPath(pattern, id)
		if err != nil {
			return nil, err
		}
		var s subscription.Subscription
		if err := c.do(ctx, http.MethodPut, p, subscription.CreateRequest{Webhook: webhookURL, Description: "herald listen"}, &s); err != nil {
			return nil, err
		}
		rc.setSecret(s.WebhookSecret)
		fmt.Fprintf(c.stderr, "listening on %s for wakes of %s (subscription %s)\n", webhookURL, pattern, id)
		return func(ctx context.Context) error { return c.do(ctx, http.MethodDelete, p, nil, nil) }, nil
	}
	body := map[string]any{"url": webhookURL, "description": "herald listen"}
	if len(eventTypes) > 0 {
		body["event_types"] = eventTypes
	}
	if len(streams) > 0 {
		body["streams"] = streams
	}
	if tenant != "" {
		body["tenant"] = tenant
	}
	var ep endpointOut
	if err := c.do(ctx, http.MethodPost, endpointsPath, body, &ep); err != nil {
		return nil, err
	}
	rc.setSecret(ep.Secret)
	types := "all events"
	if len(eventTypes) > 0 {
		types = "events of type " + strings.Join(eventTypes, ", ")
	}
	fmt.Fprintf(c.stderr, "listening on %s for %s (endpoint %s)\n", webhookURL, types, ep.ID)
	return func(ctx context.Context) error {
		return c.do(ctx, http.MethodDelete, idPath(endpointsPath, ep.ID), nil, nil)
	}, nil
}

func (rc *receiver) setSecret(s string) {
	rc.secret = s
	close(rc.ready)
}

// ServeHTTP verifies and prints one delivery or wake.
func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case <-rc.ready:
	case <-rc.stop:
		http.Error(w, "stopping", http.StatusServiceUnavailable)
		return
	case <-r.Context().Done():
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxListenBody))
	if err != nil {
		http.Error(w, "cannot read the body", http.StatusBadRequest)
		return
	}
	kind := kindStandard
	if rc.wakes {
		kind = kindWake
	}
	verr := verifySignature(kind, rc.secret, r.Header, body, time.Now())
	rc.print(r, kind, verr, body)
	if verr != nil {
		http.Error(w, "signature not valid", http.StatusUnauthorized)
		return
	}
	if rc.wakes {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"done":true}`)) // a failed write means Herald is gone
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listenRecord is one received request in the JSON form: one line each.
type listenRecord struct {
	Kind     string          `json:"kind"` // "event" or "wake"
	ID       string          `json:"id"`
	Type     string          `json:"type,omitempty"`
	Epoch    int64           `json:"epoch,omitempty"`
	Verified bool            `json:"verified"`
	Error    string          `json:"error,omitempty"`
	Body     json.RawMessage `json:"body"`
}

func (rc *receiver) print(r *http.Request, kind signatureKind, verr error, body []byte) {
	rec := listenRecord{Kind: "event", Verified: verr == nil, Body: body}
	if verr != nil {
		rec.Error = verr.Error()
	}
	var head string
	if rc.wakes {
		rec.Kind = "wake"
		if wk, err := client.ParseWake(body); err == nil {
			rec.ID, rec.Epoch = wk.ConsumerID, wk.Epoch
			var streams []string
			for _, s := range wk.Streams {
				streams = append(streams, s.Path+" from "+s.Offset)
			}
			head = fmt.Sprintf("wake %s epoch %d: %s", wk.ConsumerID, wk.Epoch, strings.Join(streams, ", "))
		}
	} else {
		var ev struct{ Type string }
		rec.ID = r.Header.Get("Webhook-Id")
		if json.Unmarshal(body, &ev) == nil {
			rec.Type = ev.Type
		}
		head = fmt.Sprintf("event %s %s", rec.ID, rec.Type)
	}
	if !json.Valid(body) {
		if quoted, err := json.Marshal(string(body)); err == nil {
			rec.Body = quoted
		} else {
			rec.Body = nil
		}
	}
	if head == "" {
		head = rec.Kind + " (unreadable)"
	}
	verdict := "signature verified (" + string(kind) + ")"
	if verr != nil {
		verdict = "signature NOT verified: " + verr.Error()
	}
	rc.outMu.Lock()
	defer rc.outMu.Unlock()
	if rc.c.output == "json" {
		line, err := json.Marshal(rec)
		if err == nil {
			fmt.Fprintf(rc.c.stdout, "%s\n", line)
		}
		return
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, body, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(body)
	}
	fmt.Fprintf(rc.c.stdout, "%s — %s\n%s\n\n", head, verdict, pretty.String())
}
