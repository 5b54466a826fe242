//go:build linux

package experiments

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narrows/narrows/internal/history"
	"github.com/narrows/narrows/internal/itest"
	"github.com/narrows/narrows/internal/testbed"
)

// TestCompareDoctorAcrossRTT (issue 27): `narrows compare` of two real
// doctor runs, the path 8 ms, then 30 ms (100 Mbit/s; an agent on host B
// whose TCP receive buffer is capped at 128 KiB, as a replica's host left
// at a small default; PostgreSQL on host A generating 4 MB/s of log with
// `db load` while doctor runs; host A's own directory as the data path).
// The truth is the line: the round trip and a commit's round trip to the
// agent grow by the lines' ratio (30 / 8, within 10%: the line adds its
// forwarder's tens of µs, the hosts their wake-ups), the queue a load of
// 4 streams builds goes (their capped windows no longer fill the line),
// and one stream, bound by its window, carries about
// 8 MB/s across 8 ms and 2 MB/s across 30 ms: the replica keeps up with
// 4 MB/s, then falls behind. compare calls each of these changed (each
// figure with the samples to test it: issue 27 found every disk row "too
// few samples, need 4+4"), the replica's verdict first.
func TestCompareDoctorAcrossRTT(t *testing.T) {
	setUp(t, 1)
	dir, data := t.TempDir(), t.TempDir() // one data directory, as a DBA's is
	var runs []string
	for _, rtt := range []time.Duration{8 * time.Millisecond, 30 * time.Millisecond} {
		l := testbed.NewTestDelayLine(t, testbed.DelayLineOptions{RTT: rtt, RateBitsPerSecond: 100e6})
		for _, h := range l.Hosts() {
			setCC(t, h, "reno")
		}
		capRmem(t, l.B)
		pg := chattyPrimary(t, l) // its standby on A too: no log crosses the line
		startAgentOn(t, l.B)
		load := startOn(t, l.A, "db", "load", "--dsn", primaryDSN(pg), "--log-rate", "4MB/s", "--duration", "3m")
		time.Sleep(2 * time.Second) // the load at its rate before doctor watches it
		run := filepath.Join(dir, "doctor-"+rtt.String()+".jsonl")
		res := runOnA(t, l, 3*time.Minute, "doctor", "--to", agentAddr(l), "--dsn", primaryDSN(pg), "--data-path", data, "--budget", "40s",
			"--out", run, "--html", strings.TrimSuffix(run, ".jsonl")+".html")
		t.Logf("doctor across %v:\n%s", rtt, res.Stdout)
		// Ctrl-C ends the load: it drops its table and exits 130.
		load.cmd.Process.Signal(os.Interrupt)
		select {
		case <-load.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("db load did not end 30 s after Ctrl-C")
		}
		runs = append(runs, run)
		pg.Close()
		l.Close()
	}
	text := runHere(t, "compare", runs[0], runs[1]).Stdout
	t.Logf("compare:\n%s", text)
	res := runHere(t, "compare", "--json", runs[0], runs[1])
	var c history.Comparison
	if err := json.Unmarshal([]byte(res.Stdout), &c); err != nil {
		t.Fatalf("compare --json: %v\n%s", err, res.Stdout)
	}
	byName := map[string]history.Change{}
	for _, f := range c.Figures {
		byName[f.Name] = f
	}
	rt, ok := byName["net rr 64 B: round trip p50"]
	switch {
	case !ok:
		t.Fatalf("compare has no round trip p50 of net rr 64 B among %d figures", len(c.Figures))
	case rt.P == nil || !rt.Significant:
		t.Errorf("the round trip went from %.4g to %.4g s and compare did not call it significant (p %v, n=%d+%d)", rt.Before, rt.After, rt.P, rt.NBefore, rt.NAfter)
	case math.Abs(rt.After/rt.Before/(30.0/8)-1) > 0.10:
		t.Errorf("the round trip went from %.4g to %.4g s: %.3f×, the lines' %.3f× within 10%%", rt.Before, rt.After, rt.After/rt.Before, 30.0/8)
	default:
		t.Logf("RESULT compare: the 64 B round trip %.3f → %.3f ms (%.3f×, the lines' 3.75×), p=%.4f n=%d+%d; %d figures, %d verdicts changed",
			rt.Before*1e3, rt.After*1e3, rt.After/rt.Before, *rt.P, rt.NBefore, rt.NAfter, len(c.Figures), len(c.Verdicts))
	}
	// A commit's round trip grows with the line's. The queue a load of 4
	// streams builds goes the other way: each stream is held by the
	// capped window to about 64 KiB a round trip, 4 × 64 KiB / 8 ms =
	// 262 Mbit/s fill the 100 Mbit/s line and queue, 4 × 64 KiB / 30 ms =
	// 70 Mbit/s do not.
	for _, w := range []struct {
		name string
		up   bool
	}{{"net commit: commit latency p50", true}, {"net rr under load: queue under load", false}} {
		f, ok := byName[w.name]
		switch {
		case !ok:
			t.Errorf("compare has no %q", w.name)
		case !f.Significant || f.P == nil || (f.After > f.Before) != w.up:
			t.Errorf("%s went from %.4g to %.4g and compare did not call it a significant %s (p %v, n=%d+%d)", w.name, f.Before, f.After,
				map[bool]string{true: "rise", false: "fall"}[w.up], f.P, f.NBefore, f.NAfter)
		default:
			t.Logf("RESULT compare: %s %.4g → %.4g (%.2f×) p=%.4f n=%d+%d", w.name, f.Before, f.After, f.After/f.Before, *f.P, f.NBefore, f.NAfter)
		}
	}
	// The replica's verdict: it kept up across 8 ms and falls behind
	// across 30 ms, the first of the verdicts that changed.
	var gone, came bool
	for _, v := range c.Verdicts {
		gone = gone || v.Code == "plan.replica_keeps_up" && v.After == ""
		came = came || strings.HasPrefix(v.Code, "plan.replica_falls_behind") && v.Before == ""
	}
	if !gone || !came {
		t.Errorf("compare does not say the replica kept up and now falls behind: %+v", c.Verdicts)
	}
	// Every figure a step measured over intervals has the samples for
	// compare's test: the streams', the round trips', the commit's, the
	// disk's (the load's phases and its queue are one figure a run).
	tested := 0
	for _, f := range c.Figures {
		if strings.HasPrefix(f.Name, "net rr under load") || strings.HasPrefix(f.Name, "net mtu") {
			continue
		}
		if f.NBefore < history.MinSamples || f.NAfter < history.MinSamples {
			t.Errorf("%s: n=%d+%d, too few samples for compare's test", f.Name, f.NBefore, f.NAfter)
		}
		tested++
	}
	if tested == 0 || !hasPrefix(c.Figures, "disk data path") || !hasPrefix(c.Figures, "net stream") {
		t.Errorf("compare has no disk or stream figure among %d", len(c.Figures))
	}
	if len(c.Verdicts) > 0 && strings.Index(text, "Verdicts that changed") > strings.Index(text, "FIGURE") {
		t.Errorf("the verdicts that changed come after the figures:\n%s", text)
	}
}

// runHere runs narrows on this host, failing t unless it exits 0.
func runHere(t *testing.T, args ...string) itest.Result {
	t.Helper()
	res := itest.Run(t, time.Minute, nil, args...)
	if res.Code != 0 {
		t.Fatalf("narrows %s exited %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), res.Code, res.Stdout, res.Stderr)
	}
	return res
}

func hasPrefix(fs []history.Change, p string) bool {
	for _, f := range fs {
		if strings.HasPrefix(f.Name, p) {
			return true
		}
	}
	return false
}
