//go:build brokers

package main

// The brokers the bus workload starts in process when -addr is empty: the
// NATS server module and franz-go's kfake. Built only with -tags brokers,
// as internal/brokertest is, so that a plain build and `go test ./...`
// do not compile the NATS server.

import (
	"errors"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/twmb/franz-go/pkg/kfake"
)

// startNATS starts a NATS server with JetStream on a loopback port, its
// store in a temporary directory, and returns its URL; stop shuts it down
// and removes the directory.
func startNATS() (addr string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "herald-bench-nats")
	if err != nil {
		return "", nil, err
	}
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		return "", nil, errors.Join(err, os.RemoveAll(dir))
	}
	srv.Start()
	stop = func() {
		srv.Shutdown()
		srv.WaitForShutdown()
		_ = os.RemoveAll(dir) // a temporary directory: nothing to keep
	}
	if !srv.ReadyForConnections(10 * time.Second) {
		stop()
		return "", nil, errors.New("the NATS server did not start")
	}
	return srv.ClientURL(), stop, nil
}

// startKafka starts a one-broker kfake cluster with the bench topic and
// returns its address; stop closes it.
func startKafka() (addr string, stop func(), err error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "herald.bench.event"))
	if err != nil {
		return "", nil, err
	}
	return c.ListenAddrs()[0], c.Close, nil
}
