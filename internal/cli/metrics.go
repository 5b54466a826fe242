package cli

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsTimeouts bound what one client may hold of a --prometheus-listen
// server, which runs for days beside a watch or a db repl and answers
// whoever reaches its port. A scrape is one small GET: its headers come
// at once, it has no body, and its answer is a few KB (Prometheus gives
// up on a scrape after 10 s by default). Prometheus keeps its connection
// between scrapes, every 15 s to 1 min: idle is longer than that, so a
// scraper keeps its one connection, and short enough that a client that
// went away, or never meant to scrape, frees its socket within minutes
// rather than never (db repl had no bound at all: Go keeps an idle
// keep-alive connection for ever when neither IdleTimeout nor ReadTimeout
// is set). Tests shorten them (export_test.go).
var metricsTimeouts = struct{ header, read, write, idle time.Duration }{
	header: 10 * time.Second,
	read:   30 * time.Second,
	write:  30 * time.Second,
	idle:   90 * time.Second,
}

// newMetricsServer is every HTTP server narrows runs: h with the bounds
// above.
func newMetricsServer(h http.Handler) *http.Server {
	t := metricsTimeouts
	return &http.Server{Handler: h, ReadHeaderTimeout: t.header, ReadTimeout: t.read, WriteTimeout: t.write, IdleTimeout: t.idle}
}

// serveMetrics serves reg at http://ADDR/metrics, ADDR being where it
// listens, until stop.
func serveMetrics(addr string, reg prometheus.Gatherer) (net.Addr, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	srv := newMetricsServer(mux)
	go srv.Serve(ln)
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}
	return ln.Addr(), stop, nil
}
