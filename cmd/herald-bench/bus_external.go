//go:build !brokers

package main

import "errors"

// errNoInProcessBroker answers a bus workload without -addr in a
// herald-bench built without -tags brokers, which leaves out the NATS
// server and kfake (large to compile, and needed only for this).
var errNoInProcessBroker = errors.New("-addr is empty and this herald-bench has no in-process brokers: pass -addr, or build it with `go build -tags brokers ./cmd/herald-bench`")

// startNATS refuses: see errNoInProcessBroker.
func startNATS() (addr string, stop func(), err error) { return "", nil, errNoInProcessBroker }

// startKafka refuses: see errNoInProcessBroker.
func startKafka() (addr string, stop func(), err error) { return "", nil, errNoInProcessBroker }
