package history

import (
	"fmt"

	"github.com/narrows/narrows/internal/result"
)

// Units of figures.
const (
	UnitBits    = "bit/s"
	UnitBytes   = "B/s"
	UnitSeconds = "s"
	UnitRate    = "/s"
)

// Figure is one figure of a run: the summary's value and the per-interval
// samples the significance test uses.
type Figure struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
	// HigherIsBetter: throughput and rates; latencies are lower.
	HigherIsBetter bool      `json:"higher_is_better"`
	Value          float64   `json:"value"`
	Samples        []float64 `json:"-"`
}

// Headline is a run's first figure: what `narrows history` lists.
func Headline(rep *result.Report, ivs []result.Interval) (Figure, bool) {
	fs := Figures(rep, ivs)
	if len(fs) == 0 {
		return Figure{}, false
	}
	return fs[0], true
}

// Figures are the figures of a run that compare can set side by side,
// the headline first. Plans and db repl have none (they are arithmetic on
// other runs, or a live view: compare sets their verdicts side by side).
func Figures(rep *result.Report, ivs []result.Interval) []Figure {
	var fs []Figure
	add := func(name, unit string, higher bool, v float64, samples []float64) {
		fs = append(fs, Figure{Name: name, Unit: unit, HigherIsBetter: higher, Value: v, Samples: samples})
	}
	// series is one figure's value in each interval that has it.
	series := func(pick func(iv result.Interval) (float64, bool)) []float64 {
		var s []float64
		for _, iv := range ivs {
			if v, ok := pick(iv); ok {
				s = append(s, v)
			}
		}
		return s
	}
	latencies := func(prefix string, l result.Latency, pick func(iv result.Interval) *result.Latency) {
		for _, q := range []struct {
			name string
			v    result.Seconds
			get  func(*result.Latency) result.Seconds
		}{
			{"p50", l.P50, func(l *result.Latency) result.Seconds { return l.P50 }},
			{"p90", l.P90, func(l *result.Latency) result.Seconds { return l.P90 }},
			{"p99", l.P99, func(l *result.Latency) result.Seconds { return l.P99 }},
		} {
			s := series(func(iv result.Interval) (float64, bool) {
				if l := pick(iv); l != nil {
					return q.get(l).D().Seconds(), true
				}
				return 0, false
			})
			add(prefix+" "+q.name, UnitSeconds, false, q.v.D().Seconds(), s)
		}
	}
	switch rep.Part().(type) {
	case *result.Stream:
		for _, run := range rep.Stream.Runs {
			s := series(func(iv result.Interval) (float64, bool) {
				return iv.Throughput, iv.Probe == "stream" && iv.Phase == run.Phase && iv.Direction == run.Direction
			})
			add(fmt.Sprintf("throughput, %s, %s", streamsWord(run.Streams), run.Direction), UnitBits, true, run.Throughput, s)
		}
	case *result.RR:
		add("round trips", UnitRate, true, rep.RR.Rate, series(func(iv result.Interval) (float64, bool) { return iv.RoundTripRate, iv.RTT != nil }))
		latencies("round trip", rep.RR.Latency, func(iv result.Interval) *result.Latency { return iv.RTT })
	case *result.Loaded:
		// The round trips idle and under the load, each from its phase's
		// intervals, and the queue the load built (loaded p50 − idle p50).
		l := rep.Loaded
		for _, ph := range []struct {
			name, phase string
			lat         result.Latency
		}{{"idle", "idle", l.Idle.Latency}, {"under load", "loaded", l.Loaded.Latency}} {
			latencies("round trip "+ph.name, ph.lat, func(iv result.Interval) *result.Latency {
				if iv.Phase == ph.phase {
					return iv.RTT
				}
				return nil
			})
		}
		// The queue's samples: each loaded interval's median above the
		// idle phase's, what that stretch of the load added.
		var queue []float64
		for _, iv := range ivs {
			if iv.Phase == "loaded" && iv.RTT != nil && l.Idle.Latency.P50 > 0 {
				queue = append(queue, (iv.RTT.P50 - l.Idle.Latency.P50).D().Seconds())
			}
		}
		add("queue under load", UnitSeconds, false, l.Rise.D().Seconds(), queue)
	case *result.DBPing:
		add("queries", UnitRate, true, rep.DBPing.Rate, series(func(iv result.Interval) (float64, bool) { return iv.QueryRate, iv.RTT != nil }))
		latencies("query round trip", rep.DBPing.Latency, func(iv result.Interval) *result.Latency { return iv.RTT })
	case *result.Commit:
		var rate, bps, p50, p99 []float64
		for _, iv := range ivs {
			if c := iv.Commit; c != nil {
				rate, bps = append(rate, c.Rate), append(bps, c.BytesPerSecond)
				p50, p99 = append(p50, c.Latency.P50.D().Seconds()), append(p99, c.Latency.P99.D().Seconds())
			}
		}
		c := rep.Commit
		add("commits", UnitRate, true, c.Rate, rate)
		add("commit latency p50", UnitSeconds, false, c.Latency.P50.D().Seconds(), p50)
		add("commit latency p99", UnitSeconds, false, c.Latency.P99.D().Seconds(), p99)
		add("log throughput", UnitBytes, true, c.BytesPerSecond, bps)
	case *result.DBLoad:
		var rate, p50 []float64
		for _, iv := range ivs {
			if l := iv.Load; l != nil && l.Gap == nil {
				rate = append(rate, l.Rate)
				if l.CommitP50 != nil {
					p50 = append(p50, l.CommitP50.D().Seconds())
				}
			}
		}
		add("log generated", UnitBytes, true, rep.DBLoad.Rate, rate)
		if l := rep.DBLoad.CommitLatency; l != nil {
			add("commit latency p50", UnitSeconds, false, l.P50.D().Seconds(), p50)
		}
	case *result.Disk:
		for _, p := range rep.Disk.Patterns {
			var iops, bps, p50, p99 []float64
			for _, iv := range ivs {
				if d := iv.Disk; d != nil && d.Pattern == p.Name && d.Profile == p.Profile {
					iops, bps = append(iops, d.IOPS), append(bps, d.ByteRate)
					p50, p99 = append(p50, d.Latency.P50.D().Seconds()), append(p99, d.Latency.P99.D().Seconds())
				}
			}
			add(p.Name+" IOPS", UnitRate, true, p.IOPS, iops)
			add(p.Name+" throughput", UnitBytes, true, p.Throughput, bps)
			add(p.Name+" latency p50", UnitSeconds, false, p.P50.D().Seconds(), p50)
			add(p.Name+" latency p99", UnitSeconds, false, p.P99.D().Seconds(), p99)
		}
	case *result.Doctor:
		for _, st := range rep.Doctor.Steps {
			if st.Report == nil {
				continue
			}
			for _, f := range Figures(st.Report, st.Intervals) {
				f.Name = st.Name + ": " + f.Name
				fs = append(fs, f)
			}
		}
	}
	return fs
}

func streamsWord(n int) string {
	if n == 1 {
		return "1 stream"
	}
	return fmt.Sprintf("%d streams", n)
}
