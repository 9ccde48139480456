// Command herald-bench is Herald's load generator. It drives a running
// Herald (or any Durable Streams server, for the stream workloads) over
// HTTP and prints one JSON line of results per run on stdout, and a one
// line summary for people on stderr.
//
//	herald-bench append  -base URL -streams 1 -c 16 -d 5s
//	herald-bench create  -base URL -n 10000 -c 16
//	herald-bench seed    -url URL/bench/big -bytes 10000000
//	herald-bench read    -url URL/bench/big -c 4 -d 5s
//	herald-bench live    -base URL -mode sse -readers 1000 -n 20
//	herald-bench live    -base URL -read-base URL2 -n 1000   (append on one replica, read on another)
//	herald-bench hold    -base URL -n 1000 -hold 8s
//	herald-bench fill    -dir DATA_DIR -n 1000000 -c 64   (no server running on DATA_DIR)
//	herald-bench append  -base URL -existing -prefix /idle -streams 1000000 -c 64 -d 5s
//	herald-bench webhook -base URL -streams 1000 -c 1000 -d 15s
//	herald-bench bus     -broker nats|kafka [-addr ADDR] -c 8 -batch 100 -d 10s
//	herald-bench bus     -broker nats|kafka [-addr ADDR] -rate 5000 -d 10s
//
// docs/performance.md describes each workload and the figures taken with
// it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// workload is one subcommand: it parses its flags and runs.
type workload struct {
	name  string
	usage string
	run   func(ctx context.Context, args []string, out *output) error
}

var workloads = []workload{
	{"append", "appends of -size bytes to -streams streams from -c workers for -d", runAppend},
	{"create", "creates streams from -c workers, -n of them or for -d", runCreate},
	{"seed", "fills a JSON stream with about -bytes of -msg byte messages", runSeed},
	{"read", "catch-up reads of a stream from -offset by -c workers for -d", runRead},
	{"live", "send → receive latency of -readers long-poll or SSE readers over -n appends", runLive},
	{"hold", "holds -n long-polls open for -hold", runHold},
	{"webhook", "wake latency and closed-loop wakes/s of a subscription's consumers", runWebhook},
	{"pullwake", "-loops closed loops of append, wake event, claim, read, ack of a reserved-API pull-wake subscription", runPullWake},
	{"fill", "creates -n streams straight in the embedded store of -dir (no server), for append -existing", runFill},
	{"bus", "publish → acknowledgement of Herald's NATS JetStream and Kafka publishers: events/s, or latency at -rate", runBus},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], &output{json: os.Stdout, human: os.Stderr})
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "herald-bench:", err)
		os.Exit(1)
	}
}

// run runs the workload args name.
func run(ctx context.Context, args []string, out *output) error {
	if len(args) == 0 {
		usage(out.human)
		return flag.ErrHelp
	}
	for _, w := range workloads {
		if w.name == args[0] {
			return w.run(ctx, args[1:], out)
		}
	}
	usage(out.human)
	return fmt.Errorf("unknown workload %q", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: herald-bench WORKLOAD [flags]   (herald-bench WORKLOAD -h lists its flags)")
	for _, wl := range workloads {
		fmt.Fprintf(w, "  %-8s %s\n", wl.name, wl.usage)
	}
}

// result is the JSON line of one run (encoding/json sorts its keys).
type result map[string]any

// output is where results go.
type output struct {
	json  io.Writer
	human io.Writer
}

// emit writes r as one JSON line and summary as the human line.
func (o *output) emit(r result, summary string) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(o.json, "%s\n", line); err != nil {
		return err
	}
	_, err = fmt.Fprintln(o.human, strings.TrimSpace(summary))
	return err
}
