// Command consumer is an example webhook consumer for Herald's
// subscriptions: a Go consumer of the kind docs/subscriptions.md describes.
//
// Herald POSTs a signed wake to /webhook when one of the consumer's streams
// has new events. The consumer verifies the signature, claims the wake,
// reads each stream from its acked offset with plain Durable Streams
// catch-up reads, prints every batch, acks it, and says done; then it
// sleeps until the next wake. A batch that fails is not acked: the
// consumer waits -retry-backoff, says done, and Herald wakes it again at
// once to read that batch again.
//
//	herald serve --webhook-allow-cidrs 127.0.0.0/8
//	curl -X PUT 'http://localhost:4437/agents/*?subscription=example' -H 'Content-Type: application/json' \
//	     -d '{"webhook": "http://127.0.0.1:8080/webhook"}'
//	consumer -listen 127.0.0.1:8080 -secret whsec_...
//	curl -X PUT http://localhost:4437/agents/task-1 -H 'Content-Type: text/plain' -d 'hello'
//
// With access control on, give it a key that can read the streams:
// -key hk_... or HERALD_KEY (a key with streams:read is enough; the
// callbacks carry the wake's own token).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/heraldstreams/herald/client"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("consumer", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8080", "address to serve the webhook on")
	secret := fs.String("secret", os.Getenv("WEBHOOK_SECRET"), "the subscription's webhook_secret (default $WEBHOOK_SECRET)")
	key := fs.String("key", os.Getenv("HERALD_KEY"), "API key to read streams with when Herald's access control is on: streams:read for the subscription's paths is enough (default $HERALD_KEY)")
	streams := fs.String("streams-url", "", "base URL to read streams from (default: the host of the wake's callback URL)")
	backoff := fs.Duration("retry-backoff", client.DefaultRetryBackoff, "how long a failed wake waits before it ends, so that Herald retries it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *secret == "" {
		return errors.New("-secret (or WEBHOOK_SECRET) is required: it is the webhook_secret Herald returned when the subscription was created")
	}
	log := slog.New(slog.NewTextHandler(os.Stdout, nil))

	consumer := client.NewConsumer(client.ConsumerConfig{
		Secret:       *secret,
		StreamsURL:   *streams,
		Key:          *key,
		RetryBackoff: *backoff,
		Logger:       log,
		Process: func(ctx context.Context, b client.Batch) error {
			// Real work goes here. It must be idempotent: delivery is
			// at least once, and a crash before the ack repeats a batch.
			log.Info("batch", "stream", b.Stream, "offset", b.Offset, "next_offset", b.NextOffset, "data", string(b.Data))
			return nil
		},
	})
	mux := http.NewServeMux()
	mux.Handle("POST /webhook", logWakes(log, consumer))
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("consumer listening", "addr", *listen, "webhook", "http://"+*listen+"/webhook")
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return srv.Shutdown(shutCtx)
}

// logWakes logs when a wake starts and when the consumer goes back to
// sleep.
func logWakes(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		log.Info("wake")
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		log.Info("sleep", "status", rec.status, "took", time.Since(start).Round(time.Millisecond))
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
