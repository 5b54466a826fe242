// Package prom renders `narrows db repl` polls as Prometheus metrics: a
// collector that holds the latest poll and turns it into samples when
// scraped, registered in a registry of its own for each run (never the
// global one, so nothing leaks between runs). Names are
// narrows_repl_<quantity>_<unit> in base units; label values come only
// from fixed sets (stage, verdict) and the replicas' own names. It measures
// nothing and serves nothing: the command line owns the listener.
package prom

import (
	"math"
	"slices"
	"sync"

	"github.com/narrows/narrows/internal/result"
	"github.com/prometheus/client_golang/prometheus"
)

// Stages are the label values of the per-stage metrics: bytes waiting for
// that stage, and the rate at which it moves them.
var Stages = []string{"send", "write", "flush", "replay"}

const ns = "narrows_repl_"

// descs are an exporter's descriptors. A label's values come from a fixed
// set or the replicas' own names; a label with no value to give is left
// out rather than sent empty (database="" on every PostgreSQL series):
// only SQL Server ships a log per database, so only its exporter has a
// database label.
type descs struct {
	descPolls, descPollErrors, descUp, descPollTime, descGeneration, descPosition, descQueue, descStageRate, descLag, descReply, descSilent, descReplicaUp, descRPOBytes, descRPOSeconds, descCatchUp, descRedo, descBehind, descSecLag, descVerdict, descVerdictSec *prometheus.Desc
}

func newDescs(perDatabase bool) descs {
	replica, generation := []string{"replica"}, []string(nil)
	if perDatabase {
		replica, generation = []string{"replica", "database"}, []string{"database"}
	}
	stage := append(slices.Clone(replica), "stage")
	return descs{
		descPolls:      prometheus.NewDesc(ns+"polls_total", "Polls of the primary made by this run.", nil, nil),
		descPollErrors: prometheus.NewDesc(ns+"poll_errors_total", "Polls that could not reach the primary (gaps).", nil, nil),
		descUp:         prometheus.NewDesc(ns+"up", "1 if the last poll reached the primary, 0 during a gap.", nil, nil),
		descPollTime:   prometheus.NewDesc(ns+"poll_duration_seconds", "How long the last poll's queries took.", nil, nil),
		descGeneration: prometheus.NewDesc(ns+"log_generation_bytes_per_second", "Rate the primary generates transaction log (SQL Server: per database, Log Bytes Flushed/sec).", generation, nil),
		descPosition:   prometheus.NewDesc(ns+"log_position_bytes", "The primary's log position as a byte offset (PostgreSQL LSN; MySQL from the first binary log kept).", nil, nil),
		descQueue:      prometheus.NewDesc(ns+"queue_bytes", "Log bytes waiting for a stage: send (not yet sent/fetched), write and flush (on the standby), replay (not yet replayed/applied/redone).", stage, nil),
		descStageRate:  prometheus.NewDesc(ns+"stage_rate_bytes_per_second", "Rate at which a stage moved the log in the last interval.", stage, nil),
		descLag:        prometheus.NewDesc(ns+"lag_seconds", "PostgreSQL's own write/flush/replay lag times (absent when idle and caught up).", stage, nil),
		descReply:      prometheus.NewDesc(ns+"last_reply_age_seconds", "Time since the standby last reported to the primary.", replica, nil),
		descSilent:     prometheus.NewDesc(ns+"silent_seconds", "How long a silent replica has not been heard from.", replica, nil),
		descReplicaUp:  prometheus.NewDesc(ns+"replica_up", "1 if the replica is streaming, 0 if silent or a replication thread is stopped.", replica, nil),
		descRPOBytes:   prometheus.NewDesc(ns+"rpo_bytes", "Log a failover now would lose: bytes not yet sent.", replica, nil),
		descRPOSeconds: prometheus.NewDesc(ns+"rpo_seconds", "RPO estimate: how long ago the primary wrote the first byte not yet sent (narrows' polls of its position), else unsent bytes divided by the generation rate.", replica, nil),
		descCatchUp:    prometheus.NewDesc(ns+"catch_up_seconds", "Time to catch up at current rates (absent when not catching up).", replica, nil),
		descRedo:       prometheus.NewDesc(ns+"redo_seconds", "Time to replay what the replica holds, at its replay rate.", replica, nil),
		descBehind:     prometheus.NewDesc(ns+"behind_source_seconds", "MySQL/MariaDB Seconds_Behind_Source (absent when NULL).", replica, nil),
		descSecLag:     prometheus.NewDesc(ns+"secondary_lag_seconds", "SQL Server secondary_lag_seconds.", replica, nil),
		descVerdict:    prometheus.NewDesc(ns+"verdict", "1 for the replica's current verdict, 0 for the others.", append(slices.Clone(replica), "verdict"), nil),
		descVerdictSec: prometheus.NewDesc(ns+"verdict_seconds_total", "Time this run has spent in each verdict (a poll's verdict counts for the interval that ends with it), as the summary gives it.", append(slices.Clone(replica), "verdict"), nil),
	}
}

// Exporter is a prometheus.Collector of the latest poll.
type Exporter struct {
	d           descs
	perDatabase bool

	mu     sync.Mutex
	last   *result.ReplPoll // the last poll, if it reached the primary; nil during a gap
	run    *result.ReplRun  // the run so far
	polls  float64
	errors float64
}

// New returns an Exporter with nothing polled yet; perDatabase for an
// engine that ships a log per database (SQL Server), whose series carry
// the database's name.
func New(perDatabase bool) *Exporter {
	return &Exporter{d: newDescs(perDatabase), perDatabase: perDatabase}
}

// Registry is a fresh registry holding only e.
func (e *Exporter) Registry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(e)
	return r
}

// Update records a poll (advised already, so verdicts are filled in) and
// the run so far (nil: none).
func (e *Exporter) Update(p *result.ReplPoll, run *result.ReplRun) {
	if p == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.polls++
	e.run = run
	if p.Gap != nil {
		e.errors++
		e.last = nil
		return
	}
	e.last = p
}

// Describe sends every descriptor.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	d := e.d
	for _, x := range []*prometheus.Desc{d.descPolls, d.descPollErrors, d.descUp, d.descPollTime, d.descGeneration, d.descPosition, d.descQueue,
		d.descStageRate, d.descLag, d.descReply, d.descSilent, d.descReplicaUp, d.descRPOBytes, d.descRPOSeconds, d.descCatchUp, d.descRedo,
		d.descBehind, d.descSecLag, d.descVerdict, d.descVerdictSec} {
		ch <- x
	}
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func optInt(ch chan<- prometheus.Metric, d *prometheus.Desc, v *int64, labels ...string) {
	if v != nil {
		gauge(ch, d, float64(*v), labels...)
	}
}

func optFloat(ch chan<- prometheus.Metric, d *prometheus.Desc, v *float64, labels ...string) {
	if v != nil && !math.IsNaN(*v) {
		gauge(ch, d, *v, labels...)
	}
}

func optSecs(ch chan<- prometheus.Metric, d *prometheus.Desc, v *result.Seconds, labels ...string) {
	if v != nil {
		gauge(ch, d, v.D().Seconds(), labels...)
	}
}

// Collect turns the latest poll into samples.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.d
	ch <- prometheus.MustNewConstMetric(d.descPolls, prometheus.CounterValue, e.polls)
	ch <- prometheus.MustNewConstMetric(d.descPollErrors, prometheus.CounterValue, e.errors)
	if e.run != nil {
		// Counters: they go on through a gap, as the run does.
		for _, r := range e.run.Replicas {
			for _, v := range r.Verdicts {
				ch <- prometheus.MustNewConstMetric(d.descVerdictSec, prometheus.CounterValue, v.Seconds.D().Seconds(), append(e.labels(r.Name, r.Database), v.Verdict)...)
			}
		}
	}
	p := e.last
	if p == nil {
		// During a gap nothing but the gap is reported: no stale figures.
		gauge(ch, d.descUp, 0)
		return
	}
	gauge(ch, d.descUp, 1)
	gauge(ch, d.descPollTime, p.PollTime.D().Seconds())
	if !e.perDatabase {
		optFloat(ch, d.descGeneration, p.GenerationRate)
	}
	optInt(ch, d.descPosition, p.LogBytes)
	for _, r := range p.Replicas {
		l := e.labels(r.Name, r.Database)
		queues := []*int64{r.Unsent, r.Unwritten, r.Unflushed, r.Unreplayed}
		rates := []*float64{r.SendRate, r.WriteRate, r.FlushRate, r.ReplayRate}
		lags := []*result.Seconds{nil, r.WriteLag, r.FlushLag, r.ReplayLag}
		for i, st := range Stages {
			optInt(ch, d.descQueue, queues[i], append(l, st)...)
			optFloat(ch, d.descStageRate, rates[i], append(l, st)...)
			optSecs(ch, d.descLag, lags[i], append(l, st)...)
		}
		if e.perDatabase {
			optFloat(ch, d.descGeneration, r.Generation, r.Database)
		}
		optSecs(ch, d.descReply, r.LastReply, l...)
		optSecs(ch, d.descSilent, r.SilentFor, l...)
		ru := 0.0
		if r.State == result.ReplicaStreaming {
			ru = 1
		}
		gauge(ch, d.descReplicaUp, ru, l...)
		optInt(ch, d.descRPOBytes, r.RPOBytes, l...)
		optSecs(ch, d.descRPOSeconds, r.RPOSeconds, l...)
		optSecs(ch, d.descCatchUp, r.CatchUp, l...)
		optSecs(ch, d.descRedo, r.RedoTime, l...)
		optSecs(ch, d.descBehind, r.SecondsBehind, l...)
		optSecs(ch, d.descSecLag, r.SecondaryLag, l...)
		for _, v := range result.Verdicts {
			x := 0.0
			if v == r.VerdictCode {
				x = 1
			}
			gauge(ch, d.descVerdict, x, append(l, v)...)
		}
	}
}

// labels are a replica's label values: its name, and its database's where
// the engine has one log per database.
func (e *Exporter) labels(name, database string) []string {
	if e.perDatabase {
		return []string{name, database}
	}
	return []string{name}
}
