package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
)

// serveConfig is everything `herald serve` is configured with.
type serveConfig struct {
	Addr            string
	DataDir         string
	LongPollTimeout time.Duration
	MaxBodyBytes    int64
	MaxReadBytes    int
	SSEMaxDuration  time.Duration
	ShutdownTimeout time.Duration
	LogLevel        slog.Level
	LogFormat       string
}

func parseServeFlags(args []string, stderr io.Writer, env func(string) (string, bool)) (*serveConfig, error) {
	cfg := &serveConfig{}
	fs := flag.NewFlagSet("herald serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Addr, "addr", ":4437", "address to listen on")
	fs.StringVar(&cfg.DataDir, "data-dir", "./data", "directory of the embedded store (created if missing)")
	fs.DurationVar(&cfg.LongPollTimeout, "long-poll-timeout", 30*time.Second, "how long a long-poll read waits for data before it answers 204")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", 16<<20, "largest create or append body accepted (larger: 413)")
	fs.IntVar(&cfg.MaxReadBytes, "max-read-bytes", 4<<20, "most data returned by one catch-up read or SSE event")
	fs.DurationVar(&cfg.SSEMaxDuration, "sse-max-duration", 60*time.Second, "how long an SSE response stays open before the client is asked to reconnect")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a graceful shutdown waits for in-flight requests")
	fs.TextVar(&cfg.LogLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn or error")
	fs.StringVar(&cfg.LogFormat, "log-format", "text", "log format: text or json")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: herald serve [flags]\n\nRuns Herald. Each flag may also be set as HERALD_<FLAG_NAME> (e.g. HERALD_DATA_DIR).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := applyEnv(fs, env); err != nil {
		return nil, err
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	return cfg, cfg.validate()
}

func (c *serveConfig) validate() error {
	var problems []string
	if c.DataDir == "" {
		problems = append(problems, "--data-dir must not be empty")
	}
	if c.LongPollTimeout <= 0 {
		problems = append(problems, "--long-poll-timeout must be positive")
	}
	if c.MaxBodyBytes <= 0 {
		problems = append(problems, "--max-body-bytes must be positive")
	}
	if c.MaxReadBytes <= 0 {
		problems = append(problems, "--max-read-bytes must be positive")
	}
	if c.SSEMaxDuration <= 0 {
		problems = append(problems, "--sse-max-duration must be positive")
	}
	if c.ShutdownTimeout <= 0 {
		problems = append(problems, "--shutdown-timeout must be positive")
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		problems = append(problems, "--log-format must be text or json")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", errUsage, strings.Join(problems, "; "))
	}
	return nil
}
