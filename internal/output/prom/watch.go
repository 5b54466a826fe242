package prom

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/narrows/narrows/internal/result"
)

// `narrows watch`'s metrics: narrows_watch_<quantity>_<unit>, base units.
// Label values come from fixed sets only (load, direction, kind, end); the
// link is named by Prometheus's own instance and job labels, or by the
// operator's --name as a constant target label.
const wns = "narrows_watch_"

// WatchExporter is a prometheus.Collector of a watch's latest interval
// record.
type WatchExporter struct {
	version string
	d       watchDescs

	mu   sync.Mutex
	last *result.WatchInterval
}

type watchDescs struct {
	info, up, rtt, trips, errors, sessions, down, throughput, streamAt, rpm, loaded, ifMTU, pathMTU *prometheus.Desc
}

// NewWatch returns an exporter with nothing measured yet (up 0). target,
// when not empty, is a constant label on every metric: the operator's name
// for the link (validated by the command line to a safe charset).
func NewWatch(version, target string) *WatchExporter {
	var cl prometheus.Labels
	if target != "" {
		cl = prometheus.Labels{"target": target}
	}
	return &WatchExporter{version: version, d: newWatchDescs(cl)}
}

// newWatchDescs are a watch's descriptors, with cl as constant labels and
// before their own labels the variable ones of link (fleet watch's link
// name; none for one watch). info never has link's.
func newWatchDescs(cl prometheus.Labels, link ...string) watchDescs {
	nd := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(wns+name, help, append(slices.Clone(link), labels...), cl)
	}
	return watchDescs{
		info:       prometheus.NewDesc(wns+"info", "Always 1: the narrows release watching.", []string{"version"}, cl),
		up:         nd("up", "1 while round trips reach the agent, 0 while it or the link is away (the watch dials again with backoff)."),
		rtt:        nd("round_trip_seconds", "Full round trips on the watch's own connection, idle or while a short stream loads the link.", "load"),
		trips:      nd("round_trips_total", "Round trips made since the watch began."),
		errors:     nd("errors_total", "Failures by kind: connect (dial or handshake), rr (a round-trip test ended: agent gone, link dropped), stream (a short stream failed).", "kind"),
		sessions:   nd("sessions_total", "Sessions established with the agent for round trips (1 plus the reconnections)."),
		down:       nd("down_seconds_total", "Time the agent was out of reach since the watch began."),
		throughput: nd("stream_throughput_bits_per_second", "Throughput of the last short stream, one stream, by direction (up: this host sends).", "direction"),
		streamAt:   nd("stream_last_timestamp_seconds", "When the last short stream in a direction ended (Unix time).", "direction"),
		rpm:        nd("responsiveness_round_trips_per_second", "Responsiveness under the last short stream's load, in round trips per second: the IETF responsiveness draft's RPM ÷ 60 (Prometheus takes base units).", "direction"),
		loaded:     nd("stream_loaded_round_trips", "Round trips the last short stream's responsiveness stands on.", "direction"),
		ifMTU:      nd("interface_mtu_bytes", "MTU of the interface routing between the two hosts, at each end (here: this host, agent: the agent's host).", "end"),
		pathMTU:    nd("path_mtu_bytes", "Path MTU to the agent as measured (present once a path-MTU step runs)."),
	}
}

func (d watchDescs) all() []*prometheus.Desc {
	return []*prometheus.Desc{d.info, d.up, d.rtt, d.trips, d.errors, d.sessions, d.down, d.throughput, d.streamAt, d.rpm, d.loaded, d.ifMTU, d.pathMTU}
}

// Registry is a fresh registry holding only e.
func (e *WatchExporter) Registry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(e)
	return r
}

// Update records an interval record's state.
func (e *WatchExporter) Update(w *result.WatchInterval) {
	if w == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.last = w
}

// Describe sends every descriptor.
func (e *WatchExporter) Describe(ch chan<- *prometheus.Desc) {
	for _, x := range e.d.all() {
		ch <- x
	}
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

// Collect turns the latest record into samples. Before the first one only
// info and up 0 are there; a figure not measured yet (a stream not run, an
// MTU not told) is absent rather than 0.
func (e *WatchExporter) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	defer e.mu.Unlock()
	gauge(ch, e.d.info, 1, e.version)
	e.d.collect(ch, e.last)
}

// collect sends one link's samples from its latest record w (nil: none
// yet, up 0 alone), each with the link's label values lv first.
func (d watchDescs) collect(ch chan<- prometheus.Metric, w *result.WatchInterval, lv ...string) {
	with := func(labels ...string) []string { return append(slices.Clone(lv), labels...) }
	if w == nil {
		gauge(ch, d.up, 0, lv...)
		return
	}
	up := 0.0
	if w.Up {
		up = 1
	}
	gauge(ch, d.up, up, lv...)
	for i, l := range []result.WatchRTT{w.Idle, w.Loaded} {
		b := make(map[float64]uint64, len(result.WatchBuckets))
		for j, bound := range result.WatchBuckets {
			if j < len(l.Buckets) {
				b[bound.Seconds()] = l.Buckets[j]
			}
		}
		ch <- prometheus.MustNewConstHistogram(d.rtt, l.Count, l.Sum.D().Seconds(), b, with(result.Loads[i])...)
	}
	counter(ch, d.trips, float64(w.TotalRoundTrips), lv...)
	for _, k := range result.WatchErrorKinds {
		counter(ch, d.errors, float64(w.Errors[k]), with(k)...)
	}
	counter(ch, d.sessions, float64(w.Sessions), lv...)
	counter(ch, d.down, w.DownSeconds.D().Seconds(), lv...)
	for _, s := range w.Streams {
		gauge(ch, d.throughput, s.Throughput, with(s.Direction)...)
		gauge(ch, d.streamAt, float64(s.At.UnixNano())/1e9, with(s.Direction)...)
		gauge(ch, d.loaded, float64(s.Loaded), with(s.Direction)...)
		if s.RPM > 0 {
			gauge(ch, d.rpm, s.RPM/60, with(s.Direction)...)
		}
	}
	if w.MTUHere > 0 {
		gauge(ch, d.ifMTU, float64(w.MTUHere), with("here")...)
	}
	if w.MTUAgent > 0 {
		gauge(ch, d.ifMTU, float64(w.MTUAgent), with("agent")...)
	}
	if w.PathMTU > 0 {
		gauge(ch, d.pathMTU, float64(w.PathMTU), lv...)
	}
}
