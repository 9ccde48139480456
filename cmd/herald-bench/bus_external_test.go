//go:build !brokers

package main

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// Built without -tags brokers, the bus workload without -addr says how to
// get the in-process brokers instead of running, for either broker, and
// prints no result.
func TestBusWithoutAddrNeedsTheBrokersTag(t *testing.T) {
	t.Parallel()
	for _, broker := range []string{"nats", "kafka"} {
		var js, human bytes.Buffer
		err := run(context.Background(), []string{"bus", "-broker", broker, "-d", "1s"}, &output{json: &js, human: &human})
		if !errors.Is(err, errNoInProcessBroker) {
			t.Errorf("bus -broker %s: %v, want %v", broker, err, errNoInProcessBroker)
		}
		if js.Len() != 0 {
			t.Errorf("bus -broker %s printed a result: %s", broker, js.String())
		}
	}
}
