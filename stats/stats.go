// Package stats keeps per-minute counts of Herald's activity over the last
// hour, for the dashboard's charts. A Recorder reads chosen Prometheus
// counters from a registry (the same ones /_herald/metrics exposes), so it
// needs no hook in the code it counts: each sample adds the counters'
// growth since the previous sample to the current minute of a ring of
// sixty.
package stats

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/heraldstreams/herald/internal/httpjson"
)

// Minutes is how many minutes a Recorder keeps.
const Minutes = 60

// DefaultInterval is how often Run samples.
const DefaultInterval = 10 * time.Second

// Series is one count the Recorder keeps: the sum of the counter samples
// of a metric family whose labels match.
type Series struct {
	// Name is the series' name in the answer ("appends").
	Name string
	// Metric is the counter family ("herald_stream_appends_total").
	Metric string
	// Also are further counter families added to Metric's, for a count
	// that more than one counter makes (appends to streams, and events
	// published into them).
	Also []string
	// Label and Values, when Label is set, keep only the samples whose
	// label Label has one of Values.
	Label  string
	Values []string
}

// Config configures a Recorder.
type Config struct {
	// Gatherer is the registry the counters are read from. Required.
	Gatherer prometheus.Gatherer
	// Series are the counts kept. Required.
	Series []Series
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Logger receives sampling failures; slog.Default() when nil.
	Logger *slog.Logger
	// Backlog, when set, counts the deliveries waiting now (pending or
	// failed, across every endpoint); ServeHTTP adds it to the answer.
	Backlog func(context.Context) (int, error)
}

// Recorder keeps the last hour's counts per minute. It is safe for
// concurrent use.
type Recorder struct {
	cfg Config

	mu sync.Mutex
	// last are the counter totals at the previous sample; primed is
	// false until there was one (the first sample only sets the base).
	last   []float64
	primed bool
	ring   [Minutes]bucket
}

// bucket is one minute's counts; minute is its start in Unix minutes.
type bucket struct {
	minute int64
	counts []float64
}

// New returns a Recorder for cfg.
func New(cfg Config) *Recorder {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Recorder{cfg: cfg, last: make([]float64, len(cfg.Series))}
}

// Sample reads the counters and adds their growth since the previous
// sample to the current minute. A counter that went down (the process
// that owns it was replaced) counts from zero.
func (r *Recorder) Sample() error {
	families, err := r.cfg.Gatherer.Gather()
	if err != nil {
		return fmt.Errorf("stats: gather: %w", err)
	}
	totals := make([]float64, len(r.cfg.Series))
	for _, f := range families {
		for i, s := range r.cfg.Series {
			if f.GetName() == s.Metric || slices.Contains(s.Also, f.GetName()) {
				totals[i] += sum(f.GetMetric(), s)
			}
		}
	}
	now := r.cfg.Now()
	minute := now.Unix() / 60
	r.mu.Lock()
	defer r.mu.Unlock()
	b := &r.ring[minute%Minutes]
	if b.minute != minute {
		*b = bucket{minute: minute, counts: make([]float64, len(r.cfg.Series))}
	}
	for i, t := range totals {
		if r.primed {
			d := t - r.last[i]
			if d < 0 {
				d = t
			}
			b.counts[i] += d
		}
		r.last[i] = t
	}
	r.primed = true
	return nil
}

// sum adds the counter values of the metrics that match s.
func sum(ms []*dto.Metric, s Series) float64 {
	total := 0.0
	for _, m := range ms {
		if s.Label != "" && !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
			return l.GetName() == s.Label && slices.Contains(s.Values, l.GetValue())
		}) {
			continue
		}
		total += m.GetCounter().GetValue()
	}
	return total
}

// Run samples every interval (DefaultInterval when not positive) until
// ctx ends.
func (r *Recorder) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := r.Sample(); err != nil {
			r.cfg.Logger.WarnContext(ctx, "sampling the stats failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Minute is one minute of counts in a Snapshot.
type Minute struct {
	// Start is the minute's start, UTC, RFC 3339.
	Start string `json:"start"`
	// Counts are the counts by series name.
	Counts map[string]float64 `json:"counts"`
}

// Snapshot is the last hour, oldest minute first; the last is the
// current, unfinished, minute.
type Snapshot struct {
	Series  []string `json:"series"`
	Minutes []Minute `json:"minutes"`
	// Backlog is the deliveries waiting when the snapshot was served
	// (with Config.Backlog only).
	Backlog *int `json:"backlog,omitempty"`
}

// Snapshot returns the last Minutes minutes, the current one last;
// minutes without a sample count zero.
func (r *Recorder) Snapshot() Snapshot {
	names := make([]string, len(r.cfg.Series))
	for i, s := range r.cfg.Series {
		names[i] = s.Name
	}
	now := r.cfg.Now().Unix() / 60
	out := Snapshot{Series: names, Minutes: make([]Minute, 0, Minutes)}
	r.mu.Lock()
	defer r.mu.Unlock()
	for m := now - Minutes + 1; m <= now; m++ {
		counts := make(map[string]float64, len(names))
		b := &r.ring[((m%Minutes)+Minutes)%Minutes]
		for i, n := range names {
			if b.minute == m && b.counts != nil {
				counts[n] = b.counts[i]
			} else {
				counts[n] = 0
			}
		}
		out.Minutes = append(out.Minutes, Minute{Start: time.Unix(m*60, 0).UTC().Format(time.RFC3339), Counts: counts})
	}
	return out
}

// The server faults of the stats route: the logs say what failed, the
// answer which part did.
var (
	errSampling = &httpjson.Error{Status: http.StatusInternalServerError, Code: httpjson.Internal.Code, Message: "reading the counters failed"}
	errBacklog  = &httpjson.Error{Status: http.StatusInternalServerError, Code: httpjson.Internal.Code, Message: "counting the delivery backlog failed"}
)

// ServeHTTP answers GET with the Snapshot as JSON, after a fresh sample
// so that the current minute is up to date.
func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if err := r.Sample(); err != nil {
		r.cfg.Logger.ErrorContext(req.Context(), "sampling the stats failed", "err", err)
		errSampling.Write(w, req)
		return
	}
	snap := r.Snapshot()
	if r.cfg.Backlog != nil {
		n, err := r.cfg.Backlog(req.Context())
		if err != nil {
			r.cfg.Logger.ErrorContext(req.Context(), "counting the delivery backlog failed", "err", err)
			errBacklog.Write(w, req)
			return
		}
		snap.Backlog = &n
	}
	httpjson.Write(w, http.StatusOK, snap)
}
