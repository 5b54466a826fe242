package prom

import (
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/narrows/narrows/internal/result"
)

// FleetWatchExporter is `narrows fleet watch`'s collector: every link's
// latest interval record, each link's series the narrows_watch_ ones with
// a `link` label (the operator's name for it, validated by the command
// line to a safe charset), and the fleet's own: how many links, and how
// the targets file's reloads went (as Prometheus's own
// prometheus_config_last_reload_successful). A link removed is forgotten:
// its series go at the next scrape.
type FleetWatchExporter struct {
	version string
	d       watchDescs
	links   *prometheus.Desc
	reloads *prometheus.Desc
	lastOK  *prometheus.Desc
	lastAt  *prometheus.Desc

	mu       sync.Mutex
	last     map[string]*result.WatchInterval // nil value: started, no record yet
	reloaded map[string]float64               // by result: success, failure
	ok       bool
	okAt     time.Time
}

// Reload results, the values of the reloads counter's label.
const (
	ReloadSuccess = "success"
	ReloadFailure = "failure"
)

// NewFleetWatch returns an exporter of no links yet; started is when the
// targets were first read (the last successful load until a reload).
func NewFleetWatch(version string, started time.Time) *FleetWatchExporter {
	return &FleetWatchExporter{version: version, d: newWatchDescs(nil, "link"),
		links:    prometheus.NewDesc(wns+"links", "Links this fleet watch watches (the targets file's lines).", nil, nil),
		reloads:  prometheus.NewDesc(wns+"targets_reloads_total", "Reloads of the targets file (SIGHUP), by result: success, or failure (the file was refused and the links watched before are kept).", []string{"result"}, nil),
		lastOK:   prometheus.NewDesc(wns+"targets_last_reload_successful", "1 if the last reload of the targets file succeeded (or none was asked), 0 if it was refused.", nil, nil),
		lastAt:   prometheus.NewDesc(wns+"targets_last_reload_success_timestamp_seconds", "When the targets file was last read successfully (Unix time).", nil, nil),
		last:     map[string]*result.WatchInterval{},
		reloaded: map[string]float64{ReloadSuccess: 0, ReloadFailure: 0},
		ok:       true, okAt: started,
	}
}

// Registry is a fresh registry holding only e.
func (e *FleetWatchExporter) Registry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(e)
	return r
}

// Add starts link's series: up 0 until its first record.
func (e *FleetWatchExporter) Add(link string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.last[link] = nil
}

// Update records link's latest record; a link not added (or removed
// since) is ignored.
func (e *FleetWatchExporter) Update(link string, w *result.WatchInterval) {
	if w == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.last[link]; ok {
		e.last[link] = w
	}
}

// Remove forgets link: its series are gone from the next scrape.
func (e *FleetWatchExporter) Remove(link string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.last, link)
}

// Reloaded counts a reload of the targets file, done at at.
func (e *FleetWatchExporter) Reloaded(ok bool, at time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ok = ok
	if ok {
		e.reloaded[ReloadSuccess]++
		e.okAt = at
	} else {
		e.reloaded[ReloadFailure]++
	}
}

// Describe sends every descriptor.
func (e *FleetWatchExporter) Describe(ch chan<- *prometheus.Desc) {
	for _, x := range append(e.d.all(), e.links, e.reloads, e.lastOK, e.lastAt) {
		ch <- x
	}
}

// Collect sends the fleet's samples and each link's, links by name.
func (e *FleetWatchExporter) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	defer e.mu.Unlock()
	gauge(ch, e.d.info, 1, e.version)
	gauge(ch, e.links, float64(len(e.last)))
	for _, r := range []string{ReloadSuccess, ReloadFailure} {
		counter(ch, e.reloads, e.reloaded[r], r)
	}
	ok := 0.0
	if e.ok {
		ok = 1
	}
	gauge(ch, e.lastOK, ok)
	gauge(ch, e.lastAt, float64(e.okAt.UnixNano())/1e9)
	names := make([]string, 0, len(e.last))
	for n := range e.last {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e.d.collect(ch, e.last[n], n)
	}
}
