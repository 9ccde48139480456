package httpapi

import "github.com/prometheus/client_golang/prometheus"

// RegisterMetrics registers the HTTP layer's metrics: the live reads open
// now, by mode.
func (s *Server) RegisterMetrics(reg prometheus.Registerer) error {
	for mode, n := range map[string]func() int64{
		"long-poll": s.liveLongPolls.Load,
		"sse":       s.liveSSE.Load,
	} {
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "herald_stream_live_reads",
			Help:        "Live stream reads (long-poll or SSE) open now.",
			ConstLabels: prometheus.Labels{"mode": mode},
		}, func() float64 { return float64(n()) })
		if err := reg.Register(g); err != nil {
			return err
		}
	}
	return nil
}
