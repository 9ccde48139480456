package httpapi

import "github.com/prometheus/client_golang/prometheus"

// RegisterMetrics registers the HTTP layer's metrics: requests by route,
// method and status and their duration; the appends stored and the time
// they take to be durable; the live reads open now, by mode; the
// connections open and refused at the limit; the bytes of request bodies
// buffered and the requests refused for want of budget; and the bodies
// cut for arriving too slowly.
func (s *Server) RegisterMetrics(reg prometheus.Registerer) error {
	cs := []prometheus.Collector{s.httpMetrics.requests, s.httpMetrics.duration, s.appendDuration}
	for mode, n := range map[string]func() int64{
		"long-poll": s.liveLongPolls.Load,
		"sse":       s.liveSSE.Load,
	} {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "herald_stream_live_reads",
			Help:        "Live stream reads (long-poll or SSE) open now.",
			ConstLabels: prometheus.Labels{"mode": mode},
		}, func() float64 { return float64(n()) }))
	}
	gauge := func(name, help string, v func() int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return float64(v()) })
	}
	counter := func(name, help string, v func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v()) })
	}
	cs = append(cs,
		counter("herald_stream_appends_total", "Appends stored (one per successful POST to a stream).", s.appends.Load),
		gauge("herald_http_connections_open", "HTTP connections open now.", s.connsOpen.Load),
		counter("herald_http_connections_refused_total", "Connections closed at once because the connection limit was reached.", s.connsRefused.Load),
		counter("herald_http_client_connections_refused_total", "Connections closed at once because their client address held as many connections as one client may.", s.clientConnsRefused.Load),
		gauge("herald_http_body_buffered_bytes", "Bytes of request bodies held in memory now (charged to the body budget).", s.bodies.used.Load),
		counter("herald_http_body_budget_refusals_total", "Requests refused with 503 because the body budget was spent.", s.bodies.refusals.Load),
		counter("herald_http_bodies_cut_total", "Request bodies cut with 408 because they arrived too slowly.", s.bodiesCut.Load),
		s.authFailures,
	)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
