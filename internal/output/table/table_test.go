package table_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/output/table"
	"github.com/narrows/narrows/internal/result"
)

// failFirst fails its first write and takes every one after it, as a
// terminal or pipe that hiccups once would.
type failFirst struct {
	calls int
	b     strings.Builder
}

var errWrite = errors.New("write failed")

func (f *failFirst) Write(p []byte) (int, error) {
	f.calls++
	if f.calls == 1 {
		return 0, errWrite
	}
	return f.b.Write(p)
}

// TestIntervalHeaderWriteError: when the header before an interval's
// first row cannot be written, Interval says so, though the row after it
// was written (the header's error was lost to the row's).
func TestIntervalHeaderWriteError(t *testing.T) {
	iv := func(probe string) result.Interval { return result.NewInterval(probe, 0, time.Second) }
	stream, rr, ping, load, repl := iv("stream"), iv("rr"), iv(result.ProbeDBPing), iv(result.ProbeDBLoad), iv(result.ProbeRepl)
	load.Load = &result.LoadInterval{}
	repl.Repl = &result.ReplPoll{Engine: "postgres", Replicas: []result.ReplicaState{{Name: "standby1"}}}
	replNone := iv(result.ProbeRepl)
	replNone.Repl = &result.ReplPoll{Engine: "postgres"}
	for name, iv := range map[string]result.Interval{"stream": stream, "rr": rr, "db ping": ping, "db load": load, "db repl": repl, "db repl, no replica": replNone} {
		var w failFirst
		if err := table.New(&w).Interval(iv); !errors.Is(err, errWrite) {
			t.Errorf("%s: the header's write failed, Interval returned %v", name, err)
		}
	}
}

// TestSummaryOfEveryPart: the table has a case for every kind of part a
// Report can carry.
func TestSummaryOfEveryPart(t *testing.T) {
	for _, p := range result.Parts() {
		if table.Summarizer(p) == nil {
			t.Errorf("the table has no case for a %s: add it to summarizer", p.Kind())
		}
	}
}
