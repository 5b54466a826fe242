package lograte

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/probe/replication"
)

func s(v string) *string { return &v }

// row builds a recorded result row, as dbconn.QueryMaps gives it.
func row(kv ...string) map[string]*string {
	m := map[string]*string{}
	for i := 0; i < len(kv); i += 2 {
		m[strings.ToLower(kv[i])] = s(kv[i+1])
	}
	return m
}

// SQL Server cannot run here: its counters are read from recorded rows of
// sys.dm_os_performance_counters (MSSQLCounters' columns), one database's
// cumulative 'Log Bytes Flushed/sec' per row, system databases left out.
func TestMSSQLRatesRecorded(t *testing.T) {
	sample := func(sales, hr, master, total string) []map[string]*string {
		c := func(db, v string) map[string]*string {
			return row("object_name", "SQLServer:Databases", "counter_name", "Log Bytes Flushed/sec", "instance_name", db, "cntr_value", v)
		}
		return []map[string]*string{c("Sales", sales), c("HR", hr), c("master", master), c("_Total", total), c("tempdb", "5")}
	}
	prev := map[string]replication.CounterSample{}
	t0 := time.Unix(1_700_000_000, 0)
	first := MSSQLRates(sample("1000000000", "50000", "7", "1000050007"), prev, t0)
	if len(first) != 2 || first["Sales"] != nil || first["HR"] != nil {
		t.Fatalf("first sample: %v, want Sales and HR without rates", first)
	}
	// 7 MiB of Sales' log in 1 s (field note 003's 7.1 MB/s), 1 MB of HR's.
	next := MSSQLRates(sample("1007340032", "1050000", "9", "1008390041"), prev, t0.Add(time.Second))
	if len(next) != 2 || next["Sales"] == nil || *next["Sales"] != 7340032 || *next["HR"] != 1e6 {
		t.Fatalf("rates %v", next)
	}
	// A counter that went back (a restarted instance) gives no rate.
	if back := MSSQLRates(sample("5", "1050000", "9", "1"), prev, t0.Add(2*time.Second)); back["Sales"] != nil || *back["HR"] != 0 {
		t.Fatalf("after a reset: %v", back)
	}
}

func TestBinlogGrowth(t *testing.T) {
	cases := []struct {
		name      string
		prev, cur map[string]int64
		want      int64
	}{
		{"same file", map[string]int64{"b.1": 1000, "b.2": 500}, map[string]int64{"b.1": 1000, "b.2": 3500}, 3000},
		// Rotated: the rest of b.2 (up to its final size) and all of b.3.
		{"rotation", map[string]int64{"b.1": 1000, "b.2": 500}, map[string]int64{"b.1": 1000, "b.2": 1_073_742_000, "b.3": 256}, 1_073_741_500 + 256},
		// b.1 purged meanwhile: it counts nothing, and nothing goes negative.
		{"purge", map[string]int64{"b.1": 1000, "b.2": 500}, map[string]int64{"b.2": 900}, 400},
	}
	for _, c := range cases {
		if got := binlogGrowth(c.prev, c.cur); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	// 25 one-second intervals: 2 MB/s, with 10 s at 4 MB/s and one second at 9.
	var rates []float64
	for i := range 25 {
		switch {
		case i == 3:
			rates = append(rates, 9e6)
		case i >= 10 && i < 20:
			rates = append(rates, 4e6)
		default:
			rates = append(rates, 2e6)
		}
	}
	spans := make([]time.Duration, len(rates))
	for i := range spans {
		spans[i] = time.Second
	}
	l := summarize(&series{rates: rates, spans: spans}, time.Second)
	if math.Abs(l.Mean-(9e6+10*4e6+14*2e6)/25) > 1 || l.Peak != 9e6 || l.PeakSustained != 4e6 || l.PeakWindow.D() != SustainedWindow {
		t.Fatalf("%+v", l)
	}
	if l.Bytes != 77e6 {
		t.Fatalf("bytes %d", l.Bytes)
	}
	// A short watch has no sustained peak.
	if l := summarize(&series{rates: rates[:15], spans: spans[:15]}, time.Second); l.PeakSustained != 0 {
		t.Fatalf("15 s: %+v", l)
	}
	// Intervals of unequal length weigh by their length.
	l = summarize(&series{rates: []float64{1e6, 4e6}, spans: []time.Duration{3 * time.Second, time.Second}}, time.Second)
	if l.Mean != 1.75e6 {
		t.Fatalf("weighted mean %v", l.Mean)
	}
}
