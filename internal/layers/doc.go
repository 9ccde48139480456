// Package layers holds the test that keeps Herald's layers apart: the
// pure rules packages (glob, protocol, delivery, subscription) do no I/O
// and know nothing of storage, senders or telemetry, so the engines
// (delivery/dispatch, subscription/wake) and the HTTP API
// (delivery/deliveryapi, httpapi) build on them and never the other way
// round. See docs/architecture.md.
package layers
