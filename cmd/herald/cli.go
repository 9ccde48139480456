package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// errUsage marks command-line mistakes (exit code 2).
var errUsage = errors.New("usage")

// loggedError is an error already logged; main only exits with its code.
type loggedError struct{ error }

func (e loggedError) Unwrap() error { return e.error }

func exitCode(err error) int {
	if errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

const usage = `Herald keeps durable streams and delivers them by webhook.

Usage:
  herald serve [flags]   run the server (herald serve --help lists the flags)
  herald kek ...         rotate the key that encrypts the secrets in the database (herald kek help)
  herald backup DEST     snapshot the embedded store while it runs (herald backup help)
  herald restore SRC     put a backup back, with Herald stopped
  herald healthcheck     exit 0 if the local Herald answers /_herald/healthz (for containers)
  herald version         print the version, commit and build time

Client commands, which talk to a running Herald (herald COMMAND help):
  herald streams ...        create, append to, read, tail and delete streams
  herald subscriptions ...  webhook subscriptions that wake consumers
  herald consumers ...      the consumers of a subscription: state, epoch, offsets
  herald endpoints ...      endpoints that events are delivered to
  herald events publish     publish an event
  herald deliveries ...     deliveries of events to an endpoint: attempts, retry, replay
  herald keys ...           API keys
  herald listen             receive events or wakes here, with their signatures checked
  herald verify             check a webhook signature (Standard Webhooks or a wake's)

They take --url (HERALD_URL, default http://127.0.0.1:4437), --key
(HERALD_KEY) and --output table|json.

Every flag can also be set with an environment variable: --data-dir is
HERALD_DATA_DIR, --long-poll-timeout is HERALD_LONG_POLL_TIMEOUT, and so on.
A flag on the command line wins over the environment.
`

// run is main without the process: testable with its own args, output and
// environment.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env func(string) (string, bool)) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("%w: no command given", errUsage)
	}
	switch args[0] {
	case "serve":
		cfg, err := parseServeFlags(args[1:], stdout, stderr, env)
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		if cfg == nil {
			return err // a command-line mistake, before a log format is known
		}
		log := newLogger(cfg, stderr)
		if err == nil {
			err = serve(ctx, cfg, log, env)
		}
		if err != nil {
			// In the configured format, so a log pipeline that reads
			// JSON sees why Herald did not start or stopped.
			log.Error("herald stopped with an error", "err", err)
			return loggedError{err}
		}
		return nil
	case "keys", "streams", "subscriptions", "consumers", "endpoints", "events", "deliveries", "listen", "verify":
		return clientCommands[args[0]](ctx, args[1:], clientIO{stdin: stdin, stdout: stdout, stderr: stderr, env: env})
	case "kek":
		return runKEK(ctx, args[1:], stdout, stderr, env)
	case "healthcheck":
		return runHealthcheck(ctx, args[1:], stdout, stderr, env)
	case "backup", "restore":
		return runBackup(ctx, args[0] == "restore", args[1:], stdout, stderr, env)
	case "version", "--version", "-version":
		fmt.Fprint(stdout, readBuildInfo())
		return nil
	case "help", "--help", "-help", "-h":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
}

// clientCommands are the commands that talk to a running Herald (and
// verify, which checks a signature offline).
var clientCommands = map[string]func(context.Context, []string, clientIO) error{
	"keys":          runKeys,
	"streams":       runStreams,
	"subscriptions": runSubscriptions,
	"consumers":     runConsumers,
	"endpoints":     runEndpoints,
	"events":        runEvents,
	"deliveries":    runDeliveries,
	"listen":        runListen,
	"verify":        runVerify,
}

// parseFlags parses args into fs. --help (or -h) prints the usage on
// stdout and returns flag.ErrHelp; a mistake is printed on stderr with the
// usage and returned as a usage error.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	usage := fs.Usage
	if usage == nil {
		usage = func() {
			fmt.Fprintf(fs.Output(), "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
		}
	}
	fs.Usage = func() {} // printed below, where it belongs
	fs.SetOutput(stderr)
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		usage()
		fs.SetOutput(stderr)
		return err
	case err != nil:
		usage()
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// envName is the environment variable of a flag: --long-poll-timeout is
// HERALD_LONG_POLL_TIMEOUT.
func envName(flagName string) string {
	return "HERALD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyEnv sets every flag that has an environment variable, before the
// command line is parsed (so the command line wins).
func applyEnv(fs *flag.FlagSet, env func(string) (string, bool)) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if v, ok := env(envName(f.Name)); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%w: %s=%q: %v", errUsage, envName(f.Name), v, err))
			}
		}
	})
	return errors.Join(errs...)
}
