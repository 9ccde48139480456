package dispatch

import (
	"log/slog"
	"time"

	"github.com/heraldstreams/herald/delivery"
)

// The accessors below are what the delivery API (package deliveryapi)
// reads of an engine: its store, configuration, clock, logger and breaker
// rules, so the API answers with the same limits and time as the engine.

// Store returns the store the engine works on.
func (e *Engine) Store() EngineStore { return e.st }

// Config returns the engine's configuration, defaults applied.
func (e *Engine) Config() EngineConfig { return e.cfg }

// Now returns the engine's current time (its injected clock).
func (e *Engine) Now() time.Time { return e.now() }

// Logger returns the engine's logger.
func (e *Engine) Logger() *slog.Logger { return e.log }

// Breaker returns the breaker rules every endpoint's runner follows.
func (e *Engine) Breaker() delivery.Breaker { return e.breaker }

// ClaimNow makes every endpoint's runner claim at once: claims were
// ended elsewhere (a dead replica's, package replica), so deliveries may
// be due that no runner knows of.
func (e *Engine) ClaimNow() { e.wakeRunners() }
